// Scheduler: bookkeeping and the scheduling cycle (construction is in
// scheduler_create.cc).
#include "sched/scheduler.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

#include "sched/scheduler_internal.h"

namespace allot::sched {
namespace {

std::string Ordinal(int32_t n) {
  std::string suffix = "th";
  if (n % 100 < 11 || n % 100 > 13) {
    if (n % 10 == 1) suffix = "st";
    if (n % 10 == 2) suffix = "nd";
    if (n % 10 == 3) suffix = "rd";
  }
  return std::to_string(n) + suffix;
}

}  // namespace

const char* ToString(PreemptionReason r) {
  switch (r) {
    case PreemptionReason::kInClusterQueue:
      return "InClusterQueue";
    case PreemptionReason::kInCohortReclamation:
      return "InCohortReclamation";
    case PreemptionReason::kInCohortFairSharing:
      return "InCohortFairSharing";
    case PreemptionReason::kInCohortReclaimWhileBorrowing:
      return "InCohortReclaimWhileBorrowing";
    case PreemptionReason::kParkedCapacityReclaim:
      return "ParkedCapacityReclaim";
  }
  return "Unknown";
}

Scheduler::Scheduler() : impl_(std::make_unique<Impl>()) {}
Scheduler::~Scheduler() = default;

void Scheduler::Impl::Enqueue(WlIdx w) {
  Wl& wl = wls[w];
  wl.state = Wl::State::kPending;
  ++pending_count;
  if (wl.cq < 0) return;
  Settle(wl.cq);
  ListQueued(w);
  CQ& cq = cqs[wl.cq];
  cq.blocked = false;
  active_cqs.insert(wl.cq);
}

void Scheduler::Impl::ListQueued(WlIdx w) {
  const Wl& wl = wls[w];
  ALLOT_CHECK(listed[size_t(w)] == Listed::kNo);
  listed[size_t(w)] = Listed::kQueued;
  cqs[wl.cq].queue.Push(wl.QKey(w), ++stamp[size_t(w)]);
}

void Scheduler::Impl::ListParked(WlIdx w) {
  const Wl& wl = wls[w];
  ALLOT_CHECK(listed[size_t(w)] == Listed::kNo);
  listed[size_t(w)] = Listed::kParked;
  parked_epoch[size_t(w)] = Epoch(cqs[wl.cq]);
  cqs[wl.cq].parked.Push(wl.QKey(w), ++stamp[size_t(w)]);
}

void Scheduler::Impl::Unlist(WlIdx w) {
  CQ& cq = cqs[wls[w].cq];
  ALLOT_CHECK(Settled(cq) && listed[size_t(w)] != Listed::kNo);
  const bool parked = Parked(w);
  listed[size_t(w)] = Listed::kNo;
  ++stamp[size_t(w)];
  (parked ? cq.parked : cq.queue).Drop(stamp);
}

void Scheduler::Impl::Admit(WlIdx w, Assignment a, uint32_t parked_sets) {
  Wl& wl = wls[w];
  for (size_t p = 0; p < a.placement.size(); ++p) {
    if (parked_sets >> p & 1) a.placement[p].clear();
  }
  pool->Commit(a.requests, a.placement);
  IndexNodes(w, a.placement, /*add=*/true);
  wl.unplaced = parked_sets != 0;
  wl.park_sets = uint8_t(parked_sets);
  AddUsage(wl.cq, a);
  wl.adm = std::make_unique<Assignment>(std::move(a));
  if (wl.unplaced) CountParked(w, +1);
  UpdateBands(w, +1);
  wl.state = Wl::State::kAdmitted;
  wl.admit_seq = next_admit_seq++;
  wl.reason.clear();
  wl.tried = false;
  cqs[wl.cq].admitted.push_back(w);
  ++admitted_count;
}

void Scheduler::Impl::ForgetEvictions(WlIdx w) {
  if (auto it = evictors.find(w); it != evictors.end()) {
    for (WlIdx p : it->second) {
      evicted_by[p].erase(w);
      if (evicted_by[p].empty()) evicted_by.erase(p);
    }
    evictors.erase(it);
  }
  if (auto it = evicted_by.find(w); it != evicted_by.end()) {
    for (WlIdx v : it->second) {
      evictors[v].erase(w);
      if (evictors[v].empty()) evictors.erase(v);
    }
    evicted_by.erase(it);
  }
}

void Scheduler::Impl::ReleaseAdmission(WlIdx w) {
  Wl& wl = wls[w];
  // Parked pod sets have no placement: nothing of theirs to give back.
  pool->Release(wl.adm->requests, wl.adm->placement);
  IndexNodes(w, wl.adm->placement, /*add=*/false);
  if (wl.lent) {  // Not in the quota tree (parked_lending.cc).
    CountUse(wl.cq, wl.adm->usage, -1, /*lent=*/true);
    CQ& cq = cqs[wl.cq];
    auto it = std::find(cq.lent.begin(), cq.lent.end(), w);
    ALLOT_CHECK(it != cq.lent.end());
    *it = cq.lent.back();
    cq.lent.pop_back();
    --lent_count;
    wl.lent = false;
    wl.adm.reset();
    --admitted_count;
    return;
  }
  if (wl.unplaced) CountParked(w, -1);
  wl.unplaced = false;
  wl.park_sets = 0;
  RemoveUsage(wl.cq, *wl.adm);
  UpdateBands(w, -1);
  auto& list = cqs[wl.cq].admitted;
  auto it = std::find(list.begin(), list.end(), w);
  ALLOT_CHECK(it != list.end());
  *it = list.back();
  list.pop_back();
  wl.adm.reset();
  --admitted_count;
}

void Scheduler::Impl::UpdateBands(WlIdx w, int sign) {
  const Wl& wl = wls[w];
  CQ& cq = cqs[wl.cq];
  const int32_t prio = wl.priority;
  auto it = std::lower_bound(
      cq.bands.begin(), cq.bands.end(), prio,
      [](const CQ::Band& b, int32_t p) { return b.priority < p; });
  if (it == cq.bands.end() || it->priority != prio) {
    ALLOT_CHECK(sign > 0);
    it = cq.bands.insert(it, CQ::Band{prio, 0, {}});
    it->usage.assign(cq.frs.size(), 0);
  }
  it->count += sign;
  for (const auto& [fr, val] : wl.adm->usage) {
    int32_t pos = cq.FrPos(fr);
    ALLOT_CHECK(pos >= 0);
    it->usage[pos] += sign * val;
  }
  if (it->count == 0) cq.bands.erase(it);
}

void Scheduler::Impl::Evict(WlIdx victim, WlIdx preemptor,
                            PreemptionReason reason) {
  ReleaseAdmission(victim);
  Wl& v = wls[victim];
  // An admitted workload from input loses its recorded admission too.
  v.spec.admission.reset();
  v.tried = false;
  // Another tenant's workload is not named to the victim's (tenants learn
  // nothing of each other); the ClusterQueue is shared and may be.
  if (preemptor < 0) {  // The parked capacity it ran on went.
    v.reason = std::string("the parked capacity it ran on was taken back (") +
               ToString(reason) + ")";
    Enqueue(victim);
    preemptions.push_back({v.key, "", reason});
    return;
  }
  const Wl& by = wls[preemptor];
  const bool reclaim = reason == PreemptionReason::kParkedCapacityReclaim;
  const std::string who =
      by.spec.ns == v.spec.ns
          ? by.key
          : std::string(reclaim ? "a workload" : "a higher-priority workload") +
                " of another tenant in ClusterQueue " + by.cq_name;
  v.reason = (reclaim ? "the parked capacity it ran on was taken back by " : "preempted by ") +
             who + " (" + ToString(reason) + ")";
  Enqueue(victim);
  preemptions.push_back({v.key, wls[preemptor].key, reason});
  evicted_by[preemptor].insert(victim);
  evictors[victim].insert(preemptor);
}

void Scheduler::Impl::AdmitByPreempting(
    WlIdx w, Assignment a,
    const std::vector<std::pair<WlIdx, PreemptionReason>>& victims) {
  // What the victims free beyond what the preemptor takes may admit others:
  // only then are set-aside workloads retried (retrying the whole cohort
  // tree after every preemption would make quiescence quadratic).
  std::map<int32_t, int64_t> left;
  Assignment freed;  // Flavors and nodes of the victims, for placement waiters.
  for (const auto& [v, reason] : victims) {
    for (const auto& [fr, val] : wls[v].adm->usage) {
      left[fr] += val;
      freed.usage.emplace_back(fr, val);
    }
    freed.flavors.insert(freed.flavors.end(), wls[v].adm->flavors.begin(),
                         wls[v].adm->flavors.end());
    freed.placement.insert(freed.placement.end(), wls[v].adm->placement.begin(),
                           wls[v].adm->placement.end());
    Evict(v, w, reason);
  }
  for (const auto& [fr, val] : a.usage) left[fr] -= val;
  int32_t root = cqs[wls[w].cq].root;
  int32_t own_cq = wls[w].cq;
  a.mode = Mode::kFit;
  Admit(w, std::move(a));
  bool leftover = false;
  for (const auto& [fr, val] : left) leftover = leftover || val > 0;
  if (leftover) {
    RequeueTree(root, freed);
  } else {
    // The victims' own queues regain room under their quota and
    // borrowingLimit even when the tree as a whole does not.
    std::set<int32_t> victim_cqs;
    for (const auto& [v, reason] : victims) {
      if (wls[v].cq != own_cq) victim_cqs.insert(wls[v].cq);
    }
    for (int32_t c : victim_cqs) RequeueCq(c);
    // Kueue requeues a cohort's inadmissible workloads when one of its
    // workloads is evicted: a workload set aside in the preemptor's own
    // queue with a higher priority may now preempt the one just admitted
    // (the highest-priority set-aside workload is the top of `parked`).
    Settle(own_cq);
    CQ& own = cqs[own_cq];
    if (own.spec.preemption.within_cluster_queue !=
        core::WithinClusterQueue::kNever) {
      const WlIdx top = own.parked.Front(stamp);
      if (top >= 0 && wls[top].priority >= wls[w].priority) RequeueCq(own_cq);
    }
  }
  // Devices the preemptor did not take (it may run on other nodes than its
  // victims) can serve workloads waiting for nodes, in any cohort tree.
  WakePlacementWaiters(freed);
}

void Scheduler::Impl::RequeueTree(int32_t root, const Assignment& freed) {
  auto it = tree_cqs.find(root);
  if (it == tree_cqs.end()) return;
  std::vector<int32_t> freed_flavors;
  for (const auto& [fr, val] : freed.usage)
    freed_flavors.push_back(FrFlavor(fr));
  for (int32_t c : it->second) {
    CQ& cq = cqs[c];
    // Quota of other flavors did not change: their workloads stay aside.
    bool shares = false;
    for (int32_t fr : cq.frs) {
      shares = shares || std::find(freed_flavors.begin(), freed_flavors.end(),
                                   FrFlavor(fr)) != freed_flavors.end();
    }
    if (!shares) continue;
    RequeueCq(c);
  }
}

void Scheduler::Impl::RequeueCq(int32_t c) {
  ++cqs[c].requeues;
  Settle(c);
}

void Scheduler::Impl::Settle(int32_t c) {
  CQ& cq = cqs[c];
  if (Settled(cq)) return;
  // Set-aside workloads are the only ones of a BestEffortFIFO CQ that
  // wait for nodes between cycles (StrictFIFO ones set none aside).
  if (cq.waiting > 0) {
    std::vector<WlIdx> parked;
    cq.parked.ForEachLive(stamp, [&](WlIdx w) { parked.push_back(w); });
    for (WlIdx w : parked) StopWaiting(w);
  }
  cq.queue.Absorb(&cq.parked, stamp);
  cq.blocked = false;
  cq.settled_epoch = Epoch(cq);
  if (!cq.queue.empty()) active_cqs.insert(c);
}

void Scheduler::Impl::StopWaiting(WlIdx w) {
  if (!waiting[size_t(w)]) return;
  waiting[size_t(w)] = 0;
  Wl& wl = wls[w];
  --cqs[wl.cq].waiting;
  for (int32_t f : wl.waiting_flavors) placement_waiters[f].erase(w);
  wl.waiting_flavors.clear();
}

void Scheduler::Impl::Unpark(WlIdx w) {
  Wl& wl = wls[w];
  StopWaiting(w);
  if (wl.state != Wl::State::kPending || wl.cq < 0) return;
  Settle(wl.cq);
  CQ& cq = cqs[wl.cq];
  if (Parked(w)) {
    Unlist(w);
    ListQueued(w);
  }
  cq.blocked = false;
  if (!cq.queue.empty()) active_cqs.insert(wl.cq);
}

void Scheduler::Impl::WakePlacementWaiters(const Assignment& freed) {
  // The most free devices now on any node the freed placement used: a
  // waiter none of whose pods needs that few cannot use the freed nodes.
  int32_t max_free = 0;
  for (const auto& per_set : freed.placement) {
    for (const PodAssignment& pa : per_set) {
      int32_t n = 0;
      for (int32_t d = 0; d < pool->DeviceCount(pa.node); ++d)
        n += pool->DeviceFree(pa.node, d);
      max_free = std::max(max_free, n);
    }
  }
  std::set<WlIdx> wake;
  for (const auto& per_set : freed.flavors) {
    for (int32_t f : per_set) {
      if (f < 0) continue;
      auto it = placement_waiters.find(f);
      if (it == placement_waiters.end()) continue;
      for (WlIdx w : it->second) {
        if (wls[w].min_pod_devices <= max_free) wake.insert(w);
      }
    }
  }
  for (WlIdx w : wake) Unpark(w);
}

bool Scheduler::Impl::TryAdmit(WlIdx w, bool* quota_alone) {
  *quota_alone = false;
  Wl& wl = wls[w];
  if (wl.cq < 0) return false;
  const CQ& cq = cqs[wl.cq];
  if (cq.spec.stop_policy != core::StopPolicy::kNone) {
    wl.reason =
        "ClusterQueue " + cq.spec.name + " is stopped (stopPolicy " +
        (cq.spec.stop_policy == core::StopPolicy::kHold ? "Hold"
                                                        : "HoldAndDrain") +
        ")";
    return false;
  }
  const std::vector<int32_t>& counts = FullCounts(w);
  Assignment& a = try_scratch;
  AssignInto(w, counts, /*quota_only=*/false, /*explain=*/false, &a);
  if (a.mode == Mode::kFit) {
    Admit(w, std::move(a));
    return true;
  }
  // Its quota fits but workloads on parked capacity hold the devices: they
  // go first (they hold no quota; docs/parking.md).
  if (a.mode == Mode::kPreempt && !a.short_flavors.empty() && lent_count > 0) {
    const std::vector<int32_t> short_flavors = a.short_flavors;
    auto fits = [&] {
      AssignInto(w, counts, /*quota_only=*/false, /*explain=*/false, &a);
      return a.mode == Mode::kFit;
    };
    if (ReclaimLentFor(w, short_flavors, fits) && fits()) {
      Admit(w, std::move(a));
      return true;
    }
    AssignInto(w, counts, /*quota_only=*/false, /*explain=*/false, &a);
  }
  // A preemptible workload may run on capacity parked workloads gave back
  // before anyone is preempted for it.
  if (TryLendParked(w)) return true;
  if (a.mode == Mode::kPreempt) {
    std::vector<std::pair<WlIdx, PreemptionReason>> victims;
    if (!a.oracle_victims.empty()) {
      victims = std::move(a.oracle_victims);
    } else if (!a.no_candidates) {
      victims = FindVictims(w, &a);
    }
    if (!victims.empty()) {
      AdmitByPreempting(w, std::move(a), victims);
      return true;
    }
  }
  // Partial admission: the largest scale t in [0, T) whose counts can be
  // admitted now, by fitting or by preempting (as Kueue's
  // getInitialAssignments accepts a reduced count in either mode).
  int32_t T = 0;
  for (const auto& ps : wl.spec.pod_sets) {
    if (ps.min_count && *ps.min_count < ps.count)
      T = std::max(T, ps.count - *ps.min_count);
  }
  if (T > 0) {
    auto counts_at = [&](int32_t t) {
      std::vector<int32_t> c;
      for (const auto& ps : wl.spec.pod_sets) {
        int32_t lo =
            ps.min_count ? std::min(*ps.min_count, ps.count) : ps.count;
        c.push_back(lo + int32_t(int64_t(ps.count - lo) * t / T));
      }
      return c;
    };
    struct Option {
      Assignment a;
      std::vector<std::pair<WlIdx, PreemptionReason>> victims;
    };
    auto admissible = [&](int32_t t, Option* out) {
      out->a = Assign(w, counts_at(t), false);
      out->victims.clear();
      if (out->a.mode == Mode::kFit) return true;
      if (out->a.mode != Mode::kPreempt) return false;
      out->victims = FindVictims(w, &out->a);
      return !out->victims.empty();
    };
    Option best;
    bool min_ok = admissible(0, &best);
    // The smallest admissible size may be short of nodes where the full
    // size was short of quota: freed devices must wake it too.
    a.short_flavors.insert(a.short_flavors.end(), best.a.short_flavors.begin(),
                           best.a.short_flavors.end());
    if (best.a.mode == Mode::kPreempt) a.mode = Mode::kPreempt;
    a.victims_short_of_nodes =
        a.victims_short_of_nodes || best.a.victims_short_of_nodes;
    if (min_ok) {
      int32_t lo = 0, hi = T - 1;
      while (lo < hi) {
        int32_t mid = (lo + hi + 1) / 2;
        Option o;
        if (admissible(mid, &o)) {
          lo = mid;
          best = std::move(o);
        } else {
          hi = mid - 1;
        }
      }
      if (best.victims.empty()) {
        Admit(w, std::move(best.a));
      } else {
        AdmitByPreempting(w, std::move(best.a), best.victims);
      }
      return true;
    }
  }
  wl.tried = true;  // Pending() explains it against the state then.
  *quota_alone = T == 0 && !a.nodes_consulted;
  // A victim search that covered the quota but found no nodes: devices
  // freed anywhere (in any cohort tree) must retry it too.
  if (a.mode == Mode::kPreempt && a.victims_short_of_nodes) {
    for (const auto& per_set : a.flavors) {
      for (int32_t f : per_set) {
        if (f >= 0) a.short_flavors.push_back(f);
      }
    }
  }
  for (int32_t f : a.short_flavors) {
    if (placement_waiters[f].insert(w).second) {
      wl.waiting_flavors.push_back(f);
      if (!waiting[size_t(w)]) ++cqs[wl.cq].waiting;
      waiting[size_t(w)] = 1;
    }
  }
  return false;
}

Status Scheduler::AddWorkload(const core::Workload& w) {
  Status st = impl_->AddWorkloadInternal(w);
  if (!st.ok() || !w.admission) return st;
  Impl& m = *impl_;
  WlIdx idx = m.by_key[w.Key()];
  st = m.AdmitExisting(idx);
  if (!st.ok()) {
    m.by_key.erase(w.Key());
    m.wls[idx].state = Wl::State::kGone;
  }
  return st;
}

Status Scheduler::AddNode(const core::Node& node) {
  Impl& m = *impl_;
  ALLOT_RETURN_IF_ERROR(m.pool->AddNode(node));
  m.RequeueAll();
  return Status::Ok();
}

Status Scheduler::RemoveWorkload(const std::string& key) {
  Impl& m = *impl_;
  auto it = m.by_key.find(key);
  if (it == m.by_key.end())
    return Status::NotFound("workload " + key + " does not exist");
  WlIdx w = it->second;
  Wl& wl = m.wls[w];
  if (wl.state == Wl::State::kAdmitted) {
    Assignment freed = *wl.adm;
    m.ReleaseAdmission(w);
    m.RequeueTree(m.cqs[wl.cq].root, freed);
    m.WakePlacementWaiters(freed);
  } else {
    --m.pending_count;
    m.StopWaiting(w);
    if (wl.cq >= 0) {
      m.Settle(wl.cq);
      CQ& cq = m.cqs[wl.cq];
      const bool parked = m.Parked(w);
      m.Unlist(w);
      if (!parked) {
        cq.blocked = false;  // The blocking head may be the one removed.
        if (!cq.queue.empty()) m.active_cqs.insert(wl.cq);
      }
    }
  }
  m.ForgetEvictions(w);
  if (wl.cq >= 0 && wl.spec.preemptible) --m.cqs[wl.cq].preemptible;
  wl.state = Wl::State::kGone;
  m.by_key.erase(it);
  m.SettleLent();  // A parked workload's quota went: its borrowers may go.
  return Status::Ok();
}

Result<WlIdx> Scheduler::Impl::ParkingTarget(const std::string& key, bool want_parked) const {
  auto it = by_key.find(key);
  if (it == by_key.end()) return Status::NotFound("workload " + key + " does not exist");
  const Wl& wl = wls[it->second];
  if (want_parked && (wl.state != Wl::State::kAdmitted || !wl.unplaced)) {
    return Status::FailedPrecondition("workload " + key + " is not parked");
  }
  if (!want_parked && wl.state != Wl::State::kAdmitted) {
    return Status::FailedPrecondition("workload " + key +
                                      " is not admitted: it holds no quota to keep");
  }
  if (!want_parked && wl.unplaced) {
    return Status::FailedPrecondition("workload " + key + " is parked already");
  }
  if (!want_parked && wl.lent) {
    return Status::FailedPrecondition(
        "workload " + key +
        " runs on capacity that parked workloads lent: it holds no quota to keep");
  }
  return it->second;
}

Status Scheduler::ParkWorkload(const std::string& key, const std::vector<std::string>& pod_sets) {
  Impl& m = *impl_;
  Result<WlIdx> target = m.ParkingTarget(key, /*want_parked=*/false);
  if (!target.ok()) return target.status();
  const WlIdx w = *target;
  Wl& wl = m.wls[w];
  uint32_t sets = pod_sets.empty() ? m.AllSets(w) : 0;
  for (const std::string& name : pod_sets) {
    size_t p = 0;
    while (p < wl.spec.pod_sets.size() && wl.spec.pod_sets[p].name != name) ++p;
    if (p == wl.spec.pod_sets.size()) {
      std::string names;
      for (const core::PodSet& ps : wl.spec.pod_sets) names += (names.empty() ? "" : ", ") + ps.name;
      return Status::InvalidArgument("workload " + key + " has no pod set " + name +
                                     " (its pod sets: " + names + ")");
    }
    sets |= 1u << p;
  }
  // The parked pod sets' devices go back; the others keep theirs (they
  // may share nodes with them: indexed again).
  Assignment freed = *wl.adm;
  for (size_t p = 0; p < freed.placement.size(); ++p) {
    if (sets >> p & 1) {
      wl.adm->placement[p].clear();
    } else {
      freed.placement[p].clear();
    }
  }
  m.pool->Release(freed.requests, freed.placement);
  m.IndexNodes(w, freed.placement, /*add=*/false);
  m.IndexNodes(w, wl.adm->placement, /*add=*/true);
  wl.unplaced = true;
  wl.park_sets = uint8_t(sets);
  m.CountParked(w, +1);
  // Its quota stays used: workloads short of devices can gain, and
  // preemptible ones of its cohort tree may run on its capacity.
  m.WakePlacementWaiters(freed);
  for (int32_t c : m.tree_cqs.at(m.cqs[wl.cq].root)) {
    if (m.cqs[c].preemptible > 0) m.RequeueCq(c);
  }
  return Status::Ok();
}

Status Scheduler::ResumeWorkload(const std::string& key) {
  Impl& m = *impl_;
  Result<WlIdx> target = m.ParkingTarget(key, /*want_parked=*/true);
  if (!target.ok()) return target.status();
  const WlIdx w = *target;
  Wl& wl = m.wls[w];
  // Its parked pod sets (all, unless it was parked in part) are placed.
  std::vector<PodSetRequest> req;
  std::vector<size_t> sets;
  std::vector<int32_t> flavor_list;
  for (size_t s = 0; s < wl.adm->requests.size(); ++s) {
    if (!(wl.park_sets >> s & 1)) continue;
    req.push_back(wl.adm->requests[s]);
    sets.push_back(s);
    for (int32_t f : wl.adm->flavors[s]) {
      if (f >= 0) flavor_list.push_back(f);
    }
  }
  Placement p;
  std::string why;
  auto fits = [&] { return m.pool->Find(req, &p, &why); };
  if (!fits()) {
    // Workloads on parked capacity of its flavors go first (their pods
    // stop within the reclaim grace; the agents start its pods once the
    // devices are free).
    if (m.lent_count == 0 || !m.ReclaimLentFor(w, flavor_list, fits) || !fits()) {
      return Status::FailedPrecondition("no free devices of its flavors can take it now: " + why);
    }
  }
  m.pool->Commit(req, p);
  m.IndexNodes(w, p, /*add=*/true);
  for (size_t k = 0; k < sets.size(); ++k) wl.adm->placement[sets[k]] = std::move(p[k]);
  // What it held parked is no longer there to lend.
  m.CountParked(w, -1);
  wl.unplaced = false;
  wl.park_sets = 0;
  m.lent_dirty.erase(m.cqs[wl.cq].root);
  m.EnforceLentBound(m.cqs[wl.cq].root, w);
  return Status::Ok();
}

int64_t Scheduler::ReclaimGraceSeconds(const std::string& key) const {
  const Impl& m = *impl_;
  auto it = m.by_key.find(key);
  if (it == m.by_key.end() || !m.wls[it->second].lent) return -1;
  int64_t grace = INT64_MAX;
  for (int32_t c : m.tree_cqs.at(m.cqs[m.wls[it->second].cq].root)) {
    grace = std::min(grace, m.cqs[c].spec.reclaim_grace_seconds);
  }
  return grace;
}

bool Scheduler::IsParked(const std::string& key) const {
  auto it = impl_->by_key.find(key);
  return it != impl_->by_key.end() && impl_->wls[it->second].state == Wl::State::kAdmitted &&
         impl_->wls[it->second].unplaced;
}

CycleResult Scheduler::RunCycle() {
  Impl& m = *impl_;
  CycleResult r;
  m.SettleAll();  // Requeues after node changes (RequeueAll).
  m.SettleLent();
  // Evictions made since the last cycle outside one (a resume took back
  // the parked capacity a workload ran on) are reported with this one.
  for (size_t i = m.reported; i < m.preemptions.size(); ++i) {
    r.preempted.push_back(m.preemptions[i]);
  }
  // 1. Heads: the first workload of every active ClusterQueue.
  struct Head {
    std::tuple<int64_t, int32_t, int64_t, int64_t> order;
    WlIdx w;
  };
  std::vector<Head> heads;
  for (int32_t c : m.active_cqs) {
    CQ& cq = m.cqs[c];
    if (cq.queue.empty() || cq.blocked) continue;
    WlIdx w = cq.queue.Front(m.stamp);
    heads.push_back(
        {{0, -m.wls[w].priority, m.wls[w].creation_ms, m.wls[w].seq}, w});
  }
  // 3-5. Try a head: admit, preempt and admit, or set aside.
  auto try_head = [&](WlIdx w) {
    Wl& wl = m.wls[w];
    if (wl.state != Wl::State::kPending || m.Parked(w)) return;
    CQ& cq = m.cqs[wl.cq];
    ++r.attempts;
    size_t before = m.preemptions.size();
    m.Unlist(w);
    --m.pending_count;
    m.StopWaiting(w);
    bool quota_alone = false;
    if (m.FailsLikeFloor(w)) {
      wl.tried = true;  // As TryAdmit would: see FailsLikeFloor.
    } else if (m.TryAdmit(w, &quota_alone)) {
      r.admitted.push_back(wl.key);
    } else if (quota_alone) {
      m.RecordFloor(w);
    }
    if (wl.state != Wl::State::kAdmitted) {
      ++m.pending_count;
      if (cq.spec.queueing_strategy == core::QueueingStrategy::kStrictFIFO) {
        m.ListQueued(w);
        // Only a workload still at the head blocks: a preemption in this
        // cycle may have returned an earlier one to this queue.
        if (cq.queue.Front(m.stamp) == w) cq.blocked = true;
      } else {
        m.ListParked(w);
      }
    }
    m.SettleLent();  // A parked victim's borrowers may have to go.
    for (size_t i = before; i < m.preemptions.size(); ++i)
      r.preempted.push_back(m.preemptions[i]);
  };
  // 2. Order. Fair sharing: a tournament down each cohort tree, against the
  // usage left by the heads admitted before. Classical: by how deep in the
  // cohort tree they borrow (not at all first), then priority, then age.
  if (m.config.fair_sharing) {
    std::map<int32_t, WlIdx> pending_heads;
    for (const Head& h : heads) pending_heads[m.wls[h.w].cq] = h.w;
    while (!pending_heads.empty()) {
      WlIdx w = m.NextFairHead(pending_heads);
      pending_heads.erase(m.wls[w].cq);
      try_head(w);
    }
  } else {
    if (heads.size() > 1) {
      Assignment scratch;
      for (Head& h : heads) {
        const Wl& wl = m.wls[h.w];
        if (m.cqs[wl.cq].spec.stop_policy != core::StopPolicy::kNone) continue;
        // It fails on quota alone (see FailsLikeFloor): its place does
        // not matter.
        if (m.FailsLikeFloor(h.w)) continue;
        m.AssignInto(h.w, m.FullCounts(h.w), /*quota_only=*/true,
                     /*explain=*/false, &scratch);
        std::get<0>(h.order) = scratch.borrow_height;
      }
      std::sort(heads.begin(), heads.end(),
                [](const Head& a, const Head& b) { return a.order < b.order; });
    }
    for (const Head& h : heads) try_head(h.w);
  }
  for (auto it = m.active_cqs.begin(); it != m.active_cqs.end();) {
    const CQ& cq = m.cqs[*it];
    if (cq.queue.empty() || cq.blocked) {
      it = m.active_cqs.erase(it);
    } else {
      ++it;
    }
  }
  m.reported = m.preemptions.size();
  // Idle: no queue has a head to try. The eviction history that guards
  // against preemption loops only needs to cover one busy period.
  if (m.active_cqs.empty()) {
    m.evicted_by.clear();
    m.evictors.clear();
  }
  return r;
}

int32_t Scheduler::RunUntilQuiescent(int32_t max_cycles) {
  int32_t n = 0;
  impl_->SettleAll();  // Before the emptiness test, as RunCycle would.
  while (!impl_->active_cqs.empty() && n < max_cycles) {
    RunCycle();
    ++n;
  }
  return n;
}

core::Admission Scheduler::Impl::AdmissionOf(WlIdx w) const {
  const Wl& wl = wls[w];
  core::Admission adm;
  adm.cluster_queue = cqs[wl.cq].spec.name;
  adm.parked = wl.unplaced;
  adm.on_parked_capacity = wl.lent;
  for (size_t p = 0; p < wl.spec.pod_sets.size(); ++p) {
    core::PodSetAssignment psa;
    psa.name = wl.spec.pod_sets[p].name;
    psa.count = wl.adm->counts[p];
    for (const auto& [r, per] : wl.needs[p].per_pod) {
      int32_t g = cqs[wl.cq].res_group[r];
      psa.flavors[resources[r]] = flavors[wl.adm->flavors[p][g]].name;
    }
    for (const PodAssignment& pa : wl.adm->placement[p]) {
      core::PodPlacement pp;
      pp.node = pool->NodeName(pa.node);
      for (int32_t d : pa.devices) pp.gpus.push_back(pool->DeviceUuid(pa.node, d));
      psa.placements.push_back(std::move(pp));
    }
    adm.pod_set_assignments.push_back(std::move(psa));
  }
  return adm;
}

std::vector<AdmittedWorkload> Scheduler::Admitted() const {
  const Impl& m = *impl_;
  std::vector<AdmittedWorkload> out;
  for (WlIdx w = 0; w < WlIdx(m.wls.size()); ++w) {
    if (m.wls[w].state != Wl::State::kAdmitted) continue;
    out.push_back({m.wls[w].key, m.AdmissionOf(w)});
  }
  std::sort(out.begin(), out.end(),
            [](const AdmittedWorkload& a, const AdmittedWorkload& b) {
              return a.workload < b.workload;
            });
  return out;
}

std::optional<core::Admission> Scheduler::AdmissionOf(
    const std::string& key) const {
  auto it = impl_->by_key.find(key);
  if (it == impl_->by_key.end() ||
      impl_->wls[it->second].state != Wl::State::kAdmitted) {
    return std::nullopt;
  }
  return impl_->AdmissionOf(it->second);
}

bool Scheduler::IsInadmissible(const std::string& key) const {
  auto it = impl_->by_key.find(key);
  return it != impl_->by_key.end() &&
         impl_->wls[it->second].state == Wl::State::kPending &&
         impl_->Parked(it->second);
}

// The sorted queue of a ClusterQueue, parked workloads included.
std::vector<QueueKey> Scheduler::Impl::SortedQueue(const CQ& cq) const {
  std::vector<QueueKey> keys;
  cq.queue.LiveKeys(stamp, &keys);
  cq.parked.LiveKeys(stamp, &keys);
  std::sort(keys.begin(), keys.end());
  return keys;
}

PendingWorkload Scheduler::Impl::ExplainAt(const CQ& cq,
                                           const std::vector<QueueKey>& keys,
                                           size_t i) const {
  const Wl& wl = wls[keys[i].wl];
  PendingWorkload p;
  p.workload = wl.key;
  p.cluster_queue = cq.spec.name;
  p.position = int32_t(i + 1);
  const bool blocked = Blocked(cq);
  if (wl.tried && !(blocked && i > 0)) {
    // Computed against the state now: numbers may have changed since
    // the workload was last tried.
    p.reason = ReasonNow(keys[i].wl);
    if (p.reason.empty())
      p.reason = "fits now; waiting for the next scheduling cycle";
  } else if (!wl.reason.empty() && !(blocked && i > 0)) {
    p.reason = wl.reason;
  } else if (blocked && i > 0) {
    // The head is named only to its own tenant.
    const Wl& head = wls[keys[0].wl];
    p.reason = "waiting behind " +
               (head.spec.ns == wl.spec.ns ? head.key : "a workload of another tenant") +
               ": StrictFIFO ClusterQueue " + cq.spec.name +
               " admits in order and its head cannot be admitted";
  } else {
    p.reason = "waiting for a scheduling cycle";
  }
  p.reason += "; " + Ordinal(p.position) + " in queue";
  return p;
}

std::vector<PendingWorkload> Scheduler::Pending() const {
  const Impl& m = *impl_;
  std::vector<PendingWorkload> out;
  for (const CQ& cq : m.cqs) {
    std::vector<QueueKey> keys = m.SortedQueue(cq);
    for (size_t i = 0; i < keys.size(); ++i) {
      out.push_back(m.ExplainAt(cq, keys, i));
    }
  }
  for (const Wl& wl : m.wls) {
    if (wl.state == Wl::State::kPending && wl.cq < 0) {
      out.push_back({wl.key, wl.cq_name, wl.reason, 0});
    }
  }
  std::sort(out.begin(), out.end(),
            [](const PendingWorkload& a, const PendingWorkload& b) {
              return a.workload < b.workload;
            });
  return out;
}

std::optional<PendingWorkload> Scheduler::Explain(
    const std::string& key) const {
  const Impl& m = *impl_;
  auto it = m.by_key.find(key);
  if (it == m.by_key.end()) return std::nullopt;
  const Wl& wl = m.wls[it->second];
  if (wl.state != Wl::State::kPending) return std::nullopt;
  if (wl.cq < 0) return PendingWorkload{wl.key, wl.cq_name, wl.reason, 0};
  std::vector<QueueKey> keys = m.SortedQueue(m.cqs[wl.cq]);
  for (size_t i = 0; i < keys.size(); ++i) {
    if (keys[i].wl == it->second) return m.ExplainAt(m.cqs[wl.cq], keys, i);
  }
  return PendingWorkload{wl.key, wl.cq_name, wl.reason, 0};
}

std::unordered_map<std::string, PendingWorkload> Scheduler::Explain(
    const std::vector<std::string>& keys) const {
  const Impl& m = *impl_;
  std::unordered_map<std::string, PendingWorkload> out;
  std::map<int32_t, std::vector<WlIdx>> by_cq;  // Pending workloads to place.
  for (const std::string& key : keys) {
    auto it = m.by_key.find(key);
    if (it == m.by_key.end()) continue;
    const Wl& wl = m.wls[it->second];
    if (wl.state != Wl::State::kPending) continue;
    if (wl.cq < 0) {
      out[key] = PendingWorkload{wl.key, wl.cq_name, wl.reason, 0};
    } else {
      by_cq[wl.cq].push_back(it->second);
    }
  }
  for (const auto& [cq, wanted] : by_cq) {
    std::vector<QueueKey> queue = m.SortedQueue(m.cqs[cq]);
    std::unordered_map<WlIdx, size_t> at;
    at.reserve(queue.size());
    for (size_t i = 0; i < queue.size(); ++i) at[queue[i].wl] = i;
    for (WlIdx w : wanted) {
      const Wl& wl = m.wls[w];
      auto i = at.find(w);
      out[wl.key] = i == at.end() ? PendingWorkload{wl.key, wl.cq_name, wl.reason, 0}
                                  : m.ExplainAt(m.cqs[cq], queue, i->second);
    }
  }
  return out;
}

int64_t Scheduler::Impl::Lent(int32_t c, int32_t fr) const {
  if (!quota->HasParent(cqs[c].node)) return 0;
  // What a ClusterQueue can lend now: its unused quota, within its
  // lendingLimit.
  auto unused = [&](int32_t node) {
    const int64_t free = quota->Subtree(node, fr) - quota->Usage(node, fr);
    const std::optional<int64_t> limit = quota->LendingLimit(node, fr);
    return std::max<int64_t>(0, limit ? std::min(free, *limit) : free);
  };
  int64_t borrowed = 0, lendable = 0;
  for (int32_t o : tree_cqs.at(cqs[c].root)) {
    const int32_t node = cqs[o].node;
    borrowed += std::max<int64_t>(0, quota->Usage(node, fr) - quota->Subtree(node, fr));
    lendable += unused(node);
  }
  // Quota the cohorts of the tree hold themselves is lent first.
  for (int32_t n = quota->Parent(cqs[c].node); n >= 0; n = quota->Parent(n)) {
    borrowed -= quota->Nominal(n, fr);
  }
  const int64_t mine = unused(cqs[c].node);
  if (borrowed <= 0 || lendable <= 0 || mine == 0) return 0;
  if (borrowed >= lendable) return mine;
  return int64_t((__int128)mine * borrowed / lendable);
}

std::optional<ClusterQueueStatus> Scheduler::GetClusterQueueStatus(
    const std::string& name) const {
  const Impl& m = *impl_;
  auto it = m.cq_idx.find(name);
  if (it == m.cq_idx.end()) return std::nullopt;
  const CQ& cq = m.cqs[it->second];
  ClusterQueueStatus st;
  for (const core::ResourceGroup& g : cq.spec.resource_groups) {
    for (const core::FlavorQuotas& fq : g.flavors) {
      for (const core::ResourceQuota& rq : fq.resources) {
        QuotaUsage u;
        u.flavor = fq.name;
        u.resource = rq.name;
        u.nominal_milli = rq.nominal_quota.milli();
        if (rq.borrowing_limit) u.borrowing_limit_milli = rq.borrowing_limit->milli();
        if (rq.lending_limit) u.lending_limit_milli = rq.lending_limit->milli();
        auto f = m.flavor_idx.find(fq.name);
        auto r = m.resource_idx.find(rq.name);
        if (f != m.flavor_idx.end() && r != m.resource_idx.end()) {
          int32_t fr = m.Fr(f->second, r->second);
          u.usage_milli = m.quota->Usage(cq.node, fr);
          u.borrowed_milli =
              std::max<int64_t>(0, u.usage_milli - m.quota->Subtree(cq.node, fr));
          u.lent_milli = m.Lent(it->second, fr);
          if (const int32_t pos = cq.FrPos(fr); pos >= 0) {
            u.parked_milli = cq.parked_use[size_t(pos)];
            u.on_parked_milli = cq.lent_use[size_t(pos)];
          }
        }
        st.quota.push_back(std::move(u));
      }
    }
  }
  st.pending = int32_t(cq.queue.size() + cq.parked.size());
  st.inadmissible = m.ParkedCount(cq);
  st.admitted = int32_t(cq.admitted.size() + cq.lent.size());
  st.weighted_share = m.WeightedShare(it->second);
  return st;
}

std::vector<CapacityBlocked> Scheduler::CapacityBlockedByFlavor() const {
  const Impl& m = *impl_;
  std::map<std::string, CapacityBlocked> by;
  for (const auto& [f, waiters] : m.placement_waiters) {
    for (WlIdx w : waiters) {
      const Wl& wl = m.wls[w];
      // A CQ requeued since counts its set-aside workloads as queued: they
      // are tried again before anyone knows what they lack.
      if (wl.state != Wl::State::kPending || wl.cq < 0 || !m.Settled(m.cqs[wl.cq])) continue;
      CapacityBlocked& c = by[m.flavors[f].name];
      ++c.workloads;
      for (size_t p = 0; p < wl.needs.size(); ++p) {
        for (const auto& [r, per] : wl.needs[p].per_pod) {
          if (!core::IsGpuResource(m.resources[r])) continue;
          c.devices_milli[m.resources[r]] += per * wl.full_counts[p];
        }
      }
    }
  }
  std::vector<CapacityBlocked> out;
  for (auto& [name, c] : by) {
    c.flavor = name;
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<CohortStatus> Scheduler::CohortStatuses() const {
  const Impl& m = *impl_;
  std::vector<CohortStatus> out;
  for (const auto& [name, node] : m.cohort_node) {  // By name.
    CohortStatus c;
    c.name = name;
    if (m.quota->HasParent(node)) c.parent = m.node_cohort_name[m.quota->Parent(node)];
    for (int32_t f = 0; f < int32_t(m.flavors.size()); ++f) {
      for (int32_t r = 0; r < int32_t(m.resources.size()); ++r) {
        const int32_t fr = m.Fr(f, r);
        QuotaUsage u;
        u.nominal_milli = m.quota->Subtree(node, fr);
        u.usage_milli = m.quota->Usage(node, fr);
        if (u.nominal_milli == 0 && u.usage_milli == 0) continue;
        u.flavor = m.flavors[f].name;
        u.resource = m.resources[r];
        u.borrowed_milli = std::max<int64_t>(0, u.usage_milli - u.nominal_milli);
        c.quota.push_back(std::move(u));
      }
    }
    out.push_back(std::move(c));
  }
  return out;
}

const std::vector<PreemptionEvent>& Scheduler::Preemptions() const {
  return impl_->preemptions;
}
size_t Scheduler::PendingCount() const { return impl_->pending_count; }
size_t Scheduler::AdmittedCount() const { return impl_->admitted_count; }

}  // namespace allot::sched
