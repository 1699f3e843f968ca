// The property tests' oracle: preemption, victims, fits and liveness.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "sched/scheduler_property_util.h"

namespace allot::sched::proptest {

bool Oracle::PolicyAllows(const PreemptionEvent& e, std::string* why) const {
  auto vit = live_.find(e.workload);
  auto pit = live_.find(e.preemptor);
  if (vit == live_.end() || pit == live_.end()) {
    *why = "victim or preemptor is not a live workload";
    return false;
  }
  const core::Workload& v = vit->second;
  const core::Workload& p = pit->second;
  const std::string cv = CqOf(v), cp = CqOf(p);
  const core::ClusterQueue* q = FindCq(cp);
  if (!q || !FindCq(cv)) {
    *why = "victim or preemptor has no ClusterQueue";
    return false;
  }
  const core::PreemptionPolicy& pol = q->preemption;
  const bool same_cq = cv == cp;
  const bool same_tree = !same_cq && !q->cohort.empty() &&
                         Root(cq_node_.at(cv)) == Root(cq_node_.at(cp));
  const bool lower = v.priority < p.priority;
  const bool fair = config_.scheduler.fair_sharing;
  const bool reclaim_ok =
      pol.reclaim_within_cohort == core::ReclaimWithinCohort::kAny ||
      (pol.reclaim_within_cohort == core::ReclaimWithinCohort::kLowerPriority &&
       lower);
  switch (e.reason) {
    case PreemptionReason::kInClusterQueue: {
      // Kueue: newer means a strictly later creation time.
      bool newer_equal =
          pol.within_cluster_queue ==
              core::WithinClusterQueue::kLowerOrNewerEqualPriority &&
          v.priority == p.priority && v.creation_unix_ms > p.creation_unix_ms;
      if (!same_cq)
        *why = "victim is in another ClusterQueue";
      else if (pol.within_cluster_queue == core::WithinClusterQueue::kNever)
        *why = "withinClusterQueue is Never";
      else if (!lower && !newer_equal)
        *why = "victim is not lower priority (nor newer at equal priority)";
      else
        return true;
      return false;
    }
    case PreemptionReason::kInCohortReclamation:
      // Under fair sharing too: a preemptor that stays within its nominal
      // quota reclaims (Kueue's FairSharingPreemptWithinNominal).
      if (!same_tree)
        *why = "victim is not in another ClusterQueue of the cohort tree";
      else if (!reclaim_ok)
        *why = "reclaimWithinCohort does not allow it";
      else
        return true;
      return false;
    case PreemptionReason::kInCohortReclaimWhileBorrowing:
      if (fair)
        *why = "fair sharing is on";
      else if (!same_tree)
        *why = "victim is not in another ClusterQueue of the cohort tree";
      else if (pol.borrow_within_cohort !=
               core::BorrowWithinCohortPolicy::kLowerPriority)
        *why = "borrowWithinCohort is Never";
      else if (!lower)
        *why = "victim is not lower priority";
      else if (pol.max_priority_threshold &&
               v.priority > *pol.max_priority_threshold)
        *why = "victim is above maxPriorityThreshold";
      else
        return true;
      return false;
    case PreemptionReason::kInCohortFairSharing:
      if (!fair)
        *why = "fair sharing is off";
      else if (!same_tree)
        *why = "victim is not in another ClusterQueue of the cohort tree";
      else if (!reclaim_ok)
        *why = "reclaimWithinCohort does not allow it";
      else
        return true;
      return false;
    case PreemptionReason::kParkedCapacityReclaim:
      // Kueue's policies only: these sequences park nothing.
      *why = "nothing is parked, so nothing runs on parked capacity";
      return false;
  }
  *why = "unknown reason";
  return false;
}

void Oracle::CheckNewPreemptions(
    const Scheduler& s, const std::set<std::string>* admitted_before,
    const std::vector<PendingWorkload>* pending_before,
    const CycleResult* cycle, std::vector<std::string>* errors) {
  auto err = [&](const std::string& m) { errors->push_back("[policy] " + m); };
  const auto& ev = s.Preemptions();
  if (ev.size() < events_.size()) {
    err("Preemptions() shrank from " + std::to_string(events_.size()) + " to " +
        std::to_string(ev.size()));
    return;
  }
  for (size_t i = 0; i < events_.size(); ++i) {
    if (EventText(ev[i]) != events_[i])
      err("event " + std::to_string(i) + " changed: " + events_[i]);
  }
  std::vector<PreemptionEvent> fresh(ev.begin() + events_.size(), ev.end());
  if (cycle) {
    std::vector<std::string> a, b;
    for (const auto& e : fresh) a.push_back(EventText(e));
    for (const auto& e : cycle->preempted) b.push_back(EventText(e));
    if (a != b)
      err("CycleResult.preempted differs from the new Preemptions() events");
    std::set<std::string> cycle_admitted(cycle->admitted.begin(),
                                         cycle->admitted.end());
    if (cycle_admitted.size() != cycle->admitted.size())
      err("CycleResult.admitted lists a key twice");
    const auto now = s.Admitted();
    std::set<std::string> victims;
    for (const auto& e : fresh) victims.insert(e.workload);
    for (const auto& k : cycle->admitted) {
      if (admitted_before && admitted_before->count(k))
        err(k + " was admitted already before the cycle admitted it");
      bool is_admitted =
          std::any_of(now.begin(), now.end(),
                      [&](const auto& x) { return x.workload == k; });
      if (!is_admitted && !victims.count(k))
        err(k + " is in CycleResult.admitted but is not admitted");
    }
    for (const auto& e : fresh) {
      if (admitted_before && !admitted_before->count(e.workload) &&
          !cycle_admitted.count(e.workload)) {
        err("victim " + e.workload + " was not admitted");
      }
      if (!cycle_admitted.count(e.preemptor))
        err("preemptor " + e.preemptor + " was not admitted in the cycle");
      // Not an error (the final state is consistent), but Kueue never does
      // it: counted for ALLOT_PROP_STATS.
      if (cycle_admitted.count(e.workload) && admitted_before &&
          !admitted_before->count(e.workload)) {
        ++stats().same_cycle_churn;
      }
    }
    // One head per ClusterQueue per cycle; StrictFIFO admits its queue's
    // first workload (priority, creation time, arrival) or nothing.
    std::map<std::string, std::string> by_cq;
    for (const auto& k : cycle->admitted) {
      auto it = live_.find(k);
      if (it == live_.end()) continue;
      const std::string cq = CqOf(it->second);
      if (by_cq.count(cq))
        errors->push_back("[order] ClusterQueue " + cq + " admitted " +
                          by_cq[cq] + " and " + k + " in one cycle");
      by_cq[cq] = k;
      const core::ClusterQueue* q = FindCq(cq);
      if (!q || q->queueing_strategy != core::QueueingStrategy::kStrictFIFO ||
          !pending_before)
        continue;
      auto order = [&](const std::string& key) {
        const core::Workload& w = live_.at(key);
        return std::tuple(-w.priority, w.creation_unix_ms, arrival_.at(key));
      };
      std::optional<std::string> head;
      for (const auto& p : *pending_before) {
        if (p.cluster_queue != cq || !live_.count(p.workload)) continue;
        if (!head || order(p.workload) < order(*head)) head = p.workload;
      }
      if (head && *head != k) {
        errors->push_back("[order] StrictFIFO ClusterQueue " + cq +
                          " admitted " + k + " while its head " + *head +
                          " was pending");
      }
    }
    // A lone head that fits as is needs no victims; victims in other
    // ClusterQueues come from ClusterQueues that borrow.
    if (cycle->attempts == 1 && !fresh.empty()) {
      const std::string& preemptor = fresh[0].preemptor;
      auto pit = live_.find(preemptor);
      // With whenCanBorrow: TryNextFlavor, a flavor that fits only by
      // borrowing lets the search go on, and a later one that needs
      // preemption may win (Kueue's shouldTryNextFlavor): not checked then.
      const core::ClusterQueue* pcq =
          pit == live_.end() ? nullptr : FindCq(CqOf(pit->second));
      if (pcq && pcq->flavor_fungibility.when_can_borrow ==
                     core::FungibilityPolicy::kTryNextFlavor) {
        pit = live_.end();
      }
      if (pit != live_.end()) {
        if (auto fits = FitsNow(pit->second, FitQuery{})) {
          err("the only head " + preemptor + " preempted " +
              std::to_string(fresh.size()) +
              " workloads although before the cycle " + *fits);
        }
      }
      for (const auto& e : fresh) {
        if (e.reason == PreemptionReason::kInClusterQueue ||
            !live_.count(e.workload))
          continue;
        const std::string cv = CqOf(live_.at(e.workload));
        const int n = cq_node_.at(cv);
        bool borrowing = false;
        for (const auto& [fr, v] : usage_[size_t(n)])
          borrowing = borrowing || v > Subtree(n, fr);
        if (!borrowing)
          err("victim " + e.workload + " of " + EventText(e) +
              " is in ClusterQueue " + cv + ", which did not borrow");
      }
    }
  }
  for (const auto& e : fresh) {
    std::string why;
    ++stats().preemptions;
    ever_preempted_.insert(e.workload);
    ++stats().reasons[ToString(e.reason)];
    if (!PolicyAllows(e, &why))
      err("preemption " + EventText(e) + " breaks the policy: " + why);
    events_.push_back(EventText(e));
  }
}

std::optional<std::string> Oracle::FitsNow(const core::Workload& w,
                                           const FitQuery& query) const {
  if (w.pod_sets.size() != 1) return std::nullopt;
  const core::PodSet& ps = w.pod_sets[0];
  std::string res;
  int64_t per_pod = 0;
  bool device_only = true;
  for (const auto& [r, q] : ps.requests) {
    if (q.IsZero()) continue;
    if (!core::IsGpuResource(r) || !res.empty()) device_only = false;
    res = r;
    per_pod = q.milli();
  }
  if (!device_only || res.empty()) return std::nullopt;
  const std::string cqn = CqOf(w);
  const core::ClusterQueue* cq = FindCq(cqn);
  if (!cq || !Selected(*cq) || cq->stop_policy != core::StopPolicy::kNone)
    return std::nullopt;
  const core::ResourceGroup* g = GroupOf(*cq, res);
  if (!g) return std::nullopt;
  const core::ResourceFlavor* f = nullptr;
  for (const auto& fq : g->flavors) {
    auto it = flavors_.find(fq.name);
    if (it != flavors_.end() && FlavorEligible(ps, *it->second)) {
      f = it->second;
      break;
    }
  }
  if (!f) return std::nullopt;
  const FR fr{f->name, res};
  int32_t count = ps.count;
  if (query.at_min_count) {
    if (!ps.min_count || *ps.min_count >= ps.count) return std::nullopt;
    count = *ps.min_count;
  }
  // Optionally without the workloads its ClusterQueue's policy lets it
  // preempt there (lower priority, or newer at equal priority).
  const Usage* usage = &usage_;
  Usage reduced;
  const std::set<std::string>* used = &used_devices_;
  std::set<std::string> freed_used;
  std::string evicted;
  if (query.evict_lower_in_cq) {
    const auto& pol = cq->preemption;
    if (pol.within_cluster_queue == core::WithinClusterQueue::kNever)
      return std::nullopt;
    // Kueue (flavorassigner.fitsResourceQuota): above its nominal quota a
    // ClusterQueue preempts only with borrowWithinCohort, under fair
    // sharing with reclaimWithinCohort, or when its own subtree lends the
    // quota out (not modelled here: such workloads are not checked).
    int64_t nominal = 0;
    for (const auto& fq : g->flavors) {
      if (fq.name != f->name) continue;
      for (const auto& rq : fq.resources) {
        if (rq.name == res) nominal = rq.nominal_quota.milli();
      }
    }
    const bool while_borrowing =
        pol.borrow_within_cohort != core::BorrowWithinCohortPolicy::kNever ||
        (config_.scheduler.fair_sharing &&
         pol.reclaim_within_cohort != core::ReclaimWithinCohort::kNever);
    if (per_pod * count > nominal && !while_borrowing) return std::nullopt;
    std::map<std::string, std::map<FR, int64_t>> cq_usage = cq_usage_;
    freed_used = used_devices_;
    for (const auto& a : admitted_) {
      if (a.admission.cluster_queue != cqn || !live_.count(a.workload))
        continue;
      const core::Workload& v = live_.at(a.workload);
      bool lower = v.priority < w.priority;
      bool newer_equal =
          pol.within_cluster_queue ==
              core::WithinClusterQueue::kLowerOrNewerEqualPriority &&
          v.priority == w.priority && v.creation_unix_ms > w.creation_unix_ms;
      if (!lower && !newer_equal) continue;
      bool uses = false;
      for (const auto& psa : a.admission.pod_set_assignments) {
        auto it = psa.flavors.find(res);
        uses = uses || (it != psa.flavors.end() && it->second == f->name);
      }
      if (!uses) continue;
      evicted += " " + a.workload;
      for (size_t i = 0;
           i < a.admission.pod_set_assignments.size() && i < v.pod_sets.size();
           ++i) {
        const auto& psa = a.admission.pod_set_assignments[i];
        for (const auto& [r, q] : v.pod_sets[i].requests) {
          auto it = psa.flavors.find(r);
          if (it != psa.flavors.end())
            cq_usage[cqn][{it->second, r}] -= q.milli() * psa.count;
        }
        for (const auto& pp : psa.placements) {
          for (const auto& uuid : pp.gpus) freed_used.erase(uuid);
        }
      }
    }
    if (evicted.empty()) return std::nullopt;
    reduced = TreeUsage(cq_usage);
    usage = &reduced;
    used = &freed_used;
  }
  const int n = cq_node_.at(cqn);
  const int64_t need = per_pod * count;
  const bool borrows = Get((*usage)[size_t(n)], fr) + need > Nominal(n, fr);
  if (borrows && !query.allow_borrowing) return std::nullopt;
  if (need > Available(n, fr, *usage)) return std::nullopt;
  const int32_t per_pod_devices =
      int32_t(Quantity::FromMilli(per_pod).UnitsCeil());
  ++stats().liveness_candidates;
  // Pods that the eligible nodes' free healthy devices take (no CPU or
  // memory is requested, so devices alone decide).
  int64_t fit = 0;
  std::string nodes;
  for (const auto& node : config_.nodes) {
    if (node.unschedulable) continue;
    if (!core::LabelsMatch(f->node_labels, node.labels) ||
        !core::LabelsMatch(ps.node_selector, node.labels) ||
        !core::TaintsTolerated(node.taints, ps.tolerations, f->tolerations)) {
      continue;
    }
    int32_t free = 0;
    for (const auto& gpu : node.gpus) {
      if (!gpu.healthy) continue;
      if (res == core::kGpuResource) {
        free += gpu.mig.empty() && !used->count(gpu.uuid);
      } else {
        for (const auto& m : gpu.mig)
          free +=
              core::MigResourceName(m.profile) == res && !used->count(m.uuid);
      }
    }
    if (free >= per_pod_devices) {
      fit += free / per_pod_devices;
      nodes += " " + node.name + "(" + std::to_string(free) + " free)";
    }
  }
  if (fit < count) return std::nullopt;
  return w.Key() + " (" + std::to_string(count) +
         (query.at_min_count ? " (minCount)" : "") + " pods x " + res + "=" +
         Quantity::FromMilli(per_pod).ToString() + ", ClusterQueue " + cqn +
         ") fits: its first eligible flavor " + f->name + " has the quota" +
         (borrows ? " (borrowing)" : " without borrowing") +
         " and the free devices of nodes" + nodes + " take all its pods" +
         (evicted.empty() ? ""
                          : " once the lower-priority workloads of its "
                            "ClusterQueue are preempted:" +
                                evicted);
}

void Oracle::CheckVictimsNeeded(
    const std::vector<AdmittedWorkload>& admitted_before,
    const CycleResult& cycle, std::vector<std::string>* errors) const {
  if (cycle.attempts != 1 || cycle.preempted.empty() ||
      cycle.admitted.size() != 1)
    return;
  const std::string& preemptor = cycle.admitted[0];
  auto pit = live_.find(preemptor);
  if (pit == live_.end()) return;
  const std::string pcq = CqOf(pit->second);
  for (const auto& e : cycle.preempted) {
    auto vit = live_.find(e.workload);
    if (vit == live_.end()) continue;
    const AdmittedWorkload* old = nullptr;
    for (const auto& a : admitted_before) {
      if (a.workload == e.workload) old = &a;
    }
    if (!old) continue;
    const core::Workload& v = vit->second;
    ++stats().victims_checked;
    // Its devices must still be free, its pods must still fit the nodes.
    bool fits = true;
    std::map<std::string, std::pair<int64_t, int64_t>> node_use = node_use_;
    std::map<std::string, std::map<FR, int64_t>> cq_usage = cq_usage_;
    for (size_t i = 0;
         i < old->admission.pod_set_assignments.size() && i < v.pod_sets.size();
         ++i) {
      const auto& psa = old->admission.pod_set_assignments[i];
      const auto& ps = v.pod_sets[i];
      for (const auto& [r, q] : ps.requests) {
        auto f = psa.flavors.find(r);
        if (f != psa.flavors.end())
          cq_usage[old->admission.cluster_queue][{f->second, r}] +=
              q.milli() * psa.count;
      }
      for (const auto& pp : psa.placements) {
        for (const auto& uuid : pp.gpus)
          fits = fits && !used_devices_.count(uuid);
        auto cpu = ps.requests.find(core::kCpuResource);
        auto mem = ps.requests.find(core::kMemoryResource);
        if (cpu != ps.requests.end())
          node_use[pp.node].first += cpu->second.milli();
        if (mem != ps.requests.end())
          node_use[pp.node].second += mem->second.milli();
      }
    }
    for (const auto& [name, use] : node_use) {
      const core::Node& node = *nodes_.at(name);
      fits = fits && use.first <= node.cpu.milli() &&
             use.second <= node.memory.milli();
    }
    if (!fits) continue;
    std::vector<std::string> quota_errors;
    CheckQuota(cq_usage, &quota_errors);
    if (!quota_errors.empty()) continue;
    if (old->admission.cluster_queue == pcq) {
      // In its own ClusterQueue a victim may be needed to keep the
      // preemptor from borrowing: only flag it when nothing would borrow.
      const int n = cq_node_.at(pcq);
      bool borrows = false;
      for (const auto& [fr, val] : cq_usage[pcq])
        borrows = borrows || val > Nominal(n, fr);
      if (borrows) continue;
    }
    errors->push_back("[minimal] " + EventText(e) +
                      ": the victim was not needed; with it back as it was (" +
                      AdmissionText(old->admission) +
                      ") every device, node and quota would still fit");
  }
}

void Oracle::CheckLiveness(const Scheduler& s,
                           std::vector<std::string>* errors) const {
  for (const auto& p : s.Pending()) {
    auto wit = live_.find(p.workload);
    if (wit == live_.end()) continue;
    const core::Workload& w = wit->second;
    const core::ClusterQueue* cq = FindCq(CqOf(w));
    if (cq && cq->queueing_strategy == core::QueueingStrategy::kStrictFIFO &&
        p.position != 1)
      continue;
    std::optional<std::string> fits = FitsNow(w, FitQuery{});
    if (!fits) fits = FitsNow(w, FitQuery{true, /*at_min_count=*/true, false});
    // A workload that was ever preempted may be spared from preempting back
    // (Allot's anti-loop rule), so only ones never preempted are checked.
    if (!fits && !ever_preempted_.count(w.Key()))
      fits = FitsNow(w, FitQuery{true, false, /*evict_lower_in_cq=*/true});
    if (fits) {
      errors->push_back("[liveness] pending after RunUntilQuiescent although " +
                        *fits + "; reason: " + p.reason);
    }
  }
}

}  // namespace allot::sched::proptest
