// SqliteStore: the SQLite backend of Store (see sqlite_store.h).
#include "store/sqlite_store.h"

#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "core/status.h"
#include "store/sqlite_schema.h"
#include "store/sqlite_util.h"
#include "store/store.h"

namespace allot::store {
namespace {

using sqlite::BindInt;
using sqlite::BindText;
using sqlite::ColumnInt;
using sqlite::ColumnText;
using sqlite::ScopedReset;
using sqlite::Stmt;

// How long a statement waits for another connection's lock before failing.
constexpr int kBusyTimeoutMs = 5000;

constexpr const char* kAuditColumns =
    "seq, time_ms, principal, tenant, verb, object, outcome, prev_hash, hash";

constexpr const char* kUsageColumns =
    "tenant, workload, attempt, local_queue, cluster_queue, user, flavor, "
    "resource, quantity_milli, start_ms, end_ms, util_milli_ms, "
    "price_micros_per_hour, kind";

UsageRow ReadUsage(sqlite3_stmt* st) {
  UsageRow u;
  u.tenant = ColumnText(st, 0);
  u.workload = ColumnText(st, 1);
  u.attempt = int32_t(ColumnInt(st, 2));
  u.local_queue = ColumnText(st, 3);
  u.cluster_queue = ColumnText(st, 4);
  u.user = ColumnText(st, 5);
  u.flavor = ColumnText(st, 6);
  u.resource = ColumnText(st, 7);
  u.quantity_milli = ColumnInt(st, 8);
  u.start_unix_ms = ColumnInt(st, 9);
  u.end_unix_ms = ColumnInt(st, 10);
  u.util_milli_ms = ColumnInt(st, 11);
  u.price_micros_per_hour = ColumnInt(st, 12);
  u.kind = UsageKind(std::clamp<int64_t>(ColumnInt(st, 13), 0, 2));
  return u;
}

// allot_rollup_merge(old, new): per minute, new's bytes unless they are "no
// data" (all 0xFF); a blob of the wrong size is replaced whole.
void RollupMerge(sqlite3_context* ctx, int, sqlite3_value** argv) {
  const int n = 60 * kRollupMinuteBytes;
  const auto* old_b = static_cast<const unsigned char*>(sqlite3_value_blob(argv[0]));
  const auto* new_b = static_cast<const unsigned char*>(sqlite3_value_blob(argv[1]));
  if (sqlite3_value_bytes(argv[0]) != n || sqlite3_value_bytes(argv[1]) != n ||
      old_b == nullptr || new_b == nullptr) {
    sqlite3_result_value(ctx, argv[1]);
    return;
  }
  std::string out(reinterpret_cast<const char*>(old_b), n);
  for (int m = 0; m < 60; ++m) {
    const unsigned char* slot = new_b + m * kRollupMinuteBytes;
    bool empty = true;
    for (int i = 0; i < kRollupMinuteBytes; ++i) empty = empty && slot[i] == 0xFF;
    if (!empty) out.replace(size_t(m * kRollupMinuteBytes), kRollupMinuteBytes,
                            reinterpret_cast<const char*>(slot), kRollupMinuteBytes);
  }
  sqlite3_result_blob(ctx, out.data(), n, SQLITE_TRANSIENT);
}

// Reads one audit row selected with kAuditColumns.
AuditRow ReadAudit(sqlite3_stmt* st) {
  AuditRow a;
  a.seq = ColumnInt(st, 0);
  a.time_unix_ms = ColumnInt(st, 1);
  a.principal = ColumnText(st, 2);
  a.tenant = ColumnText(st, 3);
  a.verb = ColumnText(st, 4);
  a.object = ColumnText(st, 5);
  a.outcome = ColumnText(st, 6);
  a.prev_hash = ColumnText(st, 7);
  a.hash = ColumnText(st, 8);
  return a;
}

struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};

class SqliteStore final : public Store {
 public:
  // Takes ownership of `db`, even when it failed to open (to close it).
  SqliteStore(sqlite3* db, std::string describe)
      : db_(db), describe_(std::move(describe)) {}
  SqliteStore(const SqliteStore&) = delete;
  SqliteStore& operator=(const SqliteStore&) = delete;

