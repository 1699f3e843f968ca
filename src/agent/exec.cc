// ProcessExecutor and SimulatedExecutor (see exec.h for the contract).
// Reading the logs back (TailFile, ReadLog) is in exec_log.cc.
//
// ProcessExecutor, how a pod runs:
// - Start() checks the spec, opens the log (creating parent directories),
//   resolves command[0] in the pod's own PATH (not the agent's), creates
//   the pod's cgroup when the executor has cgroups (cgroup.h; if that
//   fails the pod runs without one, and its log's first line says why),
//   and starts it with Spawn (spawn.h: fork and exec; the child leads a
//   new session and process group, pgid = pid, joins the cgroup before its
//   command runs, reads /dev/null and writes stdout and stderr to one
//   pipe). A failed exec (ENOENT, EACCES, ENOEXEC) or working directory
//   comes back from Spawn, so Start() answers FailedPrecondition and
//   nothing runs; a failed cgroup join starts the pod again without one.
//   Environment: PATH, HOME and LANG taken from the agent (defaults when
//   unset), then spec.env; nothing else of the agent's leaks in.
// - One reader thread serves every pod: poll() on the pipes, a pidfd per
//   pod (pidfd_open; without it the thread polls every 50 ms) and an
//   eventfd that Start/Stop use to wake it. Output is appended to the log;
//   when the log would pass log_max_bytes it is rotated first (log.N-1 ->
//   log.N ... log -> log.1, log_keep files kept), so no file exceeds the
//   limit. Write errors (disk full) drop output.
// - Exits are detected with waitid(WNOWAIT), so the leader stays a zombie
//   and its pid, which is the group id, cannot be reused while the group is
//   signalled. The pod ends when its leader has exited and its pipe is at
//   EOF, or 1 s after the leader exited (a background child holding the
//   pipe), or, for a stopped pod, at the end of its grace if that is later.
//   Then SIGKILL goes to the group and to everything in the pod's cgroup
//   (whatever the pod left behind dies with it, even what left the group),
//   the pipe is drained without blocking and closed, the leader is reaped,
//   an OOM kill in the cgroup is named in PodExit::reason, and a PodExit
//   is queued. The cgroup is removed then, or, while killed processes are
//   still exiting, by the reader thread a moment later (every 20 ms, with
//   another SIGKILL each time). Only the executor's own
//   pids are ever waited for (never waitpid(-1)), so other code in the
//   process may run children too.
// - Stop(): SIGTERM to the group at once; SIGKILL to the group and its
//   cgroup at the end of the grace if the leader still runs. Without a
//   cgroup, a process that left the group (setsid) is out of reach; a pod
//   that does so on purpose escapes.
// - Exit codes: the leader's exit status, or 128 + signal.
//
// Locking: mu_ guards the pod map, the stop fields and the exit queue;
// kill() and the reaping waitpid() both happen under mu_, so a signal never
// reaches a recycled pid. Pipe, pidfd and log descriptors belong to the
// reader thread once Start() has inserted the pod.
//
// NOTE: the process must not set SIGCHLD to SIG_IGN (children would then be
// reaped by the kernel and their exit codes lost).
//
// SimulatedExecutor: a pod "runs" for spec.simulated_runtime and exits 0;
// Stop() ends it at once with stopped = true, signal 15, exit code 143.
#include "agent/exec.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "agent/spawn.h"
#include "core/quantity.h"

