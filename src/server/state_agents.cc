// State: node agents. Registration and heartbeats, the pods each node
// should run (level-triggered: an agent is told the whole set, so a lost
// message or a restart on either side heals on the next sync), pod reports
// (Running, Succeeded, Failed) and NotReady nodes.
#include <algorithm>
#include <charconv>
#include <cstdint>

#include "core/manifest.h"
#include "server/state.h"
#include "server/state_internal.h"

namespace allot::server {

using internal::Join;
using internal::SetCondition;

namespace {

// "ns/name/aN/podset/index" -> its parts; false when it is not one.
bool ParsePodId(const std::string& id, std::string* key, int32_t* attempt,
                std::string* pod_set, int32_t* index) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    size_t slash = id.find('/', start);
    parts.push_back(id.substr(start, slash - start));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  if (parts.size() != 5 || parts[2].size() < 2 || parts[2][0] != 'a') {
    return false;
  }
  auto num = [](const std::string& s, int32_t* out) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
    return ec == std::errc() && p == s.data() + s.size() && *out >= 0;
  };
  *key = parts[0] + "/" + parts[1];
  *pod_set = parts[3];
  return num(parts[2].substr(1), attempt) && num(parts[4], index);
}

// "250ms", "5s", "2m", "1h" or plain seconds; -1 when malformed.
int64_t DurationMs(const std::string& s) {
  int64_t n = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (ec != std::errc() || n < 0 || n > (int64_t(1) << 40)) return -1;
  std::string unit(p, s.data() + s.size());
  if (unit.empty() || unit == "s") return n * 1000;
  if (unit == "ms") return n;
  if (unit == "m") return n * 60 * 1000;
  if (unit == "h") return n * 3600 * 1000;
  return -1;
}

// A port for the workload's rendezvous (torchrun's MASTER_PORT), stable
// for the workload: 20000-39999.
int MasterPort(const std::string& key) {
  uint32_t h = 2166136261u;
  for (char c : key) h = (h ^ uint8_t(c)) * 16777619u;
  return 20000 + int(h % 20000);
}

}  // namespace

bool State::NodeReady(const std::string& node) const {
  auto it = agents_.find(node);
  return it == agents_.end() || it->second.ready;
}

Result<State::PodLogTarget> State::LogTarget(const Principal& p,
                                             const std::string& key,
                                             int32_t rank,
                                             int32_t attempt) const {
  auto it = workloads_.find(key);
  if (it == workloads_.end() || !CanSee(p, Kind::kWorkload, it->second.spec.ns)) {
    return Status::NotFound("Workload " + key + " does not exist");
  }
  const WorkloadRecord& rec = it->second;
  if (!rec.spec.admission || rec.attempt == 0) {
    return Status::FailedPrecondition(
        "Workload " + key + " has no pods: it is " +
        std::string(ToString(rec.state)) + ", not admitted");
  }
  if (attempt == 0) attempt = rec.attempt;
  if (attempt < 1 || attempt > rec.attempt) {
    return Status::InvalidArgument("attempt must be 1 to " +
                                       std::to_string(rec.attempt),
                                   "attempt");
  }
  int32_t i = 0;
  for (const auto& psa : rec.spec.admission->pod_set_assignments) {
    for (size_t j = 0; j < psa.placements.size(); ++j, ++i) {
      if (i != rank) continue;
      PodLogTarget t;
      t.node = psa.placements[j].node;
      t.pod_id = key + "/a" + std::to_string(attempt) + "/" + psa.name + "/" +
                 std::to_string(j);
      if (!agents_.count(t.node)) {
        return Status::FailedPrecondition("node " + t.node +
                                          " has no agent: no logs to read");
      }
      if (!NodeReady(t.node)) {
        return Status::FailedPrecondition(
            "node " + t.node + " is NotReady: its logs cannot be read now");
      }
      t.finished = rec.finished() || attempt < rec.attempt;
      if (const Run* run = RunOf(key); run != nullptr && !t.finished) {
        auto pod = run->pods.find(t.pod_id);
        t.finished = pod != run->pods.end() && pod->second.exited;
      }
      return t;
    }
  }
  return Status::InvalidArgument(
      "pod must be 0 to " + std::to_string(i - 1) + " (the workload has " +
          std::to_string(i) + " pod(s))",
      "pod");
}

std::map<std::string, std::pair<int64_t, GpuTelemetry>> State::LatestTelemetry(
    const std::string& node) const {
  std::map<std::string, std::pair<int64_t, GpuTelemetry>> out;
  for (const auto& [name, info] : agents_) {
    if ((!node.empty() && name != node) || !info.ready) continue;
    for (const GpuTelemetry& t : info.gpus) out[t.uuid] = {info.sampled_ms, t};
  }
  return out;
}

