// Each tenant's number on this node, in the order the agent first sees
// them, kept in a file so that a tenant keeps its number (and so its host
// ids) across agent restarts. Both runtimes number tenants from the same
// file: tenant k's container root is host id BASE + k * 65536 (the user
// namespace, container.h), and so is the user its process pods run as
// (agent.h), so a tenant is one host identity on the node whatever runs
// its pods. Thread-safe, and safe for agents on one machine that share
// the file (a lock beside it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "core/status.h"

namespace allot::agent {

inline constexpr uint32_t kIdsPerTenant = 65536;

// The first directory on the way to `path` (itself included) that other
// users cannot pass (no o+x), "" when there is none: a tenant's ids cannot
// reach what lies under it.
std::string FirstClosedDir(const std::string& path);

class TenantIds {
 public:
  // Reads `file` (one tenant per line) if it exists.
  explicit TenantIds(std::string file);
  // The tenant's number: its place in the file, appended when new (the
  // file written whole and synced before the number is used: a number
  // given twice would give two tenants one identity).
  // FailedPrecondition when the file cannot be written.
  Result<size_t> Index(const std::string& tenant);
  // The first host id of the tenant's range above `base`.
  Result<int64_t> HostId(uint32_t base, const std::string& tenant) {
    Result<size_t> k = Index(tenant);
    if (!k.ok()) return k.status();
    return static_cast<int64_t>(base) + static_cast<int64_t>(*k) * kIdsPerTenant;
  }

 private:
  const std::string file_;
  std::mutex mu_;
  std::vector<std::string> tenants_;  // Guarded by mu_; the file's, as last read.
};

}  // namespace allot::agent