namespace allot::agent {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds kLinger{1000};     // Leader gone, pipe still open.
constexpr milliseconds kNoPidfdPoll{50};  // Exit polling without pidfds.
constexpr milliseconds kDyingRetry{20};   // Removing an ended pod's cgroup.
constexpr size_t kReadChunk = 64 << 10;
constexpr size_t kReadPerTurn = 1 << 20;  // Fairness between pods.

std::string Errno(int err) { return std::strerror(err); }

// `simulated`: nothing is executed, so no command is needed.
Status ValidateSpec(const PodSpec& spec, bool simulated = false) {
  if (spec.id.empty()) return Status::InvalidArgument("pod id is empty", "id");
  if (!simulated && (spec.command.empty() || spec.command[0].empty())) {
    return Status::InvalidArgument("pod " + spec.id + " has no command",
                                   "command");
  }
  for (const auto& [k, v] : spec.env) {
    if (k.empty() || k.find('=') != std::string::npos ||
        k.find('\0') != std::string::npos) {
      return Status::InvalidArgument(
          "bad environment variable name \"" + k + "\" in pod " + spec.id,
          "env");
    }
  }
  return Status::Ok();
}

// mkdir -p of the directory part of `path`.
Status MakeParents(const std::string& path) {
  for (size_t pos = path.find('/', 1); pos != std::string::npos;
       pos = path.find('/', pos + 1)) {
    std::string dir = path.substr(0, pos);
    if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      return Status::FailedPrecondition("cannot create directory " + dir +
                                        ": " + Errno(errno));
    }
  }
  return Status::Ok();
}

std::string DirName(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

bool IsDir(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string Absolute(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char buf[4096];
  if (getcwd(buf, sizeof(buf)) == nullptr) return path;
  return std::string(buf) + "/" + path;
}

// Finds command[0] like execvp would, but in the pod's PATH. `dir` resolves
// relative paths (the pod's working directory).
Result<std::string> ResolveCommand(const std::string& cmd,
                                   const std::string& path_var,
                                   const std::string& dir) {
  auto check = [](const std::string& p) -> Status {
    struct stat st;
    if (stat(p.c_str(), &st) != 0) {
      return Status::FailedPrecondition("cannot execute " + p + ": " +
                                        Errno(errno));
    }
    if (!S_ISREG(st.st_mode) || access(p.c_str(), X_OK) != 0) {
      return Status::FailedPrecondition("cannot execute " + p +
                                        ": not an executable file");
    }
    return Status::Ok();
  };
  if (cmd.find('/') != std::string::npos) {
    std::string p = Absolute(cmd[0] == '/' ? cmd : dir + "/" + cmd);
    ALLOT_RETURN_IF_ERROR(check(p));
    return p;
  }
  Status first_error;
  size_t start = 0;
  while (start <= path_var.size()) {
    size_t colon = path_var.find(':', start);
    if (colon == std::string::npos) colon = path_var.size();
    std::string d = path_var.substr(start, colon - start);
    if (d.empty()) d = ".";
    if (d[0] != '/') d = dir + "/" + d;  // As in the child, after its chdir.
    std::string p = Absolute(d + "/" + cmd);
    if (access(p.c_str(), F_OK) == 0) {
      Status st = check(p);
      if (st.ok()) return p;
      if (first_error.ok()) first_error = st;
    }
    start = colon + 1;
  }
  if (!first_error.ok()) return first_error;
  return Status::FailedPrecondition("command \"" + cmd +
                                    "\" not found in PATH=" + path_var);
}

std::map<std::string, std::string> PodEnv(const PodSpec& spec) {
  std::map<std::string, std::string> env;
  auto base = [&env](const char* name, const char* fallback) {
    const char* v = std::getenv(name);
    env[name] = v != nullptr ? v : fallback;
  };
  base("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
  base("HOME", "/");
  base("LANG", "C.UTF-8");
  for (const auto& [k, v] : spec.env) env[k] = v;
  return env;
}

struct Pod {
  // Constant after Start().
  std::string id;
  pid_t pid = -1;  // Also the process group id.
  std::string log_path;
  int64_t log_max_bytes = 0;
  int log_keep = 0;
  // Reader thread only (after Start() inserted the pod).
  int out_fd = -1;  // Read end of the pipe; -1 after EOF.
  int log_fd = -1;
  int pidfd = -1;
  int64_t log_size = 0;
  bool leader_exited = false;
  Clock::time_point leader_exit_at;
  // Guarded by ProcessExecutor::mu_.
  bool stopped = false;
  bool killed = false;  // SIGKILL sent at the end of the grace.
  Clock::time_point kill_at;
  bool done = false;  // Reaped; its PodExit is queued.
  // Set by Start(); then the reader thread's (with mu_ held). Null: none.
  std::unique_ptr<PodCgroup> cgroup;
};

// Why a pod with a memory limit died, when the limit did it; else "".
std::string OomReason(const PodCgroup& cg, int signal) {
  const int64_t limit = cg.limits().memory_bytes;
  if (limit <= 0) return "";
  const std::string what = "its memory limit of " +
                           Quantity::FromUnits(limit).ToString() +
                           " (its memory request)";
  if (int64_t n = cg.OomKills(); n > 0) {
    return "OOMKilled: the pod reached " + what + " and the kernel killed " +
           std::to_string(n) + " of its processes";
  }
  if (signal == SIGKILL && cg.MemoryLimitHit()) {
    return "OOMKilled: killed by SIGKILL after reaching " + what;
  }
  return "";
}

// User + system CPU seconds per process group of the live processes, from
// /proc/PID/stat (fields pgrp, utime, stime), for the groups in `pgids`.
std::map<pid_t, double> ProcessGroupCpuSeconds(const std::set<pid_t>& pgids) {
  std::map<pid_t, double> out;
  DIR* d = opendir("/proc");
  if (d == nullptr) return out;
  static const double kTicks = double(sysconf(_SC_CLK_TCK));
  for (pid_t g : pgids) out[g] = 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::ifstream in(std::string("/proc/") + e->d_name + "/stat");
    std::string line;
    if (!std::getline(in, line)) continue;  // Gone meanwhile.
    const size_t close = line.rfind(')');   // The command may hold spaces.
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 1));
    std::string field;
    int64_t pgrp = -1, utime = 0, stime = 0;
    // After the command: state ppid pgrp session tty_nr tpgid flags minflt
    // cminflt majflt cmajflt utime stime.
    for (int i = 0; i < 13 && rest >> field; ++i) {
      if (i == 2) pgrp = std::atoll(field.c_str());
      if (i == 11) utime = std::atoll(field.c_str());
      if (i == 12) stime = std::atoll(field.c_str());
    }
    auto it = out.find(pid_t(pgrp));
    if (it != out.end()) it->second += double(utime + stime) / kTicks;
  }
  closedir(d);
  return out;
}

