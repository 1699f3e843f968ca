// Internal state of sched::Scheduler, shared by its .cc files
// (scheduler.cc: cycles and bookkeeping; flavor_assigner.cc: flavors and
// quota modes; preemption.cc: victim search; reasons.cc: pending reasons).
// Not part of the public API.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/model.h"
#include "core/status.h"
#include "sched/inline_vec.h"
#include "sched/node_pool.h"
#include "sched/quota_tree.h"
#include "sched/scheduler.h"

namespace allot::sched {

using WlIdx = int32_t;

// Kueue: a flavor fits a pod set when its nodeTaints are tolerated (pod
// tolerations plus the flavor's own) and the pod's nodeSelector does not
// contradict the flavor's nodeLabels. `why` (not null) says why not.
bool FlavorEligible(const core::PodSet& ps, const core::ResourceFlavor& f,
                    std::string* why);

// Queue order inside a ClusterQueue: priority (high first), creation time,
// then arrival order.
struct QueueKey {
  int32_t neg_priority;
  int64_t creation_ms;
  int64_t seq;
  WlIdx wl;
  auto operator<=>(const QueueKey&) const = default;
  // Inline, for the queues' std::set.
  friend bool operator<(const QueueKey& a, const QueueKey& b) {
    if (a.neg_priority != b.neg_priority) return a.neg_priority < b.neg_priority;
    if (a.creation_ms != b.creation_ms) return a.creation_ms < b.creation_ms;
    if (a.seq != b.seq) return a.seq < b.seq;
    return a.wl < b.wl;
  }
};

// A queue key with the stamp its workload had when it was listed: the
// entry is live while the workload's stamp is unchanged (see PendingQueue).
struct StampedKey {
  QueueKey key;
  uint32_t stamp = 0;
};

// Workloads of a ClusterQueue in queue order: a binary heap whose entries
// go stale instead of being erased. `stamps` (one per workload, owned by
// the scheduler) is bumped whenever a workload is listed or unlisted
// anywhere; only an entry with its workload's current stamp is live. The
// caller says when a live entry goes stale (Drop) so that size() stays
// right. Pushes and drops allocate nothing once the heap has grown.
class PendingQueue {
 public:
  void Push(const QueueKey& k, uint32_t stamp) {
    heap_.push_back({k, stamp});
    std::push_heap(heap_.begin(), heap_.end(), Later);
    ++size_;
  }
  // One live entry went stale (its workload's stamp was bumped).
  void Drop(const std::vector<uint32_t>& stamps) {
    ALLOT_CHECK(size_ > 0);
    --size_;
    if (size_ == 0) {
      heap_.clear();
    } else if (heap_.size() > 2 * size_ + 64) {
      std::erase_if(heap_, [&](const StampedKey& e) { return !Live(e, stamps); });
      std::make_heap(heap_.begin(), heap_.end(), Later);
    }
  }
  // The first workload, or -1; drops stale entries on top.
  WlIdx Front(const std::vector<uint32_t>& stamps) {
    while (!heap_.empty() && !Live(heap_.front(), stamps)) {
      std::pop_heap(heap_.begin(), heap_.end(), Later);
      heap_.pop_back();
    }
    return heap_.empty() ? -1 : heap_.front().key.wl;
  }
  // Moves every live entry of `other` here; `other` ends empty. The
  // entries keep their stamps, so their workloads need not be touched:
  // O(1) when one side is empty, else O(smaller side x log).
  void Absorb(PendingQueue* other, const std::vector<uint32_t>& stamps) {
    if (other->size_ > size_) {
      heap_.swap(other->heap_);
      std::swap(size_, other->size_);
    }
    for (const StampedKey& e : other->heap_) {
      if (!Live(e, stamps)) continue;
      heap_.push_back(e);
      std::push_heap(heap_.begin(), heap_.end(), Later);
    }
    size_ += other->size_;
    other->heap_.clear();
    other->size_ = 0;
  }
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  // Appends the live keys, in no particular order.
  void LiveKeys(const std::vector<uint32_t>& stamps,
                std::vector<QueueKey>* out) const {
    for (const StampedKey& e : heap_) {
      if (Live(e, stamps)) out->push_back(e.key);
    }
  }
  // Calls f(w) for every live entry's workload.
  template <typename F>
  void ForEachLive(const std::vector<uint32_t>& stamps, F f) const {
    for (const StampedKey& e : heap_) {
      if (Live(e, stamps)) f(e.key.wl);
    }
  }

