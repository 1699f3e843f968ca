// Internal state types of NodePool (node_pool.cc); not part of its API.
//
// A node's devices are its whole GPUs and MIG slices. A device is usable
// when free and healthy; the pool offers a node's usable devices unless the
// node is cordoned. Topology ranks order nodes by (block, rack, insertion):
// ids are numbered in first-seen order, unlabelled nodes sort last.
#pragma once

#include <algorithm>
#include <compare>
#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <limits>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/model.h"
#include "sched/inline_vec.h"
#include "sched/node_pool.h"

namespace allot::sched::pool_internal {

constexpr int32_t kUnsetTopology = std::numeric_limits<int32_t>::max();

// Topology order; `node` makes it total.
struct Rank {
  int32_t block = kUnsetTopology;
  int32_t rack = kUnsetTopology;
  NodeIdx node = 0;
  auto operator<=>(const Rank&) const = default;
};

struct Device {
  std::string uuid;
  int32_t resource = 0;  // Index into Impl::resource_names.
  bool free = true;
  bool healthy = true;
};

struct ResourceCount {
  int32_t resource = 0;
  int32_t usable = 0;  // Free and healthy devices of `resource`.
};

// Resources taken by the pods a Find() call has placed so far.
struct Scratch {
  struct Use {
    NodeIdx node = -1;
    Quantity cpu, memory;
    std::vector<int32_t> slots;
  };
  std::vector<Use> uses;
  // Index of `uses` by node, built once there are more than kLinear (a
  // few nodes are found faster by a scan, without allocating).
  static constexpr size_t kLinear = 8;
  std::unordered_map<NodeIdx, int32_t> pos;
  // Slot buffers of earlier uses, kept by Clear() for the next ones.
  std::vector<std::vector<int32_t>> spare;

  // Empties it, keeping its buffers.
  void Clear() {
    for (Use& u : uses) {
      u.slots.clear();
      spare.push_back(std::move(u.slots));
    }
    uses.clear();
    if (!pos.empty()) pos.clear();
  }

  const Use* Get(NodeIdx n) const {
    if (uses.size() <= kLinear) {
      for (const Use& u : uses) {
        if (u.node == n) return &u;
      }
      return nullptr;
    }
    auto it = pos.find(n);
    return it == pos.end() ? nullptr : &uses[it->second];
  }
  Use& GetOrAdd(NodeIdx n) {
    if (const Use* u = Get(n)) return uses[static_cast<size_t>(u - uses.data())];
    uses.emplace_back();
    uses.back().node = n;
    if (!spare.empty()) {
      uses.back().slots = std::move(spare.back());
      spare.pop_back();
    }
    if (uses.size() == kLinear + 1) {
      for (size_t i = 0; i < uses.size(); ++i)
        pos.emplace(uses[i].node, static_cast<int32_t>(i));
    } else if (uses.size() > kLinear + 1) {
      pos.emplace(n, static_cast<int32_t>(uses.size() - 1));
    }
    return uses.back();
  }
  bool Holds(NodeIdx n, int32_t slot) const {
    const Use* u = Get(n);
    return u &&
           std::find(u->slots.begin(), u->slots.end(), slot) != u->slots.end();
  }
};

// A pod set request, resolved against the pool.
struct PodSetCtx {
  const PodSetRequest* req = nullptr;
  // (resource id, count per pod) for counts > 0; id -1: no node has it.
  InlineVec<std::pair<int32_t, int32_t>, 4> needs;
  int32_t slot = 0;  // Index slot to scan.
  // Set when a flavor's nodeTaints are not tolerated: no node can match.
  const core::Taint* flavor_taint = nullptr;
  int32_t flavor_taint_of = -1;
  // Set while a topology request confines the pod set to one domain: the
  // nodes (by index) it may use.
  const std::vector<uint8_t>* allowed = nullptr;
};

// The ids of one topology level (blocks, or racks: a rack id is per
// (block, rack) pair). A pool built from a node list numbers them in
// first-seen order; ranks only compare and equate them, so any ids in the
// same order as the first live node of each decide the same. New ids go
// at the end (AddNode appends nodes); an id whose last live node goes is
// dropped, which keeps the others' order. Only a change of that order
// (the first live node of one moving past another's, or a node's
// topology labels changing) needs Impl::Renumber.
struct TopologyIds {
  std::unordered_map<std::string, int32_t> ids;  // Key -> id.
  std::vector<std::string> keys;                 // Id -> key.
  std::vector<std::set<NodeIdx>> live;           // Id -> its live nodes.
  std::map<NodeIdx, int32_t> firsts;             // First live node -> id.

