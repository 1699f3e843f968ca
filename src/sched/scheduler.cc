// Scheduler: construction, bookkeeping and the scheduling cycle.
#include "sched/scheduler.h"

#include <algorithm>
#include <tuple>

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

Status Located(const core::SourceRef& src, const std::string& name,
               const std::string& field, const std::string& msg) {
  std::string where = src.Describe(name);
  std::string text = where.empty() ? "" : where + ": ";
  if (!field.empty()) text += field + ": ";
  return Status::InvalidArgument(text + msg, field);
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
  }
  return "Unknown";
}

Scheduler::Scheduler() : impl_(std::make_unique<Impl>()) {}
Scheduler::~Scheduler() = default;

Result<std::unique_ptr<Scheduler>> Scheduler::Create(
    const core::Config& config) {
  std::unique_ptr<Scheduler> s(new Scheduler());
  Impl& m = *s->impl_;
  m.config = config.scheduler;
  m.flavors = config.flavors;
  for (size_t i = 0; i < m.flavors.size(); ++i)
    m.flavor_idx[m.flavors[i].name] = int32_t(i);

  // Resources: every name covered by a resource group, sorted.
  std::set<std::string> names;
  for (const auto& cq : config.cluster_queues)
    for (const auto& g : cq.resource_groups)
      names.insert(g.covered_resources.begin(), g.covered_resources.end());
  for (const auto& c : config.cohorts)
    for (const auto& g : c.resource_groups)
      names.insert(g.covered_resources.begin(), g.covered_resources.end());
  for (const auto& n : names) {
    m.resource_idx[n] = int32_t(m.resources.size());
    m.resources.push_back(n);
  }
  m.quota = std::make_unique<QuotaTree>(m.num_fr());

  // Cohorts: declared ones and those only named by ClusterQueues / parents.
  std::map<std::string, const core::Cohort*> declared;
  std::set<std::string> cohort_names;
  for (const auto& c : config.cohorts) {
    declared[c.name] = &c;
    cohort_names.insert(c.name);
    if (!c.parent.empty()) cohort_names.insert(c.parent);
  }
  for (const auto& cq : config.cluster_queues) {
    if (!cq.cohort.empty()) cohort_names.insert(cq.cohort);
  }
  for (const auto& n : cohort_names) {
    m.cohort_node[n] = m.quota->AddNode(-1);
    m.node_cohort_name.push_back(n);
    m.node_cq.push_back(-1);
    m.node_weight.push_back(declared.count(n) ? declared[n]->fair_weight_milli
                                              : 1000);
  }
  for (const auto& [n, c] : declared) {
    if (!c->parent.empty())
      m.quota->SetParent(m.cohort_node[n], m.cohort_node[c->parent]);
  }

  auto set_quotas = [&](int32_t node,
                        const std::vector<core::ResourceGroup>& groups,
                        const core::SourceRef& src, const std::string& name,
                        std::vector<Group>* out) -> Status {
    for (size_t gi = 0; gi < groups.size(); ++gi) {
      Group g;
      for (const auto& r : groups[gi].covered_resources)
        g.resources.push_back(m.resource_idx[r]);
      for (size_t fi = 0; fi < groups[gi].flavors.size(); ++fi) {
        const auto& fq = groups[gi].flavors[fi];
        auto it = m.flavor_idx.find(fq.name);
        if (it == m.flavor_idx.end()) {
          return Located(src, name,
                         "spec.resourceGroups[" + std::to_string(gi) +
                             "].flavors[" + std::to_string(fi) + "].name",
                         "ResourceFlavor " + fq.name + " does not exist");
        }
        g.flavors.push_back(it->second);
        for (const auto& rq : fq.resources) {
          auto opt =
              [](const std::optional<Quantity>& q) -> std::optional<int64_t> {
            if (!q) return std::nullopt;
            return q->milli();
          };
          m.quota->SetQuota(node, m.Fr(it->second, m.resource_idx[rq.name]),
                            rq.nominal_quota.milli(), opt(rq.borrowing_limit),
                            opt(rq.lending_limit));
        }
      }
      if (out) out->push_back(std::move(g));
    }
    return Status::Ok();
  };
  for (const auto& [n, c] : declared) {
    ALLOT_RETURN_IF_ERROR(set_quotas(m.cohort_node[n], c->resource_groups,
                                     c->source, n, nullptr));
  }
  for (const auto& spec : config.cluster_queues) {
    CQ cq;
    cq.spec = spec;
    cq.cohort_name = spec.cohort;
    cq.node =
        m.quota->AddNode(spec.cohort.empty() ? -1 : m.cohort_node[spec.cohort]);
    m.node_cohort_name.push_back("");
    m.node_cq.push_back(int32_t(m.cqs.size()));
    m.node_weight.push_back(spec.fair_weight_milli);
    ALLOT_RETURN_IF_ERROR(set_quotas(cq.node, spec.resource_groups, spec.source,
                                     spec.name, &cq.groups));
    cq.res_group.assign(m.resources.size(), -1);
    for (size_t gi = 0; gi < cq.groups.size(); ++gi) {
      for (int32_t r : cq.groups[gi].resources) cq.res_group[r] = int32_t(gi);
      for (int32_t f : cq.groups[gi].flavors)
        for (int32_t r : cq.groups[gi].resources) cq.frs.push_back(m.Fr(f, r));
    }
    std::sort(cq.frs.begin(), cq.frs.end());
    m.cq_idx[spec.name] = int32_t(m.cqs.size());
    m.cqs.push_back(std::move(cq));
  }
  m.quota->Finalize();
  for (int32_t i = 0; i < int32_t(m.cqs.size()); ++i) {
    m.cqs[i].root = m.quota->Root(m.cqs[i].node);
    m.tree_cqs[m.cqs[i].root].push_back(i);
  }
  for (const auto& lq : config.local_queues)
    m.local_queues[{lq.ns, lq.name}] = lq.cluster_queue;
  for (const auto& ns : config.namespaces) m.namespaces[ns.name] = ns.labels;

  m.pool = std::make_unique<NodePool>(m.flavors);
  for (const auto& n : config.nodes) {
    Status st = m.pool->AddNode(n);
    if (!st.ok()) return Located(n.source, n.name, st.field(), st.message());
  }

  // Workloads in file order; admitted ones with explicit placements first so
  // that placing the others cannot take the GPUs those name.
  std::vector<WlIdx> to_admit;
  for (const auto& w : config.workloads) {
    ALLOT_RETURN_IF_ERROR(m.AddWorkloadInternal(w));
    if (w.admission) to_admit.push_back(m.by_key[w.Key()]);
  }
  std::stable_sort(to_admit.begin(), to_admit.end(), [&](WlIdx a, WlIdx b) {
    auto explicit_placement = [&](WlIdx x) {
      for (const auto& psa : m.wls[x].spec.admission->pod_set_assignments)
        if (!psa.placements.empty()) return true;
      return false;
    };
    return explicit_placement(a) && !explicit_placement(b);
  });
  for (WlIdx w : to_admit) ALLOT_RETURN_IF_ERROR(m.AdmitExisting(w));
  return s;
}