 private:
  static bool Live(const StampedKey& e, const std::vector<uint32_t>& stamps) {
    return e.stamp == stamps[size_t(e.key.wl)];
  }
  static bool Later(const StampedKey& a, const StampedKey& b) {
    return b.key < a.key;
  }
  std::vector<StampedKey> heap_;
  size_t size_ = 0;
};

// One resource group of a ClusterQueue, resolved to indexes.
struct Group {
  std::vector<int32_t> resources;  // Resource indexes.
  std::vector<int32_t> flavors;    // Flavor indexes, in the order tried.
};

// The last head of a ClusterQueue that failed on quota alone (see
// Impl::FailsLikeFloor), with the version of its cohort tree's usage then.
struct QuotaFloor {
  uint64_t version = 0;
  int32_t priority = 0;
  int32_t resource = -1;
  int64_t total = 0;  // Milli-units of `resource` it requested.
  uint64_t flavor_bits = 0;  // Its eligible flavors (Wl::flavor_bits).
  WlIdx wl = -1;             // -1: none.
};

struct CQ {
  core::ClusterQueue spec;
  int32_t node = -1;  // QuotaTree node.
  int32_t root = -1;  // QuotaTree root of its cohort tree.
  std::string cohort_name;
  std::vector<Group> groups;
  std::vector<int32_t> res_group;  // Resource index -> group, or -1.
  std::vector<int32_t> frs;        // Every fr this CQ has a quota cell for.
  PendingQueue queue;  // Pending and eligible for heads.
  // BestEffortFIFO: set aside until a change (Impl::Listed).
  PendingQueue parked;
  bool blocked = false;         // StrictFIFO: the head could not be admitted.
  // Requeues of this CQ alone (RequeueCq); with Impl::requeue_epoch (all
  // of them, RequeueAll) they make its epoch (Impl::Epoch).
  uint64_t requeues = 0;
  // The epoch this CQ's queue state was last brought up to. While it lags
  // (the CQ was requeued since), every live `parked` entry counts as
  // queued and `blocked` as false; Impl::Settle makes that true.
  uint64_t settled_epoch = 0;
  // Its workloads registered in Impl::placement_waiters (set aside, or a
  // StrictFIFO head), so that a requeue visits them only when there are.
  int32_t waiting = 0;
  std::vector<WlIdx> admitted;  // Unordered.
  // Usage of the admitted workloads by priority (ascending), per entry of
  // `frs`: bounds what a victim search can free without listing workloads.
  struct Band {
    int32_t priority = 0;
    int32_t count = 0;
    std::vector<int64_t> usage;  // Indexed like `frs`.
  };
  std::vector<Band> bands;
  QuotaFloor floor;
  // Parking (parked_lending.cc), per entry of `frs`: the usage of its
  // parked workloads (in the quota tree, on no device), and of its
  // workloads that run on parked capacity (on devices, not in the quota
  // tree, not in `admitted` nor `bands`).
  std::vector<int64_t> parked_use;
  std::vector<int64_t> lent_use;
  std::vector<WlIdx> lent;  // Its workloads on parked capacity. Unordered.
  // Its preemptible workloads (any state; removed ones leave): a park
  // retries its set-aside workloads only when some may borrow.
  int32_t preemptible = 0;
  // Index of `fr` in `frs`, or -1.
  int32_t FrPos(int32_t fr) const {
    auto it = std::lower_bound(frs.begin(), frs.end(), fr);
    return it != frs.end() && *it == fr ? int32_t(it - frs.begin()) : -1;
  }
};

enum class Mode { kNoFit = 0, kPreempt = 1, kFit = 2 };

// What one pod set needs per pod, in resource indexes (known resources) and
// names (resources no ClusterQueue covers).
struct PodSetNeeds {
  std::vector<std::pair<int32_t, int64_t>> per_pod;  // (resource, milli)
  std::vector<std::string> unknown;
};

// A candidate or final admission of one workload.
struct Assignment {
  std::vector<int32_t> counts;  // Per pod set.
  std::vector<std::vector<int32_t>>
      flavors;  // Per pod set, per CQ group (-1: unused).
  std::vector<std::pair<int32_t, int64_t>> usage;  // (fr, milli), sorted by fr.
  std::vector<PodSetRequest> requests;             // For the NodePool.
  Placement placement;
  Mode mode = Mode::kNoFit;
  bool borrows = false;
  // How deep in the cohort tree the chosen flavors borrow: the height of
  // the lowest subtree that holds the request (QuotaTree::BorrowHeight),
  // the largest over resource groups; 0 when nothing is borrowed. Heads
  // that borrow less deep go first (Kueue's Assignment.Borrowing).
  int32_t borrow_height = 0;
  // The chosen flavor needs preemption and the preemption oracle searched
  // exactly this request and found no victim: TryAdmit need not search
  // again.
  bool no_candidates = false;
  // Flavors whose quota fit but whose nodes were short: freeing devices of
  // these may make the workload admissible.
  std::vector<int32_t> short_flavors;
  // Set by FindVictims: some victim set covered the quota but no placement
  // was found (so freed devices may help later).
  bool victims_short_of_nodes = false;
  std::string reason;  // Why not Fit, for users.
  // Set when deciding the mode looked at nodes (a placement search, or a
  // victim search past its quota bounds): the mode then depends on more
  // than quota.
  bool nodes_consulted = false;
  // Set by AssignInto when Kueue's preemption oracle already searched
  // victims for exactly this request (one pod set, one resource group, the
  // chosen flavor): the victims it found, with `placement` valid after
  // them. The state has not changed since, so FindVictims would give the
  // same answer; TryAdmit uses it instead of searching again.
  std::vector<std::pair<WlIdx, PreemptionReason>> oracle_victims;

