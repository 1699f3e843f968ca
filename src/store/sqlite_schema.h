// The SQLite store's schema: an ordered list of migrations, private to
// src/store.
//
// The version lives in PRAGMA user_version: 0 is an empty file, N means
// migrations 1..N have run. MigrateSqliteSchema brings a database up to
// kSqliteSchemaVersion in one IMMEDIATE transaction (all steps or none),
// re-reading the version inside that transaction so two processes opening
// the same new file do not both migrate it. A database whose version is
// newer than this binary knows is refused with FailedPrecondition and left
// untouched.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>

#include "core/status.h"

namespace allot::store::sqlite {

// The newest schema version this binary writes and reads.
inline constexpr int32_t kSqliteSchemaVersion = 5;

// Runs the missing migrations on `db`; returns the resulting version.
// `describe` ("sqlite:PATH") names the store in error messages.
Result<int32_t> MigrateSqliteSchema(sqlite3* db, const std::string& describe);

// The version recorded in `db` (PRAGMA user_version).
Result<int32_t> ReadSchemaVersion(sqlite3* db, const std::string& describe);

}  // namespace allot::store::sqlite