  // Sets the pragmas, migrates, prepares statements, reads the last seq.
  Status Init();
  // Internal status naming the store, `what` and sqlite3_errmsg.
  Status Error(const std::string& what) const {
    return Status::Internal("store " + describe_ + ": " + what + ": " +
                            sqlite3_errmsg(db_.get()));
  }

  Status CommitGroup(const std::vector<const Batch*>& batches) override;
  Result<Snapshot> Load() override;
  Result<std::vector<AuditRow>> ListAudit(const AuditFilter& f) override;
  Result<std::vector<UsageRow>> ListUsage(const UsageFilter& f) override;
  Result<std::vector<RollupRow>> ListRollups(const RollupFilter& f) override;
  std::string Describe() const override { return describe_; }

 private:
  Status Prepare(const std::string& sql, Stmt* out);
  // Steps a statement that returns no rows.
  Status Run(const Stmt& stmt, const char* what);
  // Steps `st` to the end, calling row(st) for each row. The caller binds
  // and holds a ScopedReset.
  template <typename F>
  Status Query(sqlite3_stmt* st, const char* what, F&& row);
  // Applies one batch; *seq is the last audit seq before and after it.
  Status ApplyBatch(const Batch& batch, int64_t* seq);
  Status LoadInto(Snapshot* snap);
  // Ends the open transaction, if any, discarding its changes.
  void Rollback();