  // Empties it for `c` pods per pod set and `groups` resource groups,
  // keeping the buffers. With `keep_requests`, `requests` stays as it is
  // (with its buffers) for a caller that overwrites it (RequestsInto)
  // before it is read.
  void Reset(const std::vector<int32_t>& c, size_t groups,
             bool keep_requests = false) {
    counts = c;
    flavors.resize(c.size());
    for (auto& per_set : flavors) per_set.assign(groups, -1);
    usage.clear();
    if (!keep_requests) requests.clear();
    placement.clear();
    mode = Mode::kNoFit;
    borrows = false;
    borrow_height = 0;
    no_candidates = false;
    short_flavors.clear();
    victims_short_of_nodes = false;
    reason.clear();
    nodes_consulted = false;
    oracle_victims.clear();
  }
};

// Kueue's dominant resource share of a node of the cohort tree
// (schdcache.DRS): over resources, the largest ratio (x1000) of what the
// node uses above its own quota, summed over flavors, to what its parent
// could lend it (PotentialAvailable, summed over flavors), with the node's
// fairSharing weight. Doubles, as Kueue computes them, so that ties and
// orders match; deterministic on one platform.
struct Drs {
  double ratio = 0;        // Unweighted; -1 only in Negative().
  double weight = 1;       // fairSharing.weight (1 when unset).
  bool borrowing = false;  // Above its quota in some flavor-resource.
  bool ZeroWeightBorrows() const { return weight == 0 && ratio != 0; }
  // The share divided by the weight: infinite for a zero weight that
  // borrows.
  double Weighted() const;
  // Below every share (Kueue's NegativeDRS), to start a maximum.
  static Drs Negative() { return Drs{-1, 1, false}; }
};
// Kueue's CompareDRS: -1, 0 or 1. Two zero-weight borrowers compare by
// their unweighted ratios; one of them is above every other node.
int CompareDrs(const Drs& a, const Drs& b);

struct Wl {
  enum class State { kPending, kAdmitted, kGone };
  // First, in one cache line, what every cycle reads for every head
  // (ordering, FailsLikeFloor): the rest of the record is cold. The
  // scheduler reads priority and creation time here, never from spec.
  int32_t priority = 0;     // spec.priority.
  int32_t cq = -1;          // -1: no usable ClusterQueue (see reason).
  int64_t creation_ms = 0;  // spec.creation_unix_ms.
  int64_t seq = 0;
  State state = State::kPending;
  // One pod set of at least one pod, requesting one resource that a
  // ClusterQueue may cover, admitted in full or not at all: the shape
  // FailsLikeFloor can compare, by its resource and total request (milli).
  bool single_need = false;
  int32_t single_resource = -1;
  int64_t single_total = 0;
  uint64_t flavor_bits = 0;  // With single_need: flavor_ok as bits.
  core::Workload spec;
  std::string key;
  std::string cq_name;  // For output, even when cq is -1.
  // Registered under these flavors in Impl::placement_waiters while set
  // aside (or blocking a StrictFIFO queue) for want of nodes, so that
  // devices freed by any cohort tree wake it.
  std::vector<int32_t> waiting_flavors;
  // Fewest devices any one of its pods needs (0 for CPU-only pods).
  int32_t min_pod_devices = 1 << 30;
  std::vector<PodSetNeeds> needs;  // Per pod set.
  std::vector<int32_t> full_counts;  // The requested count of every pod set.
  // FlavorEligible per pod set and flavor (see Impl::FlavorOk).
  std::vector<uint8_t> flavor_ok;
  // Set while admitted (a pointer: most workloads wait, and an empty
  // Assignment is 200+ bytes each).
  std::unique_ptr<Assignment> adm;
  // Admitted and parked: its usage stays in the quota tree, the devices of
  // its parked pod sets (park_sets, a bit per pod set; all of them unless
  // it was parked in part) went back to the pool (their adm->placement is
  // empty) until it resumes; its other pod sets keep theirs and run on.
  bool unplaced = false;
  uint8_t park_sets = 0;
  // Admitted on parked capacity (Impl::AdmitLent): its usage is not in the
  // quota tree but in its CQ's lent_use.
  bool lent = false;
  int64_t admit_seq = 0;
  std::string reason;  // Why pending, when not recomputable.
  bool tried = false;  // Tried and not admitted since.
  QueueKey QKey(WlIdx idx) const {
    return QueueKey{-priority, creation_ms, seq, idx};
  }
};

struct Scheduler::Impl {
  // Constant after Create.
  std::vector<core::ResourceFlavor> flavors;
  std::map<std::string, int32_t> flavor_idx;
  std::vector<std::string> resources;
  std::map<std::string, int32_t> resource_idx;
  std::vector<uint8_t> resource_is_gpu;  // Per resource: core::IsGpuResource.
  int32_t cpu_resource = -1;              // Index of "cpu", if covered.
  int32_t memory_resource = -1;           // Index of "memory", if covered.
  int32_t pods_resource = -1;             // Index of "pods", if covered.
  std::vector<CQ> cqs;
  std::map<std::string, int32_t> cq_idx;
  std::map<std::string, int32_t> cohort_node;  // Cohort name -> tree node.
  std::vector<std::string>
      node_cohort_name;              // Tree node -> cohort name ("" for CQs).
  std::vector<int32_t> node_cq;      // Tree node -> CQ index, or -1.
  std::vector<int64_t> node_weight;  // Tree node -> fairSharing.weight (milli).
  std::map<int32_t, std::vector<int32_t>> tree_cqs;  // Root node -> its CQs.
  std::map<std::pair<std::string, std::string>, std::string> local_queues;
  std::map<std::string, core::Labels> namespaces;
  core::SchedulerConfig config;
  std::unique_ptr<QuotaTree> quota;
  std::unique_ptr<NodePool> pool;

