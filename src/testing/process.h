// ChildProcess: one child process of a test (`allot serve`, `allot agent`,
// `allot up`, ...), and WaitFor, the condition wait the process fixtures
// poll with instead of fixed sleeps.
//
// Test-only and header-only. A ChildProcess owns its child: the destructor
// kills (SIGKILL) and reaps it if it still runs. Not thread-safe; one test
// thread drives it.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace allot::testing {

// The whole file at `path`; empty when it cannot be read.
inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Polls `cond` every `poll` until it holds or `timeout` has passed; returns
// whether it held.
template <class Cond>
bool WaitFor(Cond&& cond, std::chrono::milliseconds timeout,
             std::chrono::milliseconds poll = std::chrono::milliseconds(50)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (cond()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(poll);
  }
}

class ChildProcess {
 public:
  ChildProcess() = default;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess() { Kill9(); }

  // Forks and execs args[0] with `args`, its stdout and stderr going to
  // `output` (appended to, or truncated when `append` is false), or its
  // stderr to `error` (truncated) when that is given. `env`, when given, is
  // the child's whole environment ("K=V" entries); otherwise it inherits
  // this one. The child only opens files and execs (this process may have
  // threads). False when fork fails; in the child, an output that cannot be
  // opened is exit 126 and a failed exec exit 127.
  bool Spawn(std::vector<std::string> args, const std::string& output,
             bool append, const std::vector<std::string>* env = nullptr,
             const std::string& error = "") {
    Kill9();
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_copy;
    std::vector<char*> envp;
    if (env != nullptr) {
      env_copy = *env;
      for (std::string& e : env_copy) envp.push_back(e.data());
      envp.push_back(nullptr);
    }
    pid_t pid = ::fork();
    if (pid < 0) return false;
    if (pid == 0) {
      int fd = ::open(output.c_str(),
                      O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC), 0644);
      int efd = error.empty() ? fd : ::open(error.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd < 0 || efd < 0 || ::dup2(fd, 1) < 0 || ::dup2(efd, 2) < 0) ::_exit(126);
      if (env != nullptr) {
        ::execve(argv[0], argv.data(), envp.data());
      } else {
        ::execv(argv[0], argv.data());
      }
      ::_exit(127);
    }
    pid_ = pid;
    return true;
  }

  pid_t pid() const { return pid_; }
  bool started() const { return pid_ > 0; }

  // Whether the child has exited (reaping it, and keeping its wait status
  // for status()); true when there is no child.
  bool Exited() {
    if (pid_ <= 0) return true;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) != pid_) return false;
    status_ = status;
    pid_ = -1;
    return true;
  }
  // The wait status of the last child reaped.
  int status() const { return status_; }
  // That status as a shell would give it: the exit code, or 128 + signal.
  int exit_code() const {
    return WIFEXITED(status_) ? WEXITSTATUS(status_) : 128 + WTERMSIG(status_);
  }

  void Kill9() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, &status_, 0);
    pid_ = -1;
  }

  // `sig` (SIGTERM unless given), then up to `grace` for the child to exit,
  // then SIGKILL. True when it exited within `grace` (false also when there
  // was no child).
  bool Terminate(std::chrono::milliseconds grace, int sig = SIGTERM) {
    if (pid_ <= 0) return false;
    ::kill(pid_, sig);
    bool exited = WaitFor([&] { return Exited(); }, grace);
    Kill9();
    return exited;
  }

 private:
  pid_t pid_ = -1;
  int status_ = 0;
};

}  // namespace allot::testing
