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
// ProviderRunner runs calls off the owner thread, one at a time in the
// order given, and hands each result to `done` (which posts it to the
// owner). RunProviderCall runs one call and waits (the runner's worker,
// and tests).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"

namespace allot::server {

struct ProviderCall {
  std::string pool;
  std::string verb;                  // "resume" or "suspend".
  std::vector<std::string> nodes;    // What it is about.
  std::vector<std::string> command;  // Program and arguments; the verb is added.
  std::string input;                 // JSON, on stdin.
  int64_t timeout_ms = 60000;
};

struct ProviderResult {
  ProviderCall call;
  Status status;       // Ok: exit status 0 in time.
  std::string output;  // stdout and stderr, at most the last 4 KiB.
  int64_t took_ms = 0;
};

// `running` (may be null): the program's process group while it runs
// (0 otherwise), for a runner that must stop it.
ProviderResult RunProviderCall(const ProviderCall& call, std::atomic<pid_t>* running = nullptr);

class ProviderRunner {
 public:
  explicit ProviderRunner(std::function<void(ProviderResult)> done);
  // Kills the call that runs (its process group) and drops the queued
  // ones; their results are not delivered.
  ~ProviderRunner();
  ProviderRunner(const ProviderRunner&) = delete;
  ProviderRunner& operator=(const ProviderRunner&) = delete;

  void Run(ProviderCall call);

 private:
  void Loop();

  std::function<void(ProviderResult)> done_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<ProviderCall> queue_;
  bool stop_ = false;
  std::atomic<pid_t> running_{0};
  std::thread thread_;
};

}  // namespace allot::server