Status Scheduler::Impl::AddWorkloadInternal(const core::Workload& w) {
  if (by_key.count(w.Key())) {
    return Located(w.source, w.Key(), "metadata.name",
                   "workload " + w.Key() + " already exists");
  }
  WlIdx idx = WlIdx(wls.size());
  wls.push_back(Wl{});
  Wl& wl = wls.back();
  wl.spec = w;
  wl.key = w.Key();
  wl.seq = next_seq++;
  for (const auto& ps : w.pod_sets) {
    PodSetNeeds needs;
    for (const auto& [name, q] : ps.requests) {
      if (q.IsZero()) continue;
      auto it = resource_idx.find(name);
      if (it == resource_idx.end()) {
        needs.unknown.push_back(name);
      } else {
        needs.per_pod.emplace_back(it->second, q.milli());
      }
    }
    wl.needs.push_back(std::move(needs));
    int32_t devices = 0;
    for (const auto& [name, q] : ps.requests) {
      if (core::IsGpuResource(name)) devices += int32_t(q.UnitsCeil());
    }
    if (ps.count > 0) wl.min_pod_devices = std::min(wl.min_pod_devices, devices);
  }
  by_key[wl.key] = idx;
  if (w.admission) {
    wl.cq_name = w.admission->cluster_queue;
    auto it = cq_idx.find(wl.cq_name);
    if (it == cq_idx.end()) {
      by_key.erase(wl.key);
      wls.pop_back();
      return Located(
          w.source, w.Key(), "status.admission.clusterQueue",
          "ClusterQueue " + w.admission->cluster_queue + " does not exist");
    }
    wl.cq = it->second;
    return Status::Ok();  // Admitted by AdmitExisting.
  }
  auto lq = local_queues.find({w.ns, w.queue_name});
  if (lq == local_queues.end()) {
    wl.reason = "LocalQueue " + w.ns + "/" + w.queue_name + " does not exist";
  } else {
    wl.cq_name = lq->second;
    auto it = cq_idx.find(lq->second);
    if (it == cq_idx.end()) {
      wl.reason = "ClusterQueue " + lq->second + " (from LocalQueue " + w.ns +
                  "/" + w.queue_name + ") does not exist";
    } else {
      const core::ClusterQueue& spec = cqs[it->second].spec;
      static const core::Labels kNone;
      auto ns = namespaces.find(w.ns);
      const core::Labels& labels = ns == namespaces.end() ? kNone : ns->second;
      if (!spec.namespace_selector ||
          !spec.namespace_selector->Matches(labels)) {
        wl.reason = "namespace " + w.ns + " is not selected by ClusterQueue " +
                    spec.name + "'s namespaceSelector";
      } else {
        wl.cq = it->second;
      }
    }
  }
  Enqueue(idx);
  return Status::Ok();
}