  // Mutable state.
  std::deque<Wl> wls;
  std::unordered_map<std::string, WlIdx> by_key;
  std::set<int32_t> active_cqs;  // CQs whose queue has a head to try.
  std::map<int32_t, std::set<WlIdx>> placement_waiters;  // Flavor -> workloads.
  // Preemptor -> its victims during the current busy period (edges of the
  // eviction graph; cleared when the scheduler goes idle; an edge also goes
  // when either end is removed), and the reverse.
  std::map<WlIdx, std::set<WlIdx>> evicted_by;
  std::map<WlIdx, std::set<WlIdx>> evictors;
  // Per workload, dense (WlIdx): the stamp of its live entry in its CQ's
  // `queue` or `parked` (PendingQueue), where it was listed, the epoch of
  // its CQ when it was set aside, and whether it is registered in
  // placement_waiters.
  enum class Listed : uint8_t { kNo, kQueued, kParked };
  std::vector<uint32_t> stamp;
  std::vector<Listed> listed;
  std::vector<uint64_t> parked_epoch;
  std::vector<uint8_t> waiting;
  // Requeues: RequeueAll bumps requeue_epoch, RequeueCq a CQ's `requeues`;
  // a workload set aside in an earlier epoch of its CQ counts as queued.
  // Its entry moves to the queue with all the others (PendingQueue::
  // Absorb) when the CQ is next touched (Settle), and before a cycle reads
  // heads (SettleAll), without touching the workloads.
  uint64_t requeue_epoch = 0;
  bool settle_pending = false;  // Some CQ may lag requeue_epoch.
  uint64_t Epoch(const CQ& cq) const { return requeue_epoch + cq.requeues; }
  bool Settled(const CQ& cq) const { return cq.settled_epoch == Epoch(cq); }
  // Set aside (Kueue's inadmissible) now.
  bool Parked(WlIdx w) const {
    return listed[size_t(w)] == Listed::kParked &&
           parked_epoch[size_t(w)] == Epoch(cqs[size_t(wls[w].cq)]);
  }
  bool Blocked(const CQ& cq) const { return cq.blocked && Settled(cq); }
  int32_t ParkedCount(const CQ& cq) const {
    return Settled(cq) ? int32_t(cq.parked.size()) : 0;
  }
  // List `w` in its (settled) CQ's queue or set it aside; Unlist takes it
  // out of either. Each bumps its stamp, so that older entries go stale.
  void ListQueued(WlIdx w);
  void ListParked(WlIdx w);
  void Unlist(WlIdx w);
  // Per QuotaTree root: bumped on every usage change in that cohort tree.
  std::vector<uint64_t> tree_version;
  std::vector<PreemptionEvent> preemptions;
  Assignment try_scratch;  // TryAdmit's assignment, reused between heads.
  // Buffers of AssignInto's placement searches and preemption oracle,
  // kept between calls (quota_only uses none). No AssignInto runs inside
  // another that uses them; `busy` checks it.
  struct AssignScratch {
    bool busy = false;
    std::vector<std::vector<int32_t>> chosen;  // Flavors per pod set, group.
    std::vector<int32_t> one;                  // Counts: one pod set.
    std::vector<PodSetRequest> request;
    // Buffers for the final requests of an AssignInto that stopped before
    // computing them (its assignment keeps none then).
    std::vector<PodSetRequest> spare_requests;
    Placement tmp;
    std::vector<int32_t> tmp_for;
    Assignment trial;
    std::vector<std::pair<WlIdx, PreemptionReason>> victims;
    // The best option so far: its placement and the oracle's search.
    Placement found;
    std::vector<int32_t> found_for;
    Assignment searched;
    std::vector<std::pair<WlIdx, PreemptionReason>> searched_victims;
  };
  mutable AssignScratch assign_scratch;
  int64_t next_seq = 0;
  int64_t next_admit_seq = 0;
  // Per node index: the admitted workloads with a pod on it (each once),
  // kept by Admit and ReleaseAdmission, so that a node change finds them
  // without scanning every admission.
  std::vector<std::vector<WlIdx>> on_node;
  void IndexNodes(WlIdx w, const Placement& p, bool add);
  size_t pending_count = 0;
  size_t admitted_count = 0;

