// Scheduler: Kueue-compatible quota admission with exact GPU placement.
//
// The scheduler owns the scheduling state of one cluster: the cohort tree
// and ClusterQueue quota usage, the pending queues, the admitted workloads
// and the NodePool. Callers feed it changes (workloads arriving, finishing,
// nodes changing) and run cycles; each cycle returns its decisions.
//
// It is pure: no I/O, no clock, no threads, no randomness. The same calls in
// the same order give the same decisions, byte for byte. The server, the
// simulator and the tests all drive this same code.
//
// A cycle (see docs/scheduling.md):
//  1. takes the head of every active ClusterQueue queue (priority, then
//     creation time, then arrival order);
//  2. orders the heads (classical: non-borrowing first, then priority, then
//     creation time; fair sharing: lowest dominant resource share first);
//  3. for each head, assigns flavors per resource group in the
//     ClusterQueue's order (flavorFungibility), checks nominal quota then
//     borrowing along the cohort tree (borrowingLimit, lendingLimit), and
//     finds an exact gang placement on nodes;
//  4. when quota or placement is short, searches the smallest set of
//     victims the ClusterQueue's preemption policy allows (Kueue's order),
//     evicts them (their quota is freed at once, they return to their
//     queues) and admits the head;
//  5. a head that cannot be admitted gets a reason; under BestEffortFIFO it
//     is set aside until quota is freed in its cohort tree, under StrictFIFO
//     it blocks its queue.
//
// Not thread-safe: one owner calls it.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/model.h"
#include "core/status.h"
#include "sched/node_pool.h"

