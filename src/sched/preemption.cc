// Victim search (Kueue's classical preemption), extended so that the
// victims must also free an exact placement for the preemptor. Fair
// sharing's search is in fair_sharing.cc.
//
// Classical (pkg/scheduler/preemption and preemption/classical in Kueue):
//  - candidates: lower-priority (or, with LowerOrNewerEqualPriority, equal
//    priority and newer) workloads of the same ClusterQueue; and, when
//    reclaimWithinCohort allows it, workloads of other ClusterQueues that,
//    like every cohort between them and the lowest common ancestor, use
//    more than their quota in a flavor-resource that needs preemption;
//  - a candidate over which the preemptor has a hierarchical advantage
//    (the request fits the quota of the preemptor's side of the common
//    ancestor) is taken first, whatever its priority; the others may be
//    taken while the preemptor borrows only under borrowWithinCohort
//    (lower priority, at most maxPriorityThreshold), else only by a
//    preemptor that then fits without borrowing;
//  - order: hierarchy candidates, then the other ClusterQueues', then its
//    own; in each, lower priority first, most recently admitted first;
//  - passes (with borrowing, without): the pass without borrowing runs
//    only when the ClusterQueue is under its nominal quota in every
//    flavor-resource that needs preemption (no over-preemption);
//  - take candidates in order until the preemptor fits, then give back
//    every one not needed (fill-back from the second-to-last).
#include <algorithm>
#include <limits>

#include "sched/scheduler_internal.h"

