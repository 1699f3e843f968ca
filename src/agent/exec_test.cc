// Tests of the executors with real processes (sh, sleep), each run against
// both runtimes: the process executor and the container executor (runc,
// the tiny busybox image of testing/oci_image.h; skipped, saying why, where
// the host cannot run containers). What differs by design is asserted per
// runtime, saying why. No timing assertions: waits use generous deadlines
// and only fail when one passes.
#include "agent/exec.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "agent/test_util.h"

namespace allot::agent {
namespace {

using std::chrono::milliseconds;
using testing::Exists;
using testing::ReadAll;
using testing::Runtime;
using testing::RuntimePods;
using testing::WaitFor;

class ExecTest : public ::testing::TestWithParam<Runtime> {
 protected:
  void SetUp() override {
    if (container()) {
      const std::string why = RuntimePods::Prepare();
      if (!why.empty()) GTEST_SKIP() << why;
    }
    char tmpl[] = "/tmp/allot_exec_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    exec_ = RuntimePods::NewExecutor(GetParam(), nullptr);
  }
  void TearDown() override {
    exec_.reset();
    if (dir_.empty()) return;
    std::string cmd = "rm -rf '" + dir_ + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
  }

  bool container() const { return GetParam() == Runtime::kContainer; }

  // `sh -c script` (busybox's sh in the container).
  PodSpec Sh(const std::string& id, const std::string& script) {
    PodSpec spec;
    spec.id = id;
    spec.command = {"sh", "-c", script};
    spec.log_path = dir_ + "/logs/" + id + ".log";
    RuntimePods::Use(GetParam(), &spec);
    return spec;
  }

  // Polls until pod `id` has exited; the exits of other pods are kept.
  PodExit WaitExit(const std::string& id) { return testing::WaitExit(*exec_, &exits_, id); }

  // `sleep N` with an N of this test process's own: its pids are found by
  // command line on the host, in a container too (pids in the log are the
  // container's own there).
  std::string LongSleep() const { return "sleep " + std::to_string(1000000 + getpid()); }
  std::vector<int> Sleepers() const {
    return testing::PidsRunning({"sleep", std::to_string(1000000 + getpid())});
  }

