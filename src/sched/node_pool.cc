// NodePool implementation.
//
// State per node: free CPU and memory, its devices (whole GPUs and MIG
// slices) with free/healthy flags, and per device resource the number of
// usable devices (free and healthy).
//
// Index: for every "slot" (one per flavor, plus one holding all nodes) and
// every device resource, the nodes of the slot are bucketed by their usable
// free count of that resource; a bucket is a set ordered by topology rank
// (block, rack, insertion order). A cordoned node counts 0 everywhere, and
// nodes with 0 are not stored. Commit, Release, SetUnschedulable and
// SetDeviceHealthy move a node between buckets, so Find never scans nodes
// that cannot hold the pod.
//
// Find places the pod sets in order against a Scratch (what this call has
// taken so far) and never touches the real state. Per pod set:
//  1. if one node holds every pod, the best fit one: fewest free devices of
//     the requested kind (for a CPU-only pod: of any kind), ties by rank;
//     for a one-resource pod, a scan of the buckets upward from the count
//     needed finds it at once (BestFitIndexed);
//  2. else the nodes with room are read in rank order and narrowed to the
//     first rack with room for all pods, else the first such block, else
//     all of them (GroupPicker);
//  3. there, nodes with room for the most pods are filled first, in rank
//     order, until the pods left fit on one node, which is then chosen by
//     best fit (Spread).
// A pod's devices are the lowest free usable slots of the resource.
#include "sched/node_pool.h"

#include <algorithm>
#include <deque>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "sched/node_pool_internal.h"

