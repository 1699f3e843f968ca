// Fair sharing (Kueue's KEP 1714 and its hierarchical cohorts): dominant
// resource shares, the tournament that orders heads, and the victim search
// that follows shares down the cohort tree.
//
// Shares (pkg/cache/scheduler/fair_sharing.go in Kueue): a node's share is
// the largest ratio, over resources, of its usage above its own quota to
// what its parent could lend it; divided by its weight. A weight of 0 makes
// the share of a borrowing node infinite; two such nodes compare by their
// unweighted ratios.
//
// Victims (pkg/scheduler/preemption/fairsharing): the preemptor's usage is
// added first. From the root down, the child with the highest share is
// entered (a cohort or ClusterQueue that does not borrow is pruned, but
// not the cohorts above the preemptor); at a ClusterQueue its candidates
// are tried. The preemptor's own are preempted by priority
// (InClusterQueue); a preemptor within its nominal quota takes others'
// unconditionally (InCohortReclamation); otherwise a candidate is taken
// when the first strategy passes on the shares of the two nodes just below
// the lowest common ancestor (InCohortFairSharing), and those passed over
// get a second chance under LessThanInitialShare, one per ClusterQueue.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "sched/scheduler_internal.h"

namespace allot::sched {

double Drs::Weighted() const {
  if (ratio == 0) return 0;
  if (weight == 0) return std::numeric_limits<double>::infinity();
  return ratio / weight;
}

int CompareDrs(const Drs& a, const Drs& b) {
  const bool za = a.ZeroWeightBorrows(), zb = b.ZeroWeightBorrows();
  double x = a.Weighted(), y = b.Weighted();
  if (za && zb) {
    x = a.ratio;
    y = b.ratio;
  } else if (za || zb) {
    return za ? 1 : -1;
  }
  return x < y ? -1 : (x > y ? 1 : 0);
}

Drs Scheduler::Impl::DrsOf(int32_t node) const {
  Drs d;
  d.weight = double(node_weight[node]) / 1000.0;
  if (!quota->HasParent(node)) return d;
  const int32_t parent = quota->Parent(node);
  const int32_t nres = int32_t(resources.size());
  InlineVec<int64_t, 8> borrowed(size_t(nres), 0);
  for (int32_t fr = 0; fr < num_fr(); ++fr) {
    const int64_t b = quota->Usage(node, fr) - quota->Subtree(node, fr);
    if (b > 0) {
      borrowed[FrResource(fr)] += b;
      d.borrowing = true;
    }
  }
  for (int32_t r = 0; r < nres; ++r) {
    if (borrowed[r] == 0) continue;
    int64_t lendable = 0;
    for (int32_t f = 0; f < int32_t(flavors.size()); ++f) {
      lendable += quota->PotentialAvailable(parent, Fr(f, r));
    }
    if (lendable <= 0) continue;
    d.ratio = std::max(d.ratio, double(borrowed[r]) * 1000.0 / double(lendable));
  }
  return d;
}

int64_t Scheduler::Impl::WeightedShare(int32_t c) const {
  const Drs d = DrsOf(cqs[c].node);
  if (d.ZeroWeightBorrows()) return std::numeric_limits<int64_t>::max();
  return int64_t(std::ceil(d.Weighted()));
}

WlIdx Scheduler::Impl::NextFairHead(const std::map<int32_t, WlIdx>& heads) {
  // Per (node, head) of every node from a head's ClusterQueue up to below
  // its root: the node's share with the head admitted, and whether it then
  // borrows on a flavor-resource the head requests (Kueue's computeDRS).
  struct Val {
    Drs drs;
    bool borrowing_on = false;
  };
  std::map<std::pair<int32_t, WlIdx>, Val> vals;
  Assignment a;
  for (const auto& [c, w] : heads) {
    if (!quota->HasParent(cqs[c].node)) continue;
    AssignInto(w, FullCounts(w), /*quota_only=*/true, /*explain=*/false, &a);
    AddUsage(c, a);
    for (int32_t n = cqs[c].node; quota->HasParent(n); n = quota->Parent(n)) {
      Val v{DrsOf(n)};
      for (const auto& [fr, val] : a.usage) {
        v.borrowing_on = v.borrowing_on || (val > 0 && !quota->WithinQuota(n, fr));
      }
      vals[{n, w}] = v;
    }
    RemoveUsage(c, a);
  }
  // Whether head `x`, nominated by child `cx` of a cohort, goes before `y`
  // of `cy` (Kueue's entryComparer.less).
  auto before = [&](int32_t cx, WlIdx x, int32_t cy, WlIdx y) {
    const Val& vx = vals[{cx, x}];
    const Val& vy = vals[{cy, y}];
    if (vx.borrowing_on != vy.borrowing_on) return !vx.borrowing_on;
    if (int cmp = CompareDrs(vx.drs, vy.drs); cmp != 0) return cmp < 0;
    const Wl& wx = wls[x];
    const Wl& wy = wls[y];
    if (wx.priority != wy.priority) return wx.priority > wy.priority;
    if (wx.creation_ms != wy.creation_ms) return wx.creation_ms < wy.creation_ms;
    return wx.seq < wy.seq;
  };
  // Best head in the subtree of `node`, or -1.
  auto best = [&](auto&& self, int32_t node) -> WlIdx {
    if (node_cq[node] >= 0) {
      auto it = heads.find(node_cq[node]);
      return it == heads.end() ? -1 : it->second;
    }
    WlIdx pick = -1;
    int32_t pick_child = -1;
    for (int32_t child : quota->Children(node)) {
      WlIdx w = self(self, child);
      if (w < 0) continue;
      if (pick < 0 || before(child, w, pick_child, pick)) {
        pick = w;
        pick_child = child;
      }
    }
    return pick;
  };
  // Independent trees compete by priority and age only.
  std::set<int32_t> roots;
  for (const auto& [c, w] : heads) roots.insert(cqs[c].root);
  WlIdx pick = -1;
  for (int32_t root : roots) {
    WlIdx w = best(best, root);
    if (w < 0) continue;
    const Wl& x = wls[w];
    if (pick < 0 || std::tuple(-x.priority, x.creation_ms, x.seq) <
                        std::tuple(-wls[pick].priority, wls[pick].creation_ms,
                                   wls[pick].seq)) {
      pick = w;
    }
  }
  return pick;
}

namespace {

// Kueue's TargetClusterQueueOrdering over candidates grouped by
// ClusterQueue (each list in candidate order).
class TargetOrdering {
 public:
  using Lists = std::map<int32_t, std::vector<WlIdx>>;
  TargetOrdering(const QuotaTree& quota, const std::vector<int32_t>& node_cq,
                 int32_t own_cq, int32_t own_node, Lists lists,
                 std::function<Drs(int32_t)> drs,
                 std::function<bool(WlIdx, WlIdx)> first)
      : quota_(quota),
        node_cq_(node_cq),
        own_cq_(own_cq),
        own_node_(own_node),
        lists_(std::move(lists)),
        drs_(std::move(drs)),
        first_(std::move(first)) {
    for (int32_t n = quota.Parent(own_node); n >= 0; n = quota.Parent(n))
      on_path_.insert(n);
  }
  bool Has(int32_t c) const {
    auto it = lists_.find(c);
    return it != lists_.end() && next_[c] < it->second.size();
  }
  WlIdx Pop(int32_t c) { return lists_[c][next_[c]++]; }
  void Drop(int32_t c) { pruned_.insert(NodeOf(c)); }
  // The next target ClusterQueue, or -1 when none is left.
  int32_t Next() {
    if (!quota_.HasParent(own_node_)) {
      return !pruned_.count(own_node_) && Has(own_cq_) ? own_cq_ : -1;
    }
    const int32_t root = quota_.Root(own_node_);
    while (!pruned_.count(root)) {
      int32_t t = NextTarget(root);
      if (t >= 0) return t;
    }
    return -1;
  }

