// Victim search (Kueue's classical and fair-sharing preemption), extended
// so that the victims must also free an exact placement for the preemptor.
//
// Classical (pkg/scheduler/preemption in Kueue):
//  - candidates: lower-priority (or, with LowerOrNewerEqualPriority, equal
//    priority and newer) workloads of the same ClusterQueue, and workloads of
//    other ClusterQueues of the cohort tree that are borrowing, per
//    reclaimWithinCohort / borrowWithinCohort;
//  - order: other ClusterQueues first, lower priority first, most recently
//    admitted first;
//  - take candidates in order until the preemptor fits, then give back every
//    one not needed (fill-back from the second-to-last), so the set is
//    minimal in Kueue's sense.
// Fair sharing: take candidates from the ClusterQueue with the highest
// weighted dominant resource share first, while the configured strategy
// (LessThanOrEqualToFinalShare, then LessThanInitialShare) allows it.
#include <algorithm>
#include <limits>

#include "sched/scheduler_internal.h"

namespace allot::sched {
namespace {

struct Candidate {
  WlIdx wl;
  int32_t cq;
  bool other;    // In another ClusterQueue.
  bool reclaim;  // Allowed by reclaimWithinCohort.
  bool borrow;   // Allowed by borrowWithinCohort.
};

bool UsesAny(const Assignment& a, const std::vector<int32_t>& frs) {
  for (const auto& [fr, val] : a.usage) {
    if (std::binary_search(frs.begin(), frs.end(), fr)) return true;
  }
  return false;
}

// Kueue looks for victims only in subtrees that borrow: every node from the
// candidate's ClusterQueue (`node`) up to (not including) the lowest common
// ancestor with the preemptor (`own_path`: the preemptor's ClusterQueue
// and its ancestors) must be above its own quota in a `need`ed
// flavor-resource.
bool SubtreeBorrows(const QuotaTree& quota, int32_t node,
                    const std::vector<int32_t>& own_path,
                    const std::vector<int32_t>& need) {
  for (int32_t n = node; n >= 0; n = quota.Parent(n)) {
    if (std::find(own_path.begin(), own_path.end(), n) != own_path.end())
      return true;
    bool borrows = false;
    for (int32_t fr : need)
      borrows = borrows || quota.Usage(n, fr) > quota.Subtree(n, fr);
    if (!borrows) return false;
  }
  return false;
}

}  // namespace

int64_t Scheduler::Impl::Drs(int32_t cq_idx, const Assignment* delta,
                             int sign) const {
  return DrsNode(cqs[cq_idx].node, delta, sign);
}

int64_t Scheduler::Impl::DrsNode(int32_t node, const Assignment* delta,
                                 int sign) const {
  if (!quota->HasParent(node)) return 0;
  const int32_t parent = quota->Parent(node);
  const int32_t nres = int32_t(resources.size());
  InlineVec<int64_t, 8> borrowed(size_t(nres), 0);
  for (int32_t fr = 0; fr < num_fr(); ++fr) {
    int64_t usage = quota->Usage(node, fr);
    if (delta != nullptr) {
      for (const auto& [dfr, val] : delta->usage) {
        if (dfr == fr) usage += sign * val;
      }
    }
    int64_t b = usage - quota->Subtree(node, fr);
    if (b > 0) borrowed[FrResource(fr)] += b;
  }
  int64_t drs = 0;
  for (int32_t r = 0; r < nres; ++r) {
    if (borrowed[r] == 0) continue;
    int64_t lendable = 0;
    for (int32_t f = 0; f < int32_t(flavors.size()); ++f) {
      lendable += quota->Subtree(parent, Fr(f, r));
    }
    if (lendable <= 0) continue;
    // 128-bit only where x1000 could overflow (division by it is slow).
    const int64_t share =
        borrowed[r] <= std::numeric_limits<int64_t>::max() / 1000
            ? borrowed[r] * 1000 / lendable
            : int64_t((__int128)borrowed[r] * 1000 / lendable);
    drs = std::max(drs, share);
  }
  int64_t weight = node_weight[node];
  if (weight <= 0) return drs > 0 ? std::numeric_limits<int64_t>::max() / 4 : 0;
  return drs * 1000 / weight;
}

WlIdx Scheduler::Impl::NextFairHead(
    const std::map<int32_t, WlIdx>& heads) const {
  using Key = std::tuple<int64_t, int32_t, int64_t, int64_t>;
  auto order = [&](WlIdx w, int64_t share) {
    const Wl& wl = wls[w];
    return Key{share, -wl.priority, wl.creation_ms, wl.seq};
  };
  std::map<WlIdx, Assignment> nominated;
  auto usage_of = [&](WlIdx w) -> const Assignment& {
    auto it = nominated.find(w);
    if (it != nominated.end()) return it->second;
    const std::vector<int32_t>& counts = FullCounts(w);
    return nominated.emplace(w, Assign(w, counts, /*quota_only=*/true))
        .first->second;
  };
  // Best head in the subtree of `node`, or -1.
  auto best = [&](auto&& self, int32_t node) -> WlIdx {
    if (node_cq[node] >= 0) {
      auto it = heads.find(node_cq[node]);
      return it == heads.end() ? -1 : it->second;
    }
    WlIdx pick = -1;
    Key pick_key{};
    for (int32_t child : quota->Children(node)) {
      WlIdx w = self(self, child);
      if (w < 0) continue;
      Key k = order(w, DrsNode(child, &usage_of(w), +1));
      if (pick < 0 || k < pick_key) {
        pick = w;
        pick_key = k;
      }
    }
    return pick;
  };
  // Independent trees compete by priority and age only.
  std::set<int32_t> roots;
  for (const auto& [c, w] : heads) roots.insert(cqs[c].root);
  WlIdx pick = -1;
  Key pick_key{};
  for (int32_t root : roots) {
    WlIdx w = best(best, root);
    if (w < 0) continue;
    Key k = order(w, 0);
    if (pick < 0 || k < pick_key) {
      pick = w;
      pick_key = k;
    }
  }
  return pick;
}

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
void Scheduler::Impl::ForEachBorrowingCq(int32_t c,
                                         std::span<const int32_t> need,
                                         F f) const {
  auto borrows = [&](int32_t node) {
    for (int32_t fr : need) {
      if (quota->Usage(node, fr) > quota->Subtree(node, fr)) return true;
    }
    return false;
  };
  auto visit = [&](auto&& self, int32_t node) -> void {
    if (!borrows(node)) return;
    if (node_cq[node] >= 0) {
      f(node_cq[node]);
      return;
    }
    for (int32_t child : quota->Children(node)) self(self, child);
  };
  for (int32_t below = cqs[c].node, a = quota->Parent(below); a >= 0;
       below = a, a = quota->Parent(a)) {
    for (int32_t child : quota->Children(a)) {
      if (child != below) visit(visit, child);
    }
  }
}

bool Scheduler::Impl::VictimSearchHopeless(
    WlIdx w, const std::vector<std::pair<int32_t, int64_t>>& usage) const {
  const Wl& wl = wls[w];
  const CQ& cq = cqs[wl.cq];
  const core::PreemptionPolicy& pol = cq.spec.preemption;
  const int32_t prio = wl.priority;
  // Per flavor-resource of `usage`: what is available now, and upper bounds
  // on what evicting candidates frees: `own` (this ClusterQueue's),
  // `reclaim` and `borrow` (other ClusterQueues' that the reclaim and
  // borrowWithinCohort rules let it take). FindVictims' candidates are
  // subsets of these (it also drops workloads by UsesAny and the eviction
  // graph), so when even these sums fail the bounds FindVictims checks
  // before its passes, FindVictims returns nothing.
  struct Cell {
    int32_t fr;
    int64_t val, avail, own = 0, reclaim = 0, borrow = 0;
  };
  InlineVec<Cell, 8> cells;
  InlineVec<int32_t, 8> need;
  for (const auto& [fr, val] : usage) {
    cells.push_back({fr, val, quota->Available(cq.node, fr)});
    if (val > cells.back().avail) need.push_back(fr);
  }
  if (need.empty()) return false;  // Only nodes are short.
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
  const bool fair = config.fair_sharing;
  const bool cohort =
      quota->HasParent(cq.node) &&
      (pol.reclaim_within_cohort != core::ReclaimWithinCohort::kNever ||
       pol.borrow_within_cohort != core::BorrowWithinCohortPolicy::kNever);
  // The bound of one pass of `minimal` in FindVictims over this
  // ClusterQueue's candidates plus `other` ones: every cell must be
  // covered, and without borrowing, the ClusterQueue must end within its
  // own quota.
  auto covered = [&](bool reclaim, bool borrow) {
    for (const Cell& cell : cells) {
      int64_t other = (reclaim ? cell.reclaim : 0) + (borrow ? cell.borrow : 0);
      if (cell.avail + cell.own + other < cell.val) return false;
    }
    return true;
  };
  auto within_own_quota = [&]() {
    for (const Cell& cell : cells) {
      if (quota->Usage(cq.node, cell.fr) - cell.own + cell.val >
          quota->Subtree(cq.node, cell.fr)) {
        return false;
      }
    }
    return true;
  };
  // Classical: the pass over this ClusterQueue's candidates alone runs in
  // every case; with candidates elsewhere, also the borrow pass (when
  // borrowWithinCohort allows it) and the reclaim pass (without
  // borrowing). Each needs the other ClusterQueues' sums only when what
  // does not depend on them holds.
  if (!fair) {
    if (covered(false, false)) return false;
    if (!cohort) return true;
    const bool borrow_pass =
        pol.borrow_within_cohort != core::BorrowWithinCohortPolicy::kNever;
    if (!borrow_pass && !within_own_quota()) return true;
  } else if (!cohort) {
    return !covered(false, false);
  }
  const bool reclaim_any =
      pol.reclaim_within_cohort == core::ReclaimWithinCohort::kAny;
  const bool reclaim_lower =
      pol.reclaim_within_cohort == core::ReclaimWithinCohort::kLowerPriority;
  const bool borrow_lower =
      !fair && pol.borrow_within_cohort ==
                   core::BorrowWithinCohortPolicy::kLowerPriority;
  ForEachBorrowingCq(wl.cq, {need.begin(), need.size()}, [&](int32_t c) {
    const CQ& other = cqs[c];
    if (other.bands.empty()) return;
    for (Cell& cell : cells) {
      cell.reclaim += sum(other, cell.fr, [&](int32_t p) {
        return reclaim_any || (reclaim_lower && p < prio);
      });
      if (borrow_lower) {
        cell.borrow += sum(other, cell.fr, [&](int32_t p) {
          return p < prio && (!pol.max_priority_threshold ||
                              p <= *pol.max_priority_threshold);
        });
      }
    }
  });
  if (fair) {
    // FindVictims' bound on all candidates (fair sharing has no passes).
    // The workloads the borrow rule allows (lower priority, under the
    // threshold) are a subset of those the reclaim rule allows unless that
    // is Never, so the larger sum covers both.
    for (const Cell& cell : cells) {
      if (cell.avail + cell.own + std::max(cell.reclaim, cell.borrow) <
          cell.val) {
        return true;
      }
    }
    return false;
  }
  if (pol.borrow_within_cohort != core::BorrowWithinCohortPolicy::kNever &&
      covered(false, true)) {
    return false;
  }
  return !(covered(true, false) && within_own_quota());
}

std::vector<std::pair<WlIdx, PreemptionReason>> Scheduler::Impl::FindVictims(
    WlIdx w, Assignment* a) {
  const Wl& wl = wls[w];
  const CQ& cq = cqs[wl.cq];
  const core::PreemptionPolicy& pol = cq.spec.preemption;
  const int32_t prio = wl.priority;
  if (VictimSearchHopeless(w, a->usage)) return {};
  a->nodes_consulted = true;

  // The flavor-resources short of quota; all of them when only placement is.
  std::vector<int32_t> need;
  for (const auto& [fr, val] : a->usage) {
    if (val > quota->Available(cq.node, fr)) need.push_back(fr);
  }
  const bool quota_short = !need.empty();
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
  std::vector<int32_t> own_path;
  for (int32_t n = cq.node; n >= 0; n = quota->Parent(n)) own_path.push_back(n);
  auto borrowing = [&](int32_t c) {
    return SubtreeBorrows(*quota, cqs[c].node, own_path, need);
  };

  std::vector<Candidate> cands;
  if (pol.within_cluster_queue != core::WithinClusterQueue::kNever) {
    for (WlIdx v : cq.admitted) {
      const Wl& vw = wls[v];
      bool lower = vw.priority < prio;
      bool newer_equal =
          pol.within_cluster_queue ==
              core::WithinClusterQueue::kLowerOrNewerEqualPriority &&
          vw.priority == prio &&
          vw.creation_ms >
              wl.creation_ms;  // Strictly newer, as Kueue.
      if ((lower || newer_equal) && UsesAny(*vw.adm, need))
        cands.push_back({v, wl.cq, false, false, false});
    }
  }
  const bool fair = config.fair_sharing;
  if (quota->HasParent(cq.node) &&
      (pol.reclaim_within_cohort != core::ReclaimWithinCohort::kNever ||
       pol.borrow_within_cohort != core::BorrowWithinCohortPolicy::kNever)) {
    for (int32_t c : tree_cqs.at(cq.root)) {
      if (c == wl.cq || !borrowing(c)) continue;
      bool uses_need = false;
      for (int32_t fr : need)
        uses_need = uses_need || quota->Usage(cqs[c].node, fr) > 0;
      if (!uses_need) continue;
      for (WlIdx v : cqs[c].admitted) {
        const Wl& vw = wls[v];
        int32_t vp = vw.priority;
        if (pol.reclaim_within_cohort != core::ReclaimWithinCohort::kAny &&
            vp >= prio)
          continue;
        if (!UsesAny(*vw.adm, need)) continue;
        bool reclaim =
            pol.reclaim_within_cohort == core::ReclaimWithinCohort::kAny ||
            (pol.reclaim_within_cohort ==
                 core::ReclaimWithinCohort::kLowerPriority &&
             vp < prio);
        bool borrow =
            !fair &&
            pol.borrow_within_cohort ==
                core::BorrowWithinCohortPolicy::kLowerPriority &&
            vp < prio &&
            (!pol.max_priority_threshold || vp <= *pol.max_priority_threshold);
        if (reclaim || borrow) cands.push_back({v, c, true, reclaim, borrow});
      }
    }
  }
  // Allot rule: no preemption loops. A candidate that evicted this
  // preemptor, directly or through a chain of evictions in the current busy
  // period (see Impl::evicted_by), is spared,
  // otherwise steps that each policy allows on its own ("b3 reclaims from
  // a1, b2 evicts b3 by priority and borrows, a1 evicts b2 while
  // borrowing") repeat for ever.
  if (!evicted_by.empty()) {
    std::set<WlIdx> evictors_of_w = TransitiveEvictors(w);
    std::erase_if(cands, [&](const Candidate& c) {
      return evictors_of_w.count(c.wl) > 0;
    });
  }
  if (cands.empty()) return {};
  // A cheap bound before the search: when quota is short, evicting every
  // candidate frees at most their usage; if even that cannot cover the
  // shortfall, no victim set exists.
  if (quota_short) {
    for (int32_t fr : need) {
      int64_t val = 0;
      for (const auto& [ufr, uval] : a->usage) {
        if (ufr == fr) val = uval;
      }
      int64_t freeable = quota->Available(cq.node, fr);
      for (const Candidate& c : cands) {
        for (const auto& [cfr, cval] : wls[c.wl].adm->usage) {
          if (cfr == fr) freeable += cval;
        }
      }
      if (freeable < val) return {};
    }
  }
  std::sort(cands.begin(), cands.end(),
            [&](const Candidate& x, const Candidate& y) {
              const Wl& a1 = wls[x.wl];
              const Wl& b1 = wls[y.wl];
              if (x.other != y.other) return x.other;
              if (a1.priority != b1.priority)
                return a1.priority < b1.priority;
              if (a1.admit_seq != b1.admit_seq)
                return a1.admit_seq > b1.admit_seq;
              return a1.key < b1.key;
            });

  auto take = [&](WlIdx v) {
    RemoveUsage(wls[v].cq, *wls[v].adm);
    pool->Release(wls[v].adm->requests, wls[v].adm->placement);
  };
  auto give_back = [&](WlIdx v) {
    pool->Commit(wls[v].adm->requests, wls[v].adm->placement);
    AddUsage(wls[v].cq, *wls[v].adm);
  };
  using Victims = std::vector<std::pair<WlIdx, PreemptionReason>>;
  // Removes up to all of `taken` (already taken, in order) that are not
  // needed, then restores the state and returns the rest.
  auto fill_back_and_restore = [&](Victims taken, bool allow_borrowing) {
    for (int i = int(taken.size()) - 2; i >= 0; --i) {
      give_back(taken[i].first);
      if (Fits(w, a, allow_borrowing)) {
        taken.erase(taken.begin() + i);
      } else {
        take(taken[i].first);
      }
    }
    bool ok = Fits(w, a, allow_borrowing);  // Placement for the final set.
    ALLOT_CHECK(ok);
    for (auto it = taken.rbegin(); it != taken.rend(); ++it)
      give_back(it->first);
    return taken;
  };

  // Kueue's minimalPreemptions over `list`. Candidates leave the quota
  // first; their devices are released only once quota fits, so a search
  // that fails on quota never touches the node pool.
  auto quota_fits = [&](bool allow_borrowing) {
    for (const auto& [fr, val] : a->usage) {
      if (val > quota->Available(cq.node, fr)) return false;
      if (!allow_borrowing &&
          quota->Usage(cq.node, fr) + val > quota->Subtree(cq.node, fr)) {
        return false;
      }
    }
    return true;
  };
  auto minimal = [&](const std::vector<Candidate>& list, bool allow_borrowing,
                     bool while_borrowing) -> Victims {
    // Hopeless passes end before touching any state: evicting the whole
    // list cannot cover a quota shortfall, or (without borrowing) the
    // preemptor's own queue stays above its quota.
    for (const auto& [fr, val] : a->usage) {
      int64_t freeable = 0, own = 0;
      for (const Candidate& c : list) {
        for (const auto& [cfr, cval] : wls[c.wl].adm->usage) {
          if (cfr != fr) continue;
          freeable += cval;
          if (!c.other) own += cval;
        }
      }
      if (quota->Available(cq.node, fr) + freeable < val) return {};
      if (!allow_borrowing &&
          quota->Usage(cq.node, fr) - own + val > quota->Subtree(cq.node, fr)) {
        return {};
      }
    }
    Victims taken;
    size_t released = 0;  // taken[0, released) also left the node pool.
    bool quota_ok = false;
    bool fits = false;
    for (const Candidate& c : list) {
      if (c.other && !borrowing(c.cq)) continue;
      RemoveUsage(wls[c.wl].cq, *wls[c.wl].adm);
      PreemptionReason reason =
          !c.other          ? PreemptionReason::kInClusterQueue
          : while_borrowing ? PreemptionReason::kInCohortReclaimWhileBorrowing
                            : PreemptionReason::kInCohortReclamation;
      taken.emplace_back(c.wl, reason);
      quota_ok = quota_ok || quota_fits(allow_borrowing);
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
    return fill_back_and_restore(std::move(taken), allow_borrowing);
  };

  if (fair) {
    for (core::FairSharingStrategy strategy : config.preemption_strategies) {
      std::map<int32_t, std::vector<Candidate>> by_cq;
      for (const Candidate& c : cands) by_cq[c.cq].push_back(c);
      std::map<int32_t, size_t> next;
      // Each candidate ClusterQueue's share: taking a victim changes only
      // its own ClusterQueue's.
      std::map<int32_t, int64_t> shares;
      for (const auto& [c, list] : by_cq) shares[c] = Drs(c, nullptr, 0);
      // The preemptor's share once admitted: changes only when a victim of
      // its own ClusterQueue is taken.
      int64_t preemptor_new = Drs(wl.cq, a, +1);
      Victims taken;
      bool fits = false;
      while (!fits) {
        int32_t target = -1;
        int64_t best = -1;
        for (const auto& [c, list] : by_cq) {
          if (next[c] >= list.size()) continue;
          int64_t share = shares[c];
          if (share > best) {
            best = share;
            target = c;
          }
        }
        if (target < 0) break;
        const Candidate cand = by_cq[target][next[target]++];
        if (cand.other) {
          if (!borrowing(target)) {
            next[target] = by_cq[target].size();
            continue;
          }
          bool ok =
              strategy ==
                      core::FairSharingStrategy::kLessThanOrEqualToFinalShare
                  ? preemptor_new <= Drs(target, wls[cand.wl].adm.get(), -1)
                  : preemptor_new < shares[target];
          // Kueue skips a workload that fails the strategy and tries the
          // next one of the same ClusterQueue (smaller ones may pass).
          // LessThanInitialShare does not depend on the workload, and the
          // next rounds would pick this ClusterQueue again (nothing taken,
          // no share changed) until its list ends: pass over it whole.
          if (!ok) {
            if (strategy ==
                core::FairSharingStrategy::kLessThanInitialShare) {
              next[target] = by_cq[target].size();
            }
            continue;
          }
        }
        take(cand.wl);
        shares[target] = Drs(target, nullptr, 0);
        if (target == wl.cq) preemptor_new = Drs(wl.cq, a, +1);
        taken.emplace_back(cand.wl, cand.other
                                        ? PreemptionReason::kInCohortFairSharing
                                        : PreemptionReason::kInClusterQueue);
        fits = Fits(w, a, /*allow_borrowing=*/true);
        if (!fits && quota_fits(true)) a->victims_short_of_nodes = true;
      }
      if (fits) {
        Victims v = fill_back_and_restore(std::move(taken), true);
        return v;
      }
      for (auto it = taken.rbegin(); it != taken.rend(); ++it)
        give_back(it->first);
    }
    return {};
  }

  std::vector<Candidate> same;
  for (const Candidate& c : cands) {
    if (!c.other) same.push_back(c);
  }
  if (same.size() == cands.size()) return minimal(cands, true, false);
  if (pol.borrow_within_cohort != core::BorrowWithinCohortPolicy::kNever) {
    std::vector<Candidate> list;
    for (const Candidate& c : cands) {
      if (!c.other || c.borrow) list.push_back(c);
    }
    Victims v = minimal(list, true, true);
    if (!v.empty()) return v;
  }
  std::vector<Candidate> reclaim;
  for (const Candidate& c : cands) {
    if (!c.other || c.reclaim) reclaim.push_back(c);
  }
  Victims v = minimal(reclaim, false, false);
  if (!v.empty()) return v;
  return minimal(same, true, false);
}

}  // namespace allot::sched