  // The id of `key` (kUnsetTopology for none); a new key gets the next id.
  int32_t Intern(const std::string* key) {
    if (!key) return kUnsetTopology;
    auto [it, added] = ids.emplace(*key, static_cast<int32_t>(keys.size()));
    if (added) {
      keys.push_back(*key);
      live.emplace_back();
    }
    return it->second;
  }
  // Node n, the last node so far, joins id `id`.
  void Append(int32_t id, NodeIdx n) {
    if (id == kUnsetTopology) return;
    std::set<NodeIdx>& nodes = live[static_cast<size_t>(id)];
    if (nodes.empty()) firsts.emplace(n, id);
    nodes.insert(nodes.end(), n);
  }
  // Node n leaves id `id`. Returns false when that changes the order of
  // the ids' first live nodes (the caller renumbers; the state is then
  // only fit for Renumber, which rebuilds it).
  bool Leave(int32_t id, NodeIdx n) {
    if (id == kUnsetTopology) return true;
    std::set<NodeIdx>& nodes = live[static_cast<size_t>(id)];
    const bool first = *nodes.begin() == n;
    nodes.erase(n);
    if (!first) return true;
    firsts.erase(n);
    if (nodes.empty()) {  // Dropped: a node with this key is new again.
      ids.erase(keys[static_cast<size_t>(id)]);
      return true;
    }
    const NodeIdx next = *nodes.begin();
    auto later = firsts.upper_bound(n);
    if (later != firsts.end() && later->first < next) return false;
    firsts.emplace(next, id);
    return true;
  }
};

struct NodeState {
  std::string name;
  core::Labels labels;
  std::vector<core::Taint> taints;
  bool unschedulable = false;
  bool removed = false;  // RemoveNode left its index empty: never offered.
  // An agent's process node that does not run images (core::kRuntimeLabel):
  // no pod set with an image goes there.
  bool refuses_images = false;
  core::Node spec;       // As last added or replaced (for a rollback).
  Quantity cpu_capacity, memory_capacity, cpu_free, memory_free;
  std::vector<Device> devices;
  std::vector<ResourceCount> counts;  // One per resource the node has.
  std::vector<uint8_t> in_flavor;     // Per flavor: node labels match.
  std::vector<int32_t> slots;         // Index slots the node is in.
  Rank rank;

  // Usable free devices of `resource` as offered to new pods.
  int32_t Offered(int32_t resource) const {
    if (unschedulable) return 0;
    for (const ResourceCount& c : counts) {
      if (c.resource == resource) return c.usable;
    }
    return 0;
  }
  bool Usable(int32_t slot) const {
    return devices[slot].free && devices[slot].healthy;
  }
  // Free usable devices of `resource` left after what `use` took.
  int32_t Free(int32_t resource, const Scratch::Use* use) const {
    if (resource < 0) return 0;
    int32_t free = Offered(resource);
    for (size_t i = 0; use && i < use->slots.size(); ++i) {
      free -= devices[use->slots[i]].resource == resource;
    }
    return free;
  }
  // How many pods of `ctx` fit now after `use`, at most `limit`. Ignores
  // eligibility (labels, taints, cordon): callers check it.
  int64_t Room(const PodSetCtx& ctx, const Scratch::Use* use,
               int64_t limit) const {
    const PodShape& shape = ctx.req->shape;
    int64_t cap = limit;
    if (shape.cpu.milli() > 0) {
      Quantity free = cpu_free - (use ? use->cpu : Quantity());
      cap = std::min(cap, free.milli() / shape.cpu.milli());
    }
    if (shape.memory.milli() > 0) {
      Quantity free = memory_free - (use ? use->memory : Quantity());
      cap = std::min(cap, free.milli() / shape.memory.milli());
    }
    for (size_t i = 0; cap > 0 && i < ctx.needs.size(); ++i) {
      cap = std::min<int64_t>(
          cap, Free(ctx.needs[i].first, use) / ctx.needs[i].second);
    }
    return std::max<int64_t>(cap, 0);
  }
  // Best fit orders nodes by this, fewest first: free devices of the kinds
  // the pod requests, or of any kind for a pod without devices.
  int64_t Score(const PodSetCtx& ctx, const Scratch::Use* use) const {
    int64_t score = 0;
    for (const auto& [r, need] : ctx.needs) score += Free(r, use);
    for (size_t i = 0; ctx.needs.empty() && i < counts.size(); ++i) {
      score += Free(counts[i].resource, use);
    }
    return score;
  }
  // The first taint (NoSchedule, NoExecute) that neither the pod nor any of
  // its flavors tolerates (admission adds flavor tolerations to the pod).
  const core::Taint* UntoleratedTaint(
      const PodSetRequest& req,
      const std::vector<core::ResourceFlavor>& flavors) const {
    for (const core::Taint& t : taints) {
      if (t.effect == core::TaintEffect::kPreferNoSchedule) continue;
      auto tol = [&](const core::Toleration& x) { return x.Tolerates(t); };
      bool ok = req.tolerations && std::any_of(req.tolerations->begin(),
                                               req.tolerations->end(), tol);
      for (size_t i = 0; !ok && i < req.flavors.size(); ++i) {
        const auto& fl = flavors[req.flavors[i]].tolerations;
        ok = std::any_of(fl.begin(), fl.end(), tol);
      }
      if (!ok) return &t;
    }
    return nullptr;
  }
  // Sets a device's flags and keeps `counts` right.
  void SetDevice(int32_t slot, bool free, bool healthy) {
    int32_t delta = -static_cast<int32_t>(Usable(slot));
    devices[slot].free = free;
    devices[slot].healthy = healthy;
    delta += Usable(slot);
    for (ResourceCount& c : counts) {
      if (c.resource == devices[slot].resource) c.usable += delta;
    }
  }
};

// A node that can take `cap` (> 0) pods of a pod set; `score` orders best
// fit (fewer free devices first).
struct Candidate {
  int64_t cap = 0;
  int64_t score = 0;
  Rank rank;
};

// Chooses where a pod set that needs several nodes goes: the first rack
// (in rank order) whose candidates have room for every pod, else the first
// such block, else every candidate. Candidates arrive in rank order, so a
// rack's (and a block's) are contiguous.
class GroupPicker {
 public:
  explicit GroupPicker(int64_t pods) : pods_(pods) {}

