// Agents: what the server knows of the node agents. Each agent's liveness
// (when it was last heard from, Ready or NotReady and why, its address)
// and its GPUs' latest telemetry; where each admitted, unfinished
// workload's pods run and what agents said of them; the pods each node
// should run (level-triggered: an agent is told the whole set, so a lost
// message or a restart on either side heals on the next sync); where a
// pod's log lives. A part of the state (server/state.h): owner thread only.
//
// Agents keeps no workloads: it is given the records it reads, and keeps
// its index of them in step when told (Reindex). What a sync or a NotReady
// node changes in the workloads and the scheduler is State's
// (server/state_agents.cc, state_controllers.cc).
#pragma once

#include <boost/json/object.hpp>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/status.h"
#include "proto/agent_protocol.h"
#include "server/records.h"

namespace allot::server {

// ---- The node agent protocol --------------------------------------------
// Nodes registered by an agent carry this label ("true"): the server then
// expects their heartbeats and marks them NotReady without.
inline constexpr char kAgentLabel[] = "allot.dev/agent";
// The agent protocol's messages (proto/agent_protocol.h).
using proto::AgentReport;
using proto::DesiredPod;
using proto::GpuTelemetry;
using proto::PodReport;

// What an agent said about one pod of the workload's current attempt.
struct PodStatus {
  bool running = false;
  bool exited = false;
  int exit_code = 0;
  int signal = 0;
  std::string last_lines;
  std::string reason;  // PodReport::reason.
  bool pulling = false;  // Running, still getting its image.
  int64_t pulled_bytes = 0, pull_total_bytes = 0;  // Of that image, so far.
  // Where it serves (PodReport::endpoint): "HOST:PORT", on its node; empty:
  // no port, or not reported yet. Changes at every start: never stored.
  std::string endpoint;
};

// One agent: who was heard from when (nodes with the allot.dev/agent
// label).
struct AgentInfo {
  int64_t last_seen_ms = 0;  // 0: not yet heard since start.
  bool ready = true;
  // When `ready` last changed (0: not since start), and why it is false.
  int64_t transition_ms = 0;
  std::string not_ready_message;
  std::string address;
  bool simulated = false;
  std::vector<GpuTelemetry> gpus;  // The latest sample of each GPU.
  int64_t sampled_ms = 0;
  proto::PodNetwork network;  // Its tenants' pod network (cidr empty: none).
};

// An admitted, unfinished workload's nodes and what agents said of its
// pods (current attempt, by pod id).
struct Run {
  std::vector<std::string> nodes;
  std::map<std::string, PodStatus> pods;
};

class Agents {
 public:
  using Workloads = std::map<std::string, WorkloadRecord>;

  // ---- Liveness ---------------------------------------------------------
  // An agent's node found at start: Unknown until its agent is heard from.
  void Expect(const std::string& node) { agents_[node] = {}; }
  // nullptr: no agent on `node`.
  const AgentInfo* Find(const std::string& node) const {
    auto it = agents_.find(node);
    return it == agents_.end() ? nullptr : &it->second;
  }
  const std::map<std::string, AgentInfo>& all() const { return agents_; }
  // Whether `node` takes work as far as its agent goes (true without one).
  bool Ready(const std::string& node) const;

