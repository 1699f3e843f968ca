// The audit trail: appends records to the hash chain (server/audit.h) in
// the turn's batch. A part of the state (server/state.h): owner thread only.
//
// Guarantees: records are numbered from 1 without gaps and each chains from
// the one before, in the order they are appended; a record is durable with
// the turn that wrote it. While the chain is broken (SetBroken: its tail did
// not match its head at start) nothing is appended: a record then goes to
// stderr instead, and the API refuses changes until Acknowledge.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "core/status.h"
#include "store/store.h"

namespace allot::server {

class AuditTrail {
 public:
  // Continues the chain after `last`, the newest stored record (none: a
  // new log).
  void Load(const std::optional<store::AuditRow>& last);

  // One record: who did what to which object, and how it ended ("ok", or
  // the HTTP status and message).
  void Append(const std::string& principal, const std::string& tenant,
              const std::string& verb, const std::string& object,
              const std::string& outcome, int64_t now, store::Batch* batch);

  // Set at start when the log's tail does not match its head: what is wrong.
  void SetBroken(std::string why) { broken_ = std::move(why); }
  const std::string& broken() const { return broken_; }
  // A cluster-admin's acceptance of the break: one record, chained from the
  // newest there is, saying what was wrong and why it was accepted;
  // appending resumes. FailedPrecondition when not broken.
  Status Acknowledge(const std::string& principal, const std::string& tenant,
                     const std::string& reason, int64_t now,
                     store::Batch* batch);

  // The newest record (seq, hash) written or loaded.
  std::pair<int64_t, std::string> head() const { return {seq_, hash_}; }

 private:
  int64_t seq_ = 0;
  std::string hash_;
  std::string broken_;
};

}  // namespace allot::server