 private:
  int32_t NodeOf(int32_t c) const {
    for (int32_t n = 0; n < int32_t(node_cq_.size()); ++n) {
      if (node_cq_[n] == c) return n;
    }
    return -1;
  }
  int32_t NextTarget(int32_t cohort) {
    int32_t best_cq = -1, best_cohort = -1;
    Drs cq_drs = Drs::Negative(), cohort_drs = Drs::Negative();
    for (int32_t child : quota_.Children(cohort)) {
      if (pruned_.count(child)) continue;
      const int32_t c = node_cq_[child];
      const Drs d = drs_(child);
      if (c >= 0) {
        if ((!d.borrowing && c != own_cq_) || !Has(c)) {
          pruned_.insert(child);
          continue;
        }
        const int cmp = CompareDrs(d, cq_drs);
        if (cmp > 0 || (cmp == 0 && best_cq >= 0 &&
                        first_(lists_[c][next_[c]],
                               lists_[best_cq][next_[best_cq]]))) {
          best_cq = c;
          cq_drs = d;
        }
      } else {
        if (!d.borrowing && !on_path_.count(child)) {
          pruned_.insert(child);
        } else if (CompareDrs(d, cohort_drs) >= 0) {
          best_cohort = child;
          cohort_drs = d;
        }
      }
    }
    if (best_cq < 0 && best_cohort < 0) {
      pruned_.insert(cohort);
      return -1;
    }
    // A tie goes to the cohort: the most unfair node inside it may be
    // chosen.
    if (best_cohort >= 0 && CompareDrs(cohort_drs, cq_drs) >= 0)
      return NextTarget(best_cohort);
    return best_cq;
  }