  // FlavorEligible(pod set p of w, flavor f), computed when w was added.
  bool FlavorOk(const Wl& w, size_t p, int32_t f) const {
    return w.flavor_ok[p * flavors.size() + size_t(f)];
  }
  int32_t num_fr() const { return int32_t(flavors.size() * resources.size()); }
  int32_t Fr(int32_t flavor, int32_t resource) const {
    return flavor * int32_t(resources.size()) + resource;
  }
  int32_t FrFlavor(int32_t fr) const { return fr / int32_t(resources.size()); }
  int32_t FrResource(int32_t fr) const {
    return fr % int32_t(resources.size());
  }

  // scheduler.cc
  Status AddWorkloadInternal(const core::Workload& w);
  // Adds the "pods" need (one per pod) when wl's ClusterQueue covers it.
  void CountPods(Wl* wl) const;
  Status AdmitExisting(WlIdx w);
  void Enqueue(WlIdx w);
  // Workload `key` for ParkWorkload (`want_parked` false: admitted, not
  // parked) or ResumeWorkload (true: parked); else NotFound or
  // FailedPrecondition saying why.
  Result<WlIdx> ParkingTarget(const std::string& key, bool want_parked) const;
  // `placed`: false admits quota only (a parked workload, AdmitExisting).
  // `parked_sets`: a parked admission's pod sets without devices (a bit
  // each; their placement is cleared); 0 for a placed one.
  void Admit(WlIdx w, Assignment a, uint32_t parked_sets = 0);
  // Every pod set of w, as a park_sets mask.
  uint32_t AllSets(WlIdx w) const { return (1u << wls[w].spec.pod_sets.size()) - 1; }
  // What the pod sets in `sets` of w's admission use, by flavor-resource.
  std::vector<std::pair<int32_t, int64_t>> SetsUsage(WlIdx w, uint32_t sets) const;
  // Validates placement `p` for `requests`, but for the pod sets in
  // `parked_sets` (a bit each: parked, no placement).
  Status ValidatePlaced(const std::vector<PodSetRequest>& requests, const Placement& p,
                        uint32_t parked_sets) const;
  void Evict(WlIdx victim, WlIdx preemptor, PreemptionReason reason);
  void AdmitByPreempting(
      WlIdx w, Assignment a,
      const std::vector<std::pair<WlIdx, PreemptionReason>>& victims);
  void ReleaseAdmission(WlIdx w);
  // Adds (+1) or removes (-1) an admitted workload's usage in its
  // ClusterQueue's priority bands.
  void UpdateBands(WlIdx w, int sign);
  // Quota of `freed`'s flavors came free in the tree under `root`: set-aside
  // workloads of the ClusterQueues with quota in those flavors go back to
  // their queues, and StrictFIFO queues unblock.
  void RequeueTree(int32_t root, const Assignment& freed);
  // Returns one ClusterQueue's set-aside workloads to its queue and
  // unblocks it (O(1) when none waits for nodes; see Settle).
  void RequeueCq(int32_t cq);
  // RequeueCq for every ClusterQueue: after a node change, every pending
  // workload is tried again, as a rebuild would try it. O(1): each CQ is
  // settled when next touched or by the next cycle (SettleAll).
  void RequeueAll();
  // Brings CQ `c` up to its epoch if it lags: its set-aside workloads
  // leave placement_waiters (a visit only when some wait), their entries
  // join the queue, and it is unblocked. Every mutation of a CQ's queue
  // state (queue, parked, blocked, its workloads' placement_waiters)
  // settles it first.
  void Settle(int32_t c);
  void SettleAll();
  // Admitted workloads with a pod on node n, by index (scheduler_nodes.cc).
  std::vector<WlIdx> AdmittedOn(NodeIdx n) const;
  // Returns a set-aside workload to its queue (unblocks a StrictFIFO queue).
  void Unpark(WlIdx w);
  void StopWaiting(WlIdx w);
  // Devices of these flavors were freed: wake workloads short of nodes.
  void WakePlacementWaiters(const Assignment& freed);
  // Admits `w` (perhaps by preempting) or returns false. Sets
  // `*quota_alone` when the failure was decided by quota alone.
  bool TryAdmit(WlIdx w, bool* quota_alone);
  // A head that is sure to fail without being tried: workload `w` has the
  // shape (single_need) of the ClusterQueue's floor, the same eligible
  // flavors, no higher priority and no smaller request, and no usage in the
  // cohort tree changed since the floor failed. Then w's flavor options are
  // each at most as good as the floor's were by quota (NoFit or Preempt,
  // never Fit), and its victim bounds (VictimSearchHopeless: one
  // flavor-resource short, candidates only fewer at its priority) fail as
  // the floor's did, so trying it would change nothing but set it aside.
  // Classical preemption only.
  bool FailsLikeFloor(WlIdx w) const;
  // `w` just failed on quota alone: it becomes its ClusterQueue's floor.
  void RecordFloor(WlIdx w);

