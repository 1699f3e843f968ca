#include "server/audit_trail.h"

#include <cstdio>

#include "server/audit.h"

namespace allot::server {

void AuditTrail::Load(const std::optional<store::AuditRow>& last) {
  if (!last) return;
  seq_ = last->seq;
  hash_ = last->hash;
}

void AuditTrail::Append(const std::string& principal, const std::string& tenant,
                        const std::string& verb, const std::string& object,
                        const std::string& outcome, int64_t now,
                        store::Batch* batch) {
  if (!broken_.empty()) {
    std::fprintf(stderr,
                 "allot: audit (not appended: the chain is broken): "
                 "principal=%s tenant=%s "
                 "verb=%s object=%s outcome=%s\n",
                 ForLog(principal).c_str(), ForLog(tenant).c_str(),
                 verb.c_str(), ForLog(object).c_str(), ForLog(outcome).c_str());
    return;
  }
  store::AuditRow row;
  row.seq = ++seq_;
  row.time_unix_ms = now;
  row.principal = principal;
  row.tenant = tenant;
  row.verb = verb;
  row.object = object;
  row.outcome = outcome;
  row.prev_hash = hash_.empty() ? kAuditGenesis : hash_;
  row.hash = AuditHash(row);
  hash_ = row.hash;
  batch->meta["audit_head"] = std::to_string(row.seq) + ":" + row.hash;
  batch->audit.push_back(std::move(row));
}

Status AuditTrail::Acknowledge(const std::string& principal,
                               const std::string& tenant,
                               const std::string& reason, int64_t now,
                               store::Batch* batch) {
  if (broken_.empty()) {
    return Status::FailedPrecondition(
        "the audit log is not broken: there is nothing to acknowledge");
  }
  const std::string what = std::move(broken_);
  broken_.clear();
  Append(principal, tenant, "acknowledge", "AuditLog",
         "ok: acknowledged break: " + what + "; reason: " + reason, now, batch);
  return Status::Ok();
}

}  // namespace allot::server