namespace allot::sched {
namespace {

// Kueue's preemptionVariant of a classical candidate.
enum class Variant : uint8_t {
  kWithinCq,          // Its own ClusterQueue: InClusterQueue.
  kHierarchical,      // Advantage in the tree: InCohortReclamation.
  kWithoutBorrowing,  // Only if the preemptor ends within its quota.
  kWhileBorrowing,    // borrowWithinCohort: InCohortReclaimWhileBorrowing.
};

PreemptionReason ReasonOf(Variant v) {
  switch (v) {
    case Variant::kWithinCq:
      return PreemptionReason::kInClusterQueue;
    case Variant::kWhileBorrowing:
      return PreemptionReason::kInCohortReclaimWhileBorrowing;
    case Variant::kHierarchical:
    case Variant::kWithoutBorrowing:
      break;
  }
  return PreemptionReason::kInCohortReclamation;
}

struct Candidate {
  WlIdx wl;
  int32_t cq;
  Variant variant;
  // Sort keys, copied so that sorting does not chase workloads.
  int32_t priority;
  int64_t admit_seq;
};

bool UsesAny(const Assignment& a, const std::vector<int32_t>& frs) {
  for (const auto& [fr, val] : a.usage) {
    if (std::binary_search(frs.begin(), frs.end(), fr)) return true;
  }
  return false;
}

// A candidate stays one while its ClusterQueue and every cohort up to (not
// including) the lowest common ancestor with the preemptor (`own_path`:
// the preemptor's ClusterQueue and its ancestors) use more than their
// quota in a `need`ed flavor-resource (Kueue's candidateIsValid).
bool SubtreeBorrows(const QuotaTree& quota, int32_t node,
                    const std::vector<int32_t>& own_path,
                    const std::vector<int32_t>& need) {
  for (int32_t n = node; n >= 0; n = quota.Parent(n)) {
    if (std::find(own_path.begin(), own_path.end(), n) != own_path.end())
      return true;
    bool borrows = false;
    for (int32_t fr : need) borrows = borrows || !quota.WithinQuota(n, fr);
    if (!borrows) return false;
  }
  return false;
}

}  // namespace

std::set<WlIdx> Scheduler::Impl::TransitiveEvictors(WlIdx w) const {
  std::set<WlIdx> seen;
  std::vector<WlIdx> stack = {w};
  while (!stack.empty()) {
    WlIdx x = stack.back();
    stack.pop_back();
    auto it = evictors.find(x);
    if (it == evictors.end()) continue;
    for (WlIdx p : it->second) {
      if (seen.insert(p).second) stack.push_back(p);
    }
  }
  return seen;
}

template <typename F>
void Scheduler::Impl::ForEachCandidateCq(
    int32_t c, std::span<const int32_t> need,
    std::span<const std::pair<int32_t, int64_t>> usage, F f) const {
  const int32_t own = cqs[c].node;
  auto borrows = [&](int32_t node) {
    for (int32_t fr : need) {
      if (!quota->WithinQuota(node, fr)) return true;
    }
    return false;
  };
  // What of the request is left for the ancestors once each node's quota
  // kept to itself is used (QuantitiesFitInQuota's remaining requests).
  InlineVec<int64_t, 8> remaining(usage.size(), 0);
  bool advantage = true;
  for (size_t i = 0; i < usage.size(); ++i) {
    const auto& [fr, val] = usage[i];
    advantage = advantage && quota->WithinQuota(own, fr, val);
    remaining[i] = std::max<int64_t>(0, val - quota->LocalAvailable(own, fr));
  }
  int32_t lca = -1;
  auto visit = [&](auto&& self, int32_t node) -> void {
    if (!borrows(node)) return;
    if (node_cq[node] >= 0) {
      f(node_cq[node], lca, advantage);
      return;
    }
    for (int32_t child : quota->Children(node)) self(self, child);
  };
  for (int32_t below = own, a = quota->Parent(below); a >= 0;
       below = a, a = quota->Parent(a)) {
    lca = a;
    for (int32_t child : quota->Children(a)) {
      if (child != below) visit(visit, child);
    }
    bool fits = true;
    for (size_t i = 0; i < usage.size(); ++i) {
      const int32_t fr = usage[i].first;
      fits = fits && quota->WithinQuota(a, fr, remaining[i]);
      remaining[i] =
          std::max<int64_t>(0, remaining[i] - quota->LocalAvailable(a, fr));
    }
    advantage = advantage || fits;
  }
}

bool Scheduler::Impl::VictimSearchHopeless(
    WlIdx w, const std::vector<std::pair<int32_t, int64_t>>& usage) const {
  const Wl& wl = wls[w];
  const CQ& cq = cqs[wl.cq];
  const core::PreemptionPolicy& pol = cq.spec.preemption;
  const int32_t prio = wl.priority;
  // Per flavor-resource of `usage`: what is available now, and upper bounds
  // on what evicting candidates frees: `own` (this ClusterQueue's), `hier`
  // (ClusterQueues it has the advantage over), `during` (the others' that
  // borrowWithinCohort lets it take while borrowing) and `after` (the
  // others' it may take only if it then fits without borrowing).
  // FindVictims' candidates are subsets of these (it also drops workloads
  // by UsesAny, by validity as they are taken, and by the eviction graph),
  // so when even these sums fail the bounds of every pass FindVictims may
  // run, FindVictims returns nothing.
  struct Cell {
    int32_t fr;
    int64_t val, avail, own = 0, hier = 0, during = 0, after = 0;
  };
  InlineVec<Cell, 8> cells;
  InlineVec<int32_t, 8> need;
  for (const auto& [fr, val] : usage) {
    cells.push_back({fr, val, quota->Available(cq.node, fr)});
    if (val > cells.back().avail) need.push_back(fr);
  }
  if (need.empty()) return false;  // Only nodes are short.
  std::sort(need.begin(), need.end());
  // Sum of a ClusterQueue's band usage at `fr` over priorities passing `take`.
  auto sum = [](const CQ& c, int32_t fr, auto take) {
    int32_t pos = c.FrPos(fr);
    int64_t total = 0;
    if (pos < 0) return total;
    for (const CQ::Band& b : c.bands) {
      if (take(b.priority)) total += b.usage[pos];
    }
    return total;
  };
  if (pol.within_cluster_queue != core::WithinClusterQueue::kNever) {
    const bool equal_too = pol.within_cluster_queue ==
                           core::WithinClusterQueue::kLowerOrNewerEqualPriority;
    for (Cell& cell : cells) {
      cell.own = sum(cq, cell.fr, [&](int32_t p) {
        return p < prio || (equal_too && p == prio);
      });
    }
  }
  auto covered = [&](bool hier, bool during, bool after) {
    for (const Cell& cell : cells) {
      int64_t other = (hier ? cell.hier : 0) + (during ? cell.during : 0) +
                      (after ? cell.after : 0);
      if (cell.avail + cell.own + other < cell.val) return false;
    }
    return true;
  };
  // Its own candidates are valid in every pass (with borrowing in every
  // case): when they alone may cover the shortfall, a search is needed.
  if (covered(false, false, false)) return false;
  const bool cohort =
      quota->HasParent(cq.node) &&
      pol.reclaim_within_cohort != core::ReclaimWithinCohort::kNever;
  if (!cohort) return true;
  const bool reclaim_any =
      pol.reclaim_within_cohort == core::ReclaimWithinCohort::kAny;
  const bool forbidden =
      config.fair_sharing ||
      pol.borrow_within_cohort == core::BorrowWithinCohortPolicy::kNever;
  bool under_nominal = true;
  for (int32_t fr : need) {
    under_nominal = under_nominal &&
                    quota->Usage(cq.node, fr) < quota->Subtree(cq.node, fr);
  }
  if (!config.fair_sharing && forbidden && !under_nominal) {
    // Only the pass with borrowing runs, and of the other ClusterQueues it
    // takes only those it has the advantage over: none unless the request
    // fits the quota of some subtree below the root that holds its
    // ClusterQueue (the walk of ForEachCandidateCq, without visiting).
    bool advantage = true;
    InlineVec<int64_t, 8> remaining(usage.size(), 0);
    for (size_t i = 0; i < usage.size(); ++i) {
      const auto& [fr, val] = usage[i];
      advantage = advantage && quota->WithinQuota(cq.node, fr, val);
      remaining[i] =
          std::max<int64_t>(0, val - quota->LocalAvailable(cq.node, fr));
    }
    for (int32_t a = quota->Parent(cq.node); !advantage && quota->HasParent(a);
         a = quota->Parent(a)) {
      bool fits = true;
      for (size_t i = 0; i < usage.size(); ++i) {
        const int32_t fr = usage[i].first;
        fits = fits && quota->WithinQuota(a, fr, remaining[i]);
        remaining[i] =
            std::max<int64_t>(0, remaining[i] - quota->LocalAvailable(a, fr));
      }
      advantage = fits;
    }
    if (!advantage) return true;
  }
  const std::optional<int32_t> threshold = pol.max_priority_threshold;
  bool others = false;
  ForEachCandidateCq(
      wl.cq, {need.begin(), need.size()}, {usage.data(), usage.size()},
      [&](int32_t c, int32_t, bool advantage) {
        const CQ& other = cqs[c];
        if (other.bands.empty()) return;
        for (Cell& cell : cells) {
          auto allowed = [&](int32_t p) { return reclaim_any || p < prio; };
          if (advantage) {
            cell.hier += sum(other, cell.fr, allowed);
            continue;
          }
          const int64_t all = sum(other, cell.fr, allowed);
          const int64_t during =
              forbidden ? 0 : sum(other, cell.fr, [&](int32_t p) {
                return allowed(p) && p < prio && (!threshold || p <= *threshold);
              });
          cell.during += during;
          cell.after += all - during;
        }
        others = true;
      });
  if (config.fair_sharing) {
    // FindVictims' bound on all candidates (fair sharing has no passes).
    return !covered(true, true, true);
  }
  if (covered(true, true, false)) return false;  // The pass with borrowing.
  if (!others) return true;
  // The pass without borrowing runs only when the ClusterQueue is under
  // its nominal quota in every flavor-resource that needs preemption, and
  // it must then end within its own quota.
  if (!under_nominal || !covered(true, true, true)) return true;
  for (const Cell& cell : cells) {
    if (quota->Usage(cq.node, cell.fr) - cell.own + cell.val >
        quota->Subtree(cq.node, cell.fr)) {
      return true;
    }
  }
  return false;
}

void Scheduler::Impl::TakeVictim(WlIdx v) {
  RemoveUsage(wls[v].cq, *wls[v].adm);
  pool->Release(wls[v].adm->requests, wls[v].adm->placement);  // Parked sets: none.
}

void Scheduler::Impl::GiveBack(WlIdx v) {
  pool->Commit(wls[v].adm->requests, wls[v].adm->placement);
  AddUsage(wls[v].cq, *wls[v].adm);
}

bool Scheduler::Impl::QuotaFits(int32_t c, const Assignment& a,
                                bool allow_borrowing) const {
  const int32_t node = cqs[c].node;
  for (const auto& [fr, val] : a.usage) {
    if (val > quota->Available(node, fr)) return false;
    if (!allow_borrowing && !quota->WithinQuota(node, fr, val)) return false;
  }
  return true;
}

std::vector<std::pair<WlIdx, PreemptionReason>>
Scheduler::Impl::FillBackAndRestore(
    WlIdx w, Assignment* a,
    std::vector<std::pair<WlIdx, PreemptionReason>> taken,
    bool allow_borrowing) {
  for (int i = int(taken.size()) - 2; i >= 0; --i) {
    GiveBack(taken[i].first);
    if (Fits(w, a, allow_borrowing)) {
      taken.erase(taken.begin() + i);
    } else {
      TakeVictim(taken[i].first);
    }
  }
  bool ok = Fits(w, a, allow_borrowing);  // Placement for the final set.
  ALLOT_CHECK(ok);
  for (auto it = taken.rbegin(); it != taken.rend(); ++it) GiveBack(it->first);
  return taken;
}

std::vector<std::pair<WlIdx, PreemptionReason>> Scheduler::Impl::FindVictims(
    WlIdx w, Assignment* a) {
  const CQ& cq = cqs[wls[w].cq];
  if (VictimSearchHopeless(w, a->usage)) return {};
  a->nodes_consulted = true;

  // The flavor-resources short of quota; all of them when only placement is.
  std::vector<int32_t> need;
  for (const auto& [fr, val] : a->usage) {
    if (val > quota->Available(cq.node, fr)) need.push_back(fr);
  }
  // Only nodes are short: victims must hold devices of the flavors the
  // workload would run on (CPU and memory for a pod without devices), and
  // another ClusterQueue counts as borrowing only in those.
  for (bool devices : {true, false}) {
    if (!need.empty()) break;
    for (const auto& [fr, val] : a->usage) {
      const std::string& res = resources[FrResource(fr)];
      bool device = core::IsGpuResource(res);
      bool node_res = res == core::kCpuResource || res == core::kMemoryResource;
      if (devices ? device : node_res) need.push_back(fr);
    }
  }
  std::sort(need.begin(), need.end());
  // Allot rule: no preemption loops. A candidate that evicted this
  // preemptor, directly or through a chain of evictions in the current busy
  // period (see Impl::evicted_by), is spared, otherwise steps that each
  // policy allows on its own ("b3 reclaims from a1, b2 evicts b3 by
  // priority and borrows, a1 evicts b2 while borrowing") repeat for ever.
  std::set<WlIdx> spared;
  if (!evicted_by.empty()) spared = TransitiveEvictors(w);
  return config.fair_sharing ? FairVictims(w, a, need, spared)
                             : ClassicalVictims(w, a, need, spared);
}

std::vector<std::pair<WlIdx, PreemptionReason>>
Scheduler::Impl::ClassicalVictims(WlIdx w, Assignment* a,
                                  const std::vector<int32_t>& need,
                                  const std::set<WlIdx>& spared) {
  const Wl& wl = wls[w];
  const CQ& cq = cqs[wl.cq];
  const core::PreemptionPolicy& pol = cq.spec.preemption;
  const int32_t prio = wl.priority;
  const bool quota_short = [&] {
    for (const auto& [fr, val] : a->usage) {
      if (val > quota->Available(cq.node, fr)) return true;
    }
    return false;
  }();

  std::vector<Candidate> same, hier, other;
  if (pol.within_cluster_queue != core::WithinClusterQueue::kNever) {
    for (WlIdx v : cq.admitted) {
      const Wl& vw = wls[v];
      bool lower = vw.priority < prio;
      bool newer_equal =
          pol.within_cluster_queue ==
              core::WithinClusterQueue::kLowerOrNewerEqualPriority &&
          vw.priority == prio &&
          vw.creation_ms > wl.creation_ms;  // Strictly newer, as Kueue.
      if ((lower || newer_equal) && UsesAny(*vw.adm, need) && !spared.count(v))
        same.push_back({v, wl.cq, Variant::kWithinCq, vw.priority,
                        vw.admit_seq});
    }
  }
  const bool forbidden =
      pol.borrow_within_cohort == core::BorrowWithinCohortPolicy::kNever;
  // Kueue's queueUnderNominalInResourcesNeedingPreemption.
  bool under_nominal = true;
  for (int32_t fr : need) {
    under_nominal = under_nominal &&
                    quota->Usage(cq.node, fr) < quota->Subtree(cq.node, fr);
  }
  // Without borrowWithinCohort, above its nominal quota, only the pass with
  // borrowing runs and takes only hierarchy candidates: others need not be
  // listed.
  const bool only_hierarchy = forbidden && !under_nominal;
  if (quota->HasParent(cq.node) &&
      pol.reclaim_within_cohort != core::ReclaimWithinCohort::kNever) {
    const bool any =
        pol.reclaim_within_cohort == core::ReclaimWithinCohort::kAny;
    ForEachCandidateCq(
        wl.cq, need, a->usage, [&](int32_t c, int32_t, bool advantage) {
          if (!advantage && only_hierarchy) return;
          for (WlIdx v : cqs[c].admitted) {
            const int32_t vp = wls[v].priority;
            if ((!any && vp >= prio) || !UsesAny(*wls[v].adm, need) ||
                spared.count(v)) {
              continue;
            }
            Variant variant = Variant::kWhileBorrowing;
            if (advantage) {
              variant = Variant::kHierarchical;
            } else if (forbidden || vp >= prio ||
                       (pol.max_priority_threshold &&
                        vp > *pol.max_priority_threshold)) {
              variant = Variant::kWithoutBorrowing;
            }
            (advantage ? hier : other)
                .push_back({v, c, variant, vp, wls[v].admit_seq});
          }
        });
  }
  if (same.empty() && hier.empty() && other.empty()) return {};
  // A cheap bound before sorting: when quota is short, evicting every
  // candidate frees at most their usage; if even that cannot cover the
  // shortfall, no victim set exists.
  if (quota_short) {
    for (const auto& [fr, val] : a->usage) {
      int64_t freeable = quota->Available(cq.node, fr);
      for (const auto* list : {&same, &hier, &other}) {
        for (const Candidate& c : *list) {
          for (const auto& [cfr, cval] : wls[c.wl].adm->usage) {
            if (cfr == fr) freeable += cval;
          }
        }
      }
      if (freeable < val) return {};
    }
  }
  // Lower priority first, most recently admitted first (admission numbers
  // are unique).
  auto order = [](const Candidate& x, const Candidate& y) {
    if (x.priority != y.priority) return x.priority < y.priority;
    return x.admit_seq > y.admit_seq;
  };
  std::sort(hier.begin(), hier.end(), order);
  std::sort(other.begin(), other.end(), order);
  std::sort(same.begin(), same.end(), order);
  std::vector<Candidate> cands = std::move(hier);
  const bool no_hier = cands.empty();
  cands.insert(cands.end(), other.begin(), other.end());
  const bool no_others = cands.empty();
  cands.insert(cands.end(), same.begin(), same.end());

  // The passes, in order: with borrowing allowed or not.
  std::vector<bool> passes;
  if (no_others || only_hierarchy) {
    passes = {true};
  } else if (forbidden && no_hier) {
    passes = {false, true};
  } else {
    passes = {true, false};
  }

  std::vector<int32_t> own_path;
  for (int32_t n = cq.node; n >= 0; n = quota->Parent(n)) own_path.push_back(n);
  auto valid = [&](const Candidate& c, bool allow_borrowing) {
    if (c.cq == wl.cq) return true;
    if (allow_borrowing && c.variant == Variant::kWithoutBorrowing)
      return false;
    return SubtreeBorrows(*quota, cqs[c.cq].node, own_path, need);
  };
  using Victims = std::vector<std::pair<WlIdx, PreemptionReason>>;
  // One pass over the candidates. Candidates leave the quota first; their
  // devices are released only once quota fits, so a pass that fails on
  // quota never touches the node pool.
  auto pass = [&](bool allow_borrowing) -> Victims {
    // Hopeless passes end before touching any state: evicting every
    // candidate of the pass cannot cover a quota shortfall, or (without
    // borrowing) the preemptor's own queue stays above its quota.
    if (quota_short) {
      for (const auto& [fr, val] : a->usage) {
        int64_t freeable = 0, own = 0;
        for (const Candidate& c : cands) {
          if (allow_borrowing && c.variant == Variant::kWithoutBorrowing)
            continue;
          for (const auto& [cfr, cval] : wls[c.wl].adm->usage) {
            if (cfr != fr) continue;
            freeable += cval;
            if (c.cq == wl.cq) own += cval;
          }
        }
        if (quota->Available(cq.node, fr) + freeable < val) return {};
        if (!allow_borrowing &&
            quota->Usage(cq.node, fr) - own + val > quota->Subtree(cq.node, fr)) {
          return {};
        }
      }
    }
    Victims taken;
    size_t released = 0;  // taken[0, released) also left the node pool.
    bool quota_ok = false;
    bool fits = false;
    for (const Candidate& c : cands) {
      if (!valid(c, allow_borrowing)) continue;
      RemoveUsage(wls[c.wl].cq, *wls[c.wl].adm);
      taken.emplace_back(c.wl, ReasonOf(c.variant));
      quota_ok = quota_ok || QuotaFits(wl.cq, *a, allow_borrowing);
      if (quota_ok) a->victims_short_of_nodes = true;
      if (!quota_ok) continue;
      for (; released < taken.size(); ++released) {
        const Wl& v = wls[taken[released].first];
        pool->Release(v.adm->requests, v.adm->placement);
      }
      if (pool->Find(a->requests, &a->placement, /*why=*/nullptr)) {
        fits = true;
        break;
      }
    }
    if (!fits) {
      for (size_t i = taken.size(); i-- > 0;) {
        const Wl& v = wls[taken[i].first];
        if (i < released) pool->Commit(v.adm->requests, v.adm->placement);
        AddUsage(v.cq, *v.adm);
      }
      return {};
    }
    return FillBackAndRestore(w, a, std::move(taken), allow_borrowing);
  };
  for (bool allow_borrowing : passes) {
    Victims v = pass(allow_borrowing);
    if (!v.empty()) return v;
  }
  return {};
}

}  // namespace allot::sched
