// Helpers shared by the State's .cc files.
#pragma once

#include <boost/json.hpp>

#include <string>
#include <variant>

#include "core/manifest_encode.h"
#include "server/state.h"

namespace allot::server::internal {

// A configuration object of any kind but Workload (variant index = Kind).
using ConfigObject =
    std::variant<core::ResourceFlavor, core::Cohort, core::ClusterQueue,
                 core::LocalQueue, core::WorkloadPriorityClass,
                 core::Namespace, core::Node, core::Topology, core::Image,
                 core::NodePool>;

inline std::string KeyOf(const core::LocalQueue& lq) {
  return lq.ns + "/" + lq.name;
}
template <typename T>
std::string KeyOf(const T& obj) {
  return obj.name;
}
inline std::string KeyOf(const core::Workload& w) { return w.Key(); }

// The tenant of a namespaced key ("ns/name"); "" for a cluster-scoped one.
inline std::string TenantOfKey(const std::string& key) {
  size_t slash = key.find('/');
  return slash == std::string::npos ? "" : key.substr(0, slash);
}

// "a, b, c" with `sep` between.
inline std::string Join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (const std::string& x : v) out += (out.empty() ? "" : sep) + x;
  return out;
}

// One watch line: {"type":TYPE,"object":OBJECT}\n, from the object's JSON.
inline std::string EventLine(const char* type, const std::string& object_json) {
  std::string line;
  line.reserve(object_json.size() + 32);
  line += "{\"type\":\"";
  line += type;
  line += "\",\"object\":";
  line += object_json;
  line += "}\n";
  return line;
}

// Calls f(map) with the map of `kind` (not Workload).
template <typename F>
decltype(auto) WithMap(Objects& o, Kind kind, F&& f) {
  switch (kind) {
    case Kind::kResourceFlavor: return f(o.flavors);
    case Kind::kCohort: return f(o.cohorts);
    case Kind::kClusterQueue: return f(o.cluster_queues);
    case Kind::kLocalQueue: return f(o.local_queues);
    case Kind::kWorkloadPriorityClass: return f(o.priority_classes);
    case Kind::kTenant: return f(o.tenants);
    case Kind::kNode: return f(o.nodes);
    case Kind::kTopology: return f(o.topologies);
    case Kind::kImage: return f(o.images);
    case Kind::kNodePool: return f(o.node_pools);
    case Kind::kWorkload: break;
  }
  std::abort();
}
template <typename F>
decltype(auto) WithMap(const Objects& o, Kind kind, F&& f) {
  return WithMap(const_cast<Objects&>(o), kind,
                 [&](auto& m) -> decltype(auto) { return f(std::as_const(m)); });
}

inline boost::json::object Encode(const core::ResourceFlavor& x) {
  return core::EncodeFlavor(x);
}
inline boost::json::object Encode(const core::Cohort& x) {
  return core::EncodeCohort(x);
}
inline boost::json::object Encode(const core::ClusterQueue& x) {
  return core::EncodeClusterQueue(x);
}
inline boost::json::object Encode(const core::LocalQueue& x) {
  return core::EncodeLocalQueue(x);
}
inline boost::json::object Encode(const core::WorkloadPriorityClass& x) {
  return core::EncodePriorityClass(x);
}
inline boost::json::object Encode(const core::Namespace& x) {
  return core::EncodeNamespace(x);
}
inline boost::json::object Encode(const core::Topology& x) {
  return core::EncodeTopology(x);
}
inline boost::json::object Encode(const core::Image& x) {
  return core::EncodeImage(x);
}
inline boost::json::object Encode(const core::Node& x) {
  return core::EncodeNode(x);
}
inline boost::json::object Encode(const core::NodePool& x) {
  return core::EncodeNodePool(x);
}

// Why a pending workload waits and its place in line, in its status;
// `note` (State::CapacityNote) says what capacity it waits for.
inline void PutPending(const sched::PendingWorkload& p, boost::json::object* status,
                       const std::string& note = "") {
  (*status)["clusterQueue"] = p.cluster_queue;
  (*status)["pendingReason"] = note.empty() ? p.reason : p.reason + "; " + note;
  (*status)["position"] = p.position;
}

// Sets metadata.resourceVersion (a string, as Kubernetes does).
void SetResourceVersion(boost::json::object* obj, int64_t rv);

// The idle parker's view of an admitted workload (state_controllers.cc):
// how long it may stay idle (its own allot.dev/idle-after, else its
// ClusterQueue's, else an hour for a notebook; <= 0: never parked), and,
// with a custom activity signal, since when it counts as active (its last
// report, its admission, its last resume or the server's start; -1: no
// such signal).
int64_t IdleAfterSeconds(const WorkloadRecord& rec, const Objects& objs);
int64_t ActiveSinceMs(const WorkloadRecord& rec, int64_t started_ms);
// Since when its GPUs have all been idle (0: not idle, or no telemetry); a
// workload that holds no GPU and has an activity signal: idle since then.
int64_t IdleSinceMs(const WorkloadRecord& rec, int64_t started_ms);

// Sets the condition of c.type (keeping its time when nothing changed).
void SetCondition(std::vector<Condition>* conds, Condition c);

// Admitted workloads that use object (kind, key): their ClusterQueue, a
// flavor of their admission, or a node of their placement.
std::vector<std::string> AdmittedUsing(
    const std::map<std::string, WorkloadRecord>& workloads, Kind kind,
    const std::string& key);

// The source every object loaded from the store carries, so messages read
// "ClusterQueue team-a: ...".
core::SourceRef StoredSource(Kind kind);

}  // namespace allot::server::internal

namespace allot::server {
// One change to the configuration; `obj` unset deletes.
struct State::Change {
  Kind kind = Kind::kResourceFlavor;
  std::string key;
  std::optional<internal::ConfigObject> obj;
  enum class Mode { kCreate, kReplace, kApply, kDelete } mode = Mode::kApply;
  std::optional<int64_t> expected_rv;
  // A SchedulerConfig document (kind is ignored).
  std::optional<core::SchedulerConfig> scheduler;
};
}  // namespace allot::server