  const QuotaTree& quota_;
  const std::vector<int32_t>& node_cq_;
  int32_t own_cq_, own_node_;
  Lists lists_;
  mutable std::map<int32_t, size_t> next_;
  std::set<int32_t> pruned_;  // Tree nodes.
  std::set<int32_t> on_path_;
  std::function<Drs(int32_t)> drs_;
  std::function<bool(WlIdx, WlIdx)> first_;
};

}  // namespace

std::vector<std::pair<WlIdx, PreemptionReason>> Scheduler::Impl::FairVictims(
    WlIdx w, Assignment* a, const std::vector<int32_t>& need,
    const std::set<WlIdx>& spared) {
  const Wl& wl = wls[w];
  const CQ& cq = cqs[wl.cq];
  const core::PreemptionPolicy& pol = cq.spec.preemption;
  const int32_t prio = wl.priority;
  auto uses_need = [&](WlIdx v) {
    for (const auto& [fr, val] : wls[v].adm->usage) {
      if (std::binary_search(need.begin(), need.end(), fr)) return true;
    }
    return false;
  };
  // Candidates (Kueue's findCandidates): its own lower-priority workloads,
  // and those of ClusterQueues borrowing in a needed flavor-resource.
  TargetOrdering::Lists lists;
  if (pol.within_cluster_queue != core::WithinClusterQueue::kNever) {
    for (WlIdx v : cq.admitted) {
      const Wl& vw = wls[v];
      const bool ok =
          vw.priority < prio ||
          (pol.within_cluster_queue ==
               core::WithinClusterQueue::kLowerOrNewerEqualPriority &&
           vw.priority == prio && vw.creation_ms > wl.creation_ms);
      if (ok && uses_need(v) && !spared.count(v)) lists[wl.cq].push_back(v);
    }
  }
  if (quota->HasParent(cq.node) &&
      pol.reclaim_within_cohort != core::ReclaimWithinCohort::kNever) {
    const bool any =
        pol.reclaim_within_cohort == core::ReclaimWithinCohort::kAny;
    for (int32_t c : tree_cqs.at(cq.root)) {
      if (c == wl.cq) continue;
      bool borrowing = false;
      for (int32_t fr : need)
        borrowing = borrowing || !quota->WithinQuota(cqs[c].node, fr);
      if (!borrowing) continue;
      for (WlIdx v : cqs[c].admitted) {
        if ((any || wls[v].priority < prio) && uses_need(v) && !spared.count(v))
          lists[c].push_back(v);
      }
    }
  }
  if (lists.empty()) return {};
  // Candidate order: lower priority first, most recently admitted first.
  auto first = [&](WlIdx x, WlIdx y) {
    const Wl& a1 = wls[x];
    const Wl& b1 = wls[y];
    if (a1.priority != b1.priority) return a1.priority < b1.priority;
    if (a1.admit_seq != b1.admit_seq) return a1.admit_seq > b1.admit_seq;
    return a1.key < b1.key;
  };
  for (auto& [c, list] : lists) std::sort(list.begin(), list.end(), first);

  using Victims = std::vector<std::pair<WlIdx, PreemptionReason>>;
  // Shares are taken with the preemptor admitted.
  AddUsage(wl.cq, *a);
  bool within_nominal = true;
  for (int32_t fr : need)
    within_nominal = within_nominal && quota->WithinQuota(cq.node, fr);
  std::vector<int32_t> own_path;
  for (int32_t n = cq.node; n >= 0; n = quota->Parent(n)) own_path.push_back(n);
  // The nodes just below the lowest common ancestor of the preemptor's and
  // target's ClusterQueues, on each side.
  auto almost_lcas = [&](int32_t target) {
    int32_t t = cqs[target].node;
    for (int32_t p = quota->Parent(t);; t = p, p = quota->Parent(p)) {
      auto it = std::find(own_path.begin(), own_path.end(), p);
      if (it != own_path.end()) {
        return std::pair(*(it - 1), t);
      }
    }
  };
  auto drs = [&](int32_t node) { return DrsOf(node); };
  Victims taken;
  auto take = [&](WlIdx v, PreemptionReason reason) {
    TakeVictim(v);
    taken.emplace_back(v, reason);
  };
  // Kueue's workloadFitsForFairSharing: without the preemptor's usage.
  auto fits = [&] {
    RemoveUsage(wl.cq, *a);
    bool ok = QuotaFits(wl.cq, *a, true);
    if (ok) {
      a->victims_short_of_nodes = true;
      ok = pool->Find(a->requests, &a->placement, /*why=*/nullptr);
    }
    AddUsage(wl.cq, *a);
    return ok;
  };
  const core::FairSharingStrategy strategy =
      config.preemption_strategies.empty()
          ? core::FairSharingStrategy::kLessThanOrEqualToFinalShare
          : config.preemption_strategies[0];
  bool done = false;
  TargetOrdering::Lists retry;
  {
    TargetOrdering ord(*quota, node_cq, wl.cq, cq.node, lists, drs, first);
    for (int32_t t = ord.Next(); t >= 0 && !done; t = ord.Next()) {
      if (t == wl.cq) {
        take(ord.Pop(t), PreemptionReason::kInClusterQueue);
        done = fits();
        continue;
      }
      if (within_nominal) {
        take(ord.Pop(t), PreemptionReason::kInCohortReclamation);
        done = fits();
        continue;
      }
      const auto [pa, ta] = almost_lcas(t);
      const Drs preemptor_new = DrsOf(pa);
      const Drs target_old = DrsOf(ta);
      if (preemptor_new.ZeroWeightBorrows() && !target_old.ZeroWeightBorrows()) {
        // No candidate can pass either strategy (fsStrategyUnsatisfiable).
        while (ord.Has(t)) retry[t].push_back(ord.Pop(t));
        continue;
      }
      while (ord.Has(t)) {
        const WlIdx v = ord.Pop(t);
        RemoveUsage(wls[v].cq, *wls[v].adm);
        const Drs target_new = DrsOf(ta);
        AddUsage(wls[v].cq, *wls[v].adm);
        const bool passed =
            strategy == core::FairSharingStrategy::kLessThanOrEqualToFinalShare
                ? CompareDrs(preemptor_new, target_new) <= 0
                : CompareDrs(preemptor_new, target_old) < 0;
        if (passed) {
          take(v, PreemptionReason::kInCohortFairSharing);
          done = fits();
          break;  // The shares changed: choose the target again.
        }
        retry[t].push_back(v);
      }
    }
  }
  // Rule S2-b: LessThanInitialShare for the candidates passed over, one per
  // ClusterQueue, keeping what the first strategy took.
  if (!done && config.preemption_strategies.size() > 1 && !retry.empty()) {
    TargetOrdering ord(*quota, node_cq, wl.cq, cq.node, retry, drs, first);
    for (int32_t t = ord.Next(); t >= 0 && !done; t = ord.Next()) {
      const auto [pa, ta] = almost_lcas(t);
      const bool passed = CompareDrs(DrsOf(pa), DrsOf(ta)) < 0;
      const WlIdx v = ord.Pop(t);
      if (passed) {
        take(v, PreemptionReason::kInCohortFairSharing);
        done = fits();
      }
      ord.Drop(t);
    }
  }
  RemoveUsage(wl.cq, *a);
  if (!done) {
    for (auto it = taken.rbegin(); it != taken.rend(); ++it) GiveBack(it->first);
    return {};
  }
  return FillBackAndRestore(w, a, std::move(taken), /*allow_borrowing=*/true);
}

}  // namespace allot::sched
