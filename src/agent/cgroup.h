// Per-pod cgroups for the node agent: cpu and memory limits, killing
// everything a pod started, and telling an OOM kill from other deaths.
//
// CgroupManager::Detect() looks, once at agent start, at what the host
// allows (/proc/self/mountinfo, /proc/self/cgroup) and picks one mode:
//   v2    the unified hierarchy with the cpu and memory controllers;
//   v1    the legacy cpu and memory hierarchies (hybrid hosts);
//   none  neither is usable (not root, controllers missing, the agent's
//         cgroup shared with other processes on v2, --cgroups=off); pods
//         then run without limits, as before. description() says why.
// It never fails: a host without cgroups is a mode, not an error.
//
// Layout: BASE/AGENT/POD, where BASE is --cgroup-parent (a path inside the
// hierarchy, created if missing) or else the agent's own cgroup (per
// hierarchy on v1), AGENT is CgroupOptions::name (one directory per agent,
// so agents sharing a machine keep apart) and POD the pod id with '/' ->
// '_'. On v2 the agent's own cgroup can only hand controllers to children
// when no process lives in it ("no internal processes"): an agent alone in
// its cgroup (a systemd service with Delegate=yes) moves itself into
// BASE/allot-agent first; an agent sharing its cgroup (a login shell's
// scope) gets mode none with that reason, unless --cgroup-parent names
// another place. Cgroups that an earlier run of the same agent left behind
// (it was killed) are emptied (SIGKILL) and removed by Detect().
//
// Thread-safety: a CgroupManager is immutable after Detect(); Create() may
// be called from any thread. A PodCgroup is used by one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace allot::agent {

enum class CgroupMode { kNone, kV1, kV2 };
const char* ToString(CgroupMode m);  // "none", "v1", "v2".

struct CgroupOptions {
  bool enabled = true;  // false: mode none ("--cgroups=off").
  // Absolute path inside the cgroup hierarchy ("/allot"); empty: the
  // agent's own cgroup.
  std::string parent;
  // This agent's directory under the parent (a single path component).
  std::string name = "allot";
  // Tests only: accept a v2 hierarchy that lacks the cpu and memory
  // controllers (limits are then not applied), so that joining, killing and
  // removal run on hosts whose controllers are bound to v1.
  bool TEST_v2_without_controllers = false;
};

struct CgroupLimits {
  // CPU quota in milli-CPUs: cpu_milli * 100 us per 100 ms period (at
  // least 1 ms). 0: no limit.
  int64_t cpu_milli = 0;
  // Memory limit in bytes; swap is not allowed past it. 0: no limit.
  int64_t memory_bytes = 0;
};

// One pod's cgroup: one directory on v2; on v1 one per hierarchy that
// holds cpu or memory (two unless they are mounted together).
class PodCgroup {
 public:
  // `memory_dir`: the one of `dirs` with the memory controller ("": none).
  PodCgroup(CgroupMode mode, std::vector<std::string> dirs,
            std::string memory_dir, std::vector<int> join_fds,
            CgroupLimits limits);
  ~PodCgroup();  // Closes the join descriptors; does not remove the dirs.
  PodCgroup(const PodCgroup&) = delete;
  PodCgroup& operator=(const PodCgroup&) = delete;

  // Open (O_WRONLY | O_CLOEXEC) cgroup.procs of each directory: the child
  // writes "0" into each between fork and exec to join before it runs.
  const std::vector<int>& join_fds() const { return join_fds_; }
  void CloseJoinFds();
  const std::vector<std::string>& dirs() const { return dirs_; }
  const CgroupLimits& limits() const { return limits_; }

  // SIGKILL to every process in it: cgroup.kill (v2, Linux 5.14+), else
  // each pid listed in cgroup.procs (a process forked meanwhile is caught
  // by the next call).
  void KillAll();
  // Processes the kernel killed in it at the memory limit
  // (memory.events oom_kill on v2, memory.oom_control oom_kill on v1); 0
  // when unknown.
  int64_t OomKills() const;
  // Whether usage reached the memory limit at least once (memory.events
  // max on v2, memory.failcnt on v1): with a SIGKILL, a likely OOM kill on
  // kernels that do not count them.
  bool MemoryLimitHit() const;
  // Removes the directories; false while a process is still in one (call
  // KillAll() and retry).
  bool Remove();

 private:
  const CgroupMode mode_;
  const std::vector<std::string> dirs_;
  const std::string memory_dir_;
  std::vector<int> join_fds_;
  const CgroupLimits limits_;
};

class CgroupManager {
 public:
  // One hierarchy the pods' cgroups go into, and what it controls.
  struct Hierarchy {
    std::string dir;  // BASE/AGENT.
    bool cpu = false;
    bool memory = false;
  };

  // Finds what the host allows and prepares BASE/AGENT (see above).
  static std::unique_ptr<CgroupManager> Detect(const CgroupOptions& options);
  // Removes this agent's directories (once its pods' cgroups are gone).
  ~CgroupManager();
  CgroupManager(const CgroupManager&) = delete;
  CgroupManager& operator=(const CgroupManager&) = delete;

  CgroupMode mode() const { return mode_; }
  // One line for the agent's output: the mode and where the pods' cgroups
  // go, or why there are none.
  const std::string& description() const { return description_; }
  // BASE/AGENT, one per hierarchy (empty in mode none).
  const std::vector<std::string>& agent_dirs() const { return agent_dirs_; }
  // Cgroups of an earlier run that Detect() emptied and removed.
  int leftovers_removed() const { return leftovers_removed_; }

  // Creates the cgroup of pod `pod_id` with `limits`. FailedPrecondition
  // (mode none, or the kernel refused: the message says what) leaves
  // nothing behind; the caller runs the pod without one.
  Result<std::unique_ptr<PodCgroup>> Create(const std::string& pod_id,
                                            const CgroupLimits& limits) const;

 private:
  CgroupManager() = default;
  CgroupMode mode_ = CgroupMode::kNone;
  std::string description_;
  std::vector<Hierarchy> hierarchies_;
  std::vector<std::string> agent_dirs_;
  int leftovers_removed_ = 0;
};

}  // namespace allot::agent