namespace allot::sched {

enum class PreemptionReason {
  kInClusterQueue,
  kInCohortReclamation,
  kInCohortFairSharing,
  kInCohortReclaimWhileBorrowing,
  // Allot's: it ran on capacity a parked workload lent, which resumed (or
  // the parked workload's quota went); docs/parking.md.
  kParkedCapacityReclaim,
};
// Kueue's names: "InClusterQueue", "InCohortReclamation", ...
const char* ToString(PreemptionReason r);

struct PreemptionEvent {
  std::string workload;   // "ns/name" of the victim.
  std::string preemptor;  // "ns/name".
  PreemptionReason reason;
};

struct AdmittedWorkload {
  std::string workload;  // "ns/name".
  // ClusterQueue, flavors and exact placements (node names and GPU / MIG
  // slice UUIDs, one entry per pod).
  core::Admission admission;
};

struct PendingWorkload {
  std::string workload;       // "ns/name".
  std::string cluster_queue;  // Empty when its LocalQueue is unknown.
  std::string reason;         // A sentence a user can act on.
  // 1-based place in its ClusterQueue's queue; 0 when it is in no queue
  // (its LocalQueue or ClusterQueue is missing, or the ClusterQueue's
  // namespaceSelector does not select its namespace).
  int32_t position = 0;
};

struct CycleResult {
  std::vector<std::string> admitted;  // Keys, in decision order.
  std::vector<PreemptionEvent> preempted;
  int32_t attempts = 0;  // Heads tried.
  bool Changed() const { return !admitted.empty() || !preempted.empty(); }
};

// One quota cell of a ClusterQueue, in milli-units.
struct QuotaUsage {
  std::string flavor;
  std::string resource;
  int64_t nominal_milli = 0;
  std::optional<int64_t> borrowing_limit_milli;
  std::optional<int64_t> lending_limit_milli;
  int64_t usage_milli = 0;     // Reserved by admitted workloads.
  int64_t borrowed_milli = 0;  // Usage above nominal (taken from the cohort).
  // Its unused quota that others in its cohort tree use now. Kueue does not
  // say whose quota a borrower uses: the borrowed total of the tree (less
  // quota the cohorts above it hold themselves) is attributed to the
  // ClusterQueues with unused quota they may lend (within lendingLimit),
  // in proportion to it, so the lent amounts of a tree add up to what it
  // borrows.
  int64_t lent_milli = 0;
  // Parking (docs/parking.md): the part of usage_milli held by its parked
  // workloads (on no device), and what its workloads running on parked
  // capacity of its cohort tree use (not in usage_milli: they hold no
  // quota).
  int64_t parked_milli = 0;
  int64_t on_parked_milli = 0;
};

struct ClusterQueueStatus {
  std::vector<QuotaUsage> quota;  // In resourceGroups/flavors order.
  int32_t pending = 0;            // In its queue (set-aside ones included).
  int32_t inadmissible = 0;       // Of those, set aside until a change.
  int32_t admitted = 0;  // Those on parked capacity included.
  // Kueue's fairSharing.weightedShare: the largest ratio, over resources,
  // of what it borrows to what its cohort could lend it, x1000, divided by
  // its weight and rounded up; INT64_MAX when its weight is 0 and it
  // borrows.
  int64_t weighted_share = 0;
};

// Demand that only capacity holds back: pending workloads whose quota would
// admit them now but that no node can take, set aside (or heading a
// StrictFIFO queue) until devices of `flavor` free up. A workload that
// could use several flavors counts under each. What an autoscaler adds
// nodes for (Kueue's pending counts cannot say it: Kueue admits without
// nodes).
struct CapacityBlocked {
  std::string flavor;
  int32_t workloads = 0;
  // Device requests (nvidia.com/gpu, nvidia.com/mig-*) of those workloads,
  // all their pods, in milli-units, by resource.
  std::map<std::string, int64_t> devices_milli;
};

// One workload of that demand, as an autoscaler plans for it
// (ctrl/autoscaler.h): what its pods need, whole gang. Listed in queue
// order (priority, then creation), and only while the quota that the
// workloads listed before it would take leaves room for it too (per
// ClusterQueue and cohort, within nominal quota or borrowing limits), so
// that quota-blocked work never asks for nodes.
struct CapacityDemandPodSet {
  int32_t count = 0;  // Pods; each needs all of what follows.
  int32_t gpus = 0;   // Whole GPUs (nvidia.com/gpu).
  Quantity cpu;
  Quantity memory;
  // It asks for devices that are not whole GPUs (MIG slices): no node of
  // a pool's shape fits it.
  bool other_devices = false;
  core::Labels node_selector;
  std::vector<core::Toleration> tolerations;
};
struct CapacityDemand {
  std::string key;
  std::string cluster_queue;
  int32_t priority = 0;
  // The flavors whose quota admits it and whose nodes are short, in its
  // ClusterQueue's order (their node labels and taints: Scheduler::Flavor).
  std::vector<std::string> flavors;
  std::vector<CapacityDemandPodSet> pod_sets;
};

// A cohort's quota and usage per flavor and resource, as Kueue's cohort
// arithmetic counts them: nominal is what it holds (its own quota plus
// what its members may lend it: each member's quota within its
// lendingLimit), usage what its members draw from it (a member's use of
// the quota it keeps to itself is not counted), borrowed what it uses
// above that, from its parent cohort.
struct CohortStatus {
  std::string name;
  std::string parent;  // "" for a root.
  std::vector<QuotaUsage> quota;  // Where nominal or usage is not 0.
};

class Scheduler {
 public:
  // Builds a scheduler from a validated config (core/manifest.h
  // ValidateConfig): flavors, cohorts, ClusterQueues, LocalQueues, priority
  // classes, namespaces, nodes, and then its workloads in file order.
  // Admitted workloads keep their flavors and given placements (or are
  // placed now, in file order, when placements are absent). Errors name the
  // file, document and field: a placement on a missing node, a GPU given
  // twice, an admission over physical capacity.
  static Result<std::unique_ptr<Scheduler>> Create(const core::Config& config);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Adds a pending workload (or an admitted one, see Create). Duplicate
  // keys, unknown queues are errors that change nothing... except that a
  // workload whose LocalQueue is missing is kept pending with that reason.
  Status AddWorkload(const core::Workload& workload);
  // A workload finished or was deleted: its quota and devices are freed at
  // once and its cohort's set-aside workloads are retried.
  Status RemoveWorkload(const std::string& key);

