// The SQLite backend of Store, private to src/store (callers use OpenStore).
//
// One file in WAL mode with synchronous=FULL: Commit returns after the WAL
// is fsynced, so an acknowledged batch survives kill -9 and power loss.
// Every Commit is one BEGIN IMMEDIATE transaction run through statements
// prepared once per store. The last audit seq is cached in memory (read at
// open, refreshed by Load) and advanced only by a successful Commit.
// Thread-compatible, like every Store; other processes may open the same
// file (a busy timeout waits for their locks) but only one should write.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "store/store.h"

namespace allot::store {

// Opens or creates the SQLite store at `path` (relative to the working
// directory when not absolute), creating its parent directory and running
// the schema migrations. Errors name "sqlite:PATH".
Result<std::unique_ptr<Store>> OpenSqliteStore(const std::string& path);

}  // namespace allot::store