  std::string dir_;
  std::unique_ptr<Executor> exec_;
  std::map<std::string, PodExit> exits_;
};

TEST_P(ExecTest, ChildSeesEnvWorkingDirAndNoAgentEnv) {
  // The pod gets a base environment plus its env, nothing else of ours.
  setenv("ALLOT_EXEC_TEST_LEAK", "leaked", 1);
  // A working directory that exists where the pod runs: the container
  // sees its image's root file system, not the host's.
  const std::string wd = container() ? "/tmp" : dir_ + "/wd";
  if (!container()) {
    ASSERT_EQ(mkdir(wd.c_str(), 0755), 0);
  }
  PodSpec spec = Sh("env",
                    "echo foo=$FOO; pwd; echo leak=$ALLOT_EXEC_TEST_LEAK;"
                    " echo lang=$LANG; echo path=$PATH home=$HOME; echo err >&2");
  spec.env = {{"FOO", "bar baz"}, {"LANG", "C"}};
  spec.working_dir = wd;
  Result<int> pid = exec_->Start(spec);
  ASSERT_TRUE(pid.ok()) << pid.status().ToString();
  EXPECT_GT(*pid, 0);
  PodExit e = WaitExit("env");
  unsetenv("ALLOT_EXEC_TEST_LEAK");
  EXPECT_EQ(e.exit_code, 0);
  EXPECT_FALSE(e.stopped);
  // The base differs by design: the agent's PATH and HOME (or defaults)
  // for a process; the image's PATH (the tiny one's is /bin) and HOME=/root
  // in a container, as Docker and Kubernetes set them.
  auto ours = [](const char* name, const char* fallback) {
    const char* v = std::getenv(name);
    return std::string(v != nullptr ? v : fallback);
  };
  const std::string base =
      container() ? "path=/bin home=/root"
                  : "path=" + ours("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin") +
                        " home=" + ours("HOME", "/");
  std::string want = "foo=bar baz\n" + wd + "\nleak=\nlang=C\n" + base + "\nerr\n";
  std::string log = ReadAll(spec.log_path);
  if (container()) {
    // runc run (not detached, no terminal) copies the container's stdout
    // and stderr through two pipes of its own: each keeps its order, but
    // not their interleaving, so "err" may come anywhere.
    const size_t err = log.find("err\n");
    ASSERT_NE(err, std::string::npos) << log;
    log.erase(err, 4);
    log += "err\n";
  } else {
    EXPECT_EQ(e.last_lines, want.substr(0, want.size() - 1));
  }
  EXPECT_EQ(log, want);

  // No working_dir: by design the log's directory for a process, the
  // image's working directory (the tiny image has none: /) in a container.
  // Args follow the command.
  PodSpec dflt = Sh("dflt", "pwd; echo \"$0 $1\"");
  dflt.args = {"a0", "a1"};
  ASSERT_TRUE(exec_->Start(dflt).ok());
  EXPECT_EQ(WaitExit("dflt").exit_code, 0);
  EXPECT_EQ(ReadAll(dflt.log_path), (container() ? "/" : dir_ + "/logs") + "\na0 a1\n");
}

TEST_P(ExecTest, ExitCodes) {
  struct Case {
    const char* id;
    const char* script;
    int exit_code;
    int signal;
  };
  // A pod that signals itself dies of it as a process; in a container its
  // shell is PID 1 of the pod's pid namespace, which the kernel shields
  // from signals without a handler sent from inside (Docker and
  // Kubernetes behave the same), so it goes on and exits 0.
  const int killed = container() ? 0 : 137, kill_sig = container() ? 0 : SIGKILL;
  const int segv = container() ? 0 : 139, segv_sig = container() ? 0 : SIGSEGV;
  const Case cases[] = {
      {"zero", "echo ok", 0, 0},
      {"three", "echo failing; exit 3", 3, 0},
      {"killed", "kill -KILL $$; echo alive", killed, kill_sig},
      {"segv", "kill -SEGV $$; echo alive", segv, segv_sig},
  };
  for (const Case& c : cases)
    ASSERT_TRUE(exec_->Start(Sh(c.id, c.script)).ok());
  // Killed from outside (the host: the OOM killer, an operator): the same
  // in both.
  PodSpec outside = Sh("outside", "echo up; exec " + LongSleep());
  Result<int> pid = exec_->Start(outside);
  ASSERT_TRUE(pid.ok());
  ASSERT_TRUE(WaitFor([&] { return ReadAll(outside.log_path) == "up\n" && Sleepers().size() == 1; }));
  ASSERT_EQ(kill(Sleepers()[0], SIGKILL), 0);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.id);
    PodExit e = WaitExit(c.id);
    EXPECT_EQ(e.exit_code, c.exit_code);
    EXPECT_EQ(e.signal, c.signal);
    EXPECT_FALSE(e.stopped);
  }
  PodExit e = WaitExit("outside");
  EXPECT_EQ(e.exit_code, 137);
  EXPECT_EQ(e.signal, SIGKILL);
  EXPECT_FALSE(e.stopped);
  EXPECT_EQ(exits_["three"].last_lines, "failing");
  EXPECT_EQ(exits_["killed"].last_lines, container() ? "alive" : "");
  EXPECT_TRUE(exec_->Running().empty());
}