  // The requested pod count of every pod set (no partial admission).
  const std::vector<int32_t>& FullCounts(WlIdx w) const {
    return wls[w].full_counts;
  }

  // flavor_assigner.cc
  // Assigns flavors for `counts` pods per pod set against the current state
  // and decides the mode (Fit with an exact placement, Preempt, NoFit).
  // With `quota_only`, skips placement (used to order heads).
  // With `explain`, also writes a.reason for users (slower: builds strings
  // and scans nodes for the largest free block).
  Assignment Assign(WlIdx w, const std::vector<int32_t>& counts,
                    bool quota_only, bool explain = false) const;
  // The same into `out`, reusing its buffers.
  void AssignInto(WlIdx w, const std::vector<int32_t>& counts, bool quota_only,
                  bool explain, Assignment* out) const;
  // True when `a` fits now: quota (borrowing only if allowed) and, unless
  // quota_only, an exact placement (stored in a->placement).
  bool Fits(WlIdx w, Assignment* a, bool allow_borrowing) const;
  // Whether preempting could make room for pod set `p` in flavor `f` of
  // group `g` (Kueue's preemption oracle). Changes nothing. Sets
  // `*searched` when it went past the quota bounds to a victim search.
  // `*trial` receives the request searched and, when the answer is yes,
  // the placement valid after evicting `*victims`.
  bool PreemptionPossible(
      WlIdx w, size_t p, int32_t g, int32_t f,
      const std::vector<int32_t>& counts, const int64_t* acc,
      const std::vector<int32_t>& chosen_so_far, bool* searched,
      AssignScratch* scratch, Assignment* trial,
      std::vector<std::pair<WlIdx, PreemptionReason>>* victims) const;
  // Sets scratch->chosen to `chosen_so_far` with flavor `f` for group `g`
  // in pod set `p` (-1 elsewhere), and scratch->one to counts[p] pods of
  // pod set `p` alone.
  void ChooseOne(WlIdx w, size_t p, int32_t g, int32_t f,
                 const std::vector<int32_t>& counts,
                 const std::vector<int32_t>& chosen_so_far,
                 AssignScratch* scratch) const;
  std::vector<PodSetRequest> Requests(
      WlIdx w, const std::vector<int32_t>& counts,
      const std::vector<std::vector<int32_t>>& flavors) const;
  // The same into `out`, reusing its buffers (no allocation once they are
  // big enough).
  void RequestsInto(WlIdx w, const std::vector<int32_t>& counts,
                    const std::vector<std::vector<int32_t>>& flavors,
                    std::vector<PodSetRequest>* out) const;
  void AddUsage(int32_t cq, const Assignment& a);
  void RemoveUsage(int32_t cq, const Assignment& a);

