// NodePool: the physical side of admission. It knows every node's free CPU,
// memory, whole GPUs and MIG slices, and finds exact gang placements.
//
// Guarantees:
//  - a device (a whole GPU or one MIG slice) is held by at most one pod;
//  - Find() never returns a node that is unschedulable, fails a pod set's
//    flavors (node labels, untolerated taints) or node selector, or lacks
//    the pod's free CPU, memory or healthy devices;
//  - all pods of one pod set request land on nodes at once or not at all,
//    and the pods of all pod sets of one Find() call are placed together
//    (gang): partial results are never returned.
//
// Packing policy (documented in docs/scheduling.md):
//  - a pod that fits on one node goes to the node with the fewest free
//    devices of the requested kind that still fits it (best fit), so whole
//    nodes stay free for large jobs;
//  - the pods of one pod set go on as few nodes as possible; nodes are
//    ordered by (topology block, rack, insertion order), so when several
//    nodes are needed they come from the same rack/block where possible;
//  - a pod set with a topology request (Kueue's TAS) goes into one domain
//    of the requested level of its flavor's Topology (node label values):
//    the domain with the least room that holds every pod (best fit);
//    "preferred" then tries each wider level and at last anywhere.
//
// Not thread-safe; pure (no I/O, clock or threads). Deterministic: the same
// sequence of calls gives the same answers.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/model.h"
#include "core/status.h"

namespace allot::sched {

using NodeIdx = int32_t;

// What one pod needs from its node.
struct PodShape {
  Quantity cpu;
  Quantity memory;
  // Device resources and counts, sorted by name, e.g.
  // {{"nvidia.com/gpu", 8}} or {{"nvidia.com/mig-1g.10gb", 1}}.
  std::vector<std::pair<std::string, int32_t>> devices;
};

struct PodSetRequest {
  int32_t count = 0;
  PodShape shape;
  // Indexes into the pool's flavor list. A node must match every one
  // (nodeLabels) and tolerate its nodeTaints with the flavor's tolerations
  // plus `tolerations`.
  std::vector<int32_t> flavors;
  const core::Labels* node_selector = nullptr;                 // May be null.
  const std::vector<core::Toleration>* tolerations = nullptr;  // May be null.
  // Topology-aware scheduling (may be null): the levels come from the
  // Topology of the first of `flavors` that names one.
  const core::TopologyRequest* topology = nullptr;
  // Its pods run an image: not on a node that runs only processes.
  bool has_image = false;
};

// One pod: its node and the device slots (see DeviceUuid) it holds.
struct PodAssignment {
  NodeIdx node = -1;
  std::vector<int32_t> devices;
  bool operator==(const PodAssignment&) const = default;
};
using PodSetPlacement = std::vector<PodAssignment>;  // One per pod.
using Placement = std::vector<PodSetPlacement>;      // One per pod set.

class NodePool {
 public:
  // `topologies`: those the flavors name (ResourceFlavor::topology_name).
  explicit NodePool(std::vector<core::ResourceFlavor> flavors,
                    std::vector<core::Topology> topologies = {});
  ~NodePool();
  NodePool(const NodePool&) = delete;
  NodePool& operator=(const NodePool&) = delete;

  // Adds a node. Errors (nothing changes): duplicate node name, duplicate
  // GPU or MIG slice UUID anywhere in the pool, negative capacity.
  Status AddNode(const core::Node& node);

  // Replaces node n's description (labels, taints, cordon, capacity, GPUs,
  // health, MIG layout) in place: it keeps its index and topology place.
  // The node must hold nothing (callers Release what is on it first):
  // FailedPrecondition otherwise. The name must stay; UUIDs are checked as
  // AddNode checks them (its own may be kept). Errors change nothing.
  Status ReplaceNode(NodeIdx n, const core::Node& node);
  // Removes node n, which must hold nothing (FailedPrecondition otherwise,
  // changing nothing). Its index stays taken but empty: FindNode no longer
  // finds it, and it is never offered or scanned; other indexes keep.
  Status RemoveNode(NodeIdx n);
  // The node as last added or replaced. CHECK-fails on a removed node.
  const core::Node& NodeSpec(NodeIdx n) const;

  // Includes removed nodes' indexes.
  int32_t NodeCount() const;
  const std::string& NodeName(NodeIdx n) const;
  std::optional<NodeIdx> FindNode(const std::string& name) const;
  // A node's devices are numbered 0..DeviceCount-1: one per whole non-MIG
  // GPU, one per MIG slice, in the node's GPU order.
  int32_t DeviceCount(NodeIdx n) const;
  const std::string& DeviceUuid(NodeIdx n, int32_t slot) const;
  // "nvidia.com/gpu" or "nvidia.com/mig-<profile>".
  const std::string& DeviceResource(NodeIdx n, int32_t slot) const;
  std::optional<int32_t> FindDevice(NodeIdx n, const std::string& uuid) const;
  bool DeviceFree(NodeIdx n, int32_t slot) const;

  // Finds a placement for every pod set of `request` together, changing
  // nothing. On failure returns false and sets `*why` to a reason a user can
  // act on, e.g. "no node has 8 free nvidia.com/gpu for flavor h100
  // (largest free block: 6 on node gpu-07)". `why` may be null: building
  // the reason scans every node, so hot paths skip it.
  bool Find(const std::vector<PodSetRequest>& request, Placement* out,
            std::string* why) const;

  // Checks that `placement` is valid for `request` right now: nodes and
  // slots exist, devices are free, healthy and of the requested resource and
  // count, CPU and memory fit, flavors/selectors/taints match; a cordoned
  // node is no objection (a cordon stops new placements only). Used for
  // workloads whose placement is given in input and for what a node change
  // keeps. Changes nothing.
  Status Validate(const std::vector<PodSetRequest>& request,
                  const Placement& placement) const;

  // Takes / gives back the resources of a placement (CPU, memory, devices).
  // Commit CHECK-fails on a device already held: callers Find or Validate
  // first.
  void Commit(const std::vector<PodSetRequest>& request,
              const Placement& placement);
  void Release(const std::vector<PodSetRequest>& request,
               const Placement& placement);

  // Cordon / uncordon: an unschedulable node gets no new pods.
  void SetUnschedulable(NodeIdx n, bool unschedulable);
  // An unhealthy device (or a slice of an unhealthy GPU) is never offered;
  // whoever holds it keeps it until released.
  void SetDeviceHealthy(NodeIdx n, int32_t slot, bool healthy);

  // Totals over schedulable nodes, for reasons and metrics.
  int64_t FreeDevices(const std::string& resource) const;
  // Node n's free CPU and memory, and its whole GPUs (nvidia.com/gpu):
  // how many, and how many are free and healthy (0 on a cordoned node).
  struct NodeFree {
    Quantity cpu;
    Quantity memory;
    int32_t gpus = 0;
    int32_t gpus_free = 0;
  };
  NodeFree Free(NodeIdx n) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace allot::sched
