// Agents: liveness, pods and logs of the node agents (server/agents.h).
#include "server/agents.h"

#include <algorithm>
#include <charconv>
#include <cstdint>

#include "core/manifest_encode.h"
#include "server/state_internal.h"

namespace allot::server {

using internal::Join;
namespace json = boost::json;

namespace {

// "ns/name/aN/podset/index" (or ".../aNrG/...", WorkloadRecord::
// PodAttempt) -> its parts, `attempt` the "aN" or "aNrG" text; false when
// it is not one.
bool ParsePodId(const std::string& id, std::string* key, std::string* attempt,
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
  auto [p, ec] = std::from_chars(parts[4].data(), parts[4].data() + parts[4].size(), *index);
  *key = parts[0] + "/" + parts[1];
  *attempt = parts[2];
  *pod_set = parts[3];
  return ec == std::errc() && p == parts[4].data() + parts[4].size() && *index >= 0;
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

bool Agents::Ready(const std::string& node) const {
  auto it = agents_.find(node);
  return it == agents_.end() || it->second.ready;
}

Agents::Heard Agents::Hear(const std::string& node, int64_t now, const std::string& address,
                           bool simulated, std::vector<GpuTelemetry> samples,
                           proto::PodNetwork network) {
  Heard h;
  h.before = agents_[node];
  AgentInfo& a = agents_[node];
  h.was_ready = a.ready && a.last_seen_ms != 0;
  if (!a.ready || a.last_seen_ms == 0) {  // From NotReady, or Unknown since start.
    h.came_back = true;
    a.transition_ms = now;
    a.not_ready_message.clear();
  }
  a.last_seen_ms = now;
  if (a.network != network || (!network.cidr.empty() && a.address != address)) {
    for (const auto& [other, info] : agents_) {
      if (!info.network.cidr.empty() || other == node) changed_nodes_.insert(other);
    }
    a.network = std::move(network);
  }
  a.address = address;
  a.ready = true;
  a.simulated = simulated;
  if (!samples.empty()) {
    h.prev_sample_ms = a.sampled_ms;
    a.gpus = std::move(samples);
    a.sampled_ms = now;
  }
  return h;
}

std::vector<proto::PodNetwork> Agents::NetworkPeers(const std::string& node) const {
  std::vector<proto::PodNetwork> peers;
  for (const auto& [name, a] : agents_) {
    if (name == node || a.network.cidr.empty() || a.address.empty()) continue;
    peers.push_back(a.network);
    peers.back().node = name;
    peers.back().address = a.address;
  }
  return peers;
}

void Agents::MarkNotReady(const std::string& node, int64_t now, const std::string& message) {
  AgentInfo& a = agents_[node];
  a.ready = false;
  a.transition_ms = now;
  a.not_ready_message = message;
}

json::object Agents::ReadyCondition(const std::string& node) const {
  json::object c;
  c["type"] = "Ready";
  auto transition = [&c, this](int64_t ms) {
    if (ms == 0) ms = first_turn_ms_;  // Unchanged since start.
    if (ms == 0) return;
    c["lastTransitionTime"] = core::FormatRfc3339Ms(ms);
    c["lastTransitionUnixMs"] = ms;
  };
  auto it = agents_.find(node);
  if (it == agents_.end()) {
    c["status"] = "True";
    c["reason"] = "NoAgent";
    c["message"] = "configured without an agent: always schedulable";
    transition(0);
    return c;
  }
  const AgentInfo& a = it->second;
  if (!a.ready) {
    c["status"] = "False";
    c["reason"] = "AgentNotHeartbeating";
    c["message"] = "NotReady: " + a.not_ready_message +
                   "; its workloads went back to their queues";
  } else if (a.last_seen_ms == 0) {
    c["status"] = "Unknown";
    c["reason"] = "AwaitingAgent";
    c["message"] = "the server restarted and has not heard from this node's agent "
                   "yet; it keeps its workloads during the startup grace period";
  } else {
    c["status"] = "True";
    c["reason"] = "AgentReady";
    c["message"] = "its agent is heartbeating";
  }
  if (a.last_seen_ms != 0) {
    c["lastHeartbeatTime"] = core::FormatRfc3339Ms(a.last_seen_ms);
    c["lastHeartbeatUnixMs"] = a.last_seen_ms;
  }
  transition(a.transition_ms);
  return c;
}

std::map<std::string, std::pair<int64_t, GpuTelemetry>> Agents::LatestTelemetry(
    const std::string& node) const {
  std::map<std::string, std::pair<int64_t, GpuTelemetry>> out;
  for (const auto& [name, info] : agents_) {
    if ((!node.empty() && name != node) || !info.ready) continue;
    for (const GpuTelemetry& t : info.gpus) out[t.uuid] = {info.sampled_ms, t};
  }
  return out;
}

void Agents::Reindex(const std::string& key, const WorkloadRecord& rec, bool gone) {
  std::vector<std::string> nodes;
  if (!gone && rec.spec.admission && !rec.finished()) {
    for (const auto& psa : rec.spec.admission->pod_set_assignments) {
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

void Agents::ForgetPods(const std::string& key, const std::vector<std::string>& pod_sets) {
  auto r = runs_.find(key);
  if (r == runs_.end()) return;
  std::erase_if(r->second.pods, [&](const auto& entry) {
    std::string k, attempt, pod_set;
    int32_t index = 0;
    return ParsePodId(entry.first, &k, &attempt, &pod_set, &index) &&
           std::find(pod_sets.begin(), pod_sets.end(), pod_set) != pod_sets.end();
  });
}

std::set<std::string> Agents::ApplyPodReports(const std::string& node,
                                              const std::vector<PodReport>& pods,
                                              const Workloads& workloads) {
  std::set<std::string> touched;
  for (const PodReport& pr : pods) {
    std::string key, attempt, pod_set;
    int32_t index = 0;
    if (!ParsePodId(pr.id, &key, &attempt, &pod_set, &index)) continue;
    auto wit = workloads.find(key);
    if (wit == workloads.end()) continue;
    const WorkloadRecord& rec = wit->second;
    if (!rec.spec.admission || rec.finished() || rec.PodAttempt(pod_set) != attempt) {
      continue;
    }
    bool here = false;
    for (const auto& psa : rec.spec.admission->pod_set_assignments) {
      if (psa.name == pod_set && index < int32_t(psa.placements.size())) {
        here = psa.placements[index].node == node;
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
    } else if (!pr.exited &&
               (!ps.running || ps.pulling != pr.pulling || ps.pulled_bytes != pr.pulled_bytes ||
                ps.pull_total_bytes != pr.pull_total_bytes || ps.endpoint != pr.endpoint)) {
      ps.running = true;
      ps.endpoint = pr.endpoint;
      ps.pulling = pr.pulling;
      ps.pulled_bytes = pr.pulled_bytes;
      ps.pull_total_bytes = pr.pull_total_bytes;
      touched.insert(key);
    }
  }
  return touched;
}

Result<Agents::PodLogTarget> Agents::LogTarget(const std::string& key,
                                               const WorkloadRecord& rec, int32_t rank,
                                               int32_t attempt) const {
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
      // A pod set started again by a resume names its pods so (only the
      // current attempt's: earlier ones' logs are their last start's).
      t.pod_id = key + "/" +
                 (attempt == rec.attempt ? rec.PodAttempt(psa.name)
                                         : "a" + std::to_string(attempt)) +
                 "/" + psa.name + "/" + std::to_string(j);
      if (!agents_.count(t.node)) {
        return Status::FailedPrecondition("node " + t.node +
                                          " has no agent: no logs to read");
      }
      if (!Ready(t.node)) {
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

std::vector<DesiredPod> Agents::DesiredPods(const std::string& node,
                                            const Workloads& workloads) const {
  std::vector<DesiredPod> out;
  auto idx = node_index_.find(node);
  if (idx == node_index_.end()) return out;
  for (const std::string& key : idx->second) {
    const WorkloadRecord& rec = workloads.at(key);
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
        std::string id =
            key + "/" + rec.PodAttempt(psa.name) + "/" + psa.name + "/" + std::to_string(j);
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
          d.image = ps->image;
          d.image_pull_policy = ps->image_pull_policy;
          d.volumes = ps->volumes;
          d.mounts = ps->volume_mounts;
          d.run_as_user = ps->run_as_user;
          d.run_as_group = ps->run_as_group;
          d.run_as_non_root = ps->run_as_non_root;
          d.read_only_root = ps->read_only_root;
          d.host_network = ps->host_network;
          d.port = ps->port;
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
        // A Job's completionMode: Indexed tells each pod its index so.
        set("JOB_COMPLETION_INDEX", std::to_string(j));
        set("ALLOT_ATTEMPT", std::to_string(rec.attempt));
        out.push_back(std::move(d));
      }
    }
  }
  return out;
}

}  // namespace allot::server
