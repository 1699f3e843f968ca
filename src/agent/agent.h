// Agent: one node's side of the agent protocol (proto/agent_protocol.h,
// docs/agent.md), the logic of `allot agent`.
//
// It dials out to the server (so it works from behind NAT) and keeps one
// long poll open: POST /api/v1/agents/sync?wait=N reports the node (labels,
// CPUs, memory, GPUs and their telemetry) and its pods, and is answered as
// soon as the set of pods the node should run changes, or after N s (the
// heartbeat). A second connection reports a pod's exit and answers the
// server's log reads at once. Each answer is the whole desired set, so the
// agent starts what it lacks, stops what is no longer wanted (SIGTERM,
// grace period, SIGKILL), and forgets what the server has recorded; an
// answer older than one already applied changes nothing. A pod waits to
// start until no stopping pod on this node holds one of its GPUs, so a
// device is never used twice. Transport errors are retried with backoff
// (0.5 s doubling to kMaxReconnectBackoffMs, heartbeat.h).
//
// Threads: PollLoop runs on one thread (the poll thread: Run's caller);
// ReportStep on one other thread at a time (the reporter: a thread of Run's
// own, or one that serves many agents, as for simulated nodes). Each has a
// connection of its own; both take the agent's mutex for the pod tables,
// the answers and the report. synced() may be read from any thread.
// It touches: its GpuSource and Executor (both thread-safe), the pod log
// files under its log directory (read back for log reads), the server
// through the connections that `connect` opens, and `out` (the poll thread
// only, then Shutdown).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <boost/json/value.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <vector>

#include "agent/exec.h"
#include "agent/gpu.h"
#include "agent/tenant_ids.h"
#include "core/model.h"
#include "core/status.h"
#include "proto/agent_protocol.h"

namespace allot::agent {

// A connection to the server, as the agent uses it. One thread at a time.
class ServerLink {
 public:
  virtual ~ServerLink() = default;
  // POSTs the JSON `body` to `target` (path and query). A transport error
  // or a non-2xx answer is an error Status; else the answer's JSON.
  virtual Result<boost::json::value> Post(const std::string& target,
                                          const std::string& body) = 0;
  // The server's address, for messages.
  virtual const std::string& server() const = 0;
};

// Opens a connection to the server. Called from the poll thread and the
// reporter, perhaps at once: it must be thread-safe.
using Connect = std::function<Result<std::unique_ptr<ServerLink>>()>;

// What an agent is told beyond its node (`allot agent`'s flags).
struct AgentOptions {
  std::string address;   // MASTER_ADDR for pods here; empty: the node's name.
  int poll_seconds = 5;  // How long the server may hold a sync.
  // GPU telemetry goes with the next sync at most this often; 0: never.
  int sample_seconds = 10;
  // Simulated execution: a pod without a command still starts, and pods
  // are not switched to a tenant's user.
  bool simulate_exec = false;
  // A process node runs the command of a pod that names an image on the
  // host, saying so in the pod's log (`allot up`, development machines);
  // false: such a pod fails, naming --runtime container.
  bool ignore_images = false;
};

// A unix user that a tenant's pods run as (--run-as).
struct RunAsUser {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
  std::string home;
};

// Process pods of a tenant that --run-as does not map run as the
// tenant's own unprivileged host ids, never as the agent's root: uid and
// gid BASE + k * 65536, k the tenant's number on this node (tenant_ids.h;
// the same ids as its containers' root), with no supplementary groups, in
// a home directory of its own (HOME_ROOT/TENANT, 0700, owned by those
// ids) that is also its default working directory.
struct TenantUsers {
  uint32_t base = 0;       // 0: off (pods run as the agent's user).
  std::string ids_file;    // The tenants' numbers.
  std::string home_root;
};

class Agent {
 public:
  // `node` carries its GPUs already (from `gpus`). Pods' logs go to
  // `log_dir`; `tag` (ALLOT_AGENT_TAG in every pod's environment) lets a
  // later run of this agent find the processes this one leaves behind.
  Agent(Connect connect, AgentOptions options, std::unique_ptr<GpuSource> gpus,
        std::unique_ptr<Executor> exec, core::Node node, std::string log_dir,
        std::string tag, std::ostream& out);
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // Tenant -> the user its pods run as ("*": every other tenant). Before
  // Run.
  void set_run_as(std::map<std::string, RunAsUser> m) {
    run_as_ = std::move(m);
  }
  // Pods of the other tenants as their own ids (process runtime, as
  // root). Before Run.
  void set_tenant_users(TenantUsers u) {
    tenant_ids_ = std::make_unique<TenantIds>(u.ids_file);
    tenant_users_ = std::move(u);
  }