TEST_P(ExecTest, StartErrorsLeaveNothingRunning) {
  std::string script = dir_ + "/not-exec.sh";
  std::ofstream(script) << "#!/bin/sh\necho hi\n";
  std::string no_shebang = dir_ + "/no-shebang";
  std::ofstream(no_shebang) << "\x7f"
                               "ELF garbage\n";
  ASSERT_EQ(chmod(no_shebang.c_str(), 0755), 0);
  struct Case {
    const char* name;
    PodSpec spec;
    StatusCode code;
    const char* in_message;
    // A process only: the command and working directory are looked up
    // where the pod runs, which for a container is inside its image, after
    // Start(): there they are the pod's exit code (a command the image
    // does not have: 127, as under a shell) and its log's last lines.
    int container_exit = -1;
    const char* container_log = "";
  };
  PodSpec not_found = Sh("nf", "");
  not_found.command = {"allot-no-such-command"};
  PodSpec not_exec = Sh("ne", "");
  not_exec.command = {script};
  PodSpec bad_format = Sh("bf", "");
  bad_format.command = {no_shebang};
  PodSpec dir_cmd = Sh("dc", "");
  dir_cmd.command = {dir_};
  PodSpec bad_wd = Sh("wd", "true");
  bad_wd.working_dir = dir_ + "/missing";
  PodSpec empty = Sh("empty", "");
  empty.command.clear();
  PodSpec no_id = Sh("", "true");
  PodSpec bad_env = Sh("be", "true");
  bad_env.env = {{"A=B", "c"}};
  PodSpec bad_log = Sh("bl", "true");
  bad_log.log_path = script + "/x.log";  // A file as a directory.
  const Case cases[] = {
      {"not found", not_found, StatusCode::kFailedPrecondition,
       "\"allot-no-such-command\" not found in PATH", 127,
       "executable file not found: allot-no-such-command (not in the image on its PATH)"},
      // The host's files are not in the image.
      {"not executable", not_exec, StatusCode::kFailedPrecondition,
       "not an executable file", 127, "not-exec.sh (not in the image)"},
      {"exec format", bad_format, StatusCode::kFailedPrecondition,
       "Exec format error", 127, "no-shebang (not in the image)"},
      {"directory", dir_cmd, StatusCode::kFailedPrecondition,
       "not an executable file", 127, "allot_exec_test"},
      // runc creates a missing working directory, as Docker does.
      {"working dir", bad_wd, StatusCode::kFailedPrecondition,
       "does not exist", 0, ""},
      {"empty id", no_id, StatusCode::kInvalidArgument, "id is empty"},
      {"env name", bad_env, StatusCode::kInvalidArgument, "\"A=B\""},
      {"log", bad_log, StatusCode::kFailedPrecondition, "cannot"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Result<int> r = exec_->Start(c.spec);
    if (container() && c.container_exit >= 0) {
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      PodExit e = WaitExit(c.spec.id);
      EXPECT_EQ(e.exit_code, c.container_exit);
      EXPECT_NE(e.last_lines.find(c.container_log), std::string::npos) << e.last_lines;
      continue;
    }
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), c.code);
    EXPECT_NE(r.status().message().find(c.in_message), std::string::npos)
        << r.status().message();
  }
  // No command: an error for a process; a container runs its image's
  // entrypoint and cmd (Kubernetes' rule), here `echo hello from tiny`.
  Result<int> r = exec_->Start(empty);
  if (container()) {
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(WaitExit("empty").last_lines, "hello from tiny");
  } else {
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("no command"), std::string::npos) << r.status().message();
  }
  EXPECT_TRUE(exec_->Running().empty());
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_TRUE(exec_->Poll().empty());

  // An id in use is refused while the pod runs and until Poll returned it,
  // and the refusal leaves the running pod alone.
  PodSpec dup = Sh("dup", "echo first");
  ASSERT_TRUE(exec_->Start(dup).ok());
  Result<int> again = exec_->Start(Sh("dup", "true"));
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kInvalidArgument);
  PodExit e = WaitExit("dup");
  EXPECT_EQ(e.exit_code, 0) << e.last_lines;
  EXPECT_EQ(e.last_lines, "first");
  EXPECT_TRUE(exec_->Start(Sh("dup", "true")).ok());
  WaitExit("dup");
}

