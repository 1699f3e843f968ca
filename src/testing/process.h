// ChildProcess: one child process of a test (`allot serve`, `allot agent`,
// `allot up`, ...); Run, a command run to its end (a CLI verb); and
// WaitFor, the condition wait the process fixtures poll with instead of
// fixed sleeps.
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
#include <cstdlib>
#include <filesystem>
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

// This process's environment ("K=V" entries) without the variables named
// in `drop`, then `add`: an environment for ChildProcess::Spawn or Run,
// built before the fork (the child of a threaded process only opens files
// and execs).
inline std::vector<std::string> Environment(const std::vector<std::string>& drop,
                                            const std::vector<std::string>& add) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv = *e;
    bool dropped = false;
    for (const std::string& d : drop) dropped = dropped || kv.rfind(d + "=", 0) == 0;
    if (!dropped) env.push_back(kv);
  }
  env.insert(env.end(), add.begin(), add.end());
  return env;
}

// What a command run to its end left.
struct Ran {
  int code = -1;        // As a shell gives it: the exit code, or 128 + signal; -1: not run.
  std::string out, err;  // Its stdout and stderr (err empty when merged into out).
};

// Runs `args` (args[0] the program) to its end, with `env` as its whole
// environment when given (see Environment), its stderr merged into its
// stdout when `merge_stderr`. Gives up after `timeout`: SIGKILL, code 137.
inline Ran Run(std::vector<std::string> args, const std::vector<std::string>* env = nullptr,
               bool merge_stderr = false,
               std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
  std::string tmpl = std::filesystem::temp_directory_path().string() + "/allot-run-XXXXXX";
  Ran r;
  if (::mkdtemp(tmpl.data()) == nullptr) return r;
  const std::string out = tmpl + "/out", err = merge_stderr ? "" : tmpl + "/err";
  ChildProcess p;
  if (p.Spawn(std::move(args), out, /*append=*/false, env, err)) {
    WaitFor([&] { return p.Exited(); }, timeout);
    p.Kill9();
    r.code = p.exit_code();
    r.out = ReadFile(out);
    if (!err.empty()) r.err = ReadFile(err);
  }
  std::filesystem::remove_all(tmpl);
  return r;
}

}  // namespace allot::testing
