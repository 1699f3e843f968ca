// The exec provider of autoscaled NodePools (docs/autoscaling.md): the
// admin's program, called as `COMMAND... VERB` (resume or suspend) with a
// JSON request on stdin, as Slurm calls its ResumeProgram and
// SuspendProgram. Exit status 0 means the request was taken (a resumed
// node is ready only when its agent registers); anything else, or no exit
// within the time limit (the program's process group is then killed), is
// a failure whose reason names the program and quotes the end of what it
// printed. The first call sets SIGPIPE to be ignored in this process (a
// program that exits without reading its request must not kill the
// server); programs start with every signal at its default.
//
// A `list` call (when the server starts or a pool is created) asks which
// of the pool's nodes are up: its output has a line "NODE STATE" per node
// (ParseProviderList).
//
// ProviderRunner runs calls off the owner thread, one at a time in the
// order given, and hands each result to `done` (which posts it to the
// owner). RunProviderCall runs one call and waits (the runner's worker,
// and tests).
#pragma once

#include <spawn.h>
#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"

namespace allot::server {

struct ProviderCall {
  std::string pool;
  std::string verb;                  // "resume", "suspend" or "list".
  std::vector<std::string> nodes;    // What it is about.
  std::vector<std::string> command;  // Program and arguments; the verb is added.
  std::string input;                 // JSON, on stdin.
  int64_t timeout_ms = 60000;
  // The local provider's (server/local_provider.h), not a program.
  bool local = false;
  int64_t boot_delay_ms = 0;  // Local: wait this long before an agent starts.
};

struct ProviderResult {
  ProviderCall call;
  Status status;       // Ok: exit status 0 in time.
  std::string output;  // stdout and stderr, at most the last 4 KiB.
  int64_t took_ms = 0;
};

// Starts argv (looked up on PATH) with `fa`'s file actions, closing every
// other descriptor above stderr, in a process group of its own, with
// default signal dispositions and an empty mask. Returns posix_spawn's
// error (0: started, *pid set).
int SpawnInOwnGroup(posix_spawn_file_actions_t* fa, char* const argv[], char* const envp[],
                    pid_t* pid);

// `running` (may be null): the program's process group while it runs
// (0 otherwise), for a runner that must stop it.
ProviderResult RunProviderCall(const ProviderCall& call, std::atomic<pid_t>* running = nullptr);

class LocalProvider;

// What a `list` call's output says: the nodes among `names` that it names
// on a line of their own, first word the node and second its state ("on",
// "running" or "booting": up; anything else: down). Other lines (progress,
// stderr) are ignored.
std::map<std::string, bool> ParseProviderList(const std::string& output,
                                              const std::vector<std::string>& names);

class ProviderRunner {
 public:
  // `local` (may be null: local calls then fail) runs the local provider's
  // calls.
  explicit ProviderRunner(std::function<void(ProviderResult)> done,
                          LocalProvider* local = nullptr);
  // Kills the call that runs (its process group) and drops the queued
  // ones; their results are not delivered.
  ~ProviderRunner();
  ProviderRunner(const ProviderRunner&) = delete;
  ProviderRunner& operator=(const ProviderRunner&) = delete;

  void Run(ProviderCall call);

 private:
  void Loop();

  std::function<void(ProviderResult)> done_;
  LocalProvider* local_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<ProviderCall> queue_;
  bool stop_ = false;
  std::atomic<pid_t> running_{0};
  std::thread thread_;
};

}  // namespace allot::server
