// The audit log's hash chain.
//
// Each record's hash is SHA-256 over the previous record's hash and every
// field of the record (length-prefixed, so no two different records encode
// alike). The first record chains from 64 zeros. Editing a field, inserting
// or deleting a record, or reordering records breaks the chain at that
// point; VerifyAuditChain names the first record that does not verify.
// Deleting records at the END cannot be seen from the records alone: the
// server also keeps the newest (seq, hash) in the store's meta table and
// passes it as `head` (an attacker with write access to the file can edit
// both; ship the log elsewhere for that threat).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "store/store.h"

namespace allot::server {

inline const std::string kAuditGenesis(64, '0');

// The hash of `row` given its prev_hash (row.hash is ignored).
std::string AuditHash(const store::AuditRow& row);

// Checks seq continuity from 1, prev_hash links and hashes, and that the
// last record is `head` (seq, hash) when given. OK, or FailedPrecondition
// naming the first bad record.
Status VerifyAuditChain(const std::vector<store::AuditRow>& rows,
                        std::optional<std::pair<int64_t, std::string>> head);

}  // namespace allot::server
