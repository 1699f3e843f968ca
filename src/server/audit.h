// The audit log's hash chain.
//
// Each record's hash is SHA-256 over the previous record's hash and every
// field of the record (length-prefixed, so no two different records encode
// alike). The first record chains from 64 zeros. Editing a field, inserting
// or deleting a record, or reordering records breaks the chain at that
// point; VerifyAuditChain names the first record that does not verify.
// Deleting records at the END cannot be seen from the records alone: the
// server also keeps the newest (seq, hash), the head, in the store's meta
// table, and outside the store in a head file next to it (AuditAnchor,
// audit_anchor.h; docs/server.md, "Audit log").
// At start the server checks the newest record against both
// (CheckAuditTail); a tail that does not match stops it appending until a
// cluster-admin acknowledges the break.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
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

// ---- The head, and its anchor outside the store ----------------------------

struct AuditHead {
  int64_t seq = 0;
  std::string hash;
};

// "SEQ:HASH", as the store's meta and the head file hold it.
std::optional<AuditHead> ParseAuditHead(const std::string& text);
// The store's meta "audit_head" ("SEQ:HASH"), if present and well formed.
std::optional<AuditHead> StoredAuditHead(const std::map<std::string, std::string>& meta);

// The head file of a store: "PATH.audit-head" for "sqlite:PATH"; empty for
// a store that is not a local file.
std::string AuditHeadFileFor(const std::string& store_url);
// nullopt when the file does not exist; an error when it cannot be read or
// does not hold a head.
Result<std::optional<AuditHead>> ReadAuditHeadFile(const std::string& path);
// Writes PATH.tmp, fsyncs it and renames it over PATH.
Status WriteAuditHeadFile(const std::string& path, const AuditHead& head);

// The record with seq `seq`, if there is one.
using AuditRecordAt = std::function<Result<std::optional<store::AuditRow>>(int64_t seq)>;

// Checks the newest record `last` against the store's head and the head
// file (each when present): OK, or FailedPrecondition saying which records
// are missing, added or replaced. A head file behind the store (a crash
// between the store's commit and the file's write) is accepted when the
// record it names is still there unchanged. `file_path` is for messages.
Status CheckAuditTail(const std::optional<store::AuditRow>& last,
                      const std::optional<AuditHead>& stored,
                      const std::optional<AuditHead>& file,
                      const std::string& file_path, const AuditRecordAt& record_at);

// `text` with control characters as '?': what goes to the server's log
// from a request cannot forge a line of it (the head lines are an anchor).
std::string ForLog(std::string text);

// `allot audit verify --store URL` (server stopped) on `st`, opened from
// `store_url`: the whole chain, its end against the store's head, and the
// head file. Sets *records; FailedPrecondition names what is broken.
Status VerifyAuditStore(store::Store& st, const std::string& store_url, size_t* records);

}  // namespace allot::server