namespace allot::sched {

using pool_internal::Candidate;
using pool_internal::Device;
using pool_internal::GroupPicker;
using pool_internal::LabelsText;
using pool_internal::NodeState;
using pool_internal::PodSetCtx;
using pool_internal::Rank;
using pool_internal::ResourceCount;
using pool_internal::Scratch;
using pool_internal::TaintText;


int32_t NodePool::Impl::InternResource(const std::string& name) {
  auto [it, added] =
      resource_ids.emplace(name, static_cast<int32_t>(resource_names.size()));
  if (added) {
    resource_names.push_back(name);
    offered_totals.push_back(0);
    device_totals.push_back(0);
    for (auto& per_slot : index) per_slot.emplace_back();
  }
  return it->second;
}

void NodePool::Impl::Move(NodeIdx n, int32_t resource, int32_t from,
                          int32_t to) {
  if (from == to) return;
  const Rank& rank = nodes[n].rank;
  for (int32_t slot : nodes[n].slots) {
    auto& buckets = index[slot][resource];
    if (to > 0 && static_cast<int32_t>(buckets.size()) <= to) {
      buckets.resize(to + 1);
    }
    if (from > 0 && to > 0) {
      // The set node moves over whole: no allocation.
      buckets[to].insert(buckets[from].extract(rank));
    } else if (from > 0) {
      buckets[from].erase(rank);
    } else if (to > 0) {
      buckets[to].insert(rank);
    }
  }
  offered_totals[resource] += to - from;
}

// Runs `change` on node `n`, then moves the node between buckets for each
// resource whose offered count changed.
template <typename F>
void NodePool::Impl::Update(NodeIdx n, F change) {
  NodeState& node = nodes[n];
  InlineVec<int32_t, 8> before;
  for (const ResourceCount& c : node.counts) {
    before.push_back(node.Offered(c.resource));
  }
  change(node);
  for (size_t i = 0; i < node.counts.size(); ++i) {
    int32_t r = node.counts[i].resource;
    Move(n, r, before[i], node.Offered(r));
  }
}

// Commit (take) or Release (give back) a placement.
void NodePool::Impl::Apply(const std::vector<PodSetRequest>& request,
                           const Placement& placement, bool take) {
  ALLOT_CHECK(placement.size() == request.size());
  for (size_t i = 0; i < request.size(); ++i) {
    const PodShape& shape = request[i].shape;
    const int64_t sign = take ? -1 : 1;
    for (const PodAssignment& pod : placement[i]) {
      ALLOT_CHECK(pod.node >= 0 &&
                  pod.node < static_cast<NodeIdx>(nodes.size()));
      Update(pod.node, [&](NodeState& node) {
        for (int32_t slot : pod.devices) {
          ALLOT_CHECK(slot >= 0 &&
                      slot < static_cast<int32_t>(node.devices.size()));
          // Fails on a double commit, or on a release of a free device.
          ALLOT_CHECK(node.devices[slot].free == take);
          node.SetDevice(slot, !take, node.devices[slot].healthy);
        }
        node.cpu_free += shape.cpu * sign;
        node.memory_free += shape.memory * sign;
        ALLOT_CHECK(node.cpu_free <= node.cpu_capacity);
        ALLOT_CHECK(node.memory_free <= node.memory_capacity);
      });
    }
  }
}

std::string NodePool::Impl::FlavorNames(const PodSetRequest& req) const {
  std::string s;
  for (int32_t f : req.flavors) {
    s += (s.empty() ? "" : ", ") + flavors[f].name;
  }
  if (req.flavors.size() > 1) return "flavors " + s;
  return req.flavors.empty() ? "" : "flavor " + s;
}

PodSetCtx NodePool::Impl::MakeCtx(const PodSetRequest& req) const {
  PodSetCtx ctx;
  ctx.req = &req;
  for (const auto& [name, count] : req.shape.devices) {
    if (count <= 0) continue;
    int32_t r = ResourceId(name);
    if (r >= 0 && device_totals[r] == 0) r = -1;  // No node has it now.
    ctx.needs.push_back({r, count});
  }
  ctx.slot = AllSlot();
  for (int32_t f : req.flavors) {
    ALLOT_CHECK(f >= 0 && f < AllSlot());
    if (slot_sizes[f] < slot_sizes[ctx.slot]) ctx.slot = f;
    static const std::vector<core::Toleration> kNone;
    const auto& pod = req.tolerations ? *req.tolerations : kNone;
    for (const core::Taint& t : flavors[f].node_taints) {
      if (!ctx.flavor_taint &&
          !core::TaintsTolerated({t}, flavors[f].tolerations, pod)) {
        ctx.flavor_taint = &t;
        ctx.flavor_taint_of = f;
      }
    }
  }
  return ctx;
}

bool NodePool::Impl::Eligible(const NodeState& node,
                              const PodSetCtx& ctx) const {
  if (node.unschedulable || ctx.flavor_taint) return false;
  if (ctx.allowed && !(*ctx.allowed)[static_cast<size_t>(node.rank.node)]) return false;
  for (int32_t f : ctx.req->flavors) {
    if (!node.in_flavor[f]) return false;
  }
  if (ctx.req->node_selector &&
      !core::LabelsMatch(*ctx.req->node_selector, node.labels)) {
    return false;
  }
  if (ctx.req->has_image && node.refuses_images) return false;
  return !node.UntoleratedTaint(*ctx.req, flavors);
}

void NodePool::Impl::Take(NodeIdx n, const PodSetCtx& ctx, int64_t pods,
                          Scratch* s, PodSetPlacement* out) const {
  const NodeState& node = nodes[n];
  Scratch::Use& use = s->GetOrAdd(n);
  int32_t devices = 0;
  for (const auto& [r, need] : ctx.needs) devices += need;
  out->reserve(out->size() + size_t(pods));
  for (int64_t p = 0; p < pods; ++p) {
    PodAssignment pod;
    pod.node = n;
    pod.devices.reserve(size_t(devices));
    for (const auto& [r, need] : ctx.needs) {
      int32_t got = 0;
      for (int32_t slot = 0;
           got < need && slot < static_cast<int32_t>(node.devices.size());
           ++slot) {
        if (node.devices[slot].resource != r || !node.Usable(slot) ||
            std::find(use.slots.begin(), use.slots.end(), slot) !=
                use.slots.end()) {
          continue;
        }
        pod.devices.push_back(slot);
        use.slots.push_back(slot);
        ++got;
      }
      ALLOT_CHECK(got == need);
    }
    use.cpu += ctx.req->shape.cpu;
    use.memory += ctx.req->shape.memory;
    out->push_back(std::move(pod));
  }
}

// Best fit for `pods` pods of a single-resource pod set: the node with the
// fewest free devices of the resource that still holds them all, ties by
// rank. Buckets are scanned upward from the smallest count that can fit, so
// the first eligible node found wins. Nodes this call already used sit in
// a bucket that overstates their free count; they are scored directly.
std::optional<NodeIdx> NodePool::Impl::BestFitIndexed(const PodSetCtx& ctx,
                                                      int64_t pods,
                                                      const Scratch& s) const {
  auto [r, need] = ctx.needs[0];
  if (r < 0) return std::nullopt;
  std::optional<std::pair<int64_t, Rank>> best;
  for (const Scratch::Use& u : s.uses) {
    if (!Eligible(nodes[u.node], ctx) ||
        nodes[u.node].Room(ctx, &u, pods) < pods) {
      continue;
    }
    std::pair<int64_t, Rank> key{nodes[u.node].Free(r, &u), nodes[u.node].rank};
    if (!best || key < *best) best = key;
  }
  const auto& buckets = index[ctx.slot][r];
  for (int64_t b = need * pods; b < static_cast<int64_t>(buckets.size()); ++b) {
    if (best && b > best->first) break;
    for (const Rank& rank : buckets[b]) {
      if (best && b == best->first && best->second < rank) break;
      if (s.Get(rank.node)) continue;  // Scored above.
      if (nodes[rank.node].Room(ctx, nullptr, pods) < pods ||
          !Eligible(nodes[rank.node], ctx)) {
        continue;
      }
      return rank.node;
    }
  }
  if (!best) return std::nullopt;
  return best->second.node;
}

std::optional<Candidate> NodePool::Impl::BestFit(
    std::vector<Candidate>::const_iterator begin,
    std::vector<Candidate>::const_iterator end, int64_t pods) {
  std::optional<Candidate> best;
  for (auto it = begin; it != end; ++it) {
    if (it->cap >= pods && (!best || std::pair(it->score, it->rank) <
                                         std::pair(best->score, best->rank))) {
      best = *it;
    }
  }
  return best;
}

// Places the pods of a single-resource pod set; returns how many fit. The
// best fit node takes them all if one can; else see Spread. Nodes with room
// for a pod are read from the buckets in rank order (a merge), and reading
// stops at the end of the first rack that holds them all.
int64_t NodePool::Impl::PlaceIndexed(const PodSetCtx& ctx, Scratch* s,
                                     PodSetPlacement* out) const {
  const int64_t count = ctx.req->count;
  if (auto n = BestFitIndexed(ctx, count, *s)) {
    Take(*n, ctx, count, s, out);
    return count;
  }
  auto [r, need] = ctx.needs[0];
  if (r < 0) return 0;
  using It = std::set<Rank>::const_iterator;
  std::vector<std::pair<It, It>> runs;
  const auto& buckets = index[ctx.slot][r];
  for (int64_t b = need; b < static_cast<int64_t>(buckets.size()); ++b) {
    if (!buckets[b].empty()) {
      runs.emplace_back(buckets[b].begin(), buckets[b].end());
    }
  }
  GroupPicker picker(count);
  while (true) {
    std::pair<It, It>* next = nullptr;
    for (auto& run : runs) {
      if (run.first != run.second && (!next || *run.first < *next->first)) {
        next = &run;
      }
    }
    if (!next) break;
    const Rank& rank = *next->first++;
    if (picker.Next(&rank)) break;
    if (!Eligible(nodes[rank.node], ctx)) continue;
    const Scratch::Use* use = s->Get(rank.node);
    int64_t cap = nodes[rank.node].Room(ctx, use, count);
    if (cap > 0) picker.Add({cap, nodes[rank.node].Free(r, use), rank});
  }
  return Spread(ctx, std::move(picker).Group(), s, out);
}

// The same policy by a scan of every node, for pods that need no device or
// several device resources.
int64_t NodePool::Impl::PlaceGeneric(const PodSetCtx& ctx, Scratch* s,
                                     PodSetPlacement* out) const {
  const int64_t count = ctx.req->count;
  std::vector<Candidate> cands;
  for (NodeIdx n = 0; n < static_cast<NodeIdx>(nodes.size()); ++n) {
    if (nodes[n].removed || !Eligible(nodes[n], ctx)) continue;
    const Scratch::Use* use = s->Get(n);
    int64_t cap = nodes[n].Room(ctx, use, count);
    if (cap > 0) {
      cands.push_back({cap, nodes[n].Score(ctx, use), nodes[n].rank});
    }
  }
  if (auto best = BestFit(cands.begin(), cands.end(), count)) {
    Take(best->rank.node, ctx, count, s, out);
    return count;
  }
  std::sort(cands.begin(), cands.end(),
            [](const auto& a, const auto& b) { return a.rank < b.rank; });
  GroupPicker picker(count);
  for (const Candidate& c : cands) {
    if (picker.Next(&c.rank)) break;
    picker.Add(c);
  }
  return Spread(ctx, std::move(picker).Group(), s, out);
}

// Places a pod set on `cands` (no one of which holds it all) using as few
// nodes as it can: fills nodes with room for the most pods first, in rank
// order, until the pods left fit on one node; those go to the best fit
// node. Returns how many pods were placed.
int64_t NodePool::Impl::Spread(const PodSetCtx& ctx,
                               std::vector<Candidate> cands, Scratch* s,
                               PodSetPlacement* out) const {
  const int64_t count = ctx.req->count;
  int64_t left = count;
  // At most `left` nodes are filled before the rest fits on one.
  auto sorted_end = cands.begin() + std::min<int64_t>(left, cands.size());
  std::partial_sort(cands.begin(), sorted_end, cands.end(),
                    [](const auto& a, const auto& b) {
                      return a.cap != b.cap ? a.cap > b.cap : a.rank < b.rank;
                    });
  for (auto it = cands.begin(); it != cands.end(); ++it) {
    if (it->cap >= left) {
      Take(BestFit(it, cands.end(), left)->rank.node, ctx, left, s, out);
      return count;
    }
    Take(it->rank.node, ctx, it->cap, s, out);
    left -= it->cap;
  }
  return count - left;
}

// Why no node takes (one more pod of) the pod set, given what this call has
// placed so far. `more`: some pods of this request were placed already.
std::string NodePool::Impl::Explain(const PodSetCtx& ctx, const Scratch& s,
                                    bool more) const {
  const PodSetRequest& req = *ctx.req;
  if (ctx.flavor_taint) {
    return "the pod set does not tolerate taint " +
           TaintText(*ctx.flavor_taint) + " of flavor " +
           flavors[ctx.flavor_taint_of].name;
  }
  std::string scope = FlavorNames(req);
  if (req.node_selector && !req.node_selector->empty()) {
    scope += (scope.empty() ? "" : " and ") + std::string("node selector ") +
             LabelsText(*req.node_selector);
  }
  std::string devices;
  for (const auto& [name, count] : req.shape.devices) {
    if (count <= 0) continue;
    devices += (devices.empty() ? "" : " and ") + std::to_string(count) +
               (more ? " more free " : " free ") + name;
  }
  int64_t matching = 0, cordoned = 0, eligible = 0, with_devices = 0, process_only = 0;
  int64_t with_cpu = 0, with_memory = 0;
  const NodeState* tainted = nullptr;
  int32_t largest = -1;
  const NodeState *largest_node = nullptr, *most_cpu = nullptr,
                  *most_memory = nullptr;
  Quantity most_cpu_free, most_memory_free;
  for (NodeIdx n = 0; n < static_cast<NodeIdx>(nodes.size()); ++n) {
    const NodeState& node = nodes[n];
    if (node.removed) continue;
    bool labels_ok = std::all_of(req.flavors.begin(), req.flavors.end(),
                                 [&](int32_t f) { return node.in_flavor[f]; });
    if (!labels_ok || (req.node_selector &&
                       !core::LabelsMatch(*req.node_selector, node.labels))) {
      continue;
    }
    ++matching;
    if (node.unschedulable) {
      ++cordoned;
      continue;
    }
    if (req.has_image && node.refuses_images) {
      ++process_only;
      continue;
    }
    if (node.UntoleratedTaint(req, flavors)) {
      if (!tainted) tainted = &node;
      continue;
    }
    ++eligible;
    bool devices_ok = true;
    for (const auto& [r, need] : ctx.needs) {
      int32_t free = node.Free(r, s.Get(n));
      devices_ok = devices_ok && free >= need;
      if (ctx.needs.size() == 1 && free > largest) {
        largest = free;
        largest_node = &node;
      }
    }
    if (!devices_ok) continue;
    ++with_devices;
    const Scratch::Use* u = s.Get(n);
    Quantity cpu = node.cpu_free - (u ? u->cpu : Quantity());
    Quantity memory = node.memory_free - (u ? u->memory : Quantity());
    with_cpu += cpu >= req.shape.cpu;
    with_memory += memory >= req.shape.memory;
    if (!most_cpu || cpu > most_cpu_free) most_cpu = &node, most_cpu_free = cpu;
    if (!most_memory || memory > most_memory_free) {
      most_memory = &node, most_memory_free = memory;
    }
  }
  std::string matching_scope = scope.empty() ? "" : " matching " + scope;
  if (matching == 0) {
    return nodes.empty() ? "the pool has no nodes" : "no node matches " + scope;
  }
  if (cordoned == matching) {
    return "all " + std::to_string(matching) + " nodes" + matching_scope +
           " are cordoned";
  }
  if (process_only > 0 && process_only + cordoned == matching) {
    return "the pod set runs an image, and the " + std::to_string(process_only) +
           " schedulable node(s)" + matching_scope +
           " run processes (their agents need --runtime container, or --ignore-images)";
  }
  if (eligible == 0) {
    return "no schedulable node" + matching_scope +
           " tolerates its taints (node " + tainted->name + " has taint " +
           TaintText(*tainted->UntoleratedTaint(req, flavors)) + ")";
  }
  if (with_devices == 0) {
    std::string why = "no schedulable node has " + devices +
                      (scope.empty() ? "" : " for " + scope);
    if (ctx.needs.size() != 1) return why;
    if (ctx.needs[0].first < 0) return why + " (no node has any)";
    if (largest <= 0) {
      return why + (more ? " (none left)" : " (all are in use or unhealthy)");
    }
    return why + " (largest free block" + (more ? " left" : "") + ": " +
           std::to_string(largest) + " on node " + largest_node->name + ")";
  }
  std::string who = devices.empty() ? "no schedulable node" + matching_scope
                                    : "no node with " + devices;
  if (with_cpu == 0) {
    return who + " has " + req.shape.cpu.ToString() +
           " free cpu (most: " + most_cpu_free.ToString() + " on node " +
           most_cpu->name + ")";
  }
  if (with_memory == 0) {
    return who + " has " + req.shape.memory.ToString() +
           " free memory (most: " + most_memory_free.ToString() + " on node " +
           most_memory->name + ")";
  }
  return who + " has both " + req.shape.cpu.ToString() + " cpu and " +
         req.shape.memory.ToString() + " memory free";
}

NodePool::NodePool(std::vector<core::ResourceFlavor> flavors,
                   std::vector<core::Topology> topologies)
    : impl_(std::make_unique<Impl>()) {
  impl_->flavors = std::move(flavors);
  impl_->topologies = std::move(topologies);
  impl_->index.resize(impl_->flavors.size() + 1);
  impl_->slot_sizes.assign(impl_->flavors.size() + 1, 0);
}

NodePool::~NodePool() = default;

Status NodePool::AddNode(const core::Node& node) {
  Impl& m = *impl_;
  std::unordered_set<std::string> fresh;
  ALLOT_RETURN_IF_ERROR(m.CheckNode(node, -1, &fresh));
  const NodeIdx n = static_cast<NodeIdx>(m.nodes.size());
  m.nodes.push_back(m.MakeNode(node, n));
  m.blocks.Append(m.nodes[n].rank.block, n);
  m.racks.Append(m.nodes[n].rank.rack, n);
  m.node_ids.emplace(node.name, n);
  m.uuids.insert(fresh.begin(), fresh.end());
  m.Index(n);
  return Status::Ok();
}

int32_t NodePool::NodeCount() const {
  return static_cast<int32_t>(impl_->nodes.size());
}

const std::string& NodePool::NodeName(NodeIdx n) const {
  return impl_->nodes.at(n).name;
}

std::optional<NodeIdx> NodePool::FindNode(const std::string& name) const {
  auto it = impl_->node_ids.find(name);
  if (it == impl_->node_ids.end()) return std::nullopt;
  return it->second;
}

int32_t NodePool::DeviceCount(NodeIdx n) const {
  return static_cast<int32_t>(impl_->nodes.at(n).devices.size());
}

const std::string& NodePool::DeviceUuid(NodeIdx n, int32_t slot) const {
  return impl_->nodes.at(n).devices.at(slot).uuid;
}

const std::string& NodePool::DeviceResource(NodeIdx n, int32_t slot) const {
  return impl_->resource_names[impl_->nodes.at(n).devices.at(slot).resource];
}

std::optional<int32_t> NodePool::FindDevice(NodeIdx n,
                                            const std::string& uuid) const {
  const auto& devices = impl_->nodes.at(n).devices;
  for (size_t i = 0; i < devices.size(); ++i) {
    if (devices[i].uuid == uuid) return static_cast<int32_t>(i);
  }
  return std::nullopt;
}

bool NodePool::DeviceFree(NodeIdx n, int32_t slot) const {
  return impl_->nodes.at(n).devices.at(slot).free;
}

bool NodePool::Find(const std::vector<PodSetRequest>& request, Placement* out,
                    std::string* why) const {
  const Impl& m = *impl_;
  Scratch& scratch = m.find_scratch;
  scratch.Clear();
  // Built in place (keeping out's buffers); emptied again on failure.
  out->resize(request.size());
  for (size_t i = 0; i < request.size(); ++i) {
    const PodSetRequest& req = request[i];
    PodSetCtx ctx = m.MakeCtx(req);
    PodSetPlacement& pods = (*out)[i];
    pods.clear();
    int64_t placed = 0;
    std::string topology_why;
    if (req.count > 0 && !ctx.flavor_taint) {
      placed = req.topology && !req.topology->empty()
                   ? m.PlaceTopology(ctx, &scratch, &pods, &topology_why)
                   : m.Place(ctx, &scratch, &pods);
    }
    if (placed < req.count) {
      if (why && !topology_why.empty()) {
        *why = (request.size() > 1 ? "pod set " + std::to_string(i) + ": " : "") +
               topology_why;
      } else if (why) {
        std::string prefix =
            request.size() > 1 ? "pod set " + std::to_string(i) + ": " : "";
        if (req.count > 1) {
          prefix += std::to_string(placed) + " of " +
                    std::to_string(req.count) + " pods fit; ";
        }
        *why = prefix + m.Explain(ctx, scratch, !scratch.uses.empty());
      }
      out->clear();
      return false;
    }
  }
  return true;
}

Status NodePool::Validate(const std::vector<PodSetRequest>& request,
                          const Placement& placement) const {
  const Impl& m = *impl_;
  if (placement.size() != request.size()) {
    return Status::InvalidArgument(
        "placement has " + std::to_string(placement.size()) +
        " pod sets, the request has " + std::to_string(request.size()));
  }
  std::set<std::pair<NodeIdx, int32_t>> given;
  std::unordered_map<NodeIdx, std::pair<Quantity, Quantity>> used;
  for (size_t i = 0; i < request.size(); ++i) {
    const PodSetRequest& req = request[i];
    PodSetCtx ctx = m.MakeCtx(req);
    std::string set_field = "podSetAssignments[" + std::to_string(i) + "]";
    if (static_cast<int64_t>(placement[i].size()) != req.count) {
      return Status::InvalidArgument(
          "pod set has " + std::to_string(placement[i].size()) +
              " placements, expected " + std::to_string(req.count),
          set_field + ".placements");
    }
    if (ctx.flavor_taint && req.count > 0) {
      return Status::InvalidArgument(m.Explain(ctx, Scratch(), false),
                                     set_field);
    }
    for (size_t j = 0; j < placement[i].size(); ++j) {
      const PodAssignment& pod = placement[i][j];
      std::string field = set_field + ".placements[" + std::to_string(j) + "]";
      auto fail = [&](const std::string& msg) {
        return Status::InvalidArgument(msg, field);
      };
      if (pod.node < 0 || pod.node >= NodeCount()) {
        return fail("no node has index " + std::to_string(pod.node));
      }
      const NodeState& node = m.nodes[pod.node];
      // A cordon stops new placements only: what a cordoned node holds
      // stays valid (Find places nothing there).
      for (int32_t f : req.flavors) {
        if (!node.in_flavor[f]) {
          return fail("node " + node.name + " does not match flavor " +
                      m.flavors[f].name);
        }
      }
      if (req.node_selector &&
          !core::LabelsMatch(*req.node_selector, node.labels)) {
        return fail("node " + node.name + " does not match node selector " +
                    LabelsText(*req.node_selector));
      }
      if (const core::Taint* t = node.UntoleratedTaint(req, m.flavors)) {
        return fail("node " + node.name + " has taint " + TaintText(*t) +
                    ", which the pod set does not tolerate");
      }
      std::vector<int32_t> got(req.shape.devices.size(), 0);
      for (int32_t slot : pod.devices) {
        if (slot < 0 || slot >= static_cast<int32_t>(node.devices.size())) {
          return fail("node " + node.name + " has no device slot " +
                      std::to_string(slot));
        }
        const Device& d = node.devices[slot];
        const std::string& resource = m.resource_names[d.resource];
        std::string what =
            (resource == core::kGpuResource ? "GPU " : "MIG slice ") + d.uuid +
            " on node " + node.name;
        if (!given.emplace(pod.node, slot).second) {
          return fail(what + " is given twice");
        }
        if (!d.free) return fail(what + " is already in use");
        if (!d.healthy) return fail(what + " is unhealthy");
        auto it =
            std::find_if(req.shape.devices.begin(), req.shape.devices.end(),
                         [&](const auto& p) { return p.first == resource; });
        if (it == req.shape.devices.end()) {
          return fail(what + " is a " + resource +
                      ", which the pod does not request");
        }
        ++got[it - req.shape.devices.begin()];
      }
      for (size_t k = 0; k < got.size(); ++k) {
        int32_t want = std::max(req.shape.devices[k].second, 0);
        if (got[k] != want) {
          return fail("pod gets " + std::to_string(got[k]) + " " +
                      req.shape.devices[k].first + " on node " + node.name +
                      ", it requests " + std::to_string(want));
        }
      }
      auto& [cpu, memory] = used[pod.node];
      cpu += req.shape.cpu;
      memory += req.shape.memory;
      if (cpu > node.cpu_free) {
        return fail("node " + node.name + " has " + node.cpu_free.ToString() +
                    " free cpu, the pods placed there need " + cpu.ToString());
      }
      if (memory > node.memory_free) {
        return fail(
            "node " + node.name + " has " + node.memory_free.ToString() +
            " free memory, the pods placed there need " + memory.ToString());
      }
    }
  }
  return Status::Ok();
}

void NodePool::Commit(const std::vector<PodSetRequest>& request,
                      const Placement& placement) {
  impl_->Apply(request, placement, /*take=*/true);
}

void NodePool::Release(const std::vector<PodSetRequest>& request,
                       const Placement& placement) {
  impl_->Apply(request, placement, /*take=*/false);
}

void NodePool::SetUnschedulable(NodeIdx n, bool unschedulable) {
  ALLOT_CHECK(n >= 0 && n < NodeCount());
  impl_->Update(n,
                [&](NodeState& node) { node.unschedulable = unschedulable; });
}

void NodePool::SetDeviceHealthy(NodeIdx n, int32_t slot, bool healthy) {
  ALLOT_CHECK(n >= 0 && n < NodeCount());
  ALLOT_CHECK(slot >= 0 && slot < DeviceCount(n));
  impl_->Update(n, [&](NodeState& node) {
    node.SetDevice(slot, node.devices[slot].free, healthy);
  });
}

int64_t NodePool::FreeDevices(const std::string& resource) const {
  int32_t r = impl_->ResourceId(resource);
  return r < 0 ? 0 : impl_->offered_totals[r];
}

NodePool::NodeFree NodePool::Free(NodeIdx n) const {
  const NodeState& node = impl_->nodes.at(size_t(n));
  const int32_t gpu = impl_->ResourceId(core::kGpuResource);
  NodeFree f;
  f.cpu = node.cpu_free;
  f.memory = node.memory_free;
  for (const Device& d : node.devices) f.gpus += d.resource == gpu;
  f.gpus_free = node.Offered(gpu);
  return f;
}

}  // namespace allot::sched