TEST_P(ExecTest, StopEndsAPodThatHonoursSigterm) {
  // A shell that ends on SIGTERM with a handler of its own, in both; the
  // long grace means it must end through SIGTERM, not wait for the SIGKILL.
  PodSpec spec = Sh("term", "trap 'echo got TERM; exit 143' TERM; echo started;"
                            " while :; do sleep 0.1; done");
  ASSERT_TRUE(exec_->Start(spec).ok());
  ASSERT_TRUE(WaitFor([&] { return ReadAll(spec.log_path) == "started\n"; }));
  EXPECT_EQ(exec_->Running(), std::vector<std::string>{"term"});
  exec_->Stop("term", milliseconds(60000));
  exec_->Stop("unknown-pod", milliseconds(0));  // Ignored.
  PodExit e = WaitExit("term");
  EXPECT_TRUE(e.stopped);
  EXPECT_EQ(e.exit_code, 143);
  // runc reports 128 + N as death by signal N (the container executor
  // cannot tell); a process that exits 143 exited.
  EXPECT_EQ(e.signal, container() ? SIGTERM : 0);
  // (dash, the host's sh, may print "Terminated" for the sleep between.)
  EXPECT_EQ(e.last_lines.substr(0, 8), "started\n") << e.last_lines;
  EXPECT_EQ(e.last_lines.substr(e.last_lines.rfind('\n') + 1), "got TERM") << e.last_lines;
  EXPECT_TRUE(exec_->Running().empty());

  // One without a handler: a process dies of SIGTERM at once. In a
  // container it is PID 1 of its pid namespace, which the kernel shields
  // from SIGTERM without a handler (Docker and Kubernetes without an init
  // alike): only the SIGKILL at the end of the grace ends it.
  PodSpec plain = Sh("plain", "echo started; exec " + LongSleep());
  ASSERT_TRUE(exec_->Start(plain).ok());
  ASSERT_TRUE(WaitFor([&] { return ReadAll(plain.log_path) == "started\n" && !Sleepers().empty(); }));
  exec_->Stop("plain", container() ? milliseconds(300) : milliseconds(60000));
  e = WaitExit("plain");
  EXPECT_TRUE(e.stopped);
  EXPECT_EQ(e.signal, container() ? SIGKILL : SIGTERM);
  EXPECT_EQ(e.exit_code, container() ? 137 : 143);
  EXPECT_EQ(e.last_lines, "started");
  EXPECT_TRUE(WaitFor([&] { return Sleepers().empty(); }));
}

TEST_P(ExecTest, StopKillsAGroupThatIgnoresSigterm) {
  // The leader and its background children ignore SIGTERM (an ignored
  // signal stays ignored across fork and exec): only SIGKILL after the
  // grace ends them, and none of them survives.
  PodSpec spec = Sh("stubborn",
                    "trap '' TERM; " + LongSleep() + " & echo child=$!; " + LongSleep() +
                        " >/dev/null 2>&1 & echo child=$!; echo leader=$$; wait");
  ASSERT_TRUE(exec_->Start(spec).ok());
  ASSERT_TRUE(WaitFor([&] { return Sleepers().size() == 2; }));
  exec_->Stop("stubborn", milliseconds(200));
  PodExit e = WaitExit("stubborn");
  EXPECT_TRUE(e.stopped);
  EXPECT_EQ(e.signal, SIGKILL);
  EXPECT_EQ(e.exit_code, 137);
  EXPECT_TRUE(WaitFor([&] { return Sleepers().empty(); })) << "orphans " << Sleepers().size();
}

TEST_P(ExecTest, ChildrenLeftBehindByAnExitedLeaderAreKilled) {
  // One child keeps the pipe open, one does not; the leader exits 0 at
  // once. The pod ends (after a short linger for the pipe) and takes both
  // children with it.
  PodSpec spec = Sh("leaver", LongSleep() + " & echo child=$!; " + LongSleep() +
                                  " >/dev/null 2>&1 & echo child=$!; echo bye");
  ASSERT_TRUE(exec_->Start(spec).ok());
  PodExit e = WaitExit("leaver");
  EXPECT_EQ(e.exit_code, 0);
  EXPECT_FALSE(e.stopped);
  EXPECT_EQ(e.last_lines.substr(e.last_lines.rfind('\n') + 1), "bye");
  EXPECT_TRUE(WaitFor([&] { return Sleepers().empty(); })) << "orphans " << Sleepers().size();
}

TEST_P(ExecTest, LogRotatesAtTheLimit) {
  // 100 lines of 16 bytes = 1600 bytes through a 500-byte limit, 2 kept:
  // log.2 and log.1 are full, log has the rest, older output is dropped.
  PodSpec spec = Sh("rot",
                    "i=100; while [ $i -lt 200 ]; do"
                    " echo \"line-$i-abcdef\"; i=$((i+1)); done");
  spec.log_max_bytes = 500;
  spec.log_keep = 2;
  std::string all;
  for (int i = 100; i < 200; ++i)
    all += "line-" + std::to_string(i) + "-abcdef\n";
  ASSERT_EQ(all.size(), 1600u);
  ASSERT_TRUE(exec_->Start(spec).ok());
  PodExit e = WaitExit("rot");
  EXPECT_EQ(e.exit_code, 0);
  std::string log = ReadAll(spec.log_path);
  std::string log1 = ReadAll(spec.log_path + ".1");
  std::string log2 = ReadAll(spec.log_path + ".2");
  EXPECT_FALSE(Exists(spec.log_path + ".3"));
  EXPECT_EQ(log2.size(), 500u);
  EXPECT_EQ(log1.size(), 500u);
  EXPECT_EQ(log.size(), 100u);
  EXPECT_EQ(log2 + log1 + log, all.substr(500));
  EXPECT_EQ(e.last_lines, log.substr(0, log.size() - 1));
}