class ProcessExecutor : public Executor {
 public:
  explicit ProcessExecutor(std::unique_ptr<CgroupManager> cgroups)
      : cgroups_(std::move(cgroups)) {
    wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    ALLOT_CHECK(wake_fd_ >= 0);
    thread_ = std::thread([this] { Loop(); });
  }
  ~ProcessExecutor() override {
    StopAll(milliseconds(0));
    {
      std::lock_guard<std::mutex> lock(mu_);
      shutdown_ = true;
    }
    Wake();
    thread_.join();
    close(wake_fd_);
    // Cgroups whose last processes were still exiting: a last chance.
    for (int i = 0; i < 200 && !dying_.empty(); ++i) {
      if (i > 0) std::this_thread::sleep_for(milliseconds(10));
      RemoveDyingLocked();
    }
  }
  ProcessExecutor(const ProcessExecutor&) = delete;
  ProcessExecutor& operator=(const ProcessExecutor&) = delete;

  Result<int> Start(const PodSpec& spec) override;
  void Stop(const std::string& id, milliseconds grace) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = pods_.find(id);
      if (it == pods_.end()) return;
      StopLocked(it->second.get(), grace);
    }
    Wake();
  }
  std::vector<PodExit> Poll() override {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<PodExit> out;
    out.swap(exits_);
    for (const PodExit& e : out) pods_.erase(e.id);
    return out;
  }
  std::vector<std::string> Running() const override {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::string> ids;
    for (const auto& [id, pod] : pods_) ids.push_back(id);
    return ids;
  }
  std::map<std::string, double> PodCpuSeconds() const override {
    std::map<pid_t, std::string> by_group;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& [id, pod] : pods_) {
        if (!pod->done && pod->pid > 0) by_group[pod->pid] = id;
      }
    }
    std::set<pid_t> groups;
    for (const auto& [g, id] : by_group) groups.insert(g);
    std::map<std::string, double> out;
    for (const auto& [g, secs] : ProcessGroupCpuSeconds(groups)) out[by_group[g]] = secs;
    return out;
  }
  void StopAll(milliseconds grace) override {
    std::unique_lock<std::mutex> lock(mu_);
    // Stops again on every wake-up: a pod whose Start() raced with this
    // call is stopped too instead of being waited for forever.
    done_cv_.wait(lock, [&] {
      bool all_done = starting_.empty();
      for (auto& [id, pod] : pods_) {
        if (pod->done) continue;
        all_done = false;
        if (!pod->stopped) {
          StopLocked(pod.get(), grace);
          Wake();
        }
      }
      return all_done;
    });
  }

 private:
  void StopLocked(Pod* pod, milliseconds grace) {
    if (pod->done) return;
    Clock::time_point at = Clock::now() + grace;
    if (!pod->stopped) {
      pod->stopped = true;
      pod->kill_at = at;
      kill(-pod->pid, SIGTERM);
    } else if (at < pod->kill_at) {
      pod->kill_at = at;  // A shorter grace on a second Stop() wins.
    }
  }
  void Wake() {
    uint64_t one = 1;
    ssize_t n = write(wake_fd_, &one, sizeof(one));
    (void)n;  // EAGAIN: the counter is already non-zero, the thread wakes.
  }
  void Loop();
  // Kills and removes what it can of dying_ (mu_ held, or no thread left).
  void RemoveDyingLocked() {
    std::erase_if(dying_, [](const std::unique_ptr<PodCgroup>& cg) {
      if (cg->Remove()) return true;
      cg->KillAll();
      return false;
    });
  }
  void ReadOutput(Pod* pod, bool drain);
  void WriteLog(Pod* pod, const char* data, size_t n);
  void Rotate(Pod* pod);
  void FinishLocked(Pod* pod);

  int wake_fd_ = -1;
  std::thread thread_;
  mutable std::mutex mu_;
  std::condition_variable done_cv_;
  std::map<std::string, std::unique_ptr<Pod>> pods_;  // Guarded by mu_.
  std::set<std::string> starting_;  // Ids reserved by Start(). Guarded by mu_.
  std::vector<PodExit> exits_;      // Guarded by mu_.
  bool shutdown_ = false;           // Guarded by mu_.
  // Cgroups of ended pods not removed yet. Guarded by mu_.
  std::vector<std::unique_ptr<PodCgroup>> dying_;
  const std::unique_ptr<CgroupManager> cgroups_;  // Null: none.
};