  // What one sync of an agent changed in its liveness.
  struct Heard {
    AgentInfo before;       // As it was: Restore puts it back.
    bool was_ready = false;  // Ready, and heard from since start.
    // It was NotReady, or not heard from since start: its transition is now.
    bool came_back = false;
    int64_t prev_sample_ms = -1;  // >= 0: GPU samples came, after these.
  };
  // `node`'s agent is heard from at `now`: Ready, at `address`, with
  // `samples` (when any) as its GPUs' latest.
  // A change of its pod network (`network`) is news for every agent with
  // one: they are answered at once (TakeChangedNodes), it too.
  Heard Hear(const std::string& node, int64_t now, const std::string& address,
             bool simulated, std::vector<GpuTelemetry> samples,
             proto::PodNetwork network = {});
  // Undoes Hear when the sync that heard it is refused.
  void Restore(const std::string& node, AgentInfo before) {
    agents_[node] = std::move(before);
  }
  void MarkNotReady(const std::string& node, int64_t now, const std::string& message);
  // The first turn's time (State::FinishTurn): the last transition of a
  // node that has not changed since start.
  void NoteTurn(int64_t now) {
    if (first_turn_ms_ == 0) first_turn_ms_ = now;
  }
  // The node's Ready condition for its status.conditions (True with reason
  // NoAgent for a node without an agent).
  boost::json::object ReadyCondition(const std::string& node) const;
  // The latest sample of each GPU of Ready agent nodes (`node` empty: all),
  // by UUID, with when it came.
  std::map<std::string, std::pair<int64_t, GpuTelemetry>> LatestTelemetry(
      const std::string& node) const;

  // ---- Pods -------------------------------------------------------------
  // Keeps the index of where workloads run and the nodes whose desired
  // pods changed in step with rec's admission (`gone`: the workload is
  // being deleted).
  void Reindex(const std::string& key, const WorkloadRecord& rec, bool gone = false);
  // The admitted, unfinished workloads placed on `node` (nullptr: none).
  const std::set<std::string>* WorkloadsOn(const std::string& node) const {
    auto it = node_index_.find(node);
    return it == node_index_.end() ? nullptr : &it->second;
  }
  const std::map<std::string, std::set<std::string>>& workloads_by_node() const {
    return node_index_;
  }
  const Run* RunOf(const std::string& key) const {
    auto it = runs_.find(key);
    return it == runs_.end() ? nullptr : &it->second;
  }
  const std::unordered_map<std::string, Run>& runs() const { return runs_; }
  // Forgets what agents said of the workload's pods: a new attempt starts,
  // or none (an eviction).
  void ForgetPods(const std::string& key) {
    if (auto r = runs_.find(key); r != runs_.end()) r->second.pods.clear();
  }
  // ...of the pods of these pod sets only (a park in part stopped them).
  void ForgetPods(const std::string& key, const std::vector<std::string>& pod_sets);
  // The pod networks of the agents other than `node`'s, with their nodes
  // and addresses: the peers its agent routes to (tenant networks across
  // nodes).
  std::vector<proto::PodNetwork> NetworkPeers(const std::string& node) const;
  // Nodes whose desired pods (or peers) changed since the last call.
  std::set<std::string> TakeChangedNodes() { return std::exchange(changed_nodes_, {}); }

  // Records the pod reports of `node`'s agent. Only a pod of a workload's
  // current attempt, placed on this node, counts; anything else the agent
  // runs is not desired and stops. Returns the workloads whose pods started
  // running or exited.
  std::set<std::string> ApplyPodReports(const std::string& node,
                                        const std::vector<PodReport>& pods,
                                        const Workloads& workloads);
  // The pods `node` should run now.
  std::vector<DesiredPod> DesiredPods(const std::string& node,
                                      const Workloads& workloads) const;

  // Where the log of one pod of workload `key` (`rec`) lives: pod `rank`
  // (0-based, over its pod sets in admission order) of attempt `attempt`
  // (0: the current or last one). FailedPrecondition when it has no pods
  // (not admitted now, or requeued) or its node is not an agent's or
  // NotReady; InvalidArgument when the attempt or the rank is out of range.
  struct PodLogTarget {
    std::string node;
    std::string pod_id;
    bool finished = false;  // The pod will write no more.
  };
  Result<PodLogTarget> LogTarget(const std::string& key, const WorkloadRecord& rec,
                                 int32_t rank, int32_t attempt) const;

 private:
  std::map<std::string, AgentInfo> agents_;
  int64_t first_turn_ms_ = 0;
  std::unordered_map<std::string, Run> runs_;
  std::map<std::string, std::set<std::string>> node_index_;
  std::set<std::string> changed_nodes_;
};

}  // namespace allot::server
