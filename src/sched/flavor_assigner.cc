// Flavor assignment and quota modes (Kueue's flavorassigner), plus the
// exact placement that makes an assignment admissible.
#include <algorithm>
#include <limits>

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

namespace {

// Kueue's granular flavor modes (flavorassigner.preemptionMode), worst
// first: a flavor that needs preemption is Reclaim when every victim is in
// another ClusterQueue, Preempt when some is in the ClusterQueue itself,
// NoCandidates when there is none.
enum class Granular : uint8_t { kNoFit, kNoCandidates, kPreempt, kReclaim, kFit };

Mode ModeOf(Granular g) {
  switch (g) {
    case Granular::kNoFit:
      return Mode::kNoFit;
    case Granular::kFit:
      return Mode::kFit;
    default:
      return Mode::kPreempt;
  }
}

// One flavor option of a resource group.
struct Option {
  Mode mode = Mode::kNoFit;
  Granular g = Granular::kFit;
  int32_t borrow = 0;  // Borrowing height (QuotaTree::BorrowHeight).
  int32_t flavor = -1;
  bool borrows = false;
  // Quota fits but the nodes are short (Allot's extension): Kueue would see
  // a fit here, so the option never stops the search.
  bool nodes_short = false;
  std::string reason;
};

// One resource of an option.
struct ResMode {
  int32_t fr;
  int64_t val;
  Granular g;
  int32_t borrow;
};

// Kueue's isPreferred: whether `a` beats `b`.
bool IsPreferred(Granular ag, int32_t ab, Granular bg, int32_t bb,
                 const core::FlavorFungibility& fung) {
  if (ag == Granular::kNoFit) return false;
  if (bg == Granular::kNoFit) return true;
  const bool anc = ag == Granular::kNoCandidates;
  const bool bnc = bg == Granular::kNoCandidates;
  if (anc != bnc) return !anc;
  if (fung.preference == core::FungibilityPreference::kPreemptionOverBorrowing) {
    if (ab != bb) return ab < bb;
    return ag > bg;
  }
  if (ag != bg) return ag > bg;
  return ab < bb;
}
bool IsPreferred(const Option& a, const Option& b,
                 const core::FlavorFungibility& fung) {
  return IsPreferred(a.g, a.borrow, b.g, b.borrow, fung);
}

// The option's mode: the worst of its resources' (Kueue's
// representativeMode).
void Worst(const InlineVec<ResMode, 4>& res, const core::FlavorFungibility& fung,
           Option* o) {
  o->g = Granular::kFit;
  o->borrow = 0;
  for (const ResMode& r : res) {
    if (IsPreferred(o->g, o->borrow, r.g, r.borrow, fung)) {
      o->g = r.g;
      o->borrow = r.borrow;
    }
  }
}

// Kueue's shouldTryNextFlavor.
bool ShouldTryNext(const Option& o, const core::FlavorFungibility& fung) {
  if (o.g == Granular::kNoFit || o.g == Granular::kNoCandidates) return true;
  if ((o.g == Granular::kPreempt || o.g == Granular::kReclaim) &&
      fung.when_can_preempt == core::FungibilityPolicy::kTryNextFlavor) {
    return true;
  }
  return o.borrow > 0 &&
         fung.when_can_borrow == core::FungibilityPolicy::kTryNextFlavor;
}

}  // namespace

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
    r.has_image = !ps.image.empty();
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
  bool no_candidates = false;  // The chosen flavor of a group had none.
  // Kueue's canPreemptWhileBorrowing.
  const core::PreemptionPolicy& pol = cq.spec.preemption;
  const bool preempt_while_borrowing =
      pol.borrow_within_cohort != core::BorrowWithinCohortPolicy::kNever ||
      (config.fair_sharing &&
       pol.reclaim_within_cohort != core::ReclaimWithinCohort::kNever);

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
      const bool need_height =
          quota_only || cq.groups[g].flavors.size() > 1;
      Option best;
      best.g = Granular::kNoFit;
      best.borrow = std::numeric_limits<int32_t>::max();
      std::string reasons;
      for (int32_t f : cq.groups[g].flavors) {
        Option o;
        if (scratch) {
          scratch->tmp.clear();
          scratch->tmp_for.clear();  // Set when `tmp` may be reused.
          scratch->victims.clear();  // Set (with `trial`) by the oracle.
        }
        o.flavor = f;
        // Per resource of the group: its mode and borrowing height before
        // any preemption (Kueue's fitsResourceQuota).
        InlineVec<ResMode, 4> res_modes;
        if (!FlavorOk(wl, p, f)) {
          if (explain) FlavorEligible(ps, flavors[f], &o.reason);
          o.g = Granular::kNoFit;
        } else {
          for (const auto& [r, per] : needs.per_pod) {
            if (cq.res_group[r] != g) continue;
            const int32_t fr = Fr(f, r);
            const int64_t val = per * counts[p] + acc[fr];
            // The borrowing height ranks flavors and orders heads; with
            // one flavor and a full assignment only whether it borrows
            // matters.
            ResMode rm{fr, val, Granular::kFit, 0};
            bool below_root = false;
            if (need_height) {
              rm.borrow = quota->BorrowHeight(node, fr, val, &below_root);
            } else {
              rm.borrow = quota->HasParent(node) &&
                                  !quota->WithinQuota(node, fr, val)
                              ? 1
                              : 0;
            }
            if (val > quota->PotentialAvailable(node, fr)) {
              rm.g = Granular::kNoFit;
              if (explain) {
                o.reason = QuotaShortReason(wl.cq, fr, val) +
                           "; that is more than it can ever hold (" +
                           Describe(resources[r],
                                    quota->PotentialAvailable(node, fr)) +
                           ")";
              }
            } else if (val <= quota->Available(node, fr)) {
              if (!quota->WithinQuota(node, fr, val)) o.borrows = true;
            } else if (quota->Subtree(node, fr) >= val ||
                       preempt_while_borrowing ||
                       (need_height ? below_root : [&] {
                         quota->BorrowHeight(node, fr, val, &below_root);
                         return below_root;
                       }())) {
              rm.g = Granular::kPreempt;
              if (explain && o.reason.empty())
                o.reason = QuotaShortReason(wl.cq, fr, val);
            } else {
              // Kueue: above its nominal quota a ClusterQueue preempts only
              // with borrowWithinCohort or quota of its own subtree.
              rm.g = Granular::kNoFit;
              if (explain) {
                o.reason = QuotaShortReason(wl.cq, fr, val) +
                           "; that is more than its nominal quota (" +
                           Describe(resources[r], quota->Subtree(node, fr)) +
                           "), and without borrowWithinCohort ClusterQueue " +
                           cq.spec.name +
                           " preempts only to stay within it";
              }
            }
            res_modes.push_back(rm);
            if (rm.g == Granular::kNoFit) break;
          }
          Worst(res_modes, fung, &o);
        }
        o.mode = ModeOf(o.g);
        if (o.mode == Mode::kFit && !quota_only && g == place_group) {
          ChooseOne(w, p, g, f, counts, a.flavors[p], scratch);
          RequestsInto(w, scratch->one, scratch->chosen, &scratch->request);
          std::string why;
          a.nodes_consulted = true;
          if (pool->Find(scratch->request, &scratch->tmp,
                         explain ? &why : nullptr)) {
            if (one_pod_set) scratch->tmp_for = scratch->chosen[p];
          } else {
            // Allot: quota fits but nodes are short; preemption may free
            // them. Every resource of the group then counts as needing it.
            o.mode = Mode::kPreempt;
            o.g = Granular::kPreempt;
            o.nodes_short = true;
            for (ResMode& rm : res_modes) rm.g = Granular::kPreempt;
            a.short_flavors.push_back(f);
            if (explain) {
              o.reason = "quota is available in flavor " + flavors[f].name +
                         " but " + why;
            }
          }
        }
        // Kueue's preemption oracle: when the group offers other flavors,
        // whether preemption has candidates here, all in other
        // ClusterQueues (reclaim) or some in this one (preempt), and how
        // deep it borrows after them.
        if (o.mode == Mode::kPreempt && !quota_only &&
            cq.groups[g].flavors.size() > 1) {
          if (!PreemptionPossible(w, p, g, f, counts, acc.begin(), a.flavors[p],
                                  &a.nodes_consulted, scratch, &scratch->trial,
                                  &scratch->victims)) {
            o.g = Granular::kNoCandidates;
            if (explain) o.reason += "; no workload can be preempted for it";
          } else {
            Granular found = Granular::kReclaim;
            for (const auto& [v, reason] : scratch->victims) {
              if (wls[v].cq == wl.cq) found = Granular::kPreempt;
            }
            // Borrowing after the victims are gone.
            auto* self = const_cast<Impl*>(this);
            for (const auto& [v, reason] : scratch->victims)
              self->RemoveUsage(wls[v].cq, *wls[v].adm);
            for (ResMode& rm : res_modes) {
              if (rm.g == Granular::kFit) continue;
              rm.g = found;
              rm.borrow = quota->BorrowHeight(node, rm.fr, rm.val, nullptr);
            }
            for (const auto& [v, reason] : scratch->victims)
              self->AddUsage(wls[v].cq, *wls[v].adm);
            Worst(res_modes, fung, &o);
          }
        }
        if (o.mode != Mode::kFit && !o.reason.empty()) {
          reasons += (reasons.empty() ? "" : "; ") + o.reason;
        }
        // Kueue's findFlavorForPodSets: stop at an option that
        // shouldTryNextFlavor rejects, else keep the preferred one.
        const bool stop = !o.nodes_short && !ShouldTryNext(o, fung);
        if (stop || IsPreferred(o, best, fung)) {
          best = o;
          if (scratch) {
            std::swap(scratch->found, scratch->tmp);
            std::swap(scratch->found_for, scratch->tmp_for);
            std::swap(scratch->searched, scratch->trial);
            std::swap(scratch->searched_victims, scratch->victims);
          }
        }
        if (stop) break;
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
      a.borrow_height = std::max(a.borrow_height, best.borrow);
      no_candidates = no_candidates || best.g == Granular::kNoCandidates;
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
  // Likewise when the oracle found no victim for the chosen flavor.
  a.no_candidates = a.mode == Mode::kPreempt && one_pod_set &&
                    groups_used == 1 && no_candidates;
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
  // Parked capacity may take it without quota (parked_lending.cc).
  if (wl.spec.preemptible) return false;
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
