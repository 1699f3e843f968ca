// Starting a pod's process: fork and exec, with the child's set-up done
// in between with only async-signal-safe calls (the agent has threads).
//
// The child: setsid (it leads a new session and process group, pgid =
// pid); joins its cgroups (writes "0" to each given cgroup.procs
// descriptor, so nothing it runs starts outside them); stdin from
// /dev/null; stdout and stderr to out_fd; chdir; every signal to its
// default; every descriptor but 0-2 closed; an empty signal mask; execve.
// A failure on the way comes back through a close-on-exec status pipe
// with its stage and errno; the child is then reaped and nothing runs. The
// parent blocks every signal around fork, so no handler of the agent runs
// in the child.
//
// Thread-safe: it shares nothing, and waits only until the child execs.
#pragma once

#include <sys/types.h>

#include <vector>

#include "core/status.h"

namespace allot::agent {

// What the child needs, prepared before fork: between fork and exec it
// makes only async-signal-safe calls (no allocation, no locks).
struct ChildPlan {
  const char* exe = nullptr;
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  const char* dir = nullptr;
  int out_fd = -1;  // Becomes stdout and stderr.
  const std::vector<int>* join_fds = nullptr;  // cgroup.procs files.
};

// Where a child failed.
enum SpawnStage : int { kSpawnSetup = 1, kSpawnCgroup, kSpawnChdir, kSpawnExec };

// Forks and execs `plan`: the child's pid, or FailedPrecondition with
// *stage and *err (errno) set to where and why it failed.
Result<pid_t> Spawn(const ChildPlan& plan, int* stage, int* err);

}  // namespace allot::agent