  // preemption.cc
  // Finds the smallest set of admitted workloads whose eviction lets `a`
  // be admitted, per the ClusterQueue's policy; empty when none. On success
  // `a->placement` holds the placement valid after the evictions.
  std::vector<std::pair<WlIdx, PreemptionReason>> FindVictims(WlIdx w,
                                                              Assignment* a);
  // Kueue's classical preemption (Preemptor.classicalPreemptions with the
  // hierarchical candidate iterator): `need` are the flavor-resources that
  // need preemption; `spared` the workloads that evicted `w` (Allot's
  // loop rule).
  std::vector<std::pair<WlIdx, PreemptionReason>> ClassicalVictims(
      WlIdx w, Assignment* a, const std::vector<int32_t>& need,
      const std::set<WlIdx>& spared);
  // Takes an admitted workload out of the quota tree and the node pool
  // (while searching victims), and puts it back.
  void TakeVictim(WlIdx v);
  void GiveBack(WlIdx v);
  // Whether `a`'s usage fits ClusterQueue `cq`'s quota now (without
  // borrowing unless allowed).
  bool QuotaFits(int32_t cq, const Assignment& a, bool allow_borrowing) const;
  // `taken` (taken, in order) let `w` fit: gives back every one not
  // needed, from the second-to-last to the first (Kueue's
  // fillBackWorkloads), leaves `a->placement` valid for the rest, restores
  // the state and returns the rest.
  std::vector<std::pair<WlIdx, PreemptionReason>> FillBackAndRestore(
      WlIdx w, Assignment* a,
      std::vector<std::pair<WlIdx, PreemptionReason>> taken,
      bool allow_borrowing);
  // True when FindVictims(w, a) with `usage` short of quota is sure to find
  // nothing: its bounds fail even counting every admitted workload the
  // policy could let it take (from the priority bands, without listing
  // them). False when quota is not short (only nodes are) or when a search
  // is needed. Changes nothing.
  bool VictimSearchHopeless(
      WlIdx w, const std::vector<std::pair<int32_t, int64_t>>& usage) const;
  // Kueue's collectCandidatesForHierarchicalReclaim at the level of
  // ClusterQueues: calls f(c, lca, advantage) for every ClusterQueue c of
  // the cohort tree of ClusterQueue `cq`, other than `cq`, that offers
  // candidates: c and every cohort between it and `lca` (its lowest common
  // ancestor with `cq`) use more than their quota in a flavor-resource of
  // `need`. `advantage` says whether `usage` fits the quota of the
  // subtree below `lca` that holds `cq` (QuantitiesFitInQuota, walking up):
  // then `cq` reclaims from c whatever the priorities.
  template <typename F>
  void ForEachCandidateCq(int32_t cq, std::span<const int32_t> need,
                          std::span<const std::pair<int32_t, int64_t>> usage,
                          F f) const;
  // Every workload that evicted `w`, directly or through a chain of
  // evictions in the current busy period.
  std::set<WlIdx> TransitiveEvictors(WlIdx w) const;
  // Drops the eviction-graph edges into and out of `w` (it was removed).
  void ForgetEvictions(WlIdx w);