Status Scheduler::Impl::AdmitExisting(WlIdx w) {
  Wl& wl = wls[w];
  const core::Admission& adm = *wl.spec.admission;
  const CQ& cq = cqs[wl.cq];
  const auto& sets = wl.spec.pod_sets;
  Assignment a;
  a.counts.assign(sets.size(), 0);
  a.flavors.assign(sets.size(), std::vector<int32_t>(cq.groups.size(), -1));
  a.placement.assign(sets.size(), {});
  std::vector<int64_t> acc(num_fr(), 0);
  bool explicit_placement = false;
  for (size_t i = 0; i < adm.pod_set_assignments.size(); ++i) {
    const auto& psa = adm.pod_set_assignments[i];
    std::string field =
        "status.admission.podSetAssignments[" + std::to_string(i) + "]";
    size_t p = 0;
    while (p < sets.size() && sets[p].name != psa.name) ++p;
    if (p == sets.size()) {
      return Located(wl.spec.source, wl.key, field + ".name",
                     "no pod set named " + psa.name);
    }
    a.counts[p] = psa.count;
    for (const auto& [r, per] : wl.needs[p].per_pod) {
      const std::string& rname = resources[r];
      auto fit = psa.flavors.find(rname);
      int32_t g = cq.res_group[r];
      if (g < 0) {
        return Located(wl.spec.source, wl.key, field,
                       "ClusterQueue " + cq.spec.name +
                           " does not cover resource " + rname);
      }
      if (fit == psa.flavors.end()) {
        return Located(wl.spec.source, wl.key, field + ".flavors",
                       "no flavor assigned for resource " + rname);
      }
      auto f = flavor_idx.find(fit->second);
      const auto& gf = cq.groups[g].flavors;
      if (f == flavor_idx.end() ||
          std::find(gf.begin(), gf.end(), f->second) == gf.end()) {
        return Located(wl.spec.source, wl.key, field + ".flavors." + rname,
                       "flavor " + fit->second +
                           " is not listed in ClusterQueue " + cq.spec.name +
                           "'s resource group for " + rname);
      }
      a.flavors[p][g] = f->second;
      acc[Fr(f->second, r)] += per * psa.count;
    }
    if (!wl.needs[p].unknown.empty()) {
      return Located(wl.spec.source, wl.key, field,
                     "ClusterQueue " + cq.spec.name +
                         " does not cover resource " + wl.needs[p].unknown[0]);
    }
    if (!psa.placements.empty()) {
      explicit_placement = true;
      if (int32_t(psa.placements.size()) != psa.count) {
        return Located(wl.spec.source, wl.key, field + ".placements",
                       "has " + std::to_string(psa.placements.size()) +
                           " entries for " + std::to_string(psa.count) +
                           " pods");
      }
      for (size_t k = 0; k < psa.placements.size(); ++k) {
        const auto& pp = psa.placements[k];
        std::string pf = field + ".placements[" + std::to_string(k) + "]";
        auto n = pool->FindNode(pp.node);
        if (!n) {
          return Located(wl.spec.source, wl.key, pf + ".node",
                         "node " + pp.node + " does not exist");
        }
        PodAssignment pa;
        pa.node = *n;
        for (const auto& uuid : pp.gpus) {
          auto slot = pool->FindDevice(*n, uuid);
          if (!slot) {
            return Located(wl.spec.source, wl.key, pf + ".gpus",
                           "GPU " + uuid + " is not on node " + pp.node);
          }
          pa.devices.push_back(*slot);
        }
        a.placement[p].push_back(std::move(pa));
      }
    }
  }
  for (int32_t fr = 0; fr < num_fr(); ++fr) {
    if (acc[fr] != 0) a.usage.emplace_back(fr, acc[fr]);
  }
  a.requests = Requests(w, a.counts, a.flavors);
  if (explicit_placement) {
    for (size_t p = 0; p < sets.size(); ++p) {
      if (a.counts[p] > 0 && a.placement[p].empty()) {
        return Located(
            wl.spec.source, wl.key, "status.admission.podSetAssignments",
            "pod set " + sets[p].name + " has no placements while others do");
      }
    }
    Status st = pool->Validate(a.requests, a.placement);
    if (!st.ok()) {
      return Located(wl.spec.source, wl.key,
                     "status.admission.podSetAssignments", st.message());
    }
  } else {
    std::string why;
    if (!pool->Find(a.requests, &a.placement, &why)) {
      return Located(
          wl.spec.source, wl.key, "status.admission",
          "the admitted workload cannot be placed on the nodes: " + why);
    }
  }
  a.mode = Mode::kFit;
  Admit(w, std::move(a));
  return Status::Ok();
}

