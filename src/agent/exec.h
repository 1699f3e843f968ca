// Pod execution for the node agent.
//
// ProcessExecutor runs each pod as the leader of its own process group
// (setsid): command + args, env, working directory; stdout and stderr go
// through a pipe to a per-pod log file, rotated at a size limit. Given a
// CgroupManager (cgroup.h) with a mode other than none, each pod also runs
// in a cgroup of its own with its cpu and memory limits, joined before its
// command runs and removed when it ends. Stop sends SIGTERM to the whole
// group and SIGKILL after the grace period to the group and the cgroup, so
// nothing the pod started survives it. SimulatedExecutor runs nothing: a
// pod "exits" 0 after its simulated duration (load tests, --simulate-exec).
//
// Both are thread-safe; Poll() hands out what finished since the last call.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "agent/cgroup.h"
#include "core/model.h"
#include "core/status.h"
#include "proto/agent_protocol.h"

namespace allot::agent {

struct PodSpec {
  std::string id;  // Unique on the node, e.g. "team-a/train/main/0/3".
  std::vector<std::string> command;  // argv[0..]; command[0] is looked up
  std::vector<std::string> args;     // in PATH when it has no '/'.
  std::map<std::string, std::string> env;  // Added to a minimal base
                                           // environment (PATH, HOME, LANG).
  std::string working_dir;  // Empty: the log directory.
  std::string log_path;     // Created (with parents); rotated to .1, .2 ...
  int64_t log_max_bytes = 10 << 20;
  int log_keep = 3;         // Rotated files kept.
  // Limits, applied through the pod's cgroup when the executor has cgroups
  // (the agent passes the pod's cpu and memory requests); 0: none.
  int64_t cpu_milli = 0;
  int64_t memory_bytes = 0;
  // Container executor only (container.h): the OCI image and its pull
  // policy, the pod's GPUs (their device nodes go in) and its tenant (its
  // user namespace).
  std::string image;
  std::string image_pull_policy;
  std::vector<std::string> gpus;
  std::string tenant;
  // Its volumes and their mounts, secret files, registry credentials and
  // security context (proto::DesiredPod says what each is).
  std::vector<core::Volume> volumes;
  std::vector<core::VolumeMount> mounts;
  std::vector<proto::PodFile> files;
  std::string registry_auth;
  std::optional<int64_t> run_as_user;
  std::optional<int64_t> run_as_group;
  bool run_as_non_root = false;
  bool read_only_root = true;
  bool host_network = false;  // Containers: the node's network, not the agent's choice.
  // Simulated executor only: how long the pod "runs".
  std::chrono::milliseconds simulated_runtime{0};
};

struct PodExit {
  std::string id;
  int exit_code = 0;   // exit status, or 128 + signal when killed.
  int signal = 0;      // The terminating signal, 0 if it exited.
  bool stopped = false;  // Ended by Stop().
  std::string last_lines;  // Up to the last 20 lines / 4 KiB of its log.
  // Why it ended, when more is known than the code: "OOMKilled: ..." when
  // the kernel killed processes of it at its memory limit. Empty otherwise.
  std::string reason;
};

class Executor {
 public:
  virtual ~Executor() = default;
  // Starts the pod. Errors (InvalidArgument: empty command or id in use;
  // FailedPrecondition: the command cannot be executed, e.g. not found or
  // not executable, the log cannot be created) leave nothing running.
  virtual Result<int> Start(const PodSpec& spec) = 0;  // The pid (sim: 0).
  // SIGTERM to the pod's process group now, SIGKILL after `grace` if any
  // process of the group remains. Returns at once; the exit appears in
  // Poll() with stopped = true. Unknown ids are ignored.
  virtual void Stop(const std::string& id, std::chrono::milliseconds grace) = 0;
  // Pods that ended since the last call, in the order they ended.
  virtual std::vector<PodExit> Poll() = 0;
  // Ids of pods started and not yet returned by Poll().
  virtual std::vector<std::string> Running() const = 0;
  // Stops every pod (grace as given) and waits until all have ended.
  virtual void StopAll(std::chrono::milliseconds grace) = 0;
  // Whether pods run in their images (container.h); else an image is
  // refused.
  virtual bool RunsImages() const { return false; }
  // Whether running pod `id` is still getting its image (the container
  // runtime's pull): not started yet, as the server counts it.
  virtual bool Pulling(const std::string& id) const {
    (void)id;
    return false;
  }
  // While it pulls: the bytes of its image fetched so far, and in all (0:
  // not known yet).
  struct PullProgress {
    int64_t bytes = 0;
    int64_t total = 0;
  };
  virtual PullProgress Pulled(const std::string& id) const {
    (void)id;
    return {};
  }
  // Per running pod, the CPU time (user + system, seconds) its live
  // processes have used so far, for the pods the executor can tell of (one
  // pass over /proc for all); simulated GPUs read busy only while their
  // pod uses CPU (Agent::RefreshActivity).
  virtual std::map<std::string, double> PodCpuSeconds() const { return {}; }
  // Per-tenant networks (container runtime, --network tenant): this node's
  // pod range and its tenants' subnets, for the server to relay (cidr
  // empty: none), and the other nodes' as the server relayed them, for
  // routes and rules between them.
  virtual proto::PodNetwork PodNetwork() const { return {}; }
  // Whether its pods (containers) run in a network namespace of their own
  // with loopback only (allot agent --network private): nothing reaches them.
  virtual bool PrivateNetwork() const { return false; }
  // The address of running pod `id` in its own network (a container on
  // its tenant's network), "" when it has none of its own (a process, a
  // container on the node's network): the pod serves on the node's
  // loopback then.
  virtual std::string PodAddress(const std::string& id) const {
    (void)id;
    return "";
  }
  virtual void SetNetworkPeers(const std::vector<proto::PodNetwork>& peers) { (void)peers; }
};

// `cgroups`: null or mode none runs pods without cgroups.
std::unique_ptr<Executor> NewProcessExecutor(
    std::unique_ptr<CgroupManager> cgroups = nullptr);
std::unique_ptr<Executor> NewSimulatedExecutor();

// Reading pod logs back (exec_log.cc). Thread-safe.

// The last `max_lines` lines (at most `max_bytes`) of the file at `path`,
// for failure messages and the tail of `allot logs`.
std::string TailFile(const std::string& path, int max_lines = 20,
                     size_t max_bytes = 4096);

// A piece of a pod's log, for `allot logs`.
struct LogChunk {
  bool exists = false;      // The log file is there.
  int64_t offset = 0;       // Where `data` starts (in the file it came from).
  int64_t next_offset = 0;  // Where the next read starts, in the current file.
  std::string data;         // Valid UTF-8.
};
// Reads up to `limit` bytes of the log at `path` (as ProcessExecutor writes
// it, rotated to path.1, ...) from `offset` into the current file; -1 means
// the last `limit` bytes. An offset past the file's end means it was
// rotated since: the rest of path.1 from there comes first, and the next
// read starts at 0. Invalid UTF-8 bytes become '?'; a character cut by the
// limit is left for the next read.
LogChunk ReadLog(const std::string& path, int64_t offset, int64_t limit);

}  // namespace allot::agent