  // parked_lending.cc: parked capacity lent to preemptible workloads
  // (docs/parking.md). The usage of a cohort tree's workloads on parked
  // capacity never exceeds, per flavor-resource, the usage of its parked
  // workloads (EnforceLentBound), so the quota a parked workload keeps
  // exists as devices once its borrowers are gone.
  // Adds (+1) or removes (-1) parked workload w's usage in parked_use.
  void CountParked(WlIdx w, int sign);
  // Parked, and lent, usage of `fr` over the cohort tree under `root`.
  int64_t TreeParked(int32_t root, int32_t fr) const;
  int64_t TreeLent(int32_t root, int32_t fr) const;
  // The same sums, kept: per QuotaTree root, per fr (empty until used).
  std::vector<std::vector<int64_t>> tree_parked, tree_lent;
  // Adds `sign` x `a`'s usage to CQ c's cells (`lent`: lent_use, else
  // parked_use) and its tree's sums.
  void CountUse(int32_t c, const std::vector<std::pair<int32_t, int64_t>>& usage, int sign,
                bool lent);
  // Admits preemptible `w` in full on parked capacity of its cohort tree
  // and free devices, or returns false.
  bool TryLendParked(WlIdx w);
  void AdmitLent(WlIdx w, Assignment a);
  // Within the tree under `root`: while its workloads on parked capacity
  // use more of some flavor-resource than its parked workloads hold, one
  // of them (lowest priority, newest first) takes quota of its own when
  // its ClusterQueue has it, else is evicted (kParkedCapacityReclaim, by
  // `by`, or by nobody when -1).
  void EnforceLentBound(int32_t root, WlIdx by);
  // Runs EnforceLentBound for the trees whose parked usage fell since.
  void SettleLent();
  std::set<int32_t> lent_dirty;  // Roots for SettleLent.
  int32_t lent_count = 0;        // Workloads on parked capacity.
  // The order workloads on parked capacity are reclaimed in: lowest
  // priority, then newest admission, first.
  bool ReclaimedBefore(WlIdx a, WlIdx b) const {
    if (wls[a].priority != wls[b].priority) return wls[a].priority < wls[b].priority;
    return wls[a].admit_seq > wls[b].admit_seq;
  }
  // Workloads on parked capacity using a flavor of `flavor_list`, in
  // reclaim order.
  std::vector<WlIdx> LentOn(const std::vector<int32_t>& flavor_list) const;
  // Evicts for `w` the fewest workloads on parked capacity of those
  // flavors (in LentOn order, then filled back) that make `fits` (which
  // looks at the pool) say yes; changes nothing and returns false when
  // even all of them are not enough.
  bool ReclaimLentFor(WlIdx w, const std::vector<int32_t>& flavor_list,
                      const std::function<bool()>& fits);
  // Events of evictions made outside RunCycle (a resume, a removal) that
  // the next RunCycle reports: preemptions[reported, ...).
  size_t reported = 0;

  // fair_sharing.cc
  // Kueue's fair-sharing preemption (Preemptor.fairPreemptions): targets
  // chosen down the cohort tree by share, the strategies applied to the
  // shares of the children of the lowest common ancestor.
  std::vector<std::pair<WlIdx, PreemptionReason>> FairVictims(
      WlIdx w, Assignment* a, const std::vector<int32_t>& need,
      const std::set<WlIdx>& spared);
  // The dominant resource share of a node of the cohort tree now.
  Drs DrsOf(int32_t node) const;
  // Kueue's fairSharing.weightedShare of a ClusterQueue: its share
  // divided by its weight, rounded up; INT64_MAX for a zero weight that
  // borrows.
  int64_t WeightedShare(int32_t cq) const;
  // Fair sharing's tournament: the head to try next among `heads` (CQ ->
  // head), walking each cohort tree from its root and taking at every
  // cohort the child that does not borrow on the head's flavor-resources,
  // then the lowest share after admitting its nominee (Kueue's
  // fairSharingIterator). Simulates each head's usage in the quota tree
  // and restores it.
  WlIdx NextFairHead(const std::map<int32_t, WlIdx>& heads);

  // reasons.cc
  std::string QuotaShortReason(int32_t cq, int32_t fr, int64_t need) const;
  std::string Describe(const std::string& resource, int64_t milli) const;
  // "; ClusterQueue X does not preempt" or "; no set of workloads ..." when
  // `mode` is kPreempt; "" otherwise.
  std::string PreemptionNote(int32_t cq, Mode mode) const;
  // Why a pending workload cannot be admitted right now ("" when it could).
  std::string ReasonNow(WlIdx w) const;

  // scheduler.cc: read-side views.
  // ClusterQueue c's quota of `fr` that others in its cohort tree use now
  // (QuotaUsage::lent_milli).
  int64_t Lent(int32_t c, int32_t fr) const;
  core::Admission AdmissionOf(WlIdx w) const;  // w must be admitted.
  std::vector<QueueKey> SortedQueue(const CQ& cq) const;
  PendingWorkload ExplainAt(const CQ& cq, const std::vector<QueueKey>& keys,
                            size_t i) const;
};

}  // namespace allot::sched