  // A node joins (an agent registered it): its devices are free, and every
  // workload set aside is tried again. Errors change nothing: a duplicate
  // node name, a GPU or MIG UUID that another node has, bad capacity.
  Status AddNode(const core::Node& node);

  // Node changes without a rebuild. Contract: the caller first evicts
  // (EvictWorkload) or removes every admitted workload whose placement the
  // change invalidates; the scheduler never evicts for a node change.
  //
  // UpdateNode replaces an existing node's description (labels, taints,
  // unschedulable, capacity, GPUs and their health, MIG layout) in place:
  // the node keeps its place in node order. Every admitted placement on
  // the node must still be valid on the new node as Create would check it
  // (the same device UUIDs, healthy, of the same resource; CPU and memory
  // within capacity; labels, selectors and taints matching):
  // else FailedPrecondition naming the first such workload. NotFound for an
  // unknown node; AddNode's errors for bad capacity or a UUID another node
  // has. RemoveNode removes a node that holds no admitted pod
  // (FailedPrecondition otherwise; NotFound for an unknown node).
  //
  // Errors change nothing. On success every set-aside workload goes back
  // to its queue, so the next cycles decide as a scheduler rebuilt by
  // Create from the same nodes and workloads would (admissions, placements,
  // pending set and reasons, preemptions; scheduler_node_changes_test.cc),
  // with one difference: this scheduler keeps what a rebuild forgets, the
  // order in which workloads were admitted (which orders victims of equal
  // priority; Create numbers admissions in file order) and which workloads
  // evicted which. A rebuilt scheduler and one it was rebuilt from differ
  // the same way, node changes or not.
  //
  // Cost: UpdateNode moves the node's placements over (O(its pods) and
  // the node's size); RemoveNode is O(log nodes), O(nodes) only when the
  // removal changes the order of the blocks' or racks' first nodes
  // (renumbering, ints only). Neither requeues anything itself: each
  // ClusterQueue's set-aside workloads join its queue when it is next
  // touched or when the next cycle starts, O(1) per ClusterQueue unless
  // some of them wait for nodes (then O(its set-aside workloads)); so a run
  // of changes before a cycle requeues once. Measured in bench/RESULTS.md
  // ("Node changes").
  Status UpdateNode(const core::Node& node);
  Status RemoveNode(const std::string& name);

  // Takes an admitted workload's admission away (its quota and devices are
  // freed at once) and puts it back in its queue at its arrival place, as a
  // rebuild that lists it without an admission would; every set-aside
  // workload is retried. No preemption event is recorded: the caller says
  // why. NotFound for an unknown key, FailedPrecondition when not admitted;
  // errors change nothing.
  Status EvictWorkload(const std::string& key);

