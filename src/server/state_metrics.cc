// State::CollectMetrics: the gauge families of one scrape (metrics/metrics.h).
// Built from the state as it is now, on the owner thread; one pass over the
// workloads, one status per ClusterQueue, one row per GPU.
#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "server/state.h"
#include "server/state_internal.h"

namespace allot::server {

namespace {

using L = metrics::Gauges::Labels;
namespace json = boost::json;

double Units(int64_t milli) { return double(milli) / 1000.0; }

struct LqLevels {
  int64_t active = 0;
  int64_t inadmissible = 0;
  int64_t admitted = 0;
  int64_t finished = 0;
  std::map<std::pair<std::string, std::string>, int64_t> usage;  // (flavor, resource)
};

}  // namespace

void State::CollectMetrics(metrics::Gauges* g) const {
  // ---- One pass over the workloads --------------------------------------
  std::map<std::string, LqLevels> lqs;  // "ns/name"
  std::map<std::string, int64_t> cq_finished;
  std::map<std::string, int64_t> by_state;
  std::map<std::string, std::pair<int64_t, int64_t>> parked;  // CQ -> (workloads, GPU milli)
  std::map<std::string, int64_t> on_parked;  // CQ -> GPU milli of its workloads on parked capacity
  // The per-workload rows (admitted ones): idle, and parked.
  std::vector<const WorkloadRecord*> idle_rows, parked_rows;
  for (const auto& [key, rec] : workloads_) {
    ++by_state[ToString(rec.state)];
    LqLevels& lq = lqs[rec.spec.ns + "/" + rec.spec.queue_name];
    if (rec.finished()) {
      ++lq.finished;
      if (rec.spec.admission) ++cq_finished[rec.spec.admission->cluster_queue];
      continue;
    }
    if (!rec.spec.admission) {
      if (!rec.spec.active || sched_->IsInadmissible(key)) {  // Inactive: held.
        ++lq.inadmissible;
      } else {
        ++lq.active;
      }
      continue;
    }
    ++lq.admitted;
    const bool is_parked = rec.state == WorkloadState::kParked;
    if (is_parked) {
      ++parked[rec.spec.admission->cluster_queue].first;
      parked_rows.push_back(&rec);
    } else if (rec.idle_since_ms > 0) {
      idle_rows.push_back(&rec);
    }
    for (const core::PodSetAssignment& psa : rec.spec.admission->pod_set_assignments) {
      for (const core::PodSet& ps : rec.spec.pod_sets) {
        if (ps.name != psa.name) continue;
        for (const auto& [res, flavor] : psa.flavors) {
          auto q = ps.requests.find(res);
          if (q == ps.requests.end()) continue;
          lq.usage[{flavor, res}] += q->second.milli() * psa.count;
          // Parked in part: the pod sets that run on hold their GPUs.
          if (is_parked && psa.placements.empty() && core::IsGpuResource(res)) {
            parked[rec.spec.admission->cluster_queue].second += q->second.milli() * psa.count;
          }
          if (rec.spec.admission->on_parked_capacity && core::IsGpuResource(res)) {
            on_parked[rec.spec.admission->cluster_queue] += q->second.milli() * psa.count;
          }
        }
      }
    }
  }

  // ---- Kueue: ClusterQueues ----------------------------------------------
  struct CqRow {
    std::string name, cohort;
    sched::ClusterQueueStatus st;
    bool stopped = false;
  };
  std::vector<CqRow> cqs;
  cqs.reserve(objs_.cluster_queues.size());
  for (const auto& [name, e] : objs_.cluster_queues) {
    std::optional<sched::ClusterQueueStatus> st = sched_->GetClusterQueueStatus(name);
    if (!st) continue;
    cqs.push_back({name, e.obj.cohort, std::move(*st),
                   e.obj.stop_policy != core::StopPolicy::kNone});
  }
  g->Family("kueue_pending_workloads",
            "Pending workloads, per cluster_queue and status (active: in the "
            "admission queue; inadmissible: set aside until the cluster changes).");
  for (const CqRow& c : cqs) {
    g->Add({{"cluster_queue", c.name}, {"status", "active"}},
           c.st.pending - c.st.inadmissible);
    g->Add({{"cluster_queue", c.name}, {"status", "inadmissible"}}, c.st.inadmissible);
  }
  // What only capacity holds back, per flavor: what an autoscaler adds
  // nodes for (Kueue admits without nodes, so its pending counts cannot
  // say; here such workloads are pending, set aside: "inadmissible").
  const std::vector<sched::CapacityBlocked> blocked = sched_->CapacityBlockedByFlavor();
  g->Family("allot_capacity_blocked_workloads",
            "Pending workloads that quota would admit now but no node can take, per "
            "flavor whose nodes they wait for (one that could use several counts under "
            "each).");
  for (const sched::CapacityBlocked& b : blocked) {
    g->Add({{"flavor", b.flavor}}, b.workloads);
  }
  g->Family("allot_capacity_blocked_gpus",
            "GPUs (or MIG slices) those capacity-blocked workloads ask for, all their pods, "
            "per flavor and resource.");
  for (const sched::CapacityBlocked& b : blocked) {
    for (const auto& [res, milli] : b.devices_milli) {
      g->Add({{"flavor", b.flavor}, {"resource", res}}, Units(milli));
    }
  }
  // Autoscaled NodePools (docs/autoscaling.md).
  const std::vector<PoolCounts> pools = pools_.Counts();
  if (!pools.empty()) {
    g->Family("allot_pool_nodes",
              "Nodes of an autoscaled NodePool by state: suspended, booting, ready (idle "
              "among them: no GPU allocated), suspending.");
    for (const PoolCounts& p : pools) {
      g->Add({{"pool", p.pool}, {"state", "suspended"}}, p.suspended);
      g->Add({{"pool", p.pool}, {"state", "booting"}}, p.booting);
      g->Add({{"pool", p.pool}, {"state", "ready"}}, p.ready);
      g->Add({{"pool", p.pool}, {"state", "idle"}}, p.idle);
      g->Add({{"pool", p.pool}, {"state", "suspending"}}, p.suspending);
    }
    g->Family("allot_pool_boots_total", "Nodes the autoscaler asked a pool's provider to resume.", /*counter=*/true);
    for (const PoolCounts& p : pools) g->Add({{"pool", p.pool}}, double(p.boots));
    g->Family("allot_pool_boot_failures_total",
              "Resumed nodes that did not register in time, or whose resume call failed.", /*counter=*/true);
    for (const PoolCounts& p : pools) g->Add({{"pool", p.pool}}, double(p.boot_failures));
    g->Family("allot_pool_scale_ups_total", "Scale-up decisions (each resumes some nodes).", /*counter=*/true);
    for (const PoolCounts& p : pools) g->Add({{"pool", p.pool}}, double(p.scale_ups));
    g->Family("allot_pool_suspends_total", "Nodes suspended for being idle.", /*counter=*/true);
    for (const PoolCounts& p : pools) g->Add({{"pool", p.pool}}, double(p.suspends));
    g->Family("allot_pool_degraded",
              "1 while a pool's failed boots in a row reach its failureThreshold.");
    for (const PoolCounts& p : pools) g->Add({{"pool", p.pool}}, p.degraded ? 1 : 0);
  }
  g->Family("allot_parked_workloads",
            "Parked workloads (pods stopped, devices given back, quota kept), per "
            "cluster_queue.");
  for (const CqRow& c : cqs) {
    auto p = parked.find(c.name);
    g->Add({{"cluster_queue", c.name}}, p == parked.end() ? 0 : double(p->second.first));
  }
  g->Family("allot_parked_gpus",
            "GPUs (or MIG slices) that parked workloads gave back and whose quota they "
            "keep, per cluster_queue.");
  for (const CqRow& c : cqs) {
    auto p = parked.find(c.name);
    g->Add({{"cluster_queue", c.name}}, p == parked.end() ? 0 : Units(p->second.second));
  }
  g->Family("allot_parked_lent_gpus",
            "GPUs (or MIG slices) that parked workloads gave back and that preemptible "
            "workloads of cluster_queue run on now, without quota (the first to go when "
            "the parked workloads resume).");
  for (const CqRow& c : cqs) {
    auto p = on_parked.find(c.name);
    g->Add({{"cluster_queue", c.name}}, p == on_parked.end() ? 0 : Units(p->second));
  }
  // Per workload, for autoscalers that park and resume (KEDA): how long
  // its GPUs have all been idle, and whether it is parked.
  g->Family("allot_workload_idle_since_seconds",
            "Since when (Unix time) every GPU of a running workload has been under the "
            "idle threshold; absent while any is busy. Idle for: time() minus this.");
  auto workload_labels = [](const WorkloadRecord& rec) -> L {
    return {{"namespace", rec.spec.ns},
            {"workload", rec.spec.name},
            {"cluster_queue", rec.spec.admission->cluster_queue}};
  };
  for (const WorkloadRecord* rec : idle_rows) {
    g->Add(workload_labels(*rec), double(rec->idle_since_ms) / 1000.0);
  }
  g->Family("allot_workload_parked",
            "1 for each parked workload (its GPUs given back, its quota kept).");
  for (const WorkloadRecord* rec : parked_rows) g->Add(workload_labels(*rec), 1);
  g->Family("kueue_reserving_active_workloads",
            "Workloads reserving quota, per cluster_queue.");
  for (const CqRow& c : cqs) g->Add({{"cluster_queue", c.name}}, c.st.admitted);
  g->Family("kueue_admitted_active_workloads",
            "Admitted workloads that are active (not finished), per cluster_queue.");
  for (const CqRow& c : cqs) g->Add({{"cluster_queue", c.name}}, c.st.admitted);
  g->Family("kueue_finished_workloads", "Finished workloads, per cluster_queue.");
  for (const CqRow& c : cqs) {
    auto f = cq_finished.find(c.name);
    g->Add({{"cluster_queue", c.name}}, f == cq_finished.end() ? 0 : double(f->second));
  }
  g->Family("kueue_cluster_queue_status",
            "1 for the ClusterQueue's status (pending: stopped by its stopPolicy; "
            "active; terminated), 0 for the others.");
  for (const CqRow& c : cqs) {
    for (const char* s : {"pending", "active", "terminated"}) {
      bool on = std::string(s) == (c.stopped ? "pending" : "active");
      g->Add({{"cluster_queue", c.name}, {"status", s}}, on ? 1 : 0);
    }
  }
  auto quota_family = [&](const char* name, const char* help, auto value) {
    g->Family(name, help);
    for (const CqRow& c : cqs) {
      for (const sched::QuotaUsage& u : c.st.quota) {
        std::optional<int64_t> v = value(u);
        if (!v) continue;
        g->Add({{"cohort", c.cohort},
                {"cluster_queue", c.name},
                {"flavor", u.flavor},
                {"resource", u.resource}},
               Units(*v));
      }
    }
  };
  using Opt = std::optional<int64_t>;
  quota_family("kueue_cluster_queue_resource_reservation",
               "Quota reserved by the ClusterQueue's admitted workloads.",
               [](const sched::QuotaUsage& u) { return Opt(u.usage_milli); });
  quota_family("kueue_cluster_queue_resource_usage",
               "Resources used by the ClusterQueue's admitted workloads.",
               [](const sched::QuotaUsage& u) { return Opt(u.usage_milli); });
  quota_family("kueue_cluster_queue_nominal_quota", "The ClusterQueue's nominal quota.",
               [](const sched::QuotaUsage& u) { return Opt(u.nominal_milli); });
  quota_family("kueue_cluster_queue_borrowing_limit",
               "The ClusterQueue's borrowing limit (where one is set).",
               [](const sched::QuotaUsage& u) { return u.borrowing_limit_milli; });
  quota_family("kueue_cluster_queue_lending_limit",
               "The ClusterQueue's lending limit (where one is set).",
               [](const sched::QuotaUsage& u) { return u.lending_limit_milli; });
  quota_family("allot_cluster_queue_resource_borrowed",
               "Usage above nominal quota, borrowed from the cohort.",
               [](const sched::QuotaUsage& u) { return Opt(u.borrowed_milli); });
  quota_family("allot_cluster_queue_resource_lent",
               "Unused quota that others in the cohort tree use now (the tree's "
               "borrowing, attributed in proportion to what each may lend).",
               [](const sched::QuotaUsage& u) { return Opt(u.lent_milli); });
  g->Family("kueue_cluster_queue_weighted_share",
            "The largest ratio of usage above nominal quota to the cohort's "
            "lendable quota over the ClusterQueue's resources (x1000), divided "
            "by its fairSharing weight.");
  for (const CqRow& c : cqs) {
    g->Add({{"cluster_queue", c.name}, {"cohort", c.cohort}}, double(c.st.weighted_share));
  }

  // ---- Kueue: LocalQueues ----------------------------------------------------
  auto lq_labels = [](const std::string& key) {
    size_t slash = key.find('/');
    return L{{"name", key.substr(slash + 1)}, {"namespace", key.substr(0, slash)}};
  };
  auto lq_of = [&](const std::string& key) -> const LqLevels* {
    auto it = lqs.find(key);
    return it == lqs.end() ? nullptr : &it->second;
  };
  g->Family("kueue_local_queue_pending_workloads",
            "Pending workloads, per local_queue and status.");
  for (const auto& [key, e] : objs_.local_queues) {
    const LqLevels* l = lq_of(key);
    L a = lq_labels(key), i = a;
    a.push_back({"status", "active"});
    i.push_back({"status", "inadmissible"});
    g->Add(std::move(a), l ? double(l->active) : 0);
    g->Add(std::move(i), l ? double(l->inadmissible) : 0);
  }
  for (const char* name : {"kueue_local_queue_reserving_active_workloads",
                           "kueue_local_queue_admitted_active_workloads"}) {
    g->Family(name, "Admitted workloads that are active, per local_queue.");
    for (const auto& [key, e] : objs_.local_queues) {
      const LqLevels* l = lq_of(key);
      g->Add(lq_labels(key), l ? double(l->admitted) : 0);
    }
  }
  g->Family("kueue_local_queue_finished_workloads", "Finished workloads, per local_queue.");
  for (const auto& [key, e] : objs_.local_queues) {
    const LqLevels* l = lq_of(key);
    g->Add(lq_labels(key), l ? double(l->finished) : 0);
  }
  g->Family("kueue_local_queue_status",
            "1 for whether the LocalQueue can admit (active True|False), 0 for the other.");
  for (const auto& [key, e] : objs_.local_queues) {
    auto cq = objs_.cluster_queues.find(e.obj.cluster_queue);
    bool active = cq != objs_.cluster_queues.end() &&
                  cq->second.obj.stop_policy == core::StopPolicy::kNone;
    for (const char* a : {"True", "False", "Unknown"}) {
      L l = lq_labels(key);
      l.push_back({"active", a});
      g->Add(std::move(l), std::string(a) == (active ? "True" : "False") ? 1 : 0);
    }
  }
  for (const char* name : {"kueue_local_queue_resource_reservation",
                           "kueue_local_queue_resource_usage"}) {
    g->Family(name, "Resources reserved by the LocalQueue's admitted workloads.");
    for (const auto& [key, e] : objs_.local_queues) {
      const LqLevels* l = lq_of(key);
      if (l == nullptr) continue;
      for (const auto& [fr, milli] : l->usage) {
        L lab = lq_labels(key);
        lab.push_back({"flavor", fr.first});
        lab.push_back({"resource", fr.second});
        g->Add(std::move(lab), Units(milli));
      }
    }
  }

  // ---- DCGM: GPU telemetry, with who holds each GPU ------------------------
  const std::unordered_map<std::string, const WorkloadRecord*> holder = GpuHolders();
  struct GpuRow {
    L labels;
    const GpuTelemetry* t;
    int64_t total_bytes;
  };
  std::vector<GpuRow> rows;
  int64_t gpus_free[2] = {0, 0}, gpus_held[2] = {0, 0}, gpus_sick[2] = {0, 0};
  int64_t agents_ready = 0;
  for (const auto& [node, info] : agents_.all()) {
    if (info.ready && info.last_seen_ms != 0) ++agents_ready;
    auto n = objs_.nodes.find(node);
    if (n == objs_.nodes.end()) continue;
    const int sim = info.simulated ? 1 : 0;
    for (const core::Gpu& gpu : n->second.obj.gpus) {
      if (!gpu.healthy) {
        ++gpus_sick[sim];
      } else if (holder.count(gpu.uuid)) {
        ++gpus_held[sim];
      } else {
        ++gpus_free[sim];
      }
    }
    if (!info.ready || info.gpus.empty()) continue;  // Stale or none.
    for (const GpuTelemetry& t : info.gpus) {
      auto gpu = std::find_if(n->second.obj.gpus.begin(), n->second.obj.gpus.end(),
                              [&](const core::Gpu& x) { return x.uuid == t.uuid; });
      if (gpu == n->second.obj.gpus.end()) continue;
      auto h = holder.find(t.uuid);
      const WorkloadRecord* w = h == holder.end() ? nullptr : h->second;
      rows.push_back({L{{"gpu", std::to_string(t.index)},
                        {"UUID", t.uuid},
                        {"device", "nvidia" + std::to_string(t.index)},
                        {"modelName", gpu->product},
                        {"Hostname", node},
                        {"namespace", w ? w->spec.ns : ""},
                        {"workload", w ? w->spec.name : ""},
                        {"simulated", info.simulated ? "true" : "false"}},
                      &t, gpu->memory.milli() / 1000});
    }
  }
  auto gpu_family = [&](const char* name, const char* help, auto value,
                        bool counter = false) {
    g->Family(name, help, counter);
    for (const GpuRow& r : rows) g->Add(r.labels, value(r));
  };
  constexpr double kMiB = 1024.0 * 1024.0;
  gpu_family("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).",
             [](const GpuRow& r) { return double(r.t->utilization_pct); });
  gpu_family("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).",
             [](const GpuRow& r) { return double(r.t->temperature_c); });
  gpu_family("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).",
             [](const GpuRow& r) { return r.t->power_watts; });
  gpu_family("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).",
             [&](const GpuRow& r) { return double(r.t->memory_used_bytes) / kMiB; });
  gpu_family("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).",
             [&](const GpuRow& r) {
               return double(std::max<int64_t>(0, r.total_bytes - r.t->memory_used_bytes)) / kMiB;
             });
  gpu_family("DCGM_FI_DEV_XID_ERRORS", "Value of the last XID error encountered.",
             [](const GpuRow& r) { return double(r.t->last_xid); });
  gpu_family("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
             "Total number of double-bit volatile ECC errors.",
             [](const GpuRow& r) { return double(r.t->ecc_dbe_volatile); },
             /*counter=*/true);

  // ---- Allot's own ---------------------------------------------------------------
  g->Family("allot_agents_connected", "Node agents heard from within the node timeout.");
  g->Add({}, double(agents_ready));
  g->Family("allot_gpus",
            "GPUs of agent-run nodes, by state (free, allocated, unhealthy) and "
            "whether they are simulated.");
  for (int sim = 0; sim < 2; ++sim) {
    const char* s = sim ? "true" : "false";
    g->Add({{"state", "free"}, {"simulated", s}}, double(gpus_free[sim]));
    g->Add({{"state", "allocated"}, {"simulated", s}}, double(gpus_held[sim]));
    g->Add({{"state", "unhealthy"}, {"simulated", s}}, double(gpus_sick[sim]));
  }
  g->Family("allot_workloads", "Workloads the server knows, by state.");
  for (const char* s : {"Pending", "Admitted", "Running", "Succeeded", "Failed",
                        "Evicted", "Requeued", "Suspended", "Parked"}) {
    auto it = by_state.find(s);
    g->Add({{"state", s}}, it == by_state.end() ? 0 : double(it->second));
  }
  g->Family("allot_nodes", "Nodes, by whether they take work (ready) or not.");
  int64_t nodes_ready = 0;
  for (const auto& [name, e] : objs_.nodes) {
    if (!e.obj.unschedulable && NodeReady(name)) ++nodes_ready;
  }
  g->Add({{"ready", "true"}}, double(nodes_ready));
  g->Add({{"ready", "false"}}, double(objs_.nodes.size() - nodes_ready));

  // Notebooks (docs/notebooks.md): how many by tenant and state, and when
  // each running one was last used (time() - it: its idle time).
  std::map<std::pair<std::string, std::string>, int64_t> notebooks;
  std::vector<const WorkloadRecord*> running_notebooks;
  for (const auto& [key, rec] : workloads_) {
    if (rec.spec.type != "notebook") continue;
    ++notebooks[{rec.spec.ns, ToString(rec.state)}];
    if (rec.state == WorkloadState::kRunning) running_notebooks.push_back(&rec);
  }
  g->Family("allot_notebooks", "Notebooks (workloads of type notebook), by tenant and state.");
  for (const auto& [k, n] : notebooks) g->Add({{"namespace", k.first}, {"state", k.second}}, double(n));
  g->Family("allot_notebook_last_activity_seconds",
            "Unix time a running notebook was last used (its kernels, terminals, pages; or "
            "its start or resume): time() minus this is how long it has been idle.");
  for (const WorkloadRecord* rec : running_notebooks) {
    // As the idle parker counts it: its last report, admission or resume,
    // or the server's start.
    const int64_t last = internal::ActiveSinceMs(*rec, controllers_started_ms_);
    if (last < 0) continue;
    g->Add({{"namespace", rec->spec.ns}, {"notebook", rec->spec.name}}, double(last) / 1000);
  }
}

std::vector<std::pair<std::string, const WorkloadRecord*>> State::HeldGpus(
    const std::string& node) const {
  std::vector<std::pair<std::string, const WorkloadRecord*>> out;
  const std::set<std::string>* on = agents_.WorkloadsOn(node);
  if (on == nullptr) return out;
  std::unordered_map<std::string, std::string> parent;  // MIG slice -> GPU.
  if (auto n = objs_.nodes.find(node); n != objs_.nodes.end()) {
    for (const core::Gpu& gpu : n->second.obj.gpus) {
      for (const core::MigSlice& m : gpu.mig) parent[m.uuid] = gpu.uuid;
    }
  }
  for (const std::string& key : *on) {
    const WorkloadRecord& rec = workloads_.at(key);
    if (!rec.spec.admission || rec.finished()) continue;
    for (const auto& psa : rec.spec.admission->pod_set_assignments) {
      for (const auto& pl : psa.placements) {
        if (pl.node != node) continue;
        for (const std::string& u : pl.gpus) {
          auto p = parent.find(u);
          out.emplace_back(p == parent.end() ? u : p->second, &rec);
        }
      }
    }
  }
  return out;
}

std::unordered_map<std::string, const WorkloadRecord*> State::GpuHolders() const {
  std::unordered_map<std::string, const WorkloadRecord*> holder;
  for (const auto& [node, keys] : agents_.workloads_by_node()) {
    for (const auto& [gpu, rec] : HeldGpus(node)) holder[gpu] = rec;
  }
  return holder;
}

json::object State::Overview(const Principal& p, int64_t now, int64_t idle_ms) const {
  const auto holder = GpuHolders();
  struct Counts {
    int64_t free = 0, allocated = 0, idle = 0, unhealthy = 0;
    json::object Json() const {
      return {{"free", free}, {"allocated", allocated}, {"idle", idle}, {"unhealthy", unhealthy}};
    }
  };
  Counts total;
  int64_t simulated = 0;
  std::map<std::pair<std::string, std::string>, Counts> groups;  // (flavor, location)
  for (const auto& [name, e] : objs_.nodes) {
    const core::Node& n = e.obj;
    // The node's flavor: the first whose nodeLabels it carries (as the
    // scheduler matches them).
    std::string flavor = "(no flavor)";
    for (const auto& [fname, f] : objs_.flavors) {
      if (core::LabelsMatch(f.obj.node_labels, n.labels)) {
        flavor = fname;
        break;
      }
    }
    auto loc = n.labels.find("allot.dev/location");
    Counts& g = groups[{flavor, loc == n.labels.end() ? "onprem" : loc->second}];
    const bool sim = n.labels.count("allot.dev/simulated") > 0;
    for (const core::Gpu& gpu : n.gpus) {
      int64_t Counts::*state = &Counts::free;
      if (!gpu.healthy) {
        state = &Counts::unhealthy;
      } else if (auto h = holder.find(gpu.uuid); h != holder.end()) {
        const WorkloadRecord& w = *h->second;
        const bool idle = w.idle_since_ms != 0 && now - w.idle_since_ms >= idle_ms;
        state = idle ? &Counts::idle : &Counts::allocated;
      }
      ++(g.*state);
      ++(total.*state);
      if (sim) ++simulated;
    }
  }
  json::array by_group;
  for (const auto& [key, c] : groups) {
    json::object o = c.Json();
    o["flavor"] = key.first;
    o["location"] = key.second;
    by_group.push_back(std::move(o));
  }
  std::map<std::string, int64_t> states;
  for (const auto& [key, rec] : workloads_) {
    if (CanSee(p, Kind::kWorkload, rec.spec.ns)) ++states[ToString(rec.state)];
  }
  json::object wl;
  for (const auto& [st, n] : states) wl[st] = n;
  json::object gpus = total.Json();
  gpus["simulated"] = simulated;
  // Cohorts are shared infrastructure, as ClusterQueues are.
  json::array cohorts;
  for (const sched::CohortStatus& c : sched_->CohortStatuses()) {
    json::array res;
    for (const sched::QuotaUsage& u : c.quota) {
      auto q = [](int64_t milli) { return allot::Quantity::FromMilli(milli).ToString(); };
      res.push_back(json::object{{"flavor", u.flavor},
                                 {"name", u.resource},
                                 {"nominalQuota", q(u.nominal_milli)},
                                 {"total", q(u.usage_milli)},
                                 {"borrowed", q(u.borrowed_milli)}});
    }
    cohorts.push_back(
        json::object{{"name", c.name}, {"parent", c.parent}, {"resources", std::move(res)}});
  }
  return {{"gpus", std::move(gpus)},
          {"byFlavorAndLocation", std::move(by_group)},
          {"cohorts", std::move(cohorts)},
          {"workloads", std::move(wl)},
          {"idleMinutes", idle_ms / 60000},
          {"idleUtilPct", accounting_.idle_threshold()},
          {"resourceVersion", std::to_string(rv_)}};
}

}  // namespace allot::server
