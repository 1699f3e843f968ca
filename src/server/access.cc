#include "server/access.h"

#include <algorithm>
#include <type_traits>
#include <vector>

#include "core/priority_policy.h"
#include "server/state.h"

namespace allot::server {

namespace {

constexpr uint32_t Bit(Role r) { return 1u << static_cast<int>(r); }
constexpr uint32_t kAdmin = Bit(Role::kClusterAdmin);
// The roles of people (and their tools): everything but the agent protocol
// and the scrape.
constexpr uint32_t kPeople =
    kAdmin | Bit(Role::kTenantAdmin) | Bit(Role::kMember) | Bit(Role::kViewer);
constexpr uint32_t kEveryone = kPeople | Bit(Role::kNode) | Bit(Role::kMetrics);

// How a refusal reads.
enum class Refusal : uint8_t {
  kPeopleOnly,  // "a node token may not WHAT: it may only ..."
  kAdminOnly,   // "only a cluster-admin may WHAT"
  kAgentOnly,   // "only a node token ... may WHAT"
  kScrapeOnly,  // "only a cluster-admin or a metrics token may read /metrics"
};

struct RouteRule {
  Route route;
  uint32_t roles;  // Bit(role) of every role that may call it.
  Refusal refusal;
};

// The table: one row per route, in Route's order.
constexpr RouteRule kRouteRules[] = {
    {Route::kWhoami, kEveryone, Refusal::kPeopleOnly},
    {Route::kObjectRead, kPeople, Refusal::kPeopleOnly},
    {Route::kObjectWrite, kPeople, Refusal::kPeopleOnly},
    {Route::kTokens, kPeople, Refusal::kPeopleOnly},
    {Route::kAuditRead, kAdmin, Refusal::kAdminOnly},
    {Route::kAuditAcknowledge, kAdmin, Refusal::kAdminOnly},
    // People reach it; then MayActOnNode: a node that does not exist is 404
    // for everyone, and only a cluster-admin acts on one that does.
    {Route::kNodeAction, kPeople, Refusal::kPeopleOnly},
    {Route::kPodLog, kPeople, Refusal::kPeopleOnly},
    {Route::kAgentSync, kAdmin | Bit(Role::kNode), Refusal::kAgentOnly},
    {Route::kAgentLogs, kAdmin | Bit(Role::kNode), Refusal::kAgentOnly},
    {Route::kMetrics, kAdmin | Bit(Role::kMetrics), Refusal::kScrapeOnly},
    {Route::kReports, kPeople, Refusal::kPeopleOnly},
    // People reach it; then MayUseSecrets by tenant and role.
    {Route::kSecrets, kPeople, Refusal::kPeopleOnly},
};
static_assert(std::size(kRouteRules) ==
              static_cast<size_t>(Route::kSecrets) + 1);

template <typename T>
std::string KeyOf(const T& obj) {
  if constexpr (requires { obj.ns; }) {
    return obj.ns + "/" + obj.name;
  } else {
    return obj.name;
  }
}

// One configuration object of `kind` named `key` (its tenant: the key's
// namespace, or a Tenant's own name), as State's configuration changes
// checked it before.
Status MayWriteConfig(const Principal& p, Kind kind, const std::string& key) {
  const std::string tenant = TenantOf(kind, key);
  const std::string what = std::string(KindName(kind)) + " " + key;
  if (CanWrite(p, kind, tenant)) return Status::Ok();
  if (!CanSee(p, kind, tenant)) {
    return kind == Kind::kLocalQueue
               ? Status::NotFound("tenant " + tenant + " does not exist",
                                  "metadata.namespace")
               : Status::NotFound(what + " does not exist");
  }
  return Status::PermissionDenied(std::string("role ") + ToString(p.role) +
                                  " may not change " + what);
}

}  // namespace

Status RouteAllows(Route r, const Principal& p, const std::string& what) {
  const RouteRule& rule = kRouteRules[static_cast<size_t>(r)];
  if (rule.roles & Bit(p.role)) return Status::Ok();
  switch (rule.refusal) {
    case Refusal::kPeopleOnly: {
      const char* only =
          p.role == Role::kNode
              ? "it may only register and sync its node (/api/v1/agent/...)"
              : "it may only read /metrics";
      return Status::PermissionDenied(std::string("a ") + ToString(p.role) +
                                      " token may not " + what + ": " + only);
    }
    case Refusal::kAdminOnly:
      return Status::PermissionDenied("only a cluster-admin may " + what);
    case Refusal::kAgentOnly:
      return Status::PermissionDenied(
          "only a node token (allot token create --role node) may " + what);
    case Refusal::kScrapeOnly:
      return Status::PermissionDenied(
          "only a cluster-admin or a metrics token (allot token create --role "
          "metrics) may "
          "read /metrics");
  }
  return Status::PermissionDenied("refused");
}

Status MayCreateOrApply(const Principal& p, const core::Config& docs,
                        const State& st) {
  // In the order State's configuration change meets them: the objects in
  // document order, then the SchedulerConfig, then the workloads.
  struct Obj {
    int doc;
    Kind kind;
    std::string key;
    const core::LocalQueue* queue;  // A LocalQueue's, for its annotations.
  };
  std::vector<Obj> objs;
  auto take = [&](Kind kind, const auto& v) {
    for (const auto& x : v) {
      const core::LocalQueue* q = nullptr;
      if constexpr (std::is_same_v<std::decay_t<decltype(x)>, core::LocalQueue>)
        q = &x;
      objs.push_back({x.source.doc_index, kind, KeyOf(x), q});
    }
  };
  take(Kind::kResourceFlavor, docs.flavors);
  take(Kind::kTopology, docs.topologies);
  take(Kind::kImage, docs.images);
  take(Kind::kNodePool, docs.node_pools);
  take(Kind::kCohort, docs.cohorts);
  take(Kind::kClusterQueue, docs.cluster_queues);
  take(Kind::kLocalQueue, docs.local_queues);
  take(Kind::kWorkloadPriorityClass, docs.priority_classes);
  take(Kind::kTenant, docs.namespaces);
  take(Kind::kNode, docs.nodes);
  std::stable_sort(objs.begin(), objs.end(),
                   [](const Obj& a, const Obj& b) { return a.doc < b.doc; });
  const bool admin = p.role == Role::kClusterAdmin;
  const core::Labels none;
  for (const Obj& o : objs) {
    ALLOT_RETURN_IF_ERROR(MayWriteConfig(p, o.kind, o.key));
    if (o.queue == nullptr || admin) continue;
    // A tenant-admin writes its LocalQueues, not what priorities they allow.
    auto old = st.objects().local_queues.find(o.key);
    const core::Labels& before = old == st.objects().local_queues.end()
                                     ? none
                                     : old->second.obj.annotations;
    if (core::PriorityPolicyChanged(before, o.queue->annotations)) {
      return Status::PermissionDenied(
          "only a cluster-admin may set the priority policy of LocalQueue " +
              o.key + " (annotations " + core::kPriorityClassesKey + ", " +
              core::kDefaultPriorityClassKey + ", " +
              core::kAllowLiteralPriorityKey + ")",
          "metadata.annotations");
    }
  }
  if (docs.scheduler_declared && !admin) {
    return Status::PermissionDenied(
        "only a cluster-admin may change the SchedulerConfig");
  }
  for (const core::Workload& w : docs.workloads) {
    if (!CanSee(p, Kind::kWorkload, w.ns)) {
      return Status::NotFound("tenant " + w.ns + " does not exist",
                              "metadata.namespace");
    }
    if (!CanWrite(p, Kind::kWorkload, w.ns)) {
      return Status::PermissionDenied(std::string("role ") + ToString(p.role) +
                                      " may not submit workloads");
    }
  }
  return Status::Ok();
}

Status MayWriteObject(const Principal& p, Kind kind, const std::string& key,
                      const char* verb, const State& st) {
  const std::string tenant = TenantOf(kind, key);
  const std::string what = std::string(KindName(kind)) + " " + key;
  if (!CanSee(p, kind, tenant) || !st.Exists(kind, key)) {
    return Status::NotFound(what + " does not exist");
  }
  if (!CanWrite(p, kind, tenant)) {
    return Status::PermissionDenied(std::string("role ") + ToString(p.role) +
                                    " may not " + verb + " " + what);
  }
  return Status::Ok();
}

Status MayCreateToken(const Principal& p, Role role,
                      const std::string& tenant) {
  const bool tenantless = role == Role::kClusterAdmin || role == Role::kNode ||
                          role == Role::kMetrics;
  if (!tenantless && !tenant.empty() && p.role != Role::kClusterAdmin &&
      tenant != p.tenant) {
    return Status::NotFound("tenant " + tenant + " does not exist", "tenant");
  }
  if (!CanGrant(p, role, tenant)) {
    return Status::PermissionDenied(std::string("role ") + ToString(p.role) +
                                    " may not create " + ToString(role) +
                                    " tokens");
  }
  return Status::Ok();
}

Status MayRevokeToken(const Principal& p, const std::string& id,
                      const State& st) {
  const store::TokenRow* t = st.tokens().Find(id);
  if (t != nullptr && !t->revoked) {
    Result<Role> role = ParseRole(t->role);
    if (role.ok() && CanGrant(p, *role, t->tenant)) return Status::Ok();
  }
  return Status::NotFound("token " + id + " does not exist", "id");
}

Status MayActOnNode(const Principal& p, const std::string& node,
                    const std::string& action, const State& st) {
  if (!st.Exists(Kind::kNode, node))
    return Status::NotFound("Node " + node + " does not exist");
  if (p.role != Role::kClusterAdmin) {
    return Status::PermissionDenied("only a cluster-admin may " + action +
                                    " nodes");
  }
  return Status::Ok();
}

Status MayUseSecrets(const Principal& p, const std::string& ns, SecretAccess a,
                     const State& st) {
  const bool admin = p.role == Role::kClusterAdmin;
  if ((!admin && p.tenant != ns) || !st.objects().tenants.count(ns)) {
    return Status::NotFound("tenant " + ns + " does not exist");
  }
  if (admin || p.role == Role::kTenantAdmin) return Status::Ok();
  if (a == SecretAccess::kReveal) {
    return Status::PermissionDenied(
        "a Secret's values are shown to its tenant's admins only; `allot secret "
        "get` lists its keys and their sizes");
  }
  if (a == SecretAccess::kWrite && p.role != Role::kMember) {
    return Status::PermissionDenied(std::string("role ") + ToString(p.role) +
                                    " may not change the Secrets of tenant " + ns);
  }
  return Status::Ok();
}

Status MayActAs(const Principal& p, const std::string& name, const char* verb) {
  if (MayActAsNode(p, name)) return Status::Ok();
  return Status::PermissionDenied("this node token is bound to node " + p.node +
                                  "; it may not " + verb + " node " + name);
}

}  // namespace allot::server