void Scheduler::Impl::Enqueue(WlIdx w) {
  Wl& wl = wls[w];
  wl.state = Wl::State::kPending;
  wl.parked = false;
  ++pending_count;
  if (wl.cq < 0) return;
  CQ& cq = cqs[wl.cq];
  cq.queue.insert(wl.QKey(w));
  cq.blocked = false;
  active_cqs.insert(wl.cq);
}

void Scheduler::Impl::Admit(WlIdx w, Assignment a) {
  Wl& wl = wls[w];
  pool->Commit(a.requests, a.placement);
  AddUsage(wl.cq, a);
  wl.adm = std::move(a);
  wl.state = Wl::State::kAdmitted;
  wl.admit_seq = next_admit_seq++;
  wl.reason.clear();
  wl.tried = false;
  cqs[wl.cq].admitted.push_back(w);
  ++admitted_count;
}

void Scheduler::Impl::ForgetEvictions(WlIdx w, bool all) {
  if (auto it = evictors.find(w); it != evictors.end()) {
    for (WlIdx p : it->second) {
      evicted_by[p].erase(w);
      if (evicted_by[p].empty()) evicted_by.erase(p);
    }
    evictors.erase(it);
  }
  if (!all) return;
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
  pool->Release(wl.adm.requests, wl.adm.placement);
  RemoveUsage(wl.cq, wl.adm);
  auto& list = cqs[wl.cq].admitted;
  auto it = std::find(list.begin(), list.end(), w);
  ALLOT_CHECK(it != list.end());
  *it = list.back();
  list.pop_back();
  wl.adm = Assignment{};
  --admitted_count;
}

