// Parked capacity lent to preemptible workloads (docs/parking.md). A
// parked workload keeps its quota in the tree and holds no device; a
// preemptible workload of the same cohort tree may run on those devices
// without quota of its own, as long as the tree's workloads on parked
// capacity use no more of any flavor-resource than its parked workloads
// hold. When that stops being true (a resume, a parked workload removed or
// preempted), the newest of lowest priority go first. The quota tree never
// sees them: nothing is counted twice, and every guarantee computed from
// quota stays as it was.
#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "sched/scheduler_internal.h"

namespace allot::sched {

void Scheduler::Impl::CountUse(int32_t c, const std::vector<std::pair<int32_t, int64_t>>& usage,
                               int sign, bool lent) {
  CQ& cq = cqs[c];
  std::vector<int64_t>& cells = lent ? cq.lent_use : cq.parked_use;
  std::vector<std::vector<int64_t>>& sums = lent ? tree_lent : tree_parked;
  if (sums.empty()) sums.resize(size_t(quota->NodeCount()));
  std::vector<int64_t>& tree = sums[size_t(cq.root)];
  if (tree.empty()) tree.assign(size_t(num_fr()), 0);
  for (const auto& [fr, val] : usage) {
    const int32_t pos = cq.FrPos(fr);
    ALLOT_CHECK(pos >= 0);
    cells[size_t(pos)] += sign * val;
    tree[size_t(fr)] += sign * val;
  }
}

void Scheduler::Impl::CountParked(WlIdx w, int sign) {
  const Wl& wl = wls[w];
  // A workload parked in part lends only what its parked pod sets held.
  if (wl.park_sets == AllSets(w)) {
    CountUse(wl.cq, wl.adm->usage, sign, /*lent=*/false);
  } else {
    CountUse(wl.cq, SetsUsage(w, wl.park_sets), sign, /*lent=*/false);
  }
  if (sign < 0) lent_dirty.insert(cqs[wl.cq].root);
}

std::vector<std::pair<int32_t, int64_t>> Scheduler::Impl::SetsUsage(WlIdx w,
                                                                   uint32_t sets) const {
  const Wl& wl = wls[w];
  const CQ& cq = cqs[wl.cq];
  std::map<int32_t, int64_t> acc;
  for (size_t p = 0; p < wl.needs.size(); ++p) {
    if (!(sets >> p & 1)) continue;
    for (const auto& [r, per] : wl.needs[p].per_pod) {
      acc[Fr(wl.adm->flavors[p][size_t(cq.res_group[r])], r)] += per * wl.adm->counts[p];
    }
  }
  std::vector<std::pair<int32_t, int64_t>> out;
  for (const auto& [fr, val] : acc) {
    if (val != 0) out.emplace_back(fr, val);
  }
  return out;
}

Status Scheduler::Impl::ValidatePlaced(const std::vector<PodSetRequest>& requests,
                                       const Placement& p, uint32_t parked_sets) const {
  std::vector<PodSetRequest> req;
  Placement placed;
  for (size_t s = 0; s < p.size(); ++s) {
    if (parked_sets >> s & 1) continue;
    req.push_back(requests[s]);
    placed.push_back(p[s]);
  }
  return pool->Validate(req, placed);
}

int64_t Scheduler::Impl::TreeParked(int32_t root, int32_t fr) const {
  if (tree_parked.empty() || tree_parked[size_t(root)].empty()) return 0;
  return tree_parked[size_t(root)][size_t(fr)];
}

int64_t Scheduler::Impl::TreeLent(int32_t root, int32_t fr) const {
  if (tree_lent.empty() || tree_lent[size_t(root)].empty()) return 0;
  return tree_lent[size_t(root)][size_t(fr)];
}

bool Scheduler::Impl::TryLendParked(WlIdx w) {
  const Wl& wl = wls[w];
  if (!wl.spec.preemptible || wl.cq < 0) return false;
  const CQ& cq = cqs[wl.cq];
  if (tree_parked.empty() || tree_parked[size_t(cq.root)].empty() ||
      std::none_of(tree_parked[size_t(cq.root)].begin(), tree_parked[size_t(cq.root)].end(),
                   [](int64_t v) { return v > 0; })) {
    return false;
  }
  const std::vector<int32_t>& counts = FullCounts(w);
  Assignment a;
  a.Reset(counts, cq.groups.size());
  std::map<int32_t, int64_t> acc;  // fr -> milli taken by earlier pod sets.
  // Per pod set and resource group, the first flavor (in the ClusterQueue's
  // order) that the pod set tolerates and whose parked capacity, less what
  // is lent already, holds it.
  for (size_t p = 0; p < wl.needs.size(); ++p) {
    if (!wl.needs[p].unknown.empty()) return false;
    if (counts[p] == 0) continue;
    for (const auto& [r, per] : wl.needs[p].per_pod) {
      if (cq.res_group[r] < 0) return false;
    }
    for (size_t g = 0; g < cq.groups.size(); ++g) {
      auto in_group = [&](int32_t r) { return cq.res_group[r] == int32_t(g); };
      if (std::none_of(wl.needs[p].per_pod.begin(), wl.needs[p].per_pod.end(),
                       [&](const auto& n) { return in_group(n.first); })) {
        continue;
      }
      int32_t chosen = -1;
      for (int32_t f : cq.groups[g].flavors) {
        if (!FlavorOk(wl, p, f)) continue;
        bool room = true;
        for (const auto& [r, per] : wl.needs[p].per_pod) {
          if (!in_group(r)) continue;
          const int32_t fr = Fr(f, r);
          const int64_t want = acc[fr] + per * counts[p];
          if (want > TreeParked(cq.root, fr) - TreeLent(cq.root, fr)) {
            room = false;
            break;
          }
        }
        if (room) {
          chosen = f;
          break;
        }
      }
      if (chosen < 0) return false;
      a.flavors[p][g] = chosen;
      for (const auto& [r, per] : wl.needs[p].per_pod) {
        if (in_group(r)) acc[Fr(chosen, r)] += per * counts[p];
      }
    }
  }
  for (const auto& [fr, val] : acc) {
    if (val != 0) a.usage.emplace_back(fr, val);
  }
  RequestsInto(w, counts, a.flavors, &a.requests);
  std::string why;
  if (!pool->Find(a.requests, &a.placement, &why)) return false;
  a.mode = Mode::kFit;
  AdmitLent(w, std::move(a));
  return true;
}

void Scheduler::Impl::AdmitLent(WlIdx w, Assignment a) {
  Wl& wl = wls[w];
  pool->Commit(a.requests, a.placement);
  IndexNodes(w, a.placement, /*add=*/true);
  CountUse(wl.cq, a.usage, +1, /*lent=*/true);
  CQ& cq = cqs[wl.cq];
  wl.adm = std::make_unique<Assignment>(std::move(a));
  wl.lent = true;
  wl.unplaced = false;
  wl.state = Wl::State::kAdmitted;
  wl.admit_seq = next_admit_seq++;
  wl.reason.clear();
  wl.tried = false;
  cq.lent.push_back(w);
  ++lent_count;
  ++admitted_count;
}

std::vector<WlIdx> Scheduler::Impl::LentOn(const std::vector<int32_t>& flavor_list) const {
  std::vector<WlIdx> out;
  for (const CQ& cq : cqs) {
    for (WlIdx v : cq.lent) {
      bool uses = false;
      for (const auto& per_set : wls[v].adm->flavors) {
        for (int32_t f : per_set) {
          uses = uses || (f >= 0 && std::find(flavor_list.begin(), flavor_list.end(), f) !=
                                        flavor_list.end());
        }
      }
      if (uses) out.push_back(v);
    }
  }
  std::sort(out.begin(), out.end(), [&](WlIdx a, WlIdx b) { return ReclaimedBefore(a, b); });
  return out;
}

bool Scheduler::Impl::ReclaimLentFor(WlIdx w, const std::vector<int32_t>& flavor_list,
                                     const std::function<bool()>& fits) {
  std::vector<WlIdx> cands = LentOn(flavor_list);
  std::erase(cands, w);
  auto take = [&](WlIdx v) { pool->Release(wls[v].adm->requests, wls[v].adm->placement); };
  auto give = [&](WlIdx v) { pool->Commit(wls[v].adm->requests, wls[v].adm->placement); };
  // Taken in reclaim order, in batches that double, asking for a placement
  // after each batch: a few placement searches even when the devices it
  // needs are held by many small borrowers.
  size_t taken = 0;
  bool ok = false;
  for (size_t batch = 1; taken < cands.size() && !ok; batch *= 2) {
    const size_t end = std::min(cands.size(), taken + batch);
    for (; taken < end; ++taken) take(cands[taken]);
    ok = fits();
  }
  std::vector<uint8_t> victim(taken, 1);
  if (ok) {
    // Those not needed stay: ranges given back whole when the rest still
    // fits, else split; the later (older, higher-priority) first, as
    // Kueue's fill-back goes from the end.
    std::function<void(size_t, size_t)> fill = [&](size_t lo, size_t hi) {
      for (size_t i = lo; i < hi; ++i) give(cands[i]);
      if (fits()) {
        for (size_t i = lo; i < hi; ++i) victim[i] = 0;
        return;
      }
      for (size_t i = lo; i < hi; ++i) take(cands[i]);
      if (hi - lo == 1) return;
      const size_t mid = lo + (hi - lo) / 2;
      fill(mid, hi);
      fill(lo, mid);
    };
    fill(0, taken);
    ok = fits();  // Placement for the victims left.
    ALLOT_CHECK(ok);
  }
  for (size_t i = taken; i-- > 0;) {
    if (victim[i]) give(cands[i]);
  }
  if (!ok) return false;
  for (size_t i = 0; i < taken; ++i) {
    if (victim[i]) Evict(cands[i], w, PreemptionReason::kParkedCapacityReclaim);
  }
  return true;
}

void Scheduler::Impl::EnforceLentBound(int32_t root, WlIdx by) {
  if (tree_lent.empty() || tree_lent[size_t(root)].empty()) return;  // Never lent.
  for (;;) {
    int32_t over = -1;
    for (int32_t fr = 0; fr < num_fr() && over < 0; ++fr) {
      if (TreeLent(root, fr) > TreeParked(root, fr)) over = fr;
    }
    if (over < 0) return;
    WlIdx victim = -1;
    for (int32_t c : tree_cqs.at(root)) {
      for (WlIdx v : cqs[c].lent) {
        const auto& usage = wls[v].adm->usage;
        if (std::none_of(usage.begin(), usage.end(),
                         [&](const auto& u) { return u.first == over && u.second > 0; })) {
          continue;
        }
        if (victim < 0 || ReclaimedBefore(v, victim)) victim = v;
      }
    }
    ALLOT_CHECK(victim >= 0);
    const Assignment freed = *wls[victim].adm;
    Evict(victim, by, PreemptionReason::kParkedCapacityReclaim);
    WakePlacementWaiters(freed);
  }
}

void Scheduler::Impl::SettleLent() {
  while (!lent_dirty.empty()) {
    const int32_t root = *lent_dirty.begin();
    lent_dirty.erase(lent_dirty.begin());
    EnforceLentBound(root, -1);
  }
}

}  // namespace allot::sched