  // Declared first so it is closed after every statement is finalized.
  std::unique_ptr<sqlite3, DbCloser> db_;
  const std::string describe_;
  Stmt begin_write_, begin_read_, commit_, rollback_;
  Stmt delete_object_, put_object_, put_token_, put_meta_, append_audit_;
  Stmt append_usage_, list_usage_, list_usage_tenant_;
  Stmt put_rollup_, prune_rollups_, list_rollups_;
  Stmt load_objects_, load_tokens_, load_meta_, last_audit_;
  // ListAudit statements by filter shape (a bit per optional condition),
  // prepared on first use.
  std::array<Stmt, 32> list_audit_;
  // The newest committed audit seq, 0 for an empty log.
  int64_t last_seq_ = 0;
};

Status SqliteStore::Prepare(const std::string& sql, Stmt* out) {
  sqlite3_stmt* raw = nullptr;
  if (sqlite3_prepare_v3(db_.get(), sql.c_str(), -1, SQLITE_PREPARE_PERSISTENT,
                         &raw, nullptr) != SQLITE_OK) {
    return Error("preparing \"" + sql + "\"");
  }
  *out = Stmt(raw);
  return Status::Ok();
}

Status SqliteStore::Run(const Stmt& stmt, const char* what) {
  ScopedReset reset(stmt.get());
  if (sqlite3_step(stmt.get()) != SQLITE_DONE) return Error(what);
  return Status::Ok();
}

template <typename F>
Status SqliteStore::Query(sqlite3_stmt* st, const char* what, F&& row) {
  for (;;) {
    int rc = sqlite3_step(st);
    if (rc == SQLITE_DONE) return Status::Ok();
    if (rc != SQLITE_ROW) return Error(what);
    row(st);
  }
}

void SqliteStore::Rollback() {
  if (sqlite3_get_autocommit(db_.get())) return;  // SQLite already did.
  ScopedReset reset(rollback_.get());
  sqlite3_step(rollback_.get());
}

Status SqliteStore::Init() {
  sqlite3* db = db_.get();
  if (sqlite3_busy_timeout(db, kBusyTimeoutMs) != SQLITE_OK) {
    return Error("setting the busy timeout");
  }
  // The first statement reads the file: a non-database fails here.
  Stmt wal;
  ALLOT_RETURN_IF_ERROR(Prepare("PRAGMA journal_mode=WAL", &wal));
  {
    ScopedReset reset(wal.get());
    if (sqlite3_step(wal.get()) != SQLITE_ROW) {
      return Error("enabling WAL mode");
    }
    std::string mode = ColumnText(wal.get(), 0);
    if (mode != "wal") {
      return Status::FailedPrecondition(
          "store " + describe_ + ": cannot use WAL journal mode (got \"" +
          mode + "\")");
    }
  }
  // FULL syncs the WAL on every commit: a 2xx means durable, even across
  // power loss. The size limit trims the WAL after a burst.
  if (sqlite3_exec(db,
                   "PRAGMA synchronous=FULL; "
                   "PRAGMA journal_size_limit=67108864;",
                   nullptr, nullptr, nullptr) != SQLITE_OK) {
    return Error("setting pragmas");
  }
  Result<int32_t> version = sqlite::MigrateSqliteSchema(db, describe_);
  if (!version.ok()) return version.status();

  ALLOT_RETURN_IF_ERROR(Prepare("BEGIN IMMEDIATE", &begin_write_));
  ALLOT_RETURN_IF_ERROR(Prepare("BEGIN", &begin_read_));
  ALLOT_RETURN_IF_ERROR(Prepare("COMMIT", &commit_));
  ALLOT_RETURN_IF_ERROR(Prepare("ROLLBACK", &rollback_));
  ALLOT_RETURN_IF_ERROR(Prepare(
      "DELETE FROM objects WHERE kind = ?1 AND key = ?2", &delete_object_));
  ALLOT_RETURN_IF_ERROR(
      Prepare("INSERT INTO objects (kind, key, rv, body) VALUES (?1,?2,?3,?4) "
              "ON CONFLICT (kind, key) DO UPDATE SET rv = excluded.rv, "
              "body = excluded.body",
              &put_object_));
  ALLOT_RETURN_IF_ERROR(Prepare(
      "INSERT INTO tokens (id, hash, user, role, tenant, created_ms, revoked, node) "
      "VALUES (?1,?2,?3,?4,?5,?6,?7,?8) ON CONFLICT (id) DO UPDATE SET "
      "hash = excluded.hash, user = excluded.user, role = excluded.role, "
      "tenant = excluded.tenant, created_ms = excluded.created_ms, "
      "revoked = excluded.revoked, node = excluded.node",
      &put_token_));
  ALLOT_RETURN_IF_ERROR(
      Prepare("INSERT INTO meta (k, v) VALUES (?1, ?2) "
              "ON CONFLICT (k) DO UPDATE SET v = excluded.v",
              &put_meta_));
  ALLOT_RETURN_IF_ERROR(Prepare(std::string("INSERT INTO audit (") +
                                    kAuditColumns +
                                    ") VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9)",
                                &append_audit_));
  if (sqlite3_create_function_v2(db, "allot_rollup_merge", 2,
                                 SQLITE_UTF8 | SQLITE_DETERMINISTIC, nullptr,
                                 &RollupMerge, nullptr, nullptr, nullptr) != SQLITE_OK) {
    return Error("registering allot_rollup_merge");
  }
  ALLOT_RETURN_IF_ERROR(Prepare(
      "INSERT INTO gpu_rollup (uuid, hour_ms, node, minutes) VALUES (?1, ?2, ?3, ?4) "
      "ON CONFLICT (uuid, hour_ms) DO UPDATE SET node = excluded.node, "
      "minutes = allot_rollup_merge(minutes, excluded.minutes)",
      &put_rollup_));
  ALLOT_RETURN_IF_ERROR(Prepare("DELETE FROM gpu_rollup WHERE hour_ms + 3600000 <= ?1",
                                &prune_rollups_));
  ALLOT_RETURN_IF_ERROR(Prepare(
      "SELECT uuid, node, hour_ms, minutes FROM gpu_rollup "
      "WHERE hour_ms + 3600000 > ?1 AND hour_ms < ?2 "
      "AND (?3 = '' OR node = ?3) AND (?4 = '' OR uuid = ?4) ORDER BY uuid, hour_ms",
      &list_rollups_));
  ALLOT_RETURN_IF_ERROR(Prepare(std::string("INSERT INTO usage (") + kUsageColumns +
                                    ") VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14)",
                                &append_usage_));
  ALLOT_RETURN_IF_ERROR(Prepare(std::string("SELECT ") + kUsageColumns +
                                    " FROM usage WHERE end_ms > ?1 AND start_ms < ?2"
                                    " ORDER BY end_ms, id",
                                &list_usage_));
  ALLOT_RETURN_IF_ERROR(Prepare(std::string("SELECT ") + kUsageColumns +
                                    " FROM usage WHERE tenant = ?3 AND end_ms > ?1"
                                    " AND start_ms < ?2 ORDER BY end_ms, id",
                                &list_usage_tenant_));
  ALLOT_RETURN_IF_ERROR(
      Prepare("SELECT kind, key, rv, body FROM objects "
              "ORDER BY kind, rv, key",
              &load_objects_));
  ALLOT_RETURN_IF_ERROR(
      Prepare("SELECT id, hash, user, role, tenant, created_ms, revoked, node "
              "FROM tokens ORDER BY id",
              &load_tokens_));
  ALLOT_RETURN_IF_ERROR(Prepare("SELECT k, v FROM meta", &load_meta_));
  ALLOT_RETURN_IF_ERROR(Prepare(std::string("SELECT ") + kAuditColumns +
                                    " FROM audit ORDER BY seq DESC LIMIT 1",
                                &last_audit_));

  ScopedReset reset(last_audit_.get());
  return Query(last_audit_.get(), "reading the last audit record",
               [&](sqlite3_stmt* st) { last_seq_ = ColumnInt(st, 0); });
}

Status SqliteStore::ApplyBatch(const Batch& batch, int64_t* last_seq) {
  for (const auto& [kind, key] : batch.deletes) {
    sqlite3_stmt* st = delete_object_.get();
    ScopedReset reset(st);
    int rc = BindText(st, 1, kind);
    if (rc == SQLITE_OK) rc = BindText(st, 2, key);
    if (rc != SQLITE_OK || sqlite3_step(st) != SQLITE_DONE) {
      return Error("deleting " + kind + " " + key);
    }
  }
  for (const ObjectRow& o : batch.puts) {
    sqlite3_stmt* st = put_object_.get();
    ScopedReset reset(st);
    int rc = BindText(st, 1, o.kind);
    if (rc == SQLITE_OK) rc = BindText(st, 2, o.key);
    if (rc == SQLITE_OK) rc = BindInt(st, 3, o.resource_version);
    if (rc == SQLITE_OK) rc = BindText(st, 4, o.body);
    if (rc != SQLITE_OK || sqlite3_step(st) != SQLITE_DONE) {
      return Error("putting " + o.kind + " " + o.key);
    }
  }
  for (const TokenRow& t : batch.tokens) {
    sqlite3_stmt* st = put_token_.get();
    ScopedReset reset(st);
    int rc = BindText(st, 1, t.id);
    if (rc == SQLITE_OK) rc = BindText(st, 2, t.hash);
    if (rc == SQLITE_OK) rc = BindText(st, 3, t.user);
    if (rc == SQLITE_OK) rc = BindText(st, 4, t.role);
    if (rc == SQLITE_OK) rc = BindText(st, 5, t.tenant);
    if (rc == SQLITE_OK) rc = BindInt(st, 6, t.created_unix_ms);
    if (rc == SQLITE_OK) rc = BindInt(st, 7, t.revoked ? 1 : 0);
    if (rc == SQLITE_OK) rc = BindText(st, 8, t.node);
    if (rc != SQLITE_OK || sqlite3_step(st) != SQLITE_DONE) {
      return Error("writing token " + t.id);
    }
  }
  for (const auto& [k, v] : batch.meta) {
    sqlite3_stmt* st = put_meta_.get();
    ScopedReset reset(st);
    int rc = BindText(st, 1, k);
    if (rc == SQLITE_OK) rc = BindText(st, 2, v);
    if (rc != SQLITE_OK || sqlite3_step(st) != SQLITE_DONE) {
      return Error("writing meta " + k);
    }
  }
  int64_t& seq = *last_seq;
  for (const AuditRow& a : batch.audit) {
    if (a.seq != seq + 1) {
      return Status::FailedPrecondition(
          "store " + describe_ + ": audit record seq " + std::to_string(a.seq) +
          " does not continue the log, whose last seq is " +
          std::to_string(seq));
    }
    sqlite3_stmt* st = append_audit_.get();
    ScopedReset reset(st);
    int rc = BindInt(st, 1, a.seq);
    if (rc == SQLITE_OK) rc = BindInt(st, 2, a.time_unix_ms);
    if (rc == SQLITE_OK) rc = BindText(st, 3, a.principal);
    if (rc == SQLITE_OK) rc = BindText(st, 4, a.tenant);
    if (rc == SQLITE_OK) rc = BindText(st, 5, a.verb);
    if (rc == SQLITE_OK) rc = BindText(st, 6, a.object);
    if (rc == SQLITE_OK) rc = BindText(st, 7, a.outcome);
    if (rc == SQLITE_OK) rc = BindText(st, 8, a.prev_hash);
    if (rc == SQLITE_OK) rc = BindText(st, 9, a.hash);
    if (rc != SQLITE_OK || sqlite3_step(st) != SQLITE_DONE) {
      return Error("appending audit record " + std::to_string(a.seq));
    }
    seq = a.seq;
  }
  for (const RollupRow& r : batch.rollups) {
    sqlite3_stmt* st = put_rollup_.get();
    ScopedReset reset(st);
    int rc = BindText(st, 1, r.uuid);
    if (rc == SQLITE_OK) rc = BindInt(st, 2, r.hour_unix_ms);
    if (rc == SQLITE_OK) rc = BindText(st, 3, r.node);
    if (rc == SQLITE_OK) {
      rc = sqlite3_bind_blob(st, 4, r.minutes.data(), int(r.minutes.size()), SQLITE_STATIC);
    }
    if (rc != SQLITE_OK || sqlite3_step(st) != SQLITE_DONE) {
      return Error("writing the telemetry of " + r.uuid);
    }
  }
  if (batch.prune_rollups_before_ms > 0) {
    sqlite3_stmt* st = prune_rollups_.get();
    ScopedReset reset(st);
    if (BindInt(st, 1, batch.prune_rollups_before_ms) != SQLITE_OK ||
        sqlite3_step(st) != SQLITE_DONE) {
      return Error("pruning old telemetry");
    }
  }
  for (const UsageRow& u : batch.usage) {
    sqlite3_stmt* st = append_usage_.get();
    ScopedReset reset(st);
    int rc = BindText(st, 1, u.tenant);
    if (rc == SQLITE_OK) rc = BindText(st, 2, u.workload);
    if (rc == SQLITE_OK) rc = BindInt(st, 3, u.attempt);
    if (rc == SQLITE_OK) rc = BindText(st, 4, u.local_queue);
    if (rc == SQLITE_OK) rc = BindText(st, 5, u.cluster_queue);
    if (rc == SQLITE_OK) rc = BindText(st, 6, u.user);
    if (rc == SQLITE_OK) rc = BindText(st, 7, u.flavor);
    if (rc == SQLITE_OK) rc = BindText(st, 8, u.resource);
    if (rc == SQLITE_OK) rc = BindInt(st, 9, u.quantity_milli);
    if (rc == SQLITE_OK) rc = BindInt(st, 10, u.start_unix_ms);
    if (rc == SQLITE_OK) rc = BindInt(st, 11, u.end_unix_ms);
    if (rc == SQLITE_OK) rc = BindInt(st, 12, u.util_milli_ms);
    if (rc == SQLITE_OK) rc = BindInt(st, 13, u.price_micros_per_hour);
    if (rc == SQLITE_OK) rc = BindInt(st, 14, int64_t(u.kind));
    if (rc != SQLITE_OK || sqlite3_step(st) != SQLITE_DONE) {
      return Error("appending usage of " + u.tenant + "/" + u.workload);
    }
  }
  return Status::Ok();
}

Status SqliteStore::CommitGroup(const std::vector<const Batch*>& batches) {
  bool any = false;
  for (const Batch* b : batches) any = any || !b->empty();
  if (!any) return Status::Ok();
  ALLOT_RETURN_IF_ERROR(Run(begin_write_, "starting a write transaction"));
  int64_t seq = last_seq_;
  Status s;
  for (const Batch* b : batches) {
    if (s.ok()) s = ApplyBatch(*b, &seq);
  }
  if (s.ok()) s = Run(commit_, "committing");
  if (!s.ok()) {
    Rollback();
    return s;
  }
  last_seq_ = seq;
  return Status::Ok();
}

Status SqliteStore::LoadInto(Snapshot* snap) {
  {
    ScopedReset reset(load_objects_.get());
    ALLOT_RETURN_IF_ERROR(
        Query(load_objects_.get(), "loading objects", [&](sqlite3_stmt* st) {
          ObjectRow& o = snap->objects.emplace_back();
          o.kind = ColumnText(st, 0);
          o.key = ColumnText(st, 1);
          o.resource_version = ColumnInt(st, 2);
          o.body = ColumnText(st, 3);
        }));
  }
  {
    ScopedReset reset(load_tokens_.get());
    ALLOT_RETURN_IF_ERROR(
        Query(load_tokens_.get(), "loading tokens", [&](sqlite3_stmt* st) {
          TokenRow& t = snap->tokens.emplace_back();
          t.id = ColumnText(st, 0);
          t.hash = ColumnText(st, 1);
          t.user = ColumnText(st, 2);
          t.role = ColumnText(st, 3);
          t.tenant = ColumnText(st, 4);
          t.created_unix_ms = ColumnInt(st, 5);
          t.revoked = ColumnInt(st, 6) != 0;
          t.node = ColumnText(st, 7);
        }));
  }
  {
    ScopedReset reset(load_meta_.get());
    ALLOT_RETURN_IF_ERROR(
        Query(load_meta_.get(), "loading meta", [&](sqlite3_stmt* st) {
          snap->meta[ColumnText(st, 0)] = ColumnText(st, 1);
        }));
  }
  {
    ScopedReset reset(last_audit_.get());
    ALLOT_RETURN_IF_ERROR(
        Query(last_audit_.get(), "reading the last audit record",
              [&](sqlite3_stmt* st) { snap->last_audit = ReadAudit(st); }));
  }
  Result<int32_t> version = sqlite::ReadSchemaVersion(db_.get(), describe_);
  if (!version.ok()) return version.status();
  snap->schema_version = *version;
  return Status::Ok();
}

Result<Snapshot> SqliteStore::Load() {
  // One read transaction, so every table is read at the same commit.
  ALLOT_RETURN_IF_ERROR(Run(begin_read_, "starting a read transaction"));
  Snapshot snap;
  Status s = LoadInto(&snap);
  if (s.ok()) s = Run(commit_, "ending the read transaction");
  if (!s.ok()) {
    Rollback();
    return s;
  }
  last_seq_ = snap.last_audit ? snap.last_audit->seq : 0;
  return snap;
}

Result<std::vector<AuditRow>> SqliteStore::ListAudit(const AuditFilter& f) {
  if (f.limit < 0) {
    return Status::InvalidArgument(
        "audit limit must be 0 (no limit) or positive, got " +
            std::to_string(f.limit),
        "limit");
  }
  // Only the conditions in use appear in the SQL, so the planner can pick
  // the index of whichever equality filter is present.
  const int shape = (f.since_unix_ms ? 1 : 0) | (f.until_unix_ms ? 2 : 0) |
                    (f.principal.empty() ? 0 : 4) | (f.tenant.empty() ? 0 : 8) |
                    (f.verb.empty() ? 0 : 16);
  Stmt& stmt = list_audit_[shape];
  if (!stmt) {
    std::string sql =
        std::string("SELECT ") + kAuditColumns + " FROM audit WHERE seq > ?1";
    if (shape & 1) sql += " AND time_ms >= ?2";
    if (shape & 2) sql += " AND time_ms < ?3";
    if (shape & 4) sql += " AND principal = ?4";
    if (shape & 8) sql += " AND tenant = ?5";
    if (shape & 16) sql += " AND verb = ?6";
    // ?7 is the highest parameter, so every index below it can be bound
    // whether or not the shape uses it.
    sql += " ORDER BY seq LIMIT ?7";
    ALLOT_RETURN_IF_ERROR(Prepare(sql, &stmt));
  }
  sqlite3_stmt* st = stmt.get();
  ScopedReset reset(st);
  int rc = BindInt(st, 1, f.after_seq);
  if (rc == SQLITE_OK) rc = BindInt(st, 2, f.since_unix_ms.value_or(0));
  if (rc == SQLITE_OK) rc = BindInt(st, 3, f.until_unix_ms.value_or(0));
  if (rc == SQLITE_OK) rc = BindText(st, 4, f.principal);
  if (rc == SQLITE_OK) rc = BindText(st, 5, f.tenant);
  if (rc == SQLITE_OK) rc = BindText(st, 6, f.verb);
  if (rc == SQLITE_OK) rc = BindInt(st, 7, f.limit > 0 ? f.limit : -1);
  if (rc != SQLITE_OK) return Error("listing audit records");
  std::vector<AuditRow> rows;
  ALLOT_RETURN_IF_ERROR(
      Query(st, "listing audit records",
            [&](sqlite3_stmt* row) { rows.push_back(ReadAudit(row)); }));
  return rows;
}

Result<std::vector<UsageRow>> SqliteStore::ListUsage(const UsageFilter& f) {
  if (f.until_unix_ms <= f.since_unix_ms) {
    return Status::InvalidArgument("the usage window is empty: until must be after since",
                                   "until");
  }
  Stmt& stmt = f.tenant.empty() ? list_usage_ : list_usage_tenant_;
  sqlite3_stmt* st = stmt.get();
  ScopedReset reset(st);
  int rc = BindInt(st, 1, f.since_unix_ms);
  if (rc == SQLITE_OK) rc = BindInt(st, 2, f.until_unix_ms);
  if (rc == SQLITE_OK && !f.tenant.empty()) rc = BindText(st, 3, f.tenant);
  if (rc != SQLITE_OK) return Error("listing usage");
  std::vector<UsageRow> rows;
  ALLOT_RETURN_IF_ERROR(Query(st, "listing usage", [&](sqlite3_stmt* row) {
    rows.push_back(ReadUsage(row));
  }));
  return rows;
}

Result<std::vector<RollupRow>> SqliteStore::ListRollups(const RollupFilter& f) {
  if (f.until_unix_ms <= f.since_unix_ms) {
    return Status::InvalidArgument("the telemetry window is empty: until must be after since",
                                   "until");
  }
  sqlite3_stmt* st = list_rollups_.get();
  ScopedReset reset(st);
  int rc = BindInt(st, 1, f.since_unix_ms);
  if (rc == SQLITE_OK) rc = BindInt(st, 2, f.until_unix_ms);
  if (rc == SQLITE_OK) rc = BindText(st, 3, f.node);
  if (rc == SQLITE_OK) rc = BindText(st, 4, f.uuid);
  if (rc != SQLITE_OK) return Error("listing telemetry");
  std::vector<RollupRow> rows;
  ALLOT_RETURN_IF_ERROR(Query(st, "listing telemetry", [&](sqlite3_stmt* row) {
    RollupRow r;
    r.uuid = ColumnText(row, 0);
    r.node = ColumnText(row, 1);
    r.hour_unix_ms = ColumnInt(row, 2);
    const void* b = sqlite3_column_blob(row, 3);
    r.minutes.assign(static_cast<const char*>(b), size_t(sqlite3_column_bytes(row, 3)));
    rows.push_back(std::move(r));
  }));
  return rows;
}

}  // namespace

Result<std::unique_ptr<Store>> OpenSqliteStore(const std::string& path) {
  const std::string describe = "sqlite:" + path;
  const std::filesystem::path parent =
      std::filesystem::path(path).parent_path();
  if (!parent.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(parent, ec);
    if (ec) {
      return Status::FailedPrecondition("store " + describe +
                                        ": cannot create directory " +
                                        parent.string() + ": " + ec.message());
    }
  }
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(
      path.c_str(), &db,
      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
      nullptr);
  auto store = std::make_unique<SqliteStore>(db, describe);
  if (rc != SQLITE_OK) return store->Error("opening");
  ALLOT_RETURN_IF_ERROR(store->Init());
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace allot::store
