// Schema migrations of the SQLite store (see sqlite_schema.h).
#include "store/sqlite_schema.h"

#include <sqlite3.h>

#include <cstdint>
#include <iterator>
#include <string>

#include "core/status.h"

namespace allot::store::sqlite {
namespace {

// Migration i (0-based) takes the schema from version i to version i + 1.
// Append only: a released step is never edited, a change is a new step.
constexpr const char* kMigrations[] = {
    // 1: objects, tokens, meta and the audit log.
    R"sql(
CREATE TABLE objects (
  kind TEXT NOT NULL,
  key TEXT NOT NULL,
  rv INTEGER NOT NULL,
  body TEXT NOT NULL,
  PRIMARY KEY (kind, key)
);
CREATE INDEX objects_kind_rv ON objects (kind, rv);

CREATE TABLE tokens (
  id TEXT PRIMARY KEY NOT NULL,
  hash TEXT NOT NULL UNIQUE,
  user TEXT NOT NULL,
  role TEXT NOT NULL,
  tenant TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  revoked INTEGER NOT NULL
);

CREATE TABLE meta (
  k TEXT PRIMARY KEY NOT NULL,
  v TEXT NOT NULL
);

CREATE TABLE audit (
  seq INTEGER PRIMARY KEY,
  time_ms INTEGER NOT NULL,
  principal TEXT NOT NULL,
  tenant TEXT NOT NULL,
  verb TEXT NOT NULL,
  object TEXT NOT NULL,
  outcome TEXT NOT NULL,
  prev_hash TEXT NOT NULL,
  hash TEXT NOT NULL
);
-- seq is the rowid, so each index below is ordered by (column, seq) and
-- serves "column = ? AND seq > ? ORDER BY seq" without sorting.
CREATE INDEX audit_time ON audit (time_ms);
CREATE INDEX audit_principal ON audit (principal);
CREATE INDEX audit_tenant ON audit (tenant);
CREATE INDEX audit_verb ON audit (verb);
)sql",
    // 2: usage accounting (closed stretches of held resources).
    R"sql(
CREATE TABLE usage (
  id INTEGER PRIMARY KEY,
  tenant TEXT NOT NULL,
  workload TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  local_queue TEXT NOT NULL,
  cluster_queue TEXT NOT NULL,
  user TEXT NOT NULL,
  flavor TEXT NOT NULL,
  resource TEXT NOT NULL,
  quantity_milli INTEGER NOT NULL,
  start_ms INTEGER NOT NULL,
  end_ms INTEGER NOT NULL,
  util_milli_ms INTEGER NOT NULL,
  price_micros_per_hour INTEGER NOT NULL
);
CREATE INDEX usage_end ON usage (end_ms);
CREATE INDEX usage_tenant_end ON usage (tenant, end_ms);
)sql",
    // 3: GPU telemetry, one row per GPU-hour (store::RollupRow).
    R"sql(
CREATE TABLE gpu_rollup (
  uuid TEXT NOT NULL,
  hour_ms INTEGER NOT NULL,
  node TEXT NOT NULL,
  minutes BLOB NOT NULL,
  PRIMARY KEY (uuid, hour_ms)
) WITHOUT ROWID;
CREATE INDEX gpu_rollup_hour ON gpu_rollup (hour_ms);
)sql",
    // 4: node tokens bound to a node name or prefix ('' for any node).
    R"sql(
ALTER TABLE tokens ADD COLUMN node TEXT NOT NULL DEFAULT '';
)sql",
    // 5: what a usage stretch was (store::UsageKind: 0 run, 1 parked,
    // 2 on parked capacity).
    R"sql(
ALTER TABLE usage ADD COLUMN kind INTEGER NOT NULL DEFAULT 0;
)sql",
};

static_assert(std::size(kMigrations) == kSqliteSchemaVersion,
              "kSqliteSchemaVersion must equal the number of migrations");

Status ExecError(sqlite3* db, const std::string& describe,
                 const std::string& what) {
  return Status::Internal("store " + describe + ": " + what + ": " +
                          sqlite3_errmsg(db));
}

Status Exec(sqlite3* db, const std::string& describe, const char* sql,
            const std::string& what) {
  if (sqlite3_exec(db, sql, nullptr, nullptr, nullptr) != SQLITE_OK) {
    return ExecError(db, describe, what);
  }
  return Status::Ok();
}

Status TooNew(const std::string& describe, int32_t version) {
  return Status::FailedPrecondition(
      "store " + describe + " has schema version " + std::to_string(version) +
      ", this allot knows up to " + std::to_string(kSqliteSchemaVersion) +
      "; upgrade allot");
}

Result<int32_t> Migrate(sqlite3* db, const std::string& describe) {
  Result<int32_t> current = ReadSchemaVersion(db, describe);
  if (!current.ok()) return current.status();
  if (*current > kSqliteSchemaVersion) return TooNew(describe, *current);
  for (int32_t v = *current; v < kSqliteSchemaVersion; ++v) {
    ALLOT_RETURN_IF_ERROR(Exec(db, describe, kMigrations[v],
                               "schema migration " + std::to_string(v + 1)));
  }
  if (*current < kSqliteSchemaVersion) {
    const std::string set =
        "PRAGMA user_version = " + std::to_string(kSqliteSchemaVersion);
    ALLOT_RETURN_IF_ERROR(
        Exec(db, describe, set.c_str(), "recording the schema version"));
  }
  return kSqliteSchemaVersion;
}

}  // namespace

Result<int32_t> ReadSchemaVersion(sqlite3* db, const std::string& describe) {
  sqlite3_stmt* raw = nullptr;
  if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &raw, nullptr) !=
      SQLITE_OK) {
    return ExecError(db, describe, "reading the schema version");
  }
  int rc = sqlite3_step(raw);
  int64_t version = rc == SQLITE_ROW ? sqlite3_column_int64(raw, 0) : 0;
  Status s = rc == SQLITE_ROW
                 ? Status::Ok()
                 : ExecError(db, describe, "reading the schema version");
  sqlite3_finalize(raw);
  if (!s.ok()) return s;
  return static_cast<int32_t>(version);
}

Result<int32_t> MigrateSqliteSchema(sqlite3* db, const std::string& describe) {
  // Cheap check first, outside any write lock: an up-to-date or too-new
  // database needs no transaction at all.
  Result<int32_t> current = ReadSchemaVersion(db, describe);
  if (!current.ok()) return current.status();
  if (*current == kSqliteSchemaVersion) return *current;
  if (*current > kSqliteSchemaVersion) return TooNew(describe, *current);

  ALLOT_RETURN_IF_ERROR(
      Exec(db, describe, "BEGIN IMMEDIATE", "starting the schema migration"));
  Result<int32_t> migrated = Migrate(db, describe);
  if (migrated.ok()) {
    Status s = Exec(db, describe, "COMMIT", "committing the schema migration");
    if (s.ok()) return migrated;
    migrated = s;
  }
  if (!sqlite3_get_autocommit(db)) {
    sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  return migrated;
}

}  // namespace allot::store::sqlite