void Scheduler::Impl::Evict(WlIdx victim, WlIdx preemptor,
                            PreemptionReason reason) {
  ReleaseAdmission(victim);
  Wl& v = wls[victim];
  // An admitted workload from input loses its recorded admission too.
  v.spec.admission.reset();
  v.tried = false;
  v.reason = std::string("preempted by ") + wls[preemptor].key + " (" +
             ToString(reason) + ")";
  Enqueue(victim);
  preemptions.push_back({v.key, wls[preemptor].key, reason});
  evicted_by[preemptor].insert(victim);
  evictors[victim].insert(preemptor);
}

void Scheduler::Impl::AdmitByPreempting(
    WlIdx w, Assignment a, const std::vector<std::pair<WlIdx, PreemptionReason>>& victims) {
  // What the victims free beyond what the preemptor takes may admit others:
  // only then are set-aside workloads retried (retrying the whole cohort
  // tree after every preemption would make quiescence quadratic).
  std::map<int32_t, int64_t> left;
  Assignment freed;  // Flavors and nodes of the victims, for placement waiters.
  for (const auto& [v, reason] : victims) {
    for (const auto& [fr, val] : wls[v].adm.usage) {
      left[fr] += val;
      freed.usage.emplace_back(fr, val);
    }
    freed.flavors.insert(freed.flavors.end(), wls[v].adm.flavors.begin(),
                         wls[v].adm.flavors.end());
    freed.placement.insert(freed.placement.end(), wls[v].adm.placement.begin(),
                           wls[v].adm.placement.end());
    Evict(v, w, reason);
  }
  for (const auto& [fr, val] : a.usage) left[fr] -= val;
  int32_t root = cqs[wls[w].cq].root;
  a.mode = Mode::kFit;
  Admit(w, std::move(a));
  for (const auto& [fr, val] : left) {
    if (val > 0) {
      RequeueTree(root, freed);
      WakePlacementWaiters(freed);
      break;
    }
  }
}

void Scheduler::Impl::RequeueTree(int32_t root, const Assignment& freed) {
  auto it = tree_cqs.find(root);
  if (it == tree_cqs.end()) return;
  std::vector<int32_t> freed_flavors;
  for (const auto& [fr, val] : freed.usage) freed_flavors.push_back(FrFlavor(fr));
  for (int32_t c : it->second) {
    CQ& cq = cqs[c];
    // Quota of other flavors did not change: their workloads stay aside.
    bool shares = false;
    for (int32_t fr : cq.frs) {
      shares = shares || std::find(freed_flavors.begin(), freed_flavors.end(), FrFlavor(fr)) !=
                             freed_flavors.end();
    }
    if (!shares) continue;
    for (WlIdx w : cq.parked) {
      wls[w].parked = false;
      StopWaiting(w);
      cq.queue.insert(wls[w].QKey(w));
    }
    cq.parked.clear();
    cq.blocked = false;
    if (!cq.queue.empty()) active_cqs.insert(c);
  }
}

void Scheduler::Impl::StopWaiting(WlIdx w) {
  Wl& wl = wls[w];
  for (int32_t f : wl.waiting_flavors) placement_waiters[f].erase(w);
  wl.waiting_flavors.clear();
}

