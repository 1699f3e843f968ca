// Scheduler construction: the cohort tree and quotas, ClusterQueues, the
// node pool, and workloads from input (pending, or admitted with their
// placements).
#include <algorithm>

#include "sched/scheduler.h"
#include "sched/scheduler_internal.h"

namespace allot::sched {
namespace {

// "FILE: document N (Kind name): field: msg", as manifest errors read.
Status Located(const core::SourceRef& src, const std::string& name,
               const std::string& field, const std::string& msg) {
  std::string where = src.Describe(name);
  std::string text = where.empty() ? "" : where + ": ";
  if (!field.empty()) text += field + ": ";
  return Status::InvalidArgument(text + msg, field);
}

}  // namespace

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
    m.resource_is_gpu.push_back(core::IsGpuResource(n));
    if (n == core::kCpuResource) m.cpu_resource = m.resource_idx[n];
    if (n == core::kMemoryResource) m.memory_resource = m.resource_idx[n];
    if (n == core::kPodsResource) m.pods_resource = m.resource_idx[n];
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
    cq.parked_use.assign(cq.frs.size(), 0);
    cq.lent_use.assign(cq.frs.size(), 0);
    m.cq_idx[spec.name] = int32_t(m.cqs.size());
    m.cqs.push_back(std::move(cq));
  }
  m.quota->Finalize();
  m.tree_version.assign(size_t(m.quota->NodeCount()), 0);
  for (int32_t i = 0; i < int32_t(m.cqs.size()); ++i) {
    m.cqs[i].root = m.quota->Root(m.cqs[i].node);
    m.tree_cqs[m.cqs[i].root].push_back(i);
  }
  for (const auto& lq : config.local_queues)
    m.local_queues[{lq.ns, lq.name}] = lq.cluster_queue;
  for (const auto& ns : config.namespaces) m.namespaces[ns.name] = ns.labels;

  m.pool = std::make_unique<NodePool>(m.flavors, config.topologies);
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
  stamp.push_back(0);
  listed.push_back(Listed::kNo);
  parked_epoch.push_back(0);
  waiting.push_back(0);
  Wl& wl = wls.back();
  wl.spec = w;
  wl.priority = w.priority;
  wl.creation_ms = w.creation_unix_ms;
  // What pods run and the workload's metadata are never read here, and the
  // caller (the server) keeps the workload too: this copy is per queued
  // workload, so it keeps only what scheduling needs.
  wl.spec.labels = {};
  wl.spec.annotations = {};
  for (core::PodSet& ps : wl.spec.pod_sets) {
    ps.command = {};
    ps.args = {};
    ps.env = {};
    ps.working_dir = {};
  }
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
    wl.full_counts.push_back(ps.count);
    std::string why;
    for (const auto& f : flavors)
      wl.flavor_ok.push_back(FlavorEligible(ps, f, &why));
    int32_t devices = 0;
    for (const auto& [name, q] : ps.requests) {
      if (core::IsGpuResource(name)) devices += int32_t(q.UnitsCeil());
    }
    if (ps.count > 0)
      wl.min_pod_devices = std::min(wl.min_pod_devices, devices);
  }
  if (w.pod_sets.size() == 1) {
    const core::PodSet& ps = w.pod_sets[0];
    wl.single_need = ps.count > 0 && wl.needs[0].unknown.empty() &&
                     wl.needs[0].per_pod.size() == 1 &&
                     !(ps.min_count && *ps.min_count < ps.count) &&
                     flavors.size() <= 64;
    for (size_t f = 0; wl.single_need && f < flavors.size(); ++f)
      wl.flavor_bits |= uint64_t(wl.flavor_ok[f]) << f;
    if (wl.single_need) {
      const auto& [r, per] = wl.needs[0].per_pod[0];
      wl.single_resource = r;
      wl.single_total = per * ps.count;
    }
  }
  by_key[wl.key] = idx;
  if (w.admission) {
    wl.cq_name = w.admission->cluster_queue;
    auto it = cq_idx.find(wl.cq_name);
    if (it == cq_idx.end()) {
      by_key.erase(wl.key);
      wls.pop_back();
      stamp.pop_back();
      listed.pop_back();
      parked_epoch.pop_back();
      waiting.pop_back();
      return Located(
          w.source, w.Key(), "status.admission.clusterQueue",
          "ClusterQueue " + w.admission->cluster_queue + " does not exist");
    }
    wl.cq = it->second;
    CountPods(&wl);
    if (wl.spec.preemptible) ++cqs[wl.cq].preemptible;
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
        CountPods(&wl);
        if (wl.spec.preemptible) ++cqs[wl.cq].preemptible;
      }
    }
  }
  Enqueue(idx);
  return Status::Ok();
}

// Kueue's flavor assigner sets a pod set's "pods" request to its count
// when the ClusterQueue covers "pods" (flavorassigner.go, assignFlavors):
// one per pod, whatever the pod set asked for.
void Scheduler::Impl::CountPods(Wl* wl) const {
  if (pods_resource < 0 || cqs[wl->cq].res_group[pods_resource] < 0) return;
  for (PodSetNeeds& needs : wl->needs) {
    std::erase_if(needs.per_pod,
                  [&](const auto& e) { return e.first == pods_resource; });
    needs.per_pod.emplace_back(pods_resource, 1000);
  }
  wl->single_need = false;
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
  if (adm.parked) {
    // Parked in part: the pod sets with placements run on (a RayCluster's
    // head), those without are parked; with none, all are.
    uint32_t parked_sets = 0;
    for (size_t p = 0; p < sets.size(); ++p) {
      if (a.counts[p] > 0 && a.placement[p].empty()) parked_sets |= 1u << p;
    }
    if (parked_sets == 0) {
      return Located(wl.spec.source, wl.key, "status.admission.podSetAssignments",
                     "a parked workload has a pod set without placements (the parked one)");
    }
    a.mode = Mode::kFit;
    if (explicit_placement) {
      if (Status st = ValidatePlaced(a.requests, a.placement, parked_sets); !st.ok()) {
        return Located(wl.spec.source, wl.key, "status.admission.podSetAssignments",
                       st.message());
      }
    }
    Admit(w, std::move(a), parked_sets);
    return Status::Ok();
  }
  if (adm.on_parked_capacity && !wl.spec.preemptible) {
    return Located(wl.spec.source, wl.key, "status.admission",
                   "only a preemptible workload (" + std::string(core::kPreemptibleKey) +
                       ") runs on parked capacity");
  }
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
  // On parked capacity: as it was, outside the quota tree. The parked
  // workloads it borrows from may come later in the input; the bound is
  // kept from the next change on (EnforceLentBound).
  if (adm.on_parked_capacity) {
    AdmitLent(w, std::move(a));
    return Status::Ok();
  }
  Admit(w, std::move(a));
  return Status::Ok();
}

}  // namespace allot::sched