Result<int> ProcessExecutor::Start(const PodSpec& spec) {
  ALLOT_RETURN_IF_ERROR(ValidateSpec(spec));
  if (spec.log_path.empty()) {
    return Status::InvalidArgument("pod " + spec.id + " has no log path",
                                   "log_path");
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (pods_.count(spec.id) > 0 || starting_.count(spec.id) > 0) {
      return Status::InvalidArgument("pod id " + spec.id + " is in use", "id");
    }
    starting_.insert(spec.id);
  }
  auto pod = std::make_unique<Pod>();
  pod->id = spec.id;
  pod->log_path = spec.log_path;
  pod->log_max_bytes = spec.log_max_bytes;
  pod->log_keep = std::max(0, spec.log_keep);
  int pipe_fds[2] = {-1, -1};
  auto fail = [&](Status st) -> Result<int> {
    for (int fd : {pod->log_fd, pipe_fds[0], pipe_fds[1]}) {
      if (fd >= 0) close(fd);
    }
    std::lock_guard<std::mutex> lock(mu_);
    starting_.erase(spec.id);
    done_cv_.notify_all();
    return st;
  };

  Status st = MakeParents(spec.log_path);
  if (!st.ok()) return fail(st);
  pod->log_fd = open(spec.log_path.c_str(),
                     O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (pod->log_fd < 0) {
    return fail(Status::FailedPrecondition("cannot open log " + spec.log_path +
                                           ": " + Errno(errno)));
  }
  // The agent's alone (it serves `allot logs`): a pod of another tenant,
  // running as its own ids, cannot read what this one printed.
  (void)fchmod(pod->log_fd, 0600);
  struct stat log_st;
  if (fstat(pod->log_fd, &log_st) == 0) pod->log_size = log_st.st_size;

  const std::string dir =
      spec.working_dir.empty() ? DirName(spec.log_path) : spec.working_dir;
  if (!IsDir(dir)) {
    return fail(Status::FailedPrecondition(
        "working directory " + dir + " of pod " + spec.id + " does not exist",
        "working_dir"));
  }
  const std::map<std::string, std::string> env = PodEnv(spec);
  Result<std::string> exe =
      ResolveCommand(spec.command[0], env.at("PATH"), dir);
  if (!exe.ok()) return fail(exe.status());

  // Everything the child needs is prepared before it exists.
  std::vector<std::string> args = spec.command;
  args.insert(args.end(), spec.args.begin(), spec.args.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);

  if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    return fail(Status::FailedPrecondition("pipe: " + Errno(errno)));
  }
  fcntl(pipe_fds[0], F_SETFL, O_NONBLOCK);

  // A note for the pod's log, before anything of the pod's own.
  auto note = [&](const std::string& text) {
    std::string line = "allot agent: " + text + "\n";
    if (write(pod->log_fd, line.data(), line.size()) > 0) {
      pod->log_size += static_cast<int64_t>(line.size());
    }
  };
  if (cgroups_ && cgroups_->mode() != CgroupMode::kNone) {
    Result<std::unique_ptr<PodCgroup>> cg =
        cgroups_->Create(spec.id, CgroupLimits{spec.cpu_milli, spec.memory_bytes});
    if (cg.ok()) {
      pod->cgroup = std::move(*cg);
    } else {
      note("no cgroup for this pod, so no cpu and memory limits: " + cg.status().message());
    }
  }
  static const std::vector<int> kNoCgroup;
  ChildPlan plan;
  plan.exe = exe->c_str();
  plan.argv = argv.data();
  plan.envp = envp.data();
  plan.dir = dir.c_str();
  plan.out_fd = pipe_fds[1];
  plan.join_fds = pod->cgroup ? &pod->cgroup->join_fds() : &kNoCgroup;
  int stage = 0, err = 0;
  Result<pid_t> spawned = Spawn(plan, &stage, &err);
  if (!spawned.ok() && stage == kSpawnCgroup) {
    note("cannot join the pod's cgroup (" + Errno(err) +
         "), so no cpu and memory limits");
    (void)pod->cgroup->Remove();
    pod->cgroup.reset();
    plan.join_fds = &kNoCgroup;
    spawned = Spawn(plan, &stage, &err);
  }
  if (pod->cgroup) pod->cgroup->CloseJoinFds();
  if (!spawned.ok()) {
    if (pod->cgroup) (void)pod->cgroup->Remove();
    if (stage == kSpawnChdir) {
      return fail(Status::FailedPrecondition(
          "cannot enter the working directory " + dir + " of pod " + spec.id +
              ": " + Errno(err),
          "working_dir"));
    }
    return fail(Status::FailedPrecondition(
        (stage == kSpawnExec ? "cannot execute " + *exe : "cannot start") +
        " for pod " + spec.id + ": " + spawned.status().message()));
  }
  const pid_t pid = *spawned;
  close(pipe_fds[1]);
  pipe_fds[1] = -1;
  pod->pid = pid;
  pod->out_fd = pipe_fds[0];
  pod->pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (pod->pidfd >= 0) fcntl(pod->pidfd, F_SETFD, FD_CLOEXEC);
  {
    std::lock_guard<std::mutex> lock(mu_);
    starting_.erase(spec.id);
    pods_[spec.id] = std::move(pod);
    done_cv_.notify_all();  // A waiting StopAll() must stop this one too.
  }
  Wake();
  return static_cast<int>(pid);
}