  // Announces the next node in rank order (null: no more). Returns true
  // when a rack is chosen: the caller stops.
  bool Next(const Rank* next) {
    if (cands_.empty()) return false;
    const Rank& last = cands_.back().rank;
    bool block_ends = !next || next->block != last.block;
    if (block_ends || next->rack != last.rack) {
      if (last.rack != kUnsetTopology && rack_room_ >= pods_) {
        cands_.erase(cands_.begin(), cands_.begin() + rack_begin_);
        return done_ = true;
      }
      rack_begin_ = cands_.size();
      rack_room_ = 0;
    }
    if (block_ends) {
      if (!block_ && last.block != kUnsetTopology && block_room_ >= pods_) {
        block_ = {block_begin_, cands_.size()};
      }
      block_begin_ = cands_.size();
      block_room_ = 0;
    }
    return false;
  }
  void Add(const Candidate& c) {
    cands_.push_back(c);
    rack_room_ += c.cap;
    block_room_ += c.cap;
  }
  std::vector<Candidate> Group() && {
    if (!done_) Next(nullptr);
    if (!done_ && block_) {
      cands_.erase(cands_.begin() + block_->second, cands_.end());
      cands_.erase(cands_.begin(), cands_.begin() + block_->first);
    }
    return std::move(cands_);
  }

 private:
  int64_t pods_;
  std::vector<Candidate> cands_;
  size_t rack_begin_ = 0, block_begin_ = 0;
  int64_t rack_room_ = 0, block_room_ = 0;
  std::optional<std::pair<size_t, size_t>> block_;
  bool done_ = false;
};

inline std::string TaintText(const core::Taint& t) {
  const char* effect = t.effect == core::TaintEffect::kNoExecute ? "NoExecute"
                       : t.effect == core::TaintEffect::kNoSchedule
                           ? "NoSchedule"
                           : "PreferNoSchedule";
  return t.key + (t.value.empty() ? "" : "=" + t.value) + ":" + effect;
}

inline std::string LabelsText(const core::Labels& labels) {
  std::string s = "{";
  for (const auto& [k, v] : labels) {
    s += (s.size() > 1 ? ", " : "") + k + ": " + v;
  }
  return s + "}";
}

}  // namespace allot::sched::pool_internal