TEST_P(ExecTest, ManyPodsAtOnce) {
  // Fewer containers: each costs runc about 0.1 s of CPU to start (50 take
  // over 5 s on 2 cores).
  const int kPods = container() ? 8 : 50;
  for (int i = 0; i < kPods; ++i) {
    std::string id = "many-" + std::to_string(i);
    ASSERT_TRUE(exec_
                    ->Start(Sh(id, "echo hello " + id + "; exit " +
                                       std::to_string(i % 5)))
                    .ok());
  }
  ASSERT_TRUE(WaitFor([&] {
    for (PodExit& e : exec_->Poll()) exits_[e.id] = std::move(e);
    return exits_.size() == static_cast<size_t>(kPods);
  }));
  for (int i = 0; i < kPods; ++i) {
    std::string id = "many-" + std::to_string(i);
    SCOPED_TRACE(id);
    EXPECT_EQ(exits_[id].exit_code, i % 5);
    EXPECT_EQ(exits_[id].last_lines, "hello " + id);
  }
  EXPECT_TRUE(exec_->Running().empty());
}

TEST_P(ExecTest, StopAllWaitsForEveryPod) {
  std::vector<std::string> logs;
  for (int i = 0; i < 5; ++i) {
    std::string id = "all-" + std::to_string(i);
    // Pod 0 ignores SIGTERM and needs the SIGKILL; the others exit on it
    // (with a handler: a container's PID 1 has no default action for it).
    PodSpec spec = Sh(id, std::string(i == 0 ? "trap '' TERM; " : "trap 'exit 143' TERM; ") +
                              "echo up; while :; do sleep 0.1; done");
    ASSERT_TRUE(exec_->Start(spec).ok());
    logs.push_back(spec.log_path);
  }
  for (const std::string& log : logs) {
    ASSERT_TRUE(WaitFor([&] { return ReadAll(log) == "up\n"; }));
  }
  exec_->StopAll(milliseconds(200));
  EXPECT_EQ(exec_->Running().size(), 5u);  // Ended, not yet polled.
  std::vector<PodExit> exits = exec_->Poll();
  ASSERT_EQ(exits.size(), 5u);
  for (const PodExit& e : exits) {
    EXPECT_TRUE(e.stopped) << e.id;
    EXPECT_EQ(e.exit_code, e.id == "all-0" ? 137 : 143) << e.id;
  }
  EXPECT_TRUE(exec_->Running().empty());
}

// The CPU time of a pod's process group (what simulated GPUs follow): a
// pod that spins uses it, one that sleeps does not; a container's is not
// known (absent), as its processes are the runtime's.
TEST_P(ExecTest, PodCpuSecondsFollowWhatRuns) {
  ASSERT_TRUE(exec_->Start(Sh("spin", "echo up; while :; do :; done")).ok());
  ASSERT_TRUE(exec_->Start(Sh("nap", "echo up; " + LongSleep())).ok());
  for (const char* id : {"spin", "nap"}) {
    ASSERT_TRUE(WaitFor([&] { return ReadAll(dir_ + "/logs/" + id + ".log") == "up\n"; }));
  }
  if (container()) {
    EXPECT_TRUE(exec_->PodCpuSeconds().empty());
  } else {
    std::map<std::string, double> cpu;
    ASSERT_TRUE(WaitFor([&] {
      cpu = exec_->PodCpuSeconds();
      return cpu.count("spin") > 0 && cpu["spin"] >= 0.3;
    }));
    ASSERT_TRUE(cpu.count("nap"));
    EXPECT_LT(cpu["nap"], 0.1);
  }
  exec_->StopAll(milliseconds(200));
}

INSTANTIATE_TEST_SUITE_P(Runtimes, ExecTest,
                         ::testing::Values(Runtime::kProcess, Runtime::kContainer),
                         testing::RuntimeName);

}  // namespace
}  // namespace allot::agent
