// Who may do what: roles, principals and the access rules.
//
// Roles (each token holds one, bound to one tenant unless cluster-admin):
//   cluster-admin  everything;
//   tenant-admin   its tenant's LocalQueues, Workloads and member tokens;
//   member         submits, reads and deletes its tenant's Workloads,
//                  reads its tenant's LocalQueues;
//   viewer         reads its tenant's Workloads and LocalQueues;
//   node           a node agent's join token: registers its node, reports
//                  what runs there and learns what to run (no tenant);
//   metrics        reads GET /metrics only (a Prometheus scrape token; no
//                  tenant).
// Every role reads the shared infrastructure (ResourceFlavors, Cohorts,
// ClusterQueues, WorkloadPriorityClasses, Nodes) and its own Tenant.
// Objects of another tenant do not exist for a tenant-bound principal: the
// API answers 404, never 403, so names in other tenants do not leak.
#pragma once

#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>

#include "core/status.h"

namespace allot::server {

enum class Role { kClusterAdmin, kTenantAdmin, kMember, kViewer, kNode, kMetrics };
const char* ToString(Role r);
Result<Role> ParseRole(const std::string& s);

struct Principal {
  std::string user;
  Role role = Role::kViewer;
  std::string tenant;  // Empty for cluster-admin.
  std::string token_id;
};

// The live (unrevoked) tokens by the SHA-256 of their secret. The state
// owner keeps it; network threads read it to turn away a request with no
// valid token before parsing its body. Thread-safe.
class TokenIndex {
 public:
  std::optional<Principal> Find(const std::string& hash) const;
  bool Contains(const std::string& hash) const;
  void Put(const std::string& hash, Principal p);
  void Erase(const std::string& hash);

 private:
  mutable std::shared_mutex mu_;
  std::unordered_map<std::string, Principal> by_hash_;
};

enum class Kind {
  kResourceFlavor,
  kCohort,
  kClusterQueue,
  kLocalQueue,
  kWorkloadPriorityClass,
  kTenant,
  kNode,
  kWorkload,
};
inline constexpr int kNumKinds = 8;
const char* KindName(Kind k);    // "ResourceFlavor", ...
const char* KindPlural(Kind k);  // "resourceflavors", ... (the API path)
bool IsNamespaced(Kind k);       // LocalQueue, Workload.
Result<Kind> KindFromPlural(const std::string& plural);
Result<Kind> KindFromName(const std::string& name);

enum class Verb { kRead, kWrite };

// Whether `p` may see objects of `kind` in `tenant` ("" for cluster-scoped
// kinds; for Tenant objects, the tenant's own name).
bool CanSee(const Principal& p, Kind kind, const std::string& tenant);
// Whether `p` may create, replace or delete them (CanSee is implied).
bool CanWrite(const Principal& p, Kind kind, const std::string& tenant);
// Whether `p` may create a token with `role` for `tenant`.
bool CanGrant(const Principal& p, Role role, const std::string& tenant);

}  // namespace allot::server
