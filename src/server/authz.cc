#include "server/authz.h"

#include <mutex>

namespace allot::server {

const char* ToString(Role r) {
  switch (r) {
    case Role::kClusterAdmin: return "cluster-admin";
    case Role::kTenantAdmin: return "tenant-admin";
    case Role::kMember: return "member";
    case Role::kViewer: return "viewer";
    case Role::kNode: return "node";
    case Role::kMetrics: return "metrics";
  }
  return "?";
}

Result<Role> ParseRole(const std::string& s) {
  for (Role r : {Role::kClusterAdmin, Role::kTenantAdmin, Role::kMember,
                 Role::kViewer, Role::kNode, Role::kMetrics}) {
    if (s == ToString(r)) return r;
  }
  return Status::InvalidArgument(
      "unknown role '" + s +
          "': use cluster-admin, tenant-admin, member, viewer, node or metrics",
      "role");
}

namespace {
struct KindInfo {
  const char* name;
  const char* plural;
  bool namespaced;
};
constexpr KindInfo kKinds[kNumKinds] = {
    {"ResourceFlavor", "resourceflavors", false},
    {"Cohort", "cohorts", false},
    {"ClusterQueue", "clusterqueues", false},
    {"LocalQueue", "localqueues", true},
    {"WorkloadPriorityClass", "workloadpriorityclasses", false},
    {"Tenant", "tenants", false},
    {"Node", "nodes", false},
    {"Topology", "topologies", false},
    {"Image", "images", false},
    {"NodePool", "nodepools", false},
    {"Workload", "workloads", true},
};
}  // namespace

const char* KindName(Kind k) { return kKinds[int(k)].name; }
const char* KindPlural(Kind k) { return kKinds[int(k)].plural; }
bool IsNamespaced(Kind k) { return kKinds[int(k)].namespaced; }

std::string TenantOf(Kind kind, const std::string& key) {
  if (kind == Kind::kTenant) return key;
  if (!IsNamespaced(kind)) return "";
  size_t slash = key.find('/');
  return slash == std::string::npos ? "" : key.substr(0, slash);
}

Result<Kind> KindFromPlural(const std::string& plural) {
  for (int i = 0; i < kNumKinds; ++i) {
    if (plural == kKinds[i].plural) return Kind(i);
  }
  return Status::NotFound("no resource type '" + plural + "'");
}

Result<Kind> KindFromName(const std::string& name) {
  for (int i = 0; i < kNumKinds; ++i) {
    if (name == kKinds[i].name) return Kind(i);
  }
  return Status::NotFound("no kind '" + name + "'");
}

bool CanSee(const Principal& p, Kind kind, const std::string& tenant) {
  if (p.role == Role::kClusterAdmin) return true;
  // Only the agent protocol, or only /metrics.
  if (p.role == Role::kNode || p.role == Role::kMetrics) return false;
  switch (kind) {
    case Kind::kResourceFlavor:
    case Kind::kCohort:
    case Kind::kClusterQueue:
    case Kind::kWorkloadPriorityClass:
    case Kind::kNode:
    case Kind::kTopology:
    case Kind::kImage:
    case Kind::kNodePool:
      return true;
    case Kind::kTenant:
    case Kind::kLocalQueue:
    case Kind::kWorkload:
      return tenant == p.tenant;
  }
  return false;
}

bool CanWrite(const Principal& p, Kind kind, const std::string& tenant) {
  if (p.role == Role::kClusterAdmin) return true;
  if (tenant != p.tenant) return false;
  switch (kind) {
    case Kind::kLocalQueue:
      return p.role == Role::kTenantAdmin;
    case Kind::kWorkload:
      return p.role == Role::kTenantAdmin || p.role == Role::kMember;
    default:
      return false;
  }
}

bool CanGrant(const Principal& p, Role role, const std::string& tenant) {
  if (p.role == Role::kClusterAdmin) return true;
  return p.role == Role::kTenantAdmin && role != Role::kClusterAdmin &&
         role != Role::kNode && role != Role::kMetrics && tenant == p.tenant;
}

bool MayActAsNode(const Principal& p, const std::string& name) {
  if (p.node.empty()) return true;
  if (p.node.back() == '*') {
    return name.compare(0, p.node.size() - 1, p.node, 0, p.node.size() - 1) == 0;
  }
  return name == p.node;
}

bool IsNodeBinding(const std::string& binding) {
  const bool prefix = !binding.empty() && binding.back() == '*';
  const std::string s = prefix ? binding.substr(0, binding.size() - 1) : binding;
  if (s.empty() || s.size() > 253) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.')) {
      return false;
    }
  }
  const auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  // A name starts and ends with a letter or digit, and so does each label;
  // a prefix may end anywhere.
  if (!alnum(s.front()) || (!prefix && !alnum(s.back()))) return false;
  if (s.find("..") != std::string::npos || s.find(".-") != std::string::npos ||
      s.find("-.") != std::string::npos) {
    return false;
  }
  return true;
}

std::optional<Principal> TokenIndex::Find(const std::string& hash) const {
  std::shared_lock<std::shared_mutex> l(mu_);
  auto it = by_hash_.find(hash);
  if (it == by_hash_.end()) return std::nullopt;
  return it->second;
}

bool TokenIndex::Contains(const std::string& hash) const {
  std::shared_lock<std::shared_mutex> l(mu_);
  return by_hash_.count(hash) != 0;
}

void TokenIndex::Put(const std::string& hash, Principal p) {
  std::unique_lock<std::shared_mutex> l(mu_);
  by_hash_[hash] = std::move(p);
}

void TokenIndex::Erase(const std::string& hash) {
  std::unique_lock<std::shared_mutex> l(mu_);
  by_hash_.erase(hash);
}

}  // namespace allot::server
