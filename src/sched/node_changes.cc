// NodePool: adding, replacing and removing nodes.
//
// A replaced node keeps its index, so its place in topology order is the
// one a pool built from the same node list would give it. A removed node
// leaves an empty entry (no devices, in no bucket, never scanned), so the
// indexes of the other nodes, and the placements that name them, stay.
// Block and rack ids keep the order of their first live nodes, as the
// first-seen numbers of a pool built from the live nodes would; they are
// renumbered (O(nodes)) only when a change alters that order: a node's
// topology labels change, or a removed node was the first of its block or
// rack and the next one of it comes after another's first (TopologyIds).
#include <algorithm>

#include "sched/node_pool.h"
#include "sched/node_pool_internal.h"

namespace allot::sched {

using pool_internal::kUnsetTopology;
using pool_internal::NodeState;
using pool_internal::Rank;
using pool_internal::ResourceCount;
using pool_internal::TopologyIds;

Status NodePool::Impl::CheckNode(const core::Node& node, NodeIdx self,
                                 std::unordered_set<std::string>* fresh) const {
  if (node.name.empty()) return Status::InvalidArgument("node has no name");
  if (self < 0 && node_ids.count(node.name)) {
    return Status::AlreadyExists("node " + node.name + " already exists");
  }
  if (node.cpu.IsNegative() || node.memory.IsNegative()) {
    return Status::InvalidArgument("node " + node.name +
                                   " has negative cpu or memory");
  }
  auto own = [&](const std::string& uuid) {
    if (self < 0) return false;
    for (const core::Gpu& g : nodes[self].spec.gpus) {
      if (g.uuid == uuid) return true;
      for (const core::MigSlice& sl : g.mig) {
        if (sl.uuid == uuid) return true;
      }
    }
    return false;
  };
  auto check_uuid = [&](const std::string& uuid, const std::string& what,
                        const std::string& field) {
    if (uuid.empty()) {
      return Status::InvalidArgument(
          what + " on node " + node.name + " has no UUID", field);
    }
    if ((uuids.count(uuid) && !own(uuid)) || !fresh->insert(uuid).second) {
      return Status::AlreadyExists(what + " " + uuid + " on node " + node.name +
                                       " is already in the pool",
                                   field);
    }
    return Status::Ok();
  };
  for (size_t g = 0; g < node.gpus.size(); ++g) {
    const core::Gpu& gpu = node.gpus[g];
    std::string field = "gpus[" + std::to_string(g) + "]";
    ALLOT_RETURN_IF_ERROR(check_uuid(gpu.uuid, "GPU", field + ".uuid"));
    for (size_t i = 0; i < gpu.mig.size(); ++i) {
      std::string slice = field + ".mig[" + std::to_string(i) + "]";
      ALLOT_RETURN_IF_ERROR(
          check_uuid(gpu.mig[i].uuid, "MIG slice", slice + ".uuid"));
      if (gpu.mig[i].profile.empty()) {
        return Status::InvalidArgument("MIG slice " + gpu.mig[i].uuid +
                                           " on node " + node.name +
                                           " has no profile",
                                       slice + ".profile");
      }
    }
  }
  return Status::Ok();
}

NodeState NodePool::Impl::MakeNode(const core::Node& node, NodeIdx n) {
  NodeState s;
  s.name = node.name;
  s.labels = node.labels;
  auto runtime = node.labels.find(core::kRuntimeLabel);
  auto ignore = node.labels.find(core::kIgnoreImagesLabel);
  s.refuses_images = runtime != node.labels.end() && runtime->second == "process" &&
                     (ignore == node.labels.end() || ignore->second != "true");
  s.taints = node.taints;
  s.unschedulable = node.unschedulable;
  s.spec = node;
  s.cpu_capacity = s.cpu_free = node.cpu;
  s.memory_capacity = s.memory_free = node.memory;
  auto add_device = [&](const std::string& uuid, const std::string& resource,
                        bool healthy) {
    int32_t r = InternResource(resource);
    s.devices.push_back({uuid, r, /*free=*/true, healthy});
    auto it = std::find_if(s.counts.begin(), s.counts.end(),
                           [&](const auto& c) { return c.resource == r; });
    if (it == s.counts.end()) it = s.counts.insert(s.counts.end(), {r, 0});
    it->usable += healthy;
  };
  for (const core::Gpu& gpu : node.gpus) {
    if (gpu.mig.empty()) add_device(gpu.uuid, core::kGpuResource, gpu.healthy);
    for (const core::MigSlice& slice : gpu.mig) {
      add_device(slice.uuid, core::MigResourceName(slice.profile), gpu.healthy);
    }
  }
  for (int32_t f = 0; f < AllSlot(); ++f) {
    bool match = core::LabelsMatch(flavors[f].node_labels, node.labels);
    s.in_flavor.push_back(match);
    if (match) s.slots.push_back(f);
  }
  s.slots.push_back(AllSlot());
  auto label = [&](const char* key) -> const std::string* {
    auto it = node.labels.find(key);
    return it == node.labels.end() ? nullptr : &it->second;
  };
  const std::string* block = label(core::kTopologyBlockLabel);
  const std::string* rack = label(core::kTopologyRackLabel);
  std::string rack_key = (block ? *block : "") + "\n" + (rack ? *rack : "");
  s.rank.block = blocks.Intern(block);
  s.rank.rack = racks.Intern(rack ? &rack_key : nullptr);
  s.rank.node = n;
  return s;
}

void NodePool::Impl::Index(NodeIdx n) {
  for (const auto& d : nodes[n].devices) ++device_totals[d.resource];
  for (int32_t slot : nodes[n].slots) ++slot_sizes[slot];
  for (const ResourceCount& c : nodes[n].counts) {
    Move(n, c.resource, 0, nodes[n].Offered(c.resource));
  }
}

void NodePool::Impl::Unindex(NodeIdx n) {
  for (const auto& d : nodes[n].devices) --device_totals[d.resource];
  for (const ResourceCount& c : nodes[n].counts) {
    Move(n, c.resource, nodes[n].Offered(c.resource), 0);
  }
  for (int32_t slot : nodes[n].slots) --slot_sizes[slot];
}

void NodePool::Impl::Renumber() {
  // The new id of an old one is its rank in first-live-occurrence order;
  // dead ones are dropped.
  std::vector<int32_t> bmap(blocks.keys.size(), -1),
      rmap(racks.keys.size(), -1);
  int32_t nb = 0, nr = 0;
  for (const NodeState& s : nodes) {
    if (s.removed) continue;
    if (s.rank.block != kUnsetTopology && bmap[s.rank.block] < 0)
      bmap[s.rank.block] = nb++;
    if (s.rank.rack != kUnsetTopology && rmap[s.rank.rack] < 0)
      rmap[s.rank.rack] = nr++;
  }
  auto remap = [](TopologyIds* t, const std::vector<int32_t>& to,
                  int32_t count) {
    std::vector<std::string> keys(static_cast<size_t>(count));
    for (size_t old = 0; old < to.size(); ++old) {
      if (to[old] >= 0)
        keys[static_cast<size_t>(to[old])] = std::move(t->keys[old]);
    }
    t->ids.clear();
    for (int32_t id = 0; id < count; ++id) t->ids.emplace(keys[size_t(id)], id);
    t->keys = std::move(keys);
    t->live.assign(static_cast<size_t>(count), {});
    t->firsts.clear();
  };
  remap(&blocks, bmap, nb);
  remap(&racks, rmap, nr);
  auto fresh = [&](const Rank& r) {
    Rank x = r;
    if (x.block != kUnsetTopology) x.block = bmap[x.block];
    if (x.rack != kUnsetTopology) x.rack = rmap[x.rack];
    return x;
  };
  // Nodes whose rank moves leave the buckets first, so that the sets never
  // mix old and new ranks.
  std::vector<NodeIdx> moved;
  for (NodeIdx n = 0; n < static_cast<NodeIdx>(nodes.size()); ++n) {
    if (!nodes[n].removed && fresh(nodes[n].rank) != nodes[n].rank) {
      moved.push_back(n);
    }
  }
  for (NodeIdx n : moved) Unindex(n);
  for (NodeIdx n = 0; n < static_cast<NodeIdx>(nodes.size()); ++n) {
    if (nodes[n].removed) continue;
    nodes[n].rank = fresh(nodes[n].rank);
    blocks.Append(nodes[n].rank.block, n);
    racks.Append(nodes[n].rank.rack, n);
  }
  for (NodeIdx n : moved) Index(n);
}

static std::string LabelOf(const core::Labels& labels, const char* key) {
  auto it = labels.find(key);
  return it == labels.end() ? std::string("\x01unset") : it->second;
}

// The UUIDs of a node's GPUs and MIG slices leave the pool's set.
static void EraseUuids(const core::Node& node,
                       std::unordered_set<std::string>* uuids) {
  for (const core::Gpu& g : node.gpus) {
    uuids->erase(g.uuid);
    for (const core::MigSlice& sl : g.mig) uuids->erase(sl.uuid);
  }
}

static bool Holds(const NodeState& s) {
  if (s.cpu_free != s.cpu_capacity || s.memory_free != s.memory_capacity) {
    return true;
  }
  return std::any_of(s.devices.begin(), s.devices.end(),
                     [](const auto& d) { return !d.free; });
}

Status NodePool::ReplaceNode(NodeIdx n, const core::Node& node) {
  Impl& m = *impl_;
  ALLOT_CHECK(n >= 0 && n < NodeCount() && !m.nodes[n].removed);
  if (node.name != m.nodes[n].name) {
    return Status::InvalidArgument("node " + node.name + " replaces node " +
                                   m.nodes[n].name);
  }
  if (Holds(m.nodes[n])) {
    return Status::FailedPrecondition("node " + node.name +
                                      " still holds pods");
  }
  std::unordered_set<std::string> fresh;
  ALLOT_RETURN_IF_ERROR(m.CheckNode(node, n, &fresh));
  const Rank old_rank = m.nodes[n].rank;
  const bool topology_same =
      LabelOf(node.labels, core::kTopologyBlockLabel) ==
          LabelOf(m.nodes[n].labels, core::kTopologyBlockLabel) &&
      LabelOf(node.labels, core::kTopologyRackLabel) ==
          LabelOf(m.nodes[n].labels, core::kTopologyRackLabel);
  m.Unindex(n);
  EraseUuids(m.nodes[n].spec, &m.uuids);
  m.nodes[n] = m.MakeNode(node, n);
  m.uuids.insert(fresh.begin(), fresh.end());
  if (topology_same) {
    m.nodes[n].rank = old_rank;  // Interning found the same ids.
    m.Index(n);
  } else {
    m.Index(n);
    m.Renumber();
  }
  return Status::Ok();
}

Status NodePool::RemoveNode(NodeIdx n) {
  Impl& m = *impl_;
  ALLOT_CHECK(n >= 0 && n < NodeCount() && !m.nodes[n].removed);
  if (Holds(m.nodes[n])) {
    return Status::FailedPrecondition("node " + m.nodes[n].name +
                                      " still holds pods");
  }
  // Both, even when the first fails: Renumber rebuilds them anyway.
  const bool block_kept = m.blocks.Leave(m.nodes[n].rank.block, n);
  const bool rack_kept = m.racks.Leave(m.nodes[n].rank.rack, n);
  m.Unindex(n);
  EraseUuids(m.nodes[n].spec, &m.uuids);
  m.node_ids.erase(m.nodes[n].name);
  NodeState& s = m.nodes[n];
  s.removed = true;
  s.devices.clear();
  s.counts.clear();
  s.slots.clear();
  s.labels.clear();
  s.taints.clear();
  s.spec = core::Node();
  std::fill(s.in_flavor.begin(), s.in_flavor.end(), 0);
  s.cpu_capacity = s.cpu_free = s.memory_capacity = s.memory_free = Quantity();
  if (!block_kept || !rack_kept) m.Renumber();
  return Status::Ok();
}

const core::Node& NodePool::NodeSpec(NodeIdx n) const {
  ALLOT_CHECK(n >= 0 && n < NodeCount() && !impl_->nodes[n].removed);
  return impl_->nodes[n].spec;
}

}  // namespace allot::sched
