// NodePool: topology-aware placement (Kueue's TAS), see node_pool.h.
//
// A flavor's Topology lists node labels from the widest level to the
// narrowest; a node's domain at level L is its values of levels 0..L (a
// rack is a rack within its block). A pod set that asks for level L is
// placed like any other (best fit, then as few nodes as possible) but only
// on the nodes of one domain: the one with the least room that still holds
// every pod, ties by the first node's topology rank. Kueue's BestFit
// chooses the same way (pkg/cache/scheduler/tas_flavor_snapshot.go,
// findTopologyAssignment: the fitting domain with the least free capacity).
//
// "required" stops at L. "preferred" goes one level wider at a time, then
// to no domain at all. "unconstrained" only asks that the flavor has a
// topology. A node without a level's label is in no domain of that level;
// kubernetes.io/hostname defaults to the node's name, as the kubelet sets
// it.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sched/node_pool.h"
#include "sched/node_pool_internal.h"

namespace allot::sched {

using pool_internal::PodSetCtx;
using pool_internal::Rank;
using pool_internal::Scratch;

namespace {

const std::string* LevelValue(const pool_internal::NodeState& node,
                              const std::string& level) {
  auto it = node.labels.find(level);
  if (it != node.labels.end()) return &it->second;
  return level == core::kHostnameLabel ? &node.name : nullptr;
}

std::string Join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

}  // namespace

int64_t NodePool::Impl::PlaceTopology(PodSetCtx ctx, Scratch* s,
                                      PodSetPlacement* out,
                                      std::string* why) const {
  const PodSetRequest& req = *ctx.req;
  const core::TopologyRequest& want = *req.topology;
  const core::ResourceFlavor* flavor = nullptr;
  for (int32_t f : req.flavors) {
    if (!flavors[f].topology_name.empty()) {
      flavor = &flavors[f];
      break;
    }
  }
  if (flavor == nullptr) {
    *why = "the pod set asks for topology-aware scheduling but " +
           (req.flavors.empty() ? std::string("no flavor")
                                : FlavorNames(req) + " has no topology") +
           " (ResourceFlavor spec.topologyName)";
    return 0;
  }
  const core::Topology* topology = nullptr;
  for (const core::Topology& t : topologies) {
    if (t.name == flavor->topology_name) topology = &t;
  }
  if (topology == nullptr) {
    *why = "flavor " + flavor->name + " names topology " +
           flavor->topology_name + ", which does not exist";
    return 0;
  }
  if (want.unconstrained) return Place(ctx, s, out);
  const std::string& level = want.required.empty() ? want.preferred : want.required;
  int32_t asked = -1;
  for (size_t l = 0; l < topology->levels.size(); ++l) {
    if (topology->levels[l] == level) asked = static_cast<int32_t>(l);
  }
  if (asked < 0) {
    *why = "topology " + topology->name + " of flavor " + flavor->name +
           " has no level " + level + " (levels: " + Join(topology->levels) + ")";
    return 0;
  }

  const int64_t count = req.count;
  std::vector<uint8_t> allowed(nodes.size(), 0);
  int64_t widest_room = 0;  // The most pods one domain of `level` holds.
  std::string widest_domain;
  for (int32_t l = asked; l >= 0; --l) {
    struct Domain {
      int64_t room = 0;
      Rank first;
      std::vector<NodeIdx> nodes;
    };
    std::map<std::vector<std::string>, Domain> domains;
    for (NodeIdx n = 0; n < static_cast<NodeIdx>(nodes.size()); ++n) {
      const pool_internal::NodeState& node = nodes[n];
      if (node.removed || !Eligible(node, ctx)) continue;
      const int64_t room = node.Room(ctx, s->Get(n), count);
      if (room == 0) continue;
      std::vector<std::string> key;
      for (int32_t i = 0; i <= l; ++i) {
        const std::string* v = LevelValue(node, topology->levels[i]);
        if (v == nullptr) break;
        key.push_back(*v);
      }
      if (static_cast<int32_t>(key.size()) != l + 1) continue;
      Domain& d = domains[std::move(key)];
      if (d.nodes.empty() || node.rank < d.first) d.first = node.rank;
      d.room += room;
      d.nodes.push_back(n);
    }
    const Domain* best = nullptr;
    for (const auto& [key, d] : domains) {
      if (l == asked && d.room > widest_room) {
        widest_room = d.room;
        widest_domain = key.back();
      }
      if (d.room < count) continue;
      if (!best || std::pair(d.room, d.first) < std::pair(best->room, best->first)) {
        best = &d;
      }
    }
    if (best != nullptr) {
      // Each node's room is its own, so the domain's nodes together hold
      // every pod: Place succeeds on them.
      for (NodeIdx n : best->nodes) allowed[static_cast<size_t>(n)] = 1;
      ctx.allowed = &allowed;
      return Place(ctx, s, out);
    }
    if (!want.required.empty()) break;
  }
  if (!want.required.empty()) {
    *why = "no " + level + " domain of topology " + topology->name +
           " has room for all " + std::to_string(count) + " pods" +
           (widest_room > 0 ? " (most: " + std::to_string(widest_room) +
                                  " in " + widest_domain + ")"
                            : "");
    return 0;
  }
  return Place(ctx, s, out);
}

}  // namespace allot::sched
