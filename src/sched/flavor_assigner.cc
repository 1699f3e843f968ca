// Flavor assignment and quota modes (Kueue's flavorassigner), plus the
// exact placement that makes an assignment admissible.
#include <algorithm>

#include "sched/scheduler_internal.h"

namespace allot::sched {

bool FlavorEligible(const core::PodSet& ps, const core::ResourceFlavor& f,
                    std::string* why) {
  // Kueue's flavor assigner skips a flavor without a topology for a pod
  // set that asks for one (tas_flavorassigner.go,
  // checkPodSetAndFlavorMatchForTAS).
  if (!ps.topology.empty() && f.topology_name.empty()) {
    *why = "flavor " + f.name + ": pod set " + ps.name +
           " asks for topology-aware scheduling and the flavor has no topology";
    return false;
  }
  if (!core::TaintsTolerated(f.node_taints, ps.tolerations, f.tolerations)) {
    *why = "flavor " + f.name + ": pod set " + ps.name +
           " does not tolerate the flavor's node taints";
    return false;
  }
  for (const auto& [k, v] : ps.node_selector) {
    auto it = f.node_labels.find(k);
    if (it != f.node_labels.end() && it->second != v) {
      *why = "flavor " + f.name + ": node selector " + k + "=" + v +
             " conflicts with the flavor's label " + k + "=" + it->second;
      return false;
    }
  }
  return true;
}

std::vector<PodSetRequest> Scheduler::Impl::Requests(
    WlIdx w, const std::vector<int32_t>& counts,
    const std::vector<std::vector<int32_t>>& chosen) const {
  std::vector<PodSetRequest> out;
  RequestsInto(w, counts, chosen, &out);
  return out;
}

void Scheduler::Impl::RequestsInto(
    WlIdx w, const std::vector<int32_t>& counts,
    const std::vector<std::vector<int32_t>>& chosen,
    std::vector<PodSetRequest>* out) const {
  const Wl& wl = wls[w];
  out->resize(wl.spec.pod_sets.size());
  for (size_t p = 0; p < out->size(); ++p) {
    const core::PodSet& ps = wl.spec.pod_sets[p];
    PodSetRequest& r = (*out)[p];
    r.count = counts[p];
    r.topology = ps.topology.empty() ? nullptr : &ps.topology;
    r.shape.cpu = Quantity();
    r.shape.memory = Quantity();
    size_t devices = 0;  // Entries of r.shape.devices written.
    auto add_device = [&](const std::string& name, Quantity q) {
      if (devices == r.shape.devices.size()) r.shape.devices.emplace_back();
      r.shape.devices[devices].first = name;
      r.shape.devices[devices++].second = int32_t(q.UnitsCeil());
    };
    const PodSetNeeds& needs = wl.needs[p];
    if (needs.unknown.empty()) {
      // The same from the resolved needs (per_pod follows ps.requests'
      // order), without comparing names.
      for (const auto& [res, milli] : needs.per_pod) {
        if (res == cpu_resource) {
          r.shape.cpu = Quantity::FromMilli(milli);
        } else if (res == memory_resource) {
          r.shape.memory = Quantity::FromMilli(milli);
        } else if (resource_is_gpu[res] && milli > 0) {
          add_device(resources[res], Quantity::FromMilli(milli));
        }
      }
    } else {
      for (const auto& [name, q] : ps.requests) {
        if (name == core::kCpuResource) {
          r.shape.cpu = q;
        } else if (name == core::kMemoryResource) {
          r.shape.memory = q;
        } else if (core::IsGpuResource(name) && q.milli() > 0) {
          add_device(name, q);
        }
      }
    }
    r.shape.devices.resize(devices);
    r.flavors.clear();
    for (int32_t f : chosen[p]) {
      if (f >= 0 &&
          std::find(r.flavors.begin(), r.flavors.end(), f) == r.flavors.end()) {
        r.flavors.push_back(f);
      }
    }
    r.node_selector = &ps.node_selector;
    r.tolerations = &ps.tolerations;
  }
}

Assignment Scheduler::Impl::Assign(WlIdx w, const std::vector<int32_t>& counts,
                                   bool quota_only, bool explain) const {
  Assignment a;
  AssignInto(w, counts, quota_only, explain, &a);
  return a;
}

void Scheduler::Impl::AssignInto(WlIdx w, const std::vector<int32_t>& counts,
                                 bool quota_only, bool explain,
                                 Assignment* out) const {
  const Wl& wl = wls[w];
  const CQ& cq = cqs[wl.cq];
  const int32_t node = cq.node;
  const auto& fung = cq.spec.flavor_fungibility;
  Assignment& a = *out;
  // Placement searches and the oracle need buffers; quota_only uses none.
  AssignScratch* scratch = quota_only ? nullptr : &assign_scratch;
  // Without quota_only, a.requests keeps its buffers for RequestsInto (or
  // takes spare ones); a return before that point leaves it empty and puts
  // the buffers aside (see Done).
  a.Reset(counts, cq.groups.size(), /*keep_requests=*/scratch != nullptr);
  if (scratch && a.requests.empty()) {
    std::swap(a.requests, scratch->spare_requests);
  }
  a.mode = Mode::kFit;
  InlineVec<int64_t, 16> acc(size_t(num_fr()), 0);
  const bool one_pod_set = wl.spec.pod_sets.size() == 1;
  struct Done {
    AssignScratch* s;
    Assignment* a;
    bool requests_set = false;
    ~Done() {
      if (!requests_set && s) std::swap(a->requests, s->spare_requests);
      if (!requests_set) a->requests.clear();
      if (s) s->busy = false;
    }
  } done{scratch, &a};
  if (scratch) {
    ALLOT_CHECK(!scratch->busy);
    scratch->busy = true;
    scratch->found.clear();
    scratch->found_for.clear();
    // `searched` (and `trial`) are read only with victims, which are set
    // together with them.
    scratch->searched_victims.clear();
  }
  // `found`: a single pod set's placement found while choosing the flavor
  // of its placement group, and `found_for` the flavors it was found for:
  // when the final request is the same, the final search would find the
  // same placement. `searched`, `searched_victims`: the oracle's victim
  // search behind the best option so far, if it ran and found victims: its
  // request and its answer.
  int32_t groups_used = 0;

  for (size_t p = 0; p < wl.spec.pod_sets.size(); ++p) {
    if (counts[p] == 0) continue;
    const core::PodSet& ps = wl.spec.pod_sets[p];
    const PodSetNeeds& needs = wl.needs[p];
    if (!needs.unknown.empty()) {
      a.mode = Mode::kNoFit;
      a.reason = "ClusterQueue " + cq.spec.name + " does not cover resource " +
                 needs.unknown[0] + " requested by pod set " + ps.name;
      return;
    }
    for (const auto& [r, per] : needs.per_pod) {
      if (cq.res_group[r] < 0) {
        a.mode = Mode::kNoFit;
        a.reason = "ClusterQueue " + cq.spec.name +
                   " does not cover resource " + resources[r] +
                   " requested by pod set " + ps.name;
        return;
      }
    }
    // The group whose flavor decides where pods can run: the one covering
    // the pod's GPUs, else the one covering its CPU.
    int32_t place_group = -1;
    for (const auto& [r, per] : needs.per_pod) {
      if (resource_is_gpu[r]) {
        place_group = cq.res_group[r];
        break;
      }
    }
    if (place_group < 0) {
      for (const auto& [r, per] : needs.per_pod) {
        if (resources[r] == core::kCpuResource) place_group = cq.res_group[r];
      }
    }

    // The groups covering the pod set's resources, in order.
    for (int32_t g = 0; g < int32_t(cq.groups.size()); ++g) {
      bool used = false;
      for (const auto& [r, per] : needs.per_pod)
        used = used || cq.res_group[r] == g;
      if (!used) continue;
      ++groups_used;
      struct Option {
        Mode mode = Mode::kNoFit;
        int32_t flavor = -1;
        bool borrows = false;
        std::string reason;
      } best;
      std::string reasons;
      for (int32_t f : cq.groups[g].flavors) {
        Option o;
        if (scratch) {
          scratch->tmp.clear();
          scratch->tmp_for.clear();  // Set when `tmp` may be reused.
          scratch->victims.clear();  // Set (with `trial`) by the oracle.
        }
        o.flavor = f;
        o.mode = Mode::kFit;
        if (!FlavorOk(wl, p, f)) {
          if (explain) FlavorEligible(ps, flavors[f], &o.reason);
          o.mode = Mode::kNoFit;
        } else {
          for (const auto& [r, per] : needs.per_pod) {
            if (cq.res_group[r] != g) continue;
            int32_t fr = Fr(f, r);
            int64_t val = per * counts[p] + acc[fr];
            if (val <= quota->Available(node, fr)) {
              if (quota->Usage(node, fr) + val > quota->Subtree(node, fr))
                o.borrows = true;
            } else if (val <= quota->PotentialAvailable(node, fr)) {
              if (o.mode == Mode::kFit) {
                o.mode = Mode::kPreempt;
                if (explain) o.reason = QuotaShortReason(wl.cq, fr, val);
              }
            } else {
              o.mode = Mode::kNoFit;
              if (explain) {
                o.reason = QuotaShortReason(wl.cq, fr, val) +
                           "; that is more than it can ever hold (" +
                           Describe(resources[r],
                                    quota->PotentialAvailable(node, fr)) +
                           ")";
              }
              break;
            }
          }
        }
        if (o.mode == Mode::kFit && !quota_only && g == place_group) {
          ChooseOne(w, p, g, f, counts, a.flavors[p], scratch);
          RequestsInto(w, scratch->one, scratch->chosen, &scratch->request);
          std::string why;
          a.nodes_consulted = true;
          if (pool->Find(scratch->request, &scratch->tmp,
                         explain ? &why : nullptr)) {
            if (one_pod_set) scratch->tmp_for = scratch->chosen[p];
          } else {
            o.mode = Mode::kPreempt;
            a.short_flavors.push_back(f);
            if (explain) {
              o.reason = "quota is available in flavor " + flavors[f].name +
                         " but " + why;
            }
          }
        }
        // Kueue's preemption oracle: when the group offers other flavors, a
        // flavor that needs preemption but has no victims is no fit, so the
        // search may go on to the next flavor.
        if (o.mode == Mode::kPreempt && !quota_only &&
            cq.groups[g].flavors.size() > 1 &&
            !PreemptionPossible(w, p, g, f, counts, acc.begin(), a.flavors[p],
                                &a.nodes_consulted, scratch, &scratch->trial,
                                &scratch->victims)) {
          o.mode = Mode::kNoFit;
          if (explain) o.reason += "; no workload can be preempted for it";
        }
        if (o.mode != Mode::kFit && !o.reason.empty()) {
          reasons += (reasons.empty() ? "" : "; ") + o.reason;
        }
        bool better = o.mode > best.mode ||
                      (o.mode == best.mode && o.mode == Mode::kFit &&
                       best.borrows && !o.borrows);
        if (better) {
          best = o;
          if (scratch) {
            std::swap(scratch->found, scratch->tmp);
            std::swap(scratch->found_for, scratch->tmp_for);
            std::swap(scratch->searched, scratch->trial);
            std::swap(scratch->searched_victims, scratch->victims);
          }
        }
        if (o.mode == Mode::kFit && !o.borrows) break;
        if (o.mode == Mode::kFit &&
            fung.when_can_borrow == core::FungibilityPolicy::kMayStopSearch)
          break;
        if (o.mode == Mode::kPreempt &&
            fung.when_can_preempt == core::FungibilityPolicy::kMayStopSearch)
          break;
      }
      if (best.mode == Mode::kNoFit) {
        a.mode = Mode::kNoFit;
        if (explain) {
          a.reason = reasons.empty()
                         ? "no flavor of ClusterQueue " + cq.spec.name + " fits"
                         : reasons;
        }
        return;
      }
      a.flavors[p][g] = best.flavor;
      if (best.mode < a.mode) a.mode = best.mode;
      if (best.mode == Mode::kPreempt) {
        if (a.reason.empty()) a.reason = best.reason;
      }
      a.borrows = a.borrows || best.borrows;
      for (const auto& [r, per] : needs.per_pod) {
        if (cq.res_group[r] == g) acc[Fr(best.flavor, r)] += per * counts[p];
      }
    }
  }
  for (int32_t fr = 0; fr < num_fr(); ++fr) {
    if (acc[fr] != 0) a.usage.emplace_back(fr, acc[fr]);
  }
  if (quota_only) return;
  RequestsInto(w, counts, a.flavors, &a.requests);
  done.requests_set = true;
  Placement& found = scratch->found;
  const std::vector<int32_t>& found_for = scratch->found_for;
  const Assignment& searched = scratch->searched;
  auto& searched_victims = scratch->searched_victims;
  // The oracle searched this very request when the workload has one pod
  // set in one resource group (its usage is then the trial's; the
  // requests follow from the same counts and flavors).
  if (a.mode == Mode::kPreempt && one_pod_set && groups_used == 1 &&
      !searched_victims.empty() && searched.usage == a.usage) {
    std::swap(a.oracle_victims, searched_victims);
    std::swap(a.placement, scratch->searched.placement);
  }
  if (a.mode == Mode::kFit) {
    std::string why;
    a.nodes_consulted = true;
    if (one_pod_set && !found_for.empty() && found_for == a.flavors[0]) {
      std::swap(a.placement, found);
    } else if (!pool->Find(a.requests, &a.placement,
                           explain ? &why : nullptr)) {
      a.mode = Mode::kPreempt;
      if (explain) a.reason = "quota is available but " + why;
      for (const auto& per_set : a.flavors) {
        for (int32_t f : per_set) {
          if (f >= 0) a.short_flavors.push_back(f);
        }
      }
    }
  }
}

bool Scheduler::Impl::PreemptionPossible(
    WlIdx w, size_t p, int32_t g, int32_t f, const std::vector<int32_t>& counts,
    const int64_t* acc, const std::vector<int32_t>& chosen_so_far,
    bool* searched, AssignScratch* scratch, Assignment* out,
    std::vector<std::pair<WlIdx, PreemptionReason>>* victims) const {
  const Wl& wl = wls[w];
  const CQ& cq = cqs[wl.cq];
  Assignment& trial = *out;
  // The trial's requests are overwritten below, before they are read.
  trial.Reset({}, 0, /*keep_requests=*/true);
  for (const auto& [r, per] : wl.needs[p].per_pod) {
    if (cq.res_group[r] == g)
      trial.usage.emplace_back(Fr(f, r), per * counts[p] + acc[Fr(f, r)]);
  }
  std::sort(trial.usage.begin(), trial.usage.end());
  if (VictimSearchHopeless(w, trial.usage)) return false;
  *searched = true;
  ChooseOne(w, p, g, f, counts, chosen_so_far, scratch);
  RequestsInto(w, scratch->one, scratch->chosen, &trial.requests);
  // The search restores every change it makes before returning.
  *victims = const_cast<Impl*>(this)->FindVictims(w, &trial);
  return !victims->empty();
}

void Scheduler::Impl::ChooseOne(WlIdx w, size_t p, int32_t g, int32_t f,
                                const std::vector<int32_t>& counts,
                                const std::vector<int32_t>& chosen_so_far,
                                AssignScratch* scratch) const {
  const size_t groups = cqs[wls[w].cq].groups.size();
  scratch->chosen.resize(counts.size());
  for (auto& per_set : scratch->chosen) per_set.assign(groups, -1);
  scratch->chosen[p] = chosen_so_far;
  scratch->chosen[p][g] = f;
  scratch->one.assign(counts.size(), 0);
  scratch->one[p] = counts[p];
}

bool Scheduler::Impl::Fits(WlIdx w, Assignment* a, bool allow_borrowing) const {
  const int32_t node = cqs[wls[w].cq].node;
  for (const auto& [fr, val] : a->usage) {
    if (val > quota->Available(node, fr)) return false;
    if (!allow_borrowing &&
        quota->Usage(node, fr) + val > quota->Subtree(node, fr)) {
      return false;
    }
  }
  return pool->Find(a->requests, &a->placement, /*why=*/nullptr);
}

void Scheduler::Impl::AddUsage(int32_t cq, const Assignment& a) {
  ++tree_version[cqs[cq].root];
  for (const auto& [fr, val] : a.usage) quota->AddUsage(cqs[cq].node, fr, val);
}

void Scheduler::Impl::RemoveUsage(int32_t cq, const Assignment& a) {
  ++tree_version[cqs[cq].root];
  for (const auto& [fr, val] : a.usage)
    quota->RemoveUsage(cqs[cq].node, fr, val);
}

bool Scheduler::Impl::FailsLikeFloor(WlIdx w) const {
  const Wl& wl = wls[w];
  if (!wl.single_need || wl.cq < 0 || config.fair_sharing) return false;
  const CQ& cq = cqs[wl.cq];
  const QuotaFloor& f = cq.floor;
  if (f.wl < 0 || f.version != tree_version[cq.root]) return false;
  return wl.priority <= f.priority && wl.single_resource == f.resource &&
         wl.single_total >= f.total && wl.flavor_bits == f.flavor_bits;
}

void Scheduler::Impl::RecordFloor(WlIdx w) {
  const Wl& wl = wls[w];
  if (!wl.single_need || config.fair_sharing) return;
  CQ& cq = cqs[wl.cq];
  // Keep a floor that already covers this workload: it covers more.
  if (FailsLikeFloor(w)) return;
  cq.floor = {tree_version[cq.root], wl.priority, wl.single_resource,
              wl.single_total, wl.flavor_bits, w};
}

}  // namespace allot::sched
