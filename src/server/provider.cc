#include "server/provider.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <sstream>

#include "server/local_provider.h"

extern char** environ;

namespace allot::server {

namespace {

constexpr size_t kKeep = 4096;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string Program(const ProviderCall& c) {
  std::string s;
  for (const std::string& a : c.command) s += (s.empty() ? "" : " ") + a;
  return s + " " + c.verb;
}

}  // namespace

int SpawnInOwnGroup(posix_spawn_file_actions_t* fa, char* const argv[], char* const envp[],
                    pid_t* pid) {
  // Nothing of the server's but stdin, stdout and stderr: what the program
  // leaves running must not hold its listening socket (a restarted server
  // could not bind).
  posix_spawn_file_actions_addclosefrom_np(fa, 3);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Its own process group, so that a hung program and what it started go
  // together; default signal dispositions and an empty mask.
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                      POSIX_SPAWN_SETSIGDEF);
  const int err = posix_spawnp(pid, argv[0], fa, &attr, argv, envp);
  posix_spawnattr_destroy(&attr);
  return err;
}

ProviderResult RunProviderCall(const ProviderCall& call, std::atomic<pid_t>* running) {
  static const bool kPipeIgnored = [] {
    signal(SIGPIPE, SIG_IGN);
    return true;
  }();
  (void)kPipeIgnored;
  ProviderResult r;
  r.call = call;
  const int64_t start = NowMs();
  if (call.command.empty()) {
    r.status = Status::InvalidArgument("pool " + call.pool + ": no provider command");
    return r;
  }
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0) {
    r.status = Status::Internal(std::string("pipe: ") + std::strerror(errno));
    return r;
  }
  if (pipe2(out, O_CLOEXEC) != 0) {
    close(in[0]);
    close(in[1]);
    r.status = Status::Internal(std::string("pipe: ") + std::strerror(errno));
    return r;
  }
  std::vector<std::string> args = call.command;
  args.push_back(call.verb);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, out[1], 2);
  pid_t pid = -1;
  const int err = SpawnInOwnGroup(&fa, argv.data(), environ, &pid);
  posix_spawn_file_actions_destroy(&fa);
  close(in[0]);
  close(out[1]);
  if (err == 0 && running) running->store(pid);
  if (err != 0) {
    close(in[1]);
    close(out[0]);
    r.status = Status::FailedPrecondition("pool " + call.pool + ": cannot run " + Program(call) +
                                          ": " + std::strerror(err));
    return r;
  }
  // The request, then EOF; a program that exits without reading it
  // gives EPIPE here, which is its business: SIGPIPE is ignored in this
  // process (it would kill the server; the program's children get the
  // default back).
  size_t off = 0;
  while (off < call.input.size()) {
    const ssize_t n = write(in[1], call.input.data() + off, call.input.size() - off);
    if (n <= 0) break;
    off += size_t(n);
  }
  close(in[1]);
  const int64_t deadline = start + call.timeout_ms;
  bool timed_out = false, exited = false, eof = false;
  int wstatus = 0;
  char buf[4096];
  // Until it exits (a process it leaves running may keep our pipe open:
  // what it prints after that is not waited for) or its time is up.
  while (!exited) {
    const int64_t left = deadline - NowMs();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    if (!eof) {
      pollfd p{out[0], POLLIN, 0};
      const int ready = poll(&p, 1, int(std::min<int64_t>(left, 50)));
      if (ready > 0) {
        const ssize_t n = read(out[0], buf, sizeof buf);
        if (n > 0) {
          r.output.append(buf, size_t(n));
          if (r.output.size() > 2 * kKeep) r.output.erase(0, r.output.size() - kKeep);
        } else if (n == 0) {
          eof = true;
        }
      }
    } else {
      usleep(20000);
    }
    const pid_t w = waitpid(pid, &wstatus, WNOHANG);
    exited = w == pid;
  }
  if (exited && !eof) {  // What it printed before it exited.
    fcntl(out[0], F_SETFL, O_NONBLOCK);
    ssize_t n;
    size_t drained = 0;
    while (drained < 16 * kKeep && (n = read(out[0], buf, sizeof buf)) > 0) {
      r.output.append(buf, size_t(n));
      drained += size_t(n);
    }
  }
  close(out[0]);
  if (running) running->store(0);
  if (timed_out) {
    kill(-pid, SIGKILL);
    while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
    }
  }
  if (r.output.size() > kKeep) r.output.erase(0, r.output.size() - kKeep);
  r.took_ms = NowMs() - start;
  std::string tail = r.output;
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == ' ')) tail.pop_back();
  if (tail.size() > 300) tail = "..." + tail.substr(tail.size() - 300);
  const std::string said = tail.empty() ? "" : ": " + tail;
  if (timed_out) {
    r.status = Status::FailedPrecondition("pool " + call.pool + ": " + Program(call) +
                                        " did not finish within " +
                                        std::to_string(call.timeout_ms / 1000) +
                                        " s (killed)" + said);
  } else if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) {
    r.status = Status::Ok();
  } else if (WIFEXITED(wstatus)) {
    r.status = Status::FailedPrecondition("pool " + call.pool + ": " + Program(call) +
                                          " exited with code " +
                                          std::to_string(WEXITSTATUS(wstatus)) + said);
  } else {
    r.status = Status::FailedPrecondition("pool " + call.pool + ": " + Program(call) +
                                          " was killed by signal " +
                                          std::to_string(WTERMSIG(wstatus)) + said);
  }
  return r;
}

std::map<std::string, bool> ParseProviderList(const std::string& output,
                                              const std::vector<std::string>& names) {
  std::map<std::string, bool> up;
  std::istringstream in(output);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string node, state, more;
    if (!(words >> node >> state) || (words >> more)) continue;
    if (std::find(names.begin(), names.end(), node) == names.end()) continue;
    for (char& c : state) c = char(std::tolower(static_cast<unsigned char>(c)));
    up[node] = state == "on" || state == "running" || state == "booting";
  }
  return up;
}

ProviderRunner::ProviderRunner(std::function<void(ProviderResult)> done, LocalProvider* local)
    : done_(std::move(done)), local_(local), thread_([this] { Loop(); }) {}

ProviderRunner::~ProviderRunner() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
    queue_.clear();
  }
  cv_.notify_all();
  // The program that runs goes with its group; its result is dropped.
  if (const pid_t pid = running_.load(); pid > 0) kill(-pid, SIGKILL);
  thread_.join();
}

void ProviderRunner::Run(ProviderCall call) {
  {
    std::lock_guard<std::mutex> l(mu_);
    queue_.push_back(std::move(call));
  }
  cv_.notify_all();
}

void ProviderRunner::Loop() {
  while (true) {
    ProviderCall call;
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      call = std::move(queue_.front());
      queue_.pop_front();
    }
    ProviderResult r;
    if (!call.local) {
      r = RunProviderCall(call, &running_);
    } else if (local_ != nullptr) {
      r = local_->Run(call);
    } else {
      r.call = call;
      r.status = Status::FailedPrecondition("pool " + call.pool + ": no local provider here");
    }
    {
      std::lock_guard<std::mutex> l(mu_);
      if (stop_) return;
    }
    done_(std::move(r));
  }
}

}  // namespace allot::server
