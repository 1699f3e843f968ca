// State's side of an agent's sync (AgentSync): its node joins or changes
// (what no longer fits is evicted), comes back from NotReady, its GPU
// samples are accounted, and its pod reports make workloads Running,
// Succeeded or Failed. The agents' liveness, pods and logs themselves are
// Agents' (server/agents.h).
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/host_paths.h"
#include "core/manifest.h"
#include "server/notebook_auth.h"
#include "server/state.h"
#include "server/state_internal.h"

namespace allot::server {

using internal::SetCondition;

Result<State::PodLogTarget> State::LogTarget(const Principal& p,
                                             const std::string& key,
                                             int32_t rank,
                                             int32_t attempt) const {
  auto it = workloads_.find(key);
  if (it == workloads_.end() || !CanSee(p, Kind::kWorkload, it->second.spec.ns)) {
    return Status::NotFound("Workload " + key + " does not exist");
  }
  return agents_.LogTarget(key, it->second, rank, attempt);
}

Status State::AgentSync(AgentReport r, Txn* txn, bool* registered) {
  if (registered != nullptr) *registered = false;
  const int64_t now = txn->now_unix_ms;
  core::Node& n = r.node;
  n.labels[kAgentLabel] = "true";
  if (r.simulated) {
    n.labels["allot.dev/simulated"] = "true";
  } else {
    n.labels.erase("allot.dev/simulated");
  }
  n.source = internal::StoredSource(Kind::kNode);
  pools_.Decorate(&n);  // A pool node: its pool's labels and taints.
  auto it = objs_.nodes.find(n.name);
  if (it != objs_.nodes.end()) {
    // Cordons and taints are the admins'; hardware and labels the agent's.
    n.unschedulable = it->second.obj.unschedulable;
    n.taints = it->second.obj.taints;
    n.source = it->second.obj.source;
  }
  const bool changed = it == objs_.nodes.end() || !(it->second.obj == n);
  Agents::Heard heard =
      agents_.Hear(n.name, now, r.address, r.simulated, std::move(r.gpu_samples),
                   std::move(r.pod_network));
  if (heard.came_back) ctrl_changes_ |= ctrl::kAgents;
  int64_t boot_ms = -1;
  if (pools_.Registered(n.name, now, &boot_ms)) ctrl_changes_ |= ctrl::kCapacity;
  if (boot_ms >= 0) metrics_->PoolBooted(pools_.PoolOf(n.name)->name, double(boot_ms) / 1000.0);
  if (changed && it == objs_.nodes.end()) {
    // A node joins: validated alone (its name, labels, capacity, GPUs) and
    // added to the scheduler as it is, without rebuilding it, so that
    // thousands of agents can join at once.
    core::Config one;
    one.nodes.push_back(n);
    Status s = core::ValidateConfig(&one);
    if (s.ok()) s = sched_->AddNode(n);
    if (!s.ok()) {
      agents_.Restore(n.name, std::move(heard.before));
      return Status::InvalidArgument(s.message(), "node." + s.field());
    }
    objs_.nodes[n.name] = {n, 0};
    PutObject(Kind::kNode, n.name, /*added=*/true, txn);
    if (registered != nullptr) *registered = true;
  } else if (changed) {
    // GPUs this sync takes out of the pool (gone, or unhealthy now): the
    // workloads on them go back to their queues first, told which GPU and
    // why; the node's other workloads keep running.
    std::map<std::string, std::string> lost;  // Device UUID -> its GPU.
    for (const core::Gpu& g : it->second.obj.gpus) {
      auto now_g = std::find_if(n.gpus.begin(), n.gpus.end(),
                                [&](const core::Gpu& x) { return x.uuid == g.uuid; });
      if (now_g != n.gpus.end() && (now_g->healthy || !g.healthy)) continue;
      lost[g.uuid] = g.uuid;
      for (const core::MigSlice& m : g.mig) lost[m.uuid] = g.uuid;
    }
    std::set<std::string> hit;
    std::set<std::string> gpus_hit;
    if (const std::set<std::string>* on = agents_.WorkloadsOn(n.name); !lost.empty() && on) {
      for (const std::string& key : *on) {
        const WorkloadRecord& rec = workloads_.at(key);
        if (!rec.spec.admission || rec.finished()) continue;
        for (const auto& psa : rec.spec.admission->pod_set_assignments) {
          for (const auto& pl : psa.placements) {
            if (pl.node != n.name) continue;
            for (const std::string& u : pl.gpus) {
              if (auto l = lost.find(u); l != lost.end()) {
                hit.insert(key);
                gpus_hit.insert(l->second);
              }
            }
          }
        }
      }
    }
    if (!hit.empty()) {
      std::string list;
      for (const std::string& g : gpus_hit) list += (list.empty() ? "" : ", ") + g;
      ALLOT_RETURN_IF_ERROR(Reschedule(
          hit, {}, "GPUUnhealthy",
          "GPU " + list + " on node " + n.name +
              " left the pool (its agent reports it unhealthy: XID, ECC or "
              "temperature, or gone); back in its queue",
          now));
    }
    Change ch;
    ch.kind = Kind::kNode;
    ch.key = n.name;
    ch.obj = n;
    ch.mode = it == objs_.nodes.end() ? Change::Mode::kCreate
                                      : Change::Mode::kReplace;
    std::vector<Change> changes;
    changes.push_back(std::move(ch));
    // The agent knows its hardware: what no longer fits is evicted.
    const Actor agent = Actor::System("agent:" + n.name);
    // Workloads that still fit keep running; only if the change leaves one
    // without what it was given (less CPU or memory, say) is the node drained.
    Status s = ChangeConfig(agent, changes, /*drain=*/false, txn, nullptr);
    if (s.code() == StatusCode::kFailedPrecondition) {
      s = ChangeConfig(agent, std::move(changes), /*drain=*/true, txn, nullptr);
    }
    if (!s.ok()) {
      agents_.Restore(n.name, std::move(heard.before));
      return s;
    }
    if (registered != nullptr) *registered = true;
  } else if (!heard.was_ready && heard.before.last_seen_ms != 0) {
    // Back from NotReady: its node takes work again.
    ALLOT_RETURN_IF_ERROR(Reschedule({}, {n.name}, "", "", now));
  }

  if (heard.prev_sample_ms >= 0) {
    const std::vector<GpuTelemetry>& samples = agents_.Find(n.name)->gpus;
    if (const std::set<std::string>* on = agents_.WorkloadsOn(n.name)) {
      auto obj = objs_.nodes.find(n.name);
      // A workload that just went idle: the idle parker counts from now.
      if (accounting_.Attribute(n.name, obj == objs_.nodes.end() ? nullptr : &obj->second.obj,
                                *on, samples, heard.prev_sample_ms, now, &workloads_)) {
        ctrl_changes_ |= ctrl::kIdle;
      }
    }
    accounting_.Roll(n.name, samples, now);
  }

  // Pod reports (Agents::ApplyPodReports): what the workloads whose pods
  // started or exited become.
  const std::set<std::string> touched = agents_.ApplyPodReports(n.name, r.pods, workloads_);
  for (const std::string& key : touched) {
    WorkloadRecord& rec = workloads_.at(key);
    int64_t total = 0;
    for (const auto& psa : rec.spec.admission->pod_set_assignments) {
      total += int64_t(psa.placements.size());
    }
    int64_t running = 0, ok = 0, pulling = 0;
    const std::pair<const std::string, PodStatus>* failed = nullptr;
    for (const auto& entry : agents_.RunOf(key)->pods) {
      const PodStatus& ps = entry.second;
      if (ps.exited && ps.exit_code != 0 && failed == nullptr) failed = &entry;
      if (ps.exited && ps.exit_code == 0) ++ok;
      if (ps.running && !ps.exited && !ps.pulling) ++running;
      if (ps.running && !ps.exited && ps.pulling) ++pulling;
    }
    MarkDirty(key);
    // Pull time: from the first pod pulling to the last one done.
    if (pulling > 0 && rec.pulling_since_ms == 0) {
      rec.pulling_since_ms = now;
      SetCondition(&rec.conditions,
                   {"PodsReady", false, "Pulling",
                    std::to_string(pulling) + " pod(s) pulling their image", now, ""});
    } else if (pulling == 0 && rec.pulling_since_ms > 0) {
      rec.pull_ms += now - rec.pulling_since_ms;
      rec.pulling_since_ms = 0;
    }
    if (failed != nullptr) {
      const PodStatus& ps = failed->second;
      std::string why = "pod " + failed->first + " exited with code " +
                        std::to_string(ps.exit_code);
      if (ps.signal != 0) why += " (signal " + std::to_string(ps.signal) + ")";
      if (!ps.reason.empty()) why += "; " + ps.reason;
      if (!ps.last_lines.empty()) why += "; last lines:\n" + ps.last_lines;
      // The gang-restart controller (ctrl/gang_restart.h) restarts it or
      // fails it, in this turn.
      pod_failures_.emplace(key, std::move(why));
      ctrl_changes_ |= ctrl::kPodFailures;
    } else if (ok == total) {
      Finish(&rec, true, "Succeeded",
             "all " + std::to_string(total) + " pod(s) exited 0", now);
    } else if (running + ok == total && rec.state == WorkloadState::kAdmitted) {
      rec.state = WorkloadState::kRunning;
      SetCondition(&rec.conditions,
                   {"PodsReady", true, "PodsReady",
                    "all " + std::to_string(total) + " pod(s) are running",
                    now, ""});
    }
  }
  return Status::Ok();
}

std::optional<State::PodEndpoint> State::EndpointOf(const std::string& key) const {
  const Run* run = agents_.RunOf(key);
  auto w = workloads_.find(key);
  if (run == nullptr || w == workloads_.end() || w->second.state != WorkloadState::kRunning) {
    return std::nullopt;
  }
  for (const auto& [id, ps] : run->pods) {
    if (ps.running && !ps.exited && !ps.endpoint.empty()) {
      return PodEndpoint{key, id, ps.endpoint};
    }
  }
  return std::nullopt;
}

std::vector<State::PodEndpoint> State::Endpoints(const std::string& type) const {
  std::vector<PodEndpoint> out;
  for (const auto& [key, run] : agents_.runs()) {
    auto w = workloads_.find(key);
    if (w == workloads_.end() || w->second.spec.type != type) continue;
    if (std::optional<PodEndpoint> e = EndpointOf(key)) out.push_back(std::move(*e));
  }
  std::sort(out.begin(), out.end(),
            [](const PodEndpoint& a, const PodEndpoint& b) { return a.workload < b.workload; });
  return out;
}

std::vector<DesiredPod> State::DesiredPods(const std::string& node) const {
  std::vector<DesiredPod> pods = agents_.DesiredPods(node, workloads_);
  for (DesiredPod& d : pods) {
    auto w = workloads_.find(d.workload);
    if (w == workloads_.end()) continue;
    // A notebook's Jupyter: its base URL behind the server's proxy and the
    // token the proxy sends it (derived, never stored: notebook_auth.h).
    if (w->second.spec.type == "notebook") {
      d.env.emplace_back("ALLOT_BASE_URL", "/notebooks/" + d.workload + "/");
      d.env.emplace_back("JUPYTER_TOKEN", NotebookJupyterToken(*this, d.id));
    }
    // On parked capacity: its pods stop within the reclaim grace when the
    // capacity is taken back (docs/parking.md).
    if (w->second.spec.admission && w->second.spec.admission->on_parked_capacity) {
      if (const int64_t grace = sched_->ReclaimGraceSeconds(d.workload); grace >= 0) {
        d.grace_ms = std::min(d.grace_ms, grace * 1000);
      }
    }
    // d.id is "ns/name/aN/podset/index".
    const size_t set_at = d.id.find('/', d.workload.size() + 1) + 1;
    const size_t set_end = d.id.rfind('/');
    if (set_at == 0 || set_end <= set_at) continue;
    const std::string pod_set = d.id.substr(set_at, set_end - set_at);
    for (const core::PodSet& ps : w->second.spec.pod_sets) {
      if (ps.name != pod_set) continue;
      Status s = secrets_.Resolve(w->second.spec.ns, ps, &d);
      // Host paths as the tenant's annotation allows them now: read-only
      // unless listed with :rw.
      auto tenant = objs_.tenants.find(w->second.spec.ns);
      for (core::Volume& v : d.volumes) {
        if (v.type != core::Volume::Type::kHostPath || !s.ok()) continue;
        Result<bool> rw = core::HostPathAccess(
            tenant == objs_.tenants.end() ? core::Labels{} : tenant->second.obj.annotations,
            v.path);
        if (rw.ok()) v.read_only = !*rw;
        else s = rw.status();
      }
      // The host's network too, as the tenant is allowed now.
      if (s.ok() && d.host_network) {
        s = core::HostNetworkAllowed(tenant == objs_.tenants.end()
                                         ? core::Labels{}
                                         : tenant->second.obj.annotations);
      }
      if (!s.ok()) {
        d.start_error = "CreateContainerConfigError: " + s.message();
        d.files.clear();
        d.registry_auth.clear();
      }
    }
  }
  return pods;
}

}  // namespace allot::server