void ProcessExecutor::Loop() {
  std::vector<pollfd> fds;
  std::vector<Pod*> active;
  while (true) {
    // 1. What to watch and until when.
    int timeout_ms = -1;
    {
      std::lock_guard<std::mutex> lock(mu_);
      active.clear();
      for (auto& [id, pod] : pods_) {
        if (!pod->done) active.push_back(pod.get());
      }
      if (shutdown_ && active.empty()) return;
      Clock::time_point now = Clock::now();
      if (!dying_.empty()) timeout_ms = static_cast<int>(kDyingRetry.count());
      auto until = [&](Clock::time_point t) {
        auto ms = std::chrono::ceil<milliseconds>(t - now).count();
        int v = static_cast<int>(std::clamp<int64_t>(ms, 0, 1000));
        if (timeout_ms < 0 || v < timeout_ms) timeout_ms = v;
      };
      for (Pod* p : active) {
        if (p->leader_exited) {
          until(std::max(p->leader_exit_at + kLinger,
                         p->stopped ? p->kill_at : Clock::time_point()));
        } else {
          if (p->stopped && !p->killed) until(p->kill_at);
          if (p->pidfd < 0) until(now + kNoPidfdPoll);
        }
      }
    }
    fds.clear();
    fds.push_back({wake_fd_, POLLIN, 0});
    for (Pod* p : active) {
      if (p->out_fd >= 0) fds.push_back({p->out_fd, POLLIN, 0});
      if (p->pidfd >= 0 && !p->leader_exited) {
        fds.push_back({p->pidfd, POLLIN, 0});
      }
    }
    int ready = poll(fds.data(), fds.size(), timeout_ms);
    ALLOT_CHECK(ready >= 0 || errno == EINTR);
    uint64_t counter;
    while (read(wake_fd_, &counter, sizeof(counter)) > 0) {
    }

    // 2. Output and exits (no lock: these fields are the thread's).
    for (Pod* p : active) {
      if (p->out_fd >= 0) ReadOutput(p, /*drain=*/false);
      if (!p->leader_exited) {
        siginfo_t info;
        info.si_pid = 0;
        if (waitid(P_PID, p->pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
            info.si_pid == p->pid) {
          p->leader_exited = true;
          p->leader_exit_at = Clock::now();
        }
      }
    }

    // 3. Deadlines and endings.
    std::lock_guard<std::mutex> lock(mu_);
    Clock::time_point now = Clock::now();
    bool finished = false;
    for (Pod* p : active) {
      if (p->stopped && !p->killed && !p->leader_exited && now >= p->kill_at) {
        kill(-p->pid, SIGKILL);
        if (p->cgroup) p->cgroup->KillAll();
        p->killed = true;
      }
      if (!p->leader_exited) continue;
      Clock::time_point linger_end = p->leader_exit_at + kLinger;
      if (p->stopped) linger_end = std::max(linger_end, p->kill_at);
      if (p->out_fd < 0 || now >= linger_end) {
        FinishLocked(p);
        finished = true;
      }
    }
    if (finished) done_cv_.notify_all();
    RemoveDyingLocked();
  }
}

void ProcessExecutor::ReadOutput(Pod* pod, bool drain) {
  char buf[kReadChunk];
  size_t total = 0;
  while (drain || total < kReadPerTurn) {
    ssize_t n = read(pod->out_fd, buf, sizeof(buf));
    if (n > 0) {
      WriteLog(pod, buf, static_cast<size_t>(n));
      total += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
      close(pod->out_fd);  // EOF (or a broken pipe): nothing more comes.
      pod->out_fd = -1;
    }
    return;
  }
}

void ProcessExecutor::WriteLog(Pod* pod, const char* data, size_t n) {
  while (n > 0) {
    size_t chunk = n;
    if (pod->log_max_bytes > 0) {
      if (pod->log_size >= pod->log_max_bytes) Rotate(pod);
      chunk = std::min<size_t>(n, pod->log_max_bytes - pod->log_size);
    }
    if (pod->log_fd >= 0) {
      size_t off = 0;
      while (off < chunk) {
        ssize_t w = write(pod->log_fd, data + off, chunk - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;  // Disk full or gone: the rest is dropped.
        off += static_cast<size_t>(w);
      }
    }
    pod->log_size += static_cast<int64_t>(chunk);
    data += chunk;
    n -= chunk;
  }
}

void ProcessExecutor::Rotate(Pod* pod) {
  if (pod->log_fd >= 0) close(pod->log_fd);
  const std::string& base = pod->log_path;
  if (pod->log_keep > 0) {
    std::string last = base + "." + std::to_string(pod->log_keep);
    unlink(last.c_str());
    for (int i = pod->log_keep - 1; i >= 1; --i) {
      std::string from = base + "." + std::to_string(i);
      std::string to = base + "." + std::to_string(i + 1);
      rename(from.c_str(), to.c_str());  // ENOENT for the first rotations.
    }
    rename(base.c_str(), (base + ".1").c_str());
  }
  pod->log_fd = open(base.c_str(),
                     O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
  pod->log_size = 0;
}

void ProcessExecutor::FinishLocked(Pod* pod) {
  // The leader is a zombie (not reaped yet), so its pid still names this
  // group: whatever the pod left behind goes now.
  kill(-pod->pid, SIGKILL);
  if (pod->cgroup) pod->cgroup->KillAll();
  if (pod->out_fd >= 0) {
    ReadOutput(pod, /*drain=*/true);
    if (pod->out_fd >= 0) close(pod->out_fd);
    pod->out_fd = -1;
  }
  if (pod->log_fd >= 0) close(pod->log_fd);
  pod->log_fd = -1;
  if (pod->pidfd >= 0) close(pod->pidfd);
  pod->pidfd = -1;
  int status = 0;
  while (waitpid(pod->pid, &status, 0) < 0 && errno == EINTR) {
  }
  PodExit e;
  e.id = pod->id;
  if (WIFSIGNALED(status)) {
    e.signal = WTERMSIG(status);
    e.exit_code = 128 + e.signal;
  } else {
    e.exit_code = WEXITSTATUS(status);
  }
  e.stopped = pod->stopped;
  e.last_lines = TailFile(pod->log_path);
  if (pod->cgroup) {
    e.reason = OomReason(*pod->cgroup, e.signal);
    if (!pod->cgroup->Remove()) dying_.push_back(std::move(pod->cgroup));
    pod->cgroup.reset();
  }
  pod->done = true;
  exits_.push_back(std::move(e));
}

class SimulatedExecutor : public Executor {
 public:
  Result<int> Start(const PodSpec& spec) override {
    ALLOT_RETURN_IF_ERROR(ValidateSpec(spec, /*simulated=*/true));
    std::lock_guard<std::mutex> lock(mu_);
    if (pods_.count(spec.id) > 0) {
      return Status::InvalidArgument("pod id " + spec.id + " is in use", "id");
    }
    pods_[spec.id] = SimPod{Clock::now() + spec.simulated_runtime, false};
    return 0;
  }
  void Stop(const std::string& id, milliseconds grace) override {
    (void)grace;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pods_.find(id);
    if (it == pods_.end() || it->second.stopped) return;
    Clock::time_point now = Clock::now();
    if (it->second.end <= now) return;  // Already exited on its own.
    it->second.end = now;
    it->second.stopped = true;
  }
  std::vector<PodExit> Poll() override {
    std::lock_guard<std::mutex> lock(mu_);
    Clock::time_point now = Clock::now();
    std::vector<std::pair<Clock::time_point, PodExit>> ended;
    for (auto it = pods_.begin(); it != pods_.end();) {
      if (it->second.end > now) {
        ++it;
        continue;
      }
      PodExit e;
      e.id = it->first;
      if (it->second.stopped) {
        e.stopped = true;
        e.signal = SIGTERM;
        e.exit_code = 128 + SIGTERM;
      }
      ended.emplace_back(it->second.end, std::move(e));
      it = pods_.erase(it);
    }
    std::stable_sort(
        ended.begin(), ended.end(),
        [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<PodExit> out;
    for (auto& [t, e] : ended) out.push_back(std::move(e));
    return out;
  }
  std::vector<std::string> Running() const override {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::string> ids;
    for (const auto& [id, pod] : pods_) ids.push_back(id);
    return ids;
  }
  void StopAll(milliseconds grace) override {
    std::vector<std::string> ids = Running();
    for (const std::string& id : ids) Stop(id, grace);
  }

 private:
  struct SimPod {
    Clock::time_point end;
    bool stopped;
  };
  mutable std::mutex mu_;
  std::map<std::string, SimPod> pods_;  // Guarded by mu_.
};

}  // namespace

std::unique_ptr<Executor> NewProcessExecutor(
    std::unique_ptr<CgroupManager> cgroups) {
  return std::make_unique<ProcessExecutor>(std::move(cgroups));
}
std::unique_ptr<Executor> NewSimulatedExecutor() {
  return std::make_unique<SimulatedExecutor>();
}

}  // namespace allot::agent