  // Parking (docs/parking.md). ParkWorkload gives an admitted workload's
  // devices back to the pool and keeps its admission: its flavors and its
  // usage in the quota tree (so no one else gets its quota; workloads that
  // only lacked devices are woken). It can still be preempted, as any
  // admitted workload (it frees quota, no devices).
  //
  // Its devices may be lent: a preemptible workload (core::Workload::
  // preemptible) of its cohort tree that its own quota cannot admit runs
  // on parked capacity (Admission::on_parked_capacity), holding no quota,
  // as long as the tree's workloads on parked capacity use no more of any
  // flavor-resource than its parked workloads hold. They are the first to
  // go: when that bound breaks (a resume, a parked workload removed or
  // preempted), and before anyone else when a workload with quota lacks
  // devices that they hold (reason kParkedCapacityReclaim; evictions made
  // outside a cycle are reported by the next RunCycle).
  //
  // ResumeWorkload places it again on free devices of its flavors, the
  // NodePool's best, without queueing, evicting workloads on parked
  // capacity when free devices are short; FailedPrecondition saying why
  // when none can take it even then (it stays parked). NotFound for an
  // unknown key; FailedPrecondition when not admitted or on parked
  // capacity (Park) or not parked (Resume); errors change nothing.
  //
  // `pod_sets` parks only those (say, a RayCluster's workers): their
  // devices go back and are lent, the others (its head) keep theirs and
  // run on; the quota of all stays, and a resume places the parked ones.
  // Empty: all. InvalidArgument naming the pod sets for an unknown one.
  Status ParkWorkload(const std::string& key, const std::vector<std::string>& pod_sets = {});
  Status ResumeWorkload(const std::string& key);
  bool IsParked(const std::string& key) const;
  // For a workload on parked capacity, the longest its pods may take to
  // stop when the capacity is taken back: the smallest reclaim grace of its
  // cohort tree's ClusterQueues; -1 for any other.
  int64_t ReclaimGraceSeconds(const std::string& key) const;
  // One scheduling cycle over the active heads.
  CycleResult RunCycle();
  // Runs cycles until one changes nothing; returns the number run. Stops
  // after `max_cycles` (a safety net; reported by the caller).
  int32_t RunUntilQuiescent(int32_t max_cycles = 1000000);

  // Sorted by workload key.
  std::vector<AdmittedWorkload> Admitted() const;
  // Sorted by workload key. Reasons are computed now, against the current
  // state, with the node scan that finds the largest free block: this costs
  // a flavor assignment per pending workload, so a server should explain
  // one workload at a time rather than call this on every change.
  std::vector<PendingWorkload> Pending() const;
  // The admission of one admitted workload; nullopt when it is unknown or
  // not admitted.
  std::optional<core::Admission> AdmissionOf(const std::string& key) const;
  // Whether a pending workload is set aside until something changes
  // (Kueue's "inadmissible" pending workloads); false for any other.
  bool IsInadmissible(const std::string& key) const;
  // Why one pending workload waits and its place in line, as Pending()
  // would say, at the cost of sorting its ClusterQueue's queue; nullopt
  // when it is unknown or admitted.
  std::optional<PendingWorkload> Explain(const std::string& key) const;
  // Explain for many at once (a page of a list): each ClusterQueue that
  // holds one of them is sorted once, and only these are explained. Keys
  // that are unknown or admitted are left out of the answer.
  std::unordered_map<std::string, PendingWorkload> Explain(
      const std::vector<std::string>& keys) const;
  // Usage and counts of one ClusterQueue; nullopt when it is unknown.
  std::optional<ClusterQueueStatus> GetClusterQueueStatus(
      const std::string& name) const;
  // Every cohort (declared or only named by ClusterQueues), by name.
  std::vector<CohortStatus> CohortStatuses() const;
  // Capacity-blocked demand per flavor, by flavor name (flavors with none
  // are left out).
  std::vector<CapacityBlocked> CapacityBlockedByFlavor() const;
  // The same demand, workload by workload, within the quota left as
  // described at CapacityDemand.
  std::vector<CapacityDemand> CapacityDemands() const;
  // A flavor by name (nullptr if unknown), and a node's free capacity
  // (nullopt if unknown), for an autoscaler.
  const core::ResourceFlavor* Flavor(const std::string& name) const;
  std::optional<NodePool::NodeFree> NodeFree(const std::string& name) const;
  // Every eviction since creation, in order.
  const std::vector<PreemptionEvent>& Preemptions() const;

  size_t PendingCount() const;
  size_t AdmittedCount() const;

  // Test hook: does now the requeue work a node change (or an eviction)
  // leaves for the next cycle, which must change nothing observable
  // (scheduler_node_changes_test.cc, LazyRequeueIsUnobservable).
  void TEST_SettleAll();

 private:
  Scheduler();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace allot::sched
