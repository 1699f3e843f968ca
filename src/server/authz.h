// Who may do what: roles, principals and the access rules.
//
// Roles (each token holds one, bound to one tenant unless cluster-admin):
//   cluster-admin  everything;
//   tenant-admin   its tenant's LocalQueues, Workloads and member tokens;
//   member         submits, reads and deletes its tenant's Workloads,
//                  reads its tenant's LocalQueues;
//   viewer         reads its tenant's Workloads and LocalQueues;
//   node           a node agent's token: registers its node, reports what
//                  runs there and learns what to run (no tenant). Unbound,
//                  it is a join token for any node name; bound to a name
//                  ("gpu-07") or a prefix ("sim-*", for --simulate-nodes),
//                  it acts only as the nodes that match (MayActAsNode);
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
#include <utility>

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
  // A node token's binding: a node name, or a prefix ending in '*'; empty:
  // any node.
  std::string node;
};

// Who a change is made by, as State records it (a workload's submittedBy,
// the "(by NAME)" of an eviction), and whether a tenant's priority policy
// binds it. State checks no principal: the API edge decides who may call
// what (server/access.h) and hands State the Actor; the server's own actors
// (controllers, an agent registering its node) are named system actors.
struct Actor {
  std::string name;
  // Cluster-admins and the system may give a workload any priority class
  // or a literal priority (core/priority_policy.h).
  bool bypasses_priority_policy = false;

  static Actor Of(const Principal& p) { return {p.user, p.role == Role::kClusterAdmin}; }
  // "controller:deadlines", "agent:gpu-07".
  static Actor System(std::string name) { return {std::move(name), true}; }
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
  kTopology,  // Before kWorkload: the config kinds index ConfigObject.
  kImage,
  kNodePool,  // Autoscaled ones (docs/autoscaling.md).
  kWorkload,
};
inline constexpr int kNumKinds = 11;
const char* KindName(Kind k);    // "ResourceFlavor", ...
const char* KindPlural(Kind k);  // "resourceflavors", ... (the API path)
bool IsNamespaced(Kind k);       // LocalQueue, Workload.
// The tenant object (kind, key) belongs to: a Tenant's own name, a
// namespaced object's namespace ("ns/name"), "" for shared infrastructure.
std::string TenantOf(Kind kind, const std::string& key);
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
// Whether `p` may register, sync and report for node `name`: every node
// unless p's token is bound to a name or prefix that `name` does not match.
bool MayActAsNode(const Principal& p, const std::string& name);
// Whether `binding` is a node name (a DNS-1123 subdomain) or a prefix of
// one followed by a single '*' at the end ("sim-*").
bool IsNodeBinding(const std::string& binding);

}  // namespace allot::server
