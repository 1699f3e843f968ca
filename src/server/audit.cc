#include "server/audit.h"

#include "server/crypto.h"

namespace allot::server {
namespace {
void Field(std::string* out, const std::string& v) {
  *out += std::to_string(v.size());
  *out += ':';
  *out += v;
}
}  // namespace

std::string AuditHash(const store::AuditRow& row) {
  std::string s;
  Field(&s, row.prev_hash);
  Field(&s, std::to_string(row.seq));
  Field(&s, std::to_string(row.time_unix_ms));
  Field(&s, row.principal);
  Field(&s, row.tenant);
  Field(&s, row.verb);
  Field(&s, row.object);
  Field(&s, row.outcome);
  return Sha256Hex(s);
}

Status VerifyAuditChain(const std::vector<store::AuditRow>& rows,
                        std::optional<std::pair<int64_t, std::string>> head) {
  std::string prev = kAuditGenesis;
  int64_t want_seq = 1;
  for (const store::AuditRow& r : rows) {
    std::string at = "audit record " + std::to_string(r.seq);
    if (r.seq != want_seq) {
      return Status::FailedPrecondition(
          at + ": expected record " + std::to_string(want_seq) +
          " (records were deleted or inserted)");
    }
    if (r.prev_hash != prev) {
      return Status::FailedPrecondition(
          at + ": does not chain from the record before it");
    }
    if (AuditHash(r) != r.hash) {
      return Status::FailedPrecondition(at + ": its contents were edited");
    }
    prev = r.hash;
    ++want_seq;
  }
  if (head) {
    int64_t last = want_seq - 1;
    if (head->first != last || (last > 0 && head->second != prev)) {
      return Status::FailedPrecondition(
          "the log ends at record " + std::to_string(last) +
          " but the store's head says " + std::to_string(head->first) +
          " (records were deleted at the end)");
    }
  }
  return Status::Ok();
}

}  // namespace allot::server