  // Runs the node until *stop: the long poll here, exits and log reads
  // reported by a thread of its own; then stops its pods.
  void Run(const std::atomic<bool>* stop);

  // Stops every pod (10 s grace) and waits until they have ended.
  void Shutdown();

  // The long poll: the heartbeat, and how starts and stops arrive. Returns
  // once *stop is set (within a poll's wait).
  void PollLoop(const std::atomic<bool>* stop);

  // Whether the last sync succeeded.
  bool synced() const { return synced_; }

  // One round of the reporter (one thread at a time): sends exits and the
  // answers to log reads at once, on a connection of its own. False after a
  // transport error.
  bool ReportStep();

 private:
  using LogAsk = proto::LogRequest;

  std::set<std::string> pulling_;  // Running pods still pulling, as last reported.
  std::vector<proto::PodNetwork> peers_;  // As last given to the executor.
  struct LocalPod {
    std::vector<std::string> gpus;
    int64_t grace_ms = 30000;
    bool stopping = false;
    // Whether it used CPU since the last look (RefreshActivity): its
    // simulated GPUs read busy only then. Unknown counts as busy.
    bool active = true;
    double cpu_s = -1;  // Its CPU seconds at the last look; -1: none yet.
    std::chrono::steady_clock::time_point cpu_at{};
    // Where it serves (PodReport::endpoint), "" for none; a container on
    // its tenant's network: its port, until its address is known.
    std::string endpoint{};
    int32_t port = 0;
    // Something accepted a connection at the endpoint: only then is it
    // reported (a proxy that dialed it sooner would be refused).
    bool serving = false;
  };
  // Simulated GPUs follow what runs: a pod that used less than
  // kActiveCpuShare of one CPU since the last look leaves its GPUs idle.
  static constexpr double kActiveCpuShare = 0.05;
  static constexpr double kMinActivityWindowS = 0.5;
  void RefreshActivity();

  // LOG_DIR/TENANT_NAME_aATTEMPT_PODSET_INDEX.log for pod id
  // TENANT/NAME/aATTEMPT/PODSET/INDEX.
  std::string LogPath(std::string id) const;
  // Reads the asked pieces of pod logs and sends them to the server.
  Status AnswerLogs(ServerLink& cl, const std::vector<LogAsk>& asks);
  // One sync: the report out, the answer applied.
  Status SyncOnce(ServerLink& cl, int wait_s);
  // The node and its pods as the server wants them reported (mu_ held).
  std::string ReportJson();
  // Makes the node run what the server wants (mu_ held).
  void Apply(const boost::json::value& reply);
  // Runs a desired pod: its command, environment and limits as sent.
  void Start(const proto::DesiredPod& d);
  // Tells the GPU source which devices running pods hold (mu_ held).
  void UpdateBusy();

  const Connect connect_;
  const AgentOptions f_;
  std::unique_ptr<GpuSource> gpus_;
  std::unique_ptr<Executor> exec_;
  core::Node node_;
  const std::string log_dir_;
  const std::string tag_;
  std::ostream& out_;

  std::mutex mu_;
  // Guarded by mu_.
  std::map<std::string, LocalPod> running_;
  std::map<std::string, PodExit> exited_;  // Until the server forgets.
  // Pods that ran here and that the server has forgotten, with when: a pod
  // id (its workload, attempt, pod set and index) runs once, so an answer
  // that lists one again is stale and starts nothing. Two answers of the
  // same revision can differ (one is made in the middle of the server's
  // turn, after the exit was recorded) and arrive out of order on the
  // agent's two connections. Kept kEndedKeep.
  std::map<std::string, std::chrono::steady_clock::time_point> ended_;
  std::chrono::steady_clock::time_point last_sample_sent_{};
  std::vector<LogAsk> log_asks_;  // From the last answers, for the reporter.
  int64_t revision_ = -1;         // Of the newest answer applied.
  bool report_now_ = false;       // A pod failed to start: report it at once.

  std::map<std::string, RunAsUser> run_as_;  // Set before Run.
  TenantUsers tenant_users_;                 // Set before Run.
  std::unique_ptr<TenantIds> tenant_ids_;    // Set before Run; null: off.
  std::atomic<bool> synced_{false};
  // The reporter's own (one thread at a time).
  std::unique_ptr<ServerLink> report_cl_;
  bool report_pending_ = false;
  std::vector<LogAsk> report_asks_;
};

}  // namespace allot::agent