namespace allot::sched {

// NodePool's state (node_pool.cc, node_changes.cc).
struct NodePool::Impl {
  std::vector<core::ResourceFlavor> flavors;
  std::vector<core::Topology> topologies;
  std::vector<pool_internal::NodeState> nodes;
  std::unordered_map<std::string, NodeIdx> node_ids;
  std::unordered_set<std::string> uuids;
  std::deque<std::string> resource_names;  // Stable references.
  std::unordered_map<std::string, int32_t> resource_ids;
  // Block and rack ids (see TopologyIds): ranks compare them, so their
  // order is what counts, not their values.
  pool_internal::TopologyIds blocks, racks;
  std::vector<int64_t> offered_totals;  // Per resource.
  // Per resource: devices on indexed nodes, whatever their state. A
  // resource whose nodes were all replaced or removed counts as one no
  // node has (as in a pool built without them).
  std::vector<int32_t> device_totals;
  // index[slot][resource][free count]: nodes by rank. Slot flavors.size()
  // holds every node.
  std::vector<std::vector<std::vector<std::set<pool_internal::Rank>>>> index;
  std::vector<int32_t> slot_sizes;
  // Find's scratch, kept between calls for its buffers (NodePool is not
  // thread-safe, const calls included).
  mutable pool_internal::Scratch find_scratch;

  int32_t AllSlot() const { return static_cast<int32_t>(flavors.size()); }
  int32_t ResourceId(const std::string& name) const {
    auto it = resource_ids.find(name);
    return it == resource_ids.end() ? -1 : it->second;
  }
  int32_t InternResource(const std::string& name);

  // Index maintenance.
  void Move(NodeIdx n, int32_t resource, int32_t from, int32_t to);
  template <typename F>
  void Update(NodeIdx n, F change);
  void Apply(const std::vector<PodSetRequest>& request,
             const Placement& placement, bool take);

  // Node changes (node_changes.cc).
  // Checks a node for AddNode (self < 0) or for replacing node `self`
  // (whose own UUIDs may be kept); adds its UUIDs to `fresh`.
  Status CheckNode(const core::Node& node, NodeIdx self,
                   std::unordered_set<std::string>* fresh) const;
  // Node state for `node` at index n: all devices free; interns its
  // resources and topology. Does not index it.
  pool_internal::NodeState MakeNode(const core::Node& node, NodeIdx n);
  // Puts node n into (takes it out of) the slot sizes and buckets.
  void Index(NodeIdx n);
  void Unindex(NodeIdx n);
  // Renumbers blocks and racks in first-seen order over the live nodes, as
  // a pool built from them would (ints only), rebuilds `blocks` and
  // `racks`, and re-buckets the nodes whose rank moved. O(nodes).
  void Renumber();

  // Checks.
  pool_internal::PodSetCtx MakeCtx(const PodSetRequest& req) const;
  bool Eligible(const pool_internal::NodeState& node, const pool_internal::PodSetCtx& ctx) const;

  // Placement.
  void Take(NodeIdx n, const pool_internal::PodSetCtx& ctx, int64_t pods, pool_internal::Scratch* s,
            PodSetPlacement* out) const;
  std::optional<NodeIdx> BestFitIndexed(const pool_internal::PodSetCtx& ctx, int64_t pods,
                                        const pool_internal::Scratch& s) const;
  // The candidate in [begin, end) with room for `pods` and the lowest
  // (score, rank).
  static std::optional<pool_internal::Candidate> BestFit(
      std::vector<pool_internal::Candidate>::const_iterator begin,
      std::vector<pool_internal::Candidate>::const_iterator end, int64_t pods);
  int64_t Spread(const pool_internal::PodSetCtx& ctx, std::vector<pool_internal::Candidate> cands, pool_internal::Scratch* s,
                 PodSetPlacement* out) const;
  int64_t PlaceIndexed(const pool_internal::PodSetCtx& ctx, pool_internal::Scratch* s,
                       PodSetPlacement* out) const;
  int64_t PlaceGeneric(const pool_internal::PodSetCtx& ctx, pool_internal::Scratch* s,
                       PodSetPlacement* out) const;
  std::string Explain(const pool_internal::PodSetCtx& ctx, const pool_internal::Scratch& s, bool more) const;
  // Places a pod set by its topology request (node_pool_topology.cc).
  // Returns the pods placed; sets *why when the request itself cannot be
  // met (no topology, an unknown level, no domain holds the pods).
  int64_t PlaceTopology(pool_internal::PodSetCtx ctx, pool_internal::Scratch* s,
                        PodSetPlacement* out, std::string* why) const;
  int64_t Place(const pool_internal::PodSetCtx& ctx, pool_internal::Scratch* s,
                PodSetPlacement* out) const {
    return ctx.needs.size() == 1 ? PlaceIndexed(ctx, s, out) : PlaceGeneric(ctx, s, out);
  }
  std::string FlavorNames(const PodSetRequest& req) const;
};

}  // namespace allot::sched