void State::Reindex(const std::string& key, WorkloadRecord* rec, bool gone) {
  std::vector<std::string> nodes;
  if (!gone && rec->spec.admission && !rec->finished()) {
    for (const auto& psa : rec->spec.admission->pod_set_assignments) {
      for (const auto& pl : psa.placements) nodes.push_back(pl.node);
    }
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  }
  // Every node of the old or the new placement learns of the change (a new
  // attempt on the same nodes changes their pods too).
  auto run = runs_.find(key);
  if (run != runs_.end()) {
    for (const std::string& n : run->second.nodes) {
      node_index_[n].erase(key);
      if (node_index_[n].empty()) node_index_.erase(n);
      changed_nodes_.insert(n);
    }
  }
  for (const std::string& n : nodes) {
    node_index_[n].insert(key);
    changed_nodes_.insert(n);
  }
  if (nodes.empty()) {
    if (run != runs_.end()) runs_.erase(run);
  } else {
    runs_[key].nodes = std::move(nodes);
  }
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
  auto it = objs_.nodes.find(n.name);
  if (it != objs_.nodes.end()) {
    // Cordons and taints are the admins'; hardware and labels the agent's.
    n.unschedulable = it->second.obj.unschedulable;
    n.taints = it->second.obj.taints;
    n.source = it->second.obj.source;
  }
  const bool changed = it == objs_.nodes.end() || !(it->second.obj == n);
  AgentInfo before = agents_[n.name];
  AgentInfo& a = agents_[n.name];
  const bool was_ready = a.ready && a.last_seen_ms != 0;
  if (!a.ready || a.last_seen_ms == 0) {  // From NotReady, or Unknown since start.
    ctrl_changes_ |= ctrl::kAgents;
    a.transition_ms = now;
    a.not_ready_message.clear();
  }
  a.last_seen_ms = now;
  a.address = r.address;
  a.ready = true;
  a.simulated = r.simulated;
  int64_t prev_sample_ms = -1;  // >= 0: samples came with this sync.
  if (!r.gpu_samples.empty()) {
    prev_sample_ms = a.sampled_ms;
    a.gpus = std::move(r.gpu_samples);
    a.sampled_ms = now;
  }
  if (changed && it == objs_.nodes.end()) {
    // A node joins: validated alone (its name, labels, capacity, GPUs) and
    // added to the scheduler as it is, without rebuilding it, so that
    // thousands of agents can join at once.
    core::Config one;
    one.nodes.push_back(n);
    Status s = core::ValidateConfig(&one);
    if (s.ok()) s = sched_->AddNode(n);
    if (!s.ok()) {
      agents_[n.name] = before;
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
    if (auto idx = node_index_.find(n.name); !lost.empty() && idx != node_index_.end()) {
      for (const std::string& key : idx->second) {
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
      agents_[n.name] = before;
      return s;
    }
    if (registered != nullptr) *registered = true;
  } else if (!was_ready && before.last_seen_ms != 0) {
    // Back from NotReady: its node takes work again.
    ALLOT_RETURN_IF_ERROR(Reschedule({}, {n.name}, "", "", now));
  }

  if (prev_sample_ms >= 0) {
    const std::vector<GpuTelemetry>& samples = agents_[n.name].gpus;
    if (auto idx = node_index_.find(n.name); idx != node_index_.end()) {
      auto obj = objs_.nodes.find(n.name);
      accounting_.Attribute(n.name, obj == objs_.nodes.end() ? nullptr : &obj->second.obj,
                            idx->second, samples, prev_sample_ms, now, &workloads_);
    }
    accounting_.Roll(n.name, samples, now);
  }

  // Pod reports. Only a pod of a workload's current attempt, placed on this
  // node, counts; anything else the agent runs is not desired and stops.
  std::set<std::string> touched;
  for (const PodReport& pr : r.pods) {
    std::string key, pod_set;
    int32_t attempt = 0, index = 0;
    if (!ParsePodId(pr.id, &key, &attempt, &pod_set, &index)) continue;
    auto wit = workloads_.find(key);
    if (wit == workloads_.end()) continue;
    WorkloadRecord& rec = wit->second;
    if (!rec.spec.admission || rec.finished() || rec.attempt != attempt) {
      continue;
    }
    bool here = false;
    for (const auto& psa : rec.spec.admission->pod_set_assignments) {
      if (psa.name == pod_set && index < int32_t(psa.placements.size())) {
        here = psa.placements[index].node == n.name;
      }
    }
    if (!here || !runs_.count(key)) continue;
    PodStatus& ps = runs_[key].pods[pr.id];
    if (pr.exited && !ps.exited) {
      ps.exited = true;
      ps.exit_code = pr.exit_code;
      ps.signal = pr.signal;
      ps.last_lines = pr.last_lines;
      ps.reason = pr.reason;
      touched.insert(key);
    } else if (!pr.exited && !ps.running) {
      ps.running = true;
      touched.insert(key);
    }
  }
  for (const std::string& key : touched) {
    WorkloadRecord& rec = workloads_.at(key);
    int64_t total = 0;
    for (const auto& psa : rec.spec.admission->pod_set_assignments) {
      total += int64_t(psa.placements.size());
    }
    int64_t running = 0, ok = 0;
    const std::pair<const std::string, PodStatus>* failed = nullptr;
    for (const auto& entry : runs_[key].pods) {
      const PodStatus& ps = entry.second;
      if (ps.exited && ps.exit_code != 0 && failed == nullptr) failed = &entry;
      if (ps.exited && ps.exit_code == 0) ++ok;
      if (ps.running && !ps.exited) ++running;
    }
    MarkDirty(key);
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

std::vector<DesiredPod> State::DesiredPods(const std::string& node) const {
  std::vector<DesiredPod> out;
  auto idx = node_index_.find(node);
  if (idx == node_index_.end()) return out;
  for (const std::string& key : idx->second) {
    const WorkloadRecord& rec = workloads_.at(key);
    if (!rec.spec.admission || rec.finished()) continue;
    const core::Admission& adm = *rec.spec.admission;
    const Run* run = RunOf(key);
    // Ranks over every pod of the workload, in pod-set order; nodes in the
    // order their first pod appears.
    int64_t world = 0;
    std::vector<std::string> node_order;
    for (const auto& psa : adm.pod_set_assignments) {
      for (const auto& pl : psa.placements) {
        ++world;
        if (std::find(node_order.begin(), node_order.end(), pl.node) ==
            node_order.end()) {
          node_order.push_back(pl.node);
        }
      }
    }
    const int64_t node_rank =
        std::find(node_order.begin(), node_order.end(), node) -
        node_order.begin();
    std::string master = node_order.empty() ? node : node_order[0];
    if (auto m = agents_.find(master);
        m != agents_.end() && !m->second.address.empty()) {
      master = m->second.address;
    }
    int64_t grace_ms = 30000;
    if (auto g = rec.spec.annotations.find("allot.dev/termination-grace-period");
        g != rec.spec.annotations.end() && DurationMs(g->second) >= 0) {
      grace_ms = DurationMs(g->second);
    }
    int64_t sim_ms = 0;
    if (auto g = rec.spec.annotations.find("allot.dev/simulated-runtime");
        g != rec.spec.annotations.end() && DurationMs(g->second) >= 0) {
      sim_ms = DurationMs(g->second);
    }
    int64_t rank = 0, local_rank = 0;
    for (const auto& psa : adm.pod_set_assignments) {
      const core::PodSet* ps = nullptr;
      for (const core::PodSet& x : rec.spec.pod_sets) {
        if (x.name == psa.name) ps = &x;
      }
      for (size_t j = 0; j < psa.placements.size(); ++j, ++rank) {
        const core::PodPlacement& pl = psa.placements[j];
        if (pl.node != node) continue;
        std::string id = key + "/a" + std::to_string(rec.attempt) + "/" +
                         psa.name + "/" + std::to_string(j);
        const int64_t my_local_rank = local_rank++;
        if (run != nullptr) {
          auto p = run->pods.find(id);
          if (p != run->pods.end() && p->second.exited) continue;  // Done.
        }
        DesiredPod d;
        d.id = std::move(id);
        d.workload = key;
        d.gpus = pl.gpus;
        d.grace_ms = grace_ms;
        d.simulated_runtime_ms = sim_ms;
        if (ps != nullptr) {
          d.command = ps->command;
          d.args = ps->args;
          d.env = ps->env;
          d.working_dir = ps->working_dir;
          if (auto c = ps->requests.find("cpu"); c != ps->requests.end()) {
            d.cpu_milli = std::max<int64_t>(0, c->second.milli());
          }
          if (auto m = ps->requests.find("memory"); m != ps->requests.end()) {
            d.memory_bytes = std::max<int64_t>(0, m->second.UnitsCeil());
          }
        }
        // Ours last: they win over a pod's own values.
        auto set = [&](const char* k, std::string v) {
          d.env.emplace_back(k, std::move(v));
        };
        std::string devices = Join(pl.gpus, ",");
        set("CUDA_VISIBLE_DEVICES", devices);
        set("NVIDIA_VISIBLE_DEVICES", devices.empty() ? "void" : devices);
        set("WORLD_SIZE", std::to_string(world));
        set("RANK", std::to_string(rank));
        set("LOCAL_RANK", std::to_string(my_local_rank));
        set("NNODES", std::to_string(node_order.size()));
        set("NODE_RANK", std::to_string(node_rank));
        set("MASTER_ADDR", master);
        set("MASTER_PORT", std::to_string(MasterPort(key)));
        set("ALLOT_WORKLOAD", key);
        set("ALLOT_TENANT", rec.spec.ns);
        set("ALLOT_POD_SET", psa.name);
        set("ALLOT_POD_INDEX", std::to_string(j));
        set("ALLOT_ATTEMPT", std::to_string(rec.attempt));
        out.push_back(std::move(d));
      }
    }
  }
  return out;
}

}  // namespace allot::server