void Scheduler::Impl::Unpark(WlIdx w) {
  Wl& wl = wls[w];
  StopWaiting(w);
  if (wl.state != Wl::State::kPending || wl.cq < 0) return;
  CQ& cq = cqs[wl.cq];
  if (wl.parked) {
    wl.parked = false;
    cq.parked.erase(w);
    cq.queue.insert(wl.QKey(w));
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
      for (int32_t d = 0; d < pool->DeviceCount(pa.node); ++d) n += pool->DeviceFree(pa.node, d);
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

bool Scheduler::Impl::TryAdmit(WlIdx w) {
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
  std::vector<int32_t> counts;
  for (const auto& ps : wl.spec.pod_sets) counts.push_back(ps.count);
  Assignment a = Assign(w, counts, /*quota_only=*/false);
  if (a.mode == Mode::kFit) {
    Admit(w, std::move(a));
    return true;
  }
  if (a.mode == Mode::kPreempt) {
    auto victims = FindVictims(w, &a);
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
    if (admissible(0, &best)) {
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
  wl.placement_short = !a.short_flavors.empty();
  for (int32_t f : a.short_flavors) {
    if (placement_waiters[f].insert(w).second) wl.waiting_flavors.push_back(f);
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

Status Scheduler::RemoveWorkload(const std::string& key) {
  Impl& m = *impl_;
  auto it = m.by_key.find(key);
  if (it == m.by_key.end())
    return Status::NotFound("workload " + key + " does not exist");
  WlIdx w = it->second;
  Wl& wl = m.wls[w];
  if (wl.state == Wl::State::kAdmitted) {
    Assignment freed = wl.adm;
    m.ReleaseAdmission(w);
    m.RequeueTree(m.cqs[wl.cq].root, freed);
    m.WakePlacementWaiters(freed);
  } else {
    --m.pending_count;
    m.StopWaiting(w);
    if (wl.cq >= 0) {
      CQ& cq = m.cqs[wl.cq];
      if (wl.parked) {
        cq.parked.erase(w);
      } else {
        cq.queue.erase(wl.QKey(w));
        cq.blocked = false;  // The blocking head may be the one removed.
        if (!cq.queue.empty()) m.active_cqs.insert(wl.cq);
      }
    }
  }
  m.ForgetEvictions(w, /*all=*/true);
  wl.state = Wl::State::kGone;
  m.by_key.erase(it);
  return Status::Ok();
}

CycleResult Scheduler::RunCycle() {
  Impl& m = *impl_;
  CycleResult r;
  // 1. Heads: the first workload of every active ClusterQueue.
  struct Head {
    std::tuple<int64_t, int32_t, int64_t, int64_t> order;
    WlIdx w;
  };
  std::vector<Head> heads;
  for (int32_t c : m.active_cqs) {
    const CQ& cq = m.cqs[c];
    if (cq.queue.empty() || cq.blocked) continue;
    WlIdx w = cq.queue.begin()->wl;
    heads.push_back({{0, -m.wls[w].spec.priority,
                      m.wls[w].spec.creation_unix_ms, m.wls[w].seq},
                     w});
  }
  // 3-5. Try a head: admit, preempt and admit, or set aside.
  auto try_head = [&](WlIdx w) {
    Wl& wl = m.wls[w];
    if (wl.state != Wl::State::kPending || wl.parked) return;
    CQ& cq = m.cqs[wl.cq];
    ++r.attempts;
    size_t before = m.preemptions.size();
    cq.queue.erase(wl.QKey(w));
    --m.pending_count;
    m.StopWaiting(w);
    if (m.TryAdmit(w)) {
      r.admitted.push_back(wl.key);
    } else {
      ++m.pending_count;
      if (cq.spec.queueing_strategy == core::QueueingStrategy::kStrictFIFO) {
        cq.queue.insert(wl.QKey(w));
        // Only a workload still at the head blocks: a preemption in this
        // cycle may have returned an earlier one to this queue.
        if (cq.queue.begin()->wl == w) cq.blocked = true;
      } else {
        wl.parked = true;
        cq.parked.insert(w);
      }
    }
    for (size_t i = before; i < m.preemptions.size(); ++i)
      r.preempted.push_back(m.preemptions[i]);
  };
  // 2. Order. Fair sharing: a tournament down each cohort tree, against the
  // usage left by the heads admitted before. Classical: non-borrowing
  // first, then priority, then age.
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
      for (Head& h : heads) {
        const Wl& wl = m.wls[h.w];
        if (m.cqs[wl.cq].spec.stop_policy != core::StopPolicy::kNone) continue;
        std::vector<int32_t> counts;
        for (const auto& ps : wl.spec.pod_sets) counts.push_back(ps.count);
        std::get<0>(h.order) =
            m.Assign(h.w, counts, /*quota_only=*/true).borrows ? 1 : 0;
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
  while (!impl_->active_cqs.empty() && n < max_cycles) {
    RunCycle();
    ++n;
  }
  return n;
}

std::vector<AdmittedWorkload> Scheduler::Admitted() const {
  const Impl& m = *impl_;
  std::vector<AdmittedWorkload> out;
  for (WlIdx w = 0; w < WlIdx(m.wls.size()); ++w) {
    const Wl& wl = m.wls[w];
    if (wl.state != Wl::State::kAdmitted) continue;
    AdmittedWorkload aw;
    aw.workload = wl.key;
    aw.admission.cluster_queue = m.cqs[wl.cq].spec.name;
    for (size_t p = 0; p < wl.spec.pod_sets.size(); ++p) {
      core::PodSetAssignment psa;
      psa.name = wl.spec.pod_sets[p].name;
      psa.count = wl.adm.counts[p];
      for (const auto& [r, per] : wl.needs[p].per_pod) {
        int32_t g = m.cqs[wl.cq].res_group[r];
        psa.flavors[m.resources[r]] = m.flavors[wl.adm.flavors[p][g]].name;
      }
      for (const PodAssignment& pa : wl.adm.placement[p]) {
        core::PodPlacement pp;
        pp.node = m.pool->NodeName(pa.node);
        for (int32_t d : pa.devices)
          pp.gpus.push_back(m.pool->DeviceUuid(pa.node, d));
        psa.placements.push_back(std::move(pp));
      }
      aw.admission.pod_set_assignments.push_back(std::move(psa));
    }
    out.push_back(std::move(aw));
  }
  std::sort(out.begin(), out.end(),
            [](const AdmittedWorkload& a, const AdmittedWorkload& b) {
              return a.workload < b.workload;
            });
  return out;
}

std::vector<PendingWorkload> Scheduler::Pending() const {
  const Impl& m = *impl_;
  std::vector<PendingWorkload> out;
  for (const CQ& cq : m.cqs) {
    std::vector<QueueKey> keys(cq.queue.begin(), cq.queue.end());
    for (WlIdx w : cq.parked) keys.push_back(m.wls[w].QKey(w));
    std::sort(keys.begin(), keys.end());
    for (size_t i = 0; i < keys.size(); ++i) {
      const Wl& wl = m.wls[keys[i].wl];
      PendingWorkload p;
      p.workload = wl.key;
      p.cluster_queue = cq.spec.name;
      p.position = int32_t(i + 1);
      if (wl.tried && !(cq.blocked && i > 0)) {
        // Computed against the state now: numbers may have changed since
        // the workload was last tried.
        p.reason = m.ReasonNow(keys[i].wl);
        if (p.reason.empty()) p.reason = "fits now; waiting for the next scheduling cycle";
      } else if (!wl.reason.empty() && !(cq.blocked && i > 0)) {
        p.reason = wl.reason;
      } else if (cq.blocked && i > 0) {
        p.reason = "waiting behind " + m.wls[keys[0].wl].key +
                   ": StrictFIFO ClusterQueue " + cq.spec.name +
                   " admits in order and its head cannot be admitted";
      } else {
        p.reason = "waiting for a scheduling cycle";
      }
      p.reason += "; " + Ordinal(p.position) + " in queue";
      out.push_back(std::move(p));
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

const std::vector<PreemptionEvent>& Scheduler::Preemptions() const {
  return impl_->preemptions;
}
size_t Scheduler::PendingCount() const { return impl_->pending_count; }
size_t Scheduler::AdmittedCount() const { return impl_->admitted_count; }

}  // namespace allot::sched
