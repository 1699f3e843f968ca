// Per-pod cgroups with real processes on this host's cgroups: whatever
// CgroupManager::Detect picks here (v2 where the host has its cpu and memory
// controllers, else v1), and the v2 mechanics (join, kill, removal) on a
// v2 hierarchy without controllers where that is all the host has. Tests
// that need what this host lacks skip, saying why; with
// ALLOT_TEST_CGROUP_MODE=v2 (or v1) they fail unless Detect picks that mode
// (tools/cgroup-v2-vm-check runs them so in a guest with pure cgroup v2).
// No timing assertions, but for a CPU quota's upper bound. The tests of
// limits, OOM and Stop run against both runtimes (CgroupExecTest: the
// process executor, and the container executor, whose runc is given the
// pod's cgroup); the others against the process executor only.
#include "agent/cgroup.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "agent/exec.h"
#include "agent/test_util.h"

namespace allot::agent {
namespace {

using std::chrono::milliseconds;
using testing::Alive;
using testing::Exists;
using testing::ReadAll;
using testing::Runtime;
using testing::RuntimePods;
using testing::WaitFor;

// The value after "key=" on a line of `text`; -1 when none.
int Tagged(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key + "=", 0) == 0) return std::atoi(line.c_str() + key.size() + 1);
  }
  return -1;
}

// A pod's shell lines that print its cgroup lines and, for each of its
// cgroups, the limit files there ("cpu.max=50000 100000", ...), wherever
// the hierarchies are mounted; they exit 0 (a missing file is no error:
// on pure v2 the pod's line is the last one read).
constexpr char kPrintLimits[] =
    "cat /proc/self/cgroup; "
    "while IFS=: read -r id ctl path; do case $path in */$POD_DIR) "
    "for f in cpu.max memory.max memory.swap.max memory.oom.group "
    "cpu.cfs_period_us cpu.cfs_quota_us memory.limit_in_bytes; do "
    "for m in /sys/fs/cgroup /sys/fs/cgroup/*; do "
    "if [ -f \"$m$path/$f\" ]; then echo \"$f=$(cat \"$m$path/$f\")\"; fi; "
    "done; done;; esac; done < /proc/self/cgroup";

class CgroupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/allot_cgroup_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    exec_.reset();
    if (!agent_dirs_.empty()) {
      for (const std::string& d : agent_dirs_) EXPECT_FALSE(Exists(d)) << d << " was left";
    }
    std::string cmd = "rm -rf '" + dir_ + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
  }

  // An executor with cgroups as Detect finds them; false (and the reason
  // in skip_) when it finds none.
  bool StartExecutor(CgroupOptions o = {}) {
    o.name = "allot-cgroup-test-" + std::to_string(getpid());
    auto cg = CgroupManager::Detect(o);
    mode_ = cg->mode();
    skip_ = cg->description();
    if (const char* want = std::getenv("ALLOT_TEST_CGROUP_MODE");
        want != nullptr && !o.TEST_v2_without_controllers) {
      EXPECT_STREQ(ToString(mode_), want) << skip_;
    }
    if (mode_ == CgroupMode::kNone) return false;
    agent_dirs_ = cg->agent_dirs();
    exec_ = RuntimePods::NewExecutor(runtime_, std::move(cg));
    return true;
  }

  // `sh -c script` (busybox's sh in the container).
  PodSpec Sh(const std::string& id, const std::string& script) {
    PodSpec spec;
    spec.id = id;
    spec.command = {"sh", "-c", script};
    spec.env = {{"POD_DIR", id}};
    spec.log_path = dir_ + "/logs/" + id + ".log";
    RuntimePods::Use(runtime_, &spec);
    return spec;
  }

  PodExit WaitExit(const std::string& id) { return testing::WaitExit(*exec_, &exits_, id); }

  // Runs pod `id` with 500m and 256Mi, which prints its cgroups and
  // limits, and checks them: 500m is 50 ms of CPU per 100 ms period; 256Mi
  // is 268435456 bytes (room for an ASan build's container-run, which runs
  // in the pod's cgroup before it execs runc).
  void ExpectLimitsApplied(const std::string& id) {
    PodSpec spec = Sh(id, std::string(kPrintLimits) + "; echo ok; sleep 0.3");
    spec.cpu_milli = 500;
    spec.memory_bytes = 256 << 20;
    ASSERT_TRUE(exec_->Start(spec).ok());
    // While it runs, its directories are there.
    for (const std::string& d : agent_dirs_) EXPECT_TRUE(Exists(d + "/" + id)) << d;
    PodExit e = WaitExit(id);
    EXPECT_EQ(e.exit_code, 0) << e.last_lines;
    EXPECT_EQ(e.reason, "");
    const std::string log = ReadAll(spec.log_path);
    if (mode_ == CgroupMode::kV2) {
      EXPECT_NE(log.find("cpu.max=50000 100000"), std::string::npos) << log;
      EXPECT_NE(log.find("memory.max=268435456"), std::string::npos) << log;
      EXPECT_NE(log.find("memory.oom.group=1"), std::string::npos) << log;
      if (log.find("memory.swap.max=") != std::string::npos) {  // Swap accounted.
        EXPECT_NE(log.find("memory.swap.max=0"), std::string::npos) << log;
      }
    } else {
      // On v1 with the agent's cpu and memory cgroups at different paths,
      // runc puts the container at the memory path in every hierarchy (it
      // takes one cgroupsPath); the limits hold there too because
      // container-run gives runc the pod's limits as well.
      EXPECT_NE(log.find("cpu.cfs_period_us=100000"), std::string::npos) << log;
      EXPECT_NE(log.find("cpu.cfs_quota_us=50000"), std::string::npos) << log;
      EXPECT_NE(log.find("memory.limit_in_bytes=268435456"), std::string::npos) << log;
    }
    // Its /proc/self/cgroup names the pod's cgroup (v1: cpu and memory).
    const std::string name = "allot-cgroup-test-" + std::to_string(getpid()) + "/" + id;
    EXPECT_NE(log.find(name), std::string::npos) << log;
    EXPECT_TRUE(CgroupGone(id));
  }

  // Whether this process's cgroup v1 paths differ between the cpu and the
  // memory hierarchies.
  static bool V1PathsDiffer() {
    std::istringstream in(ReadAll("/proc/self/cgroup"));
    std::string cpu, memory;
    for (std::string line; std::getline(in, line);) {
      const size_t a = line.find(':'), b = line.find(':', a + 1);
      if (a == std::string::npos || b == std::string::npos) continue;
      const std::string ctl = "," + line.substr(a + 1, b - a - 1) + ",";
      if (ctl.find(",cpu,") != std::string::npos) cpu = line.substr(b + 1);
      if (ctl.find(",memory,") != std::string::npos) memory = line.substr(b + 1);
    }
    return cpu != memory;
  }

  // Waits until every directory of pod `id`'s cgroup is gone.
  bool CgroupGone(const std::string& id) {
    return WaitFor([&] {
      for (const std::string& d : agent_dirs_) {
        if (Exists(d + "/" + id)) return false;
      }
      return true;
    });
  }

  Runtime runtime_ = Runtime::kProcess;
  std::string dir_;
  CgroupMode mode_ = CgroupMode::kNone;
  std::string skip_;
  std::vector<std::string> agent_dirs_;
  std::unique_ptr<Executor> exec_;
  std::map<std::string, PodExit> exits_;
};

// The process executor only.
using CgroupProcessTest = CgroupTest;

// Both runtimes (the instantiation's name keeps the tests under Cgroup*,
// as tools/cgroup-v2-vm-check filters them).
class CgroupExecTest : public CgroupTest, public ::testing::WithParamInterface<Runtime> {
 protected:
  void SetUp() override {
    runtime_ = GetParam();
    if (runtime_ == Runtime::kContainer) {
      const std::string why = RuntimePods::Prepare();
      if (!why.empty()) GTEST_SKIP() << why;
    }
    CgroupTest::SetUp();
  }
};
INSTANTIATE_TEST_SUITE_P(CgroupRuntimes, CgroupExecTest,
                         ::testing::Values(Runtime::kProcess, Runtime::kContainer),
                         testing::RuntimeName);

TEST(CgroupDetectTest, OffIsModeNoneAndSaysSo) {
  CgroupOptions o;
  o.enabled = false;
  auto cg = CgroupManager::Detect(o);
  EXPECT_EQ(cg->mode(), CgroupMode::kNone);
  EXPECT_NE(cg->description().find("none (--cgroups=off)"), std::string::npos)
      << cg->description();
  EXPECT_FALSE(cg->Create("p", {}).ok());
}

TEST(CgroupDetectTest, DescriptionNamesTheModeAndWhere) {
  CgroupOptions o;
  o.name = "allot-cgroup-detect-" + std::to_string(getpid());
  auto cg = CgroupManager::Detect(o);
  const std::string& d = cg->description();
  EXPECT_EQ(d.rfind(std::string("cgroups: ") + ToString(cg->mode()), 0), 0u) << d;
  if (cg->mode() == CgroupMode::kNone) {
    EXPECT_NE(d.find("without cpu and memory limits"), std::string::npos) << d;
    EXPECT_TRUE(cg->agent_dirs().empty());
  } else {
    for (const std::string& a : cg->agent_dirs()) {
      EXPECT_TRUE(Exists(a)) << a;
      EXPECT_NE(d.find(a), std::string::npos) << d;
    }
  }
  std::vector<std::string> dirs = cg->agent_dirs();
  cg.reset();
  for (const std::string& a : dirs) EXPECT_FALSE(Exists(a)) << a;
}

TEST_P(CgroupExecTest, LimitsAreAppliedInsideThePodAndTheCgroupGoesWithIt) {
  if (!StartExecutor()) GTEST_SKIP() << "no usable cgroups here: " << skip_;
  ExpectLimitsApplied("lim");
}

TEST_F(CgroupProcessTest, UnderACgroupParentTheLimitsApplyToo) {
  // --cgroup-parent: created from the top of the hierarchy (on v2 with the
  // controllers enabled at each level on the way), removed here after.
  CgroupOptions o;
  o.parent = "/allot-cgroup-parent-" + std::to_string(getpid());
  if (!StartExecutor(o)) GTEST_SKIP() << "no usable cgroups here: " << skip_;
  std::vector<std::string> parents;
  for (const std::string& d : agent_dirs_) {
    EXPECT_NE(d.find(o.parent + "/allot-cgroup-test-"), std::string::npos) << d;
    parents.push_back(d.substr(0, d.rfind('/')));
  }
  ExpectLimitsApplied("under");
  exec_.reset();
  for (const std::string& p : parents) EXPECT_EQ(rmdir(p.c_str()), 0) << p;
}

TEST_F(CgroupProcessTest, TheCpuQuotaHoldsASpinnerToItsShare) {
  // A 200m pod that spins gets about 20 ms of CPU every 100 ms: measured
  // over 2 s of its CPU time (/proc/PID/stat), at most its quota and a
  // margin (less, on a busy host, is no failure).
  if (!StartExecutor()) GTEST_SKIP() << "no usable cgroups here: " << skip_;
  PodSpec spec = Sh("spin", "while :; do :; done");
  spec.cpu_milli = 200;
  Result<int> pid = exec_->Start(spec);
  ASSERT_TRUE(pid.ok());
  const std::string stat_path = "/proc/" + std::to_string(*pid) + "/stat";
  auto cpu_s = [&] {  // utime + stime, in seconds.
    std::string stat = ReadAll(stat_path);
    std::istringstream in(stat.substr(stat.rfind(')') + 2));
    std::string field;
    long ticks = 0;
    for (int i = 3; i <= 15 && in >> field; ++i) {
      if (i >= 14) ticks += std::atol(field.c_str());
    }
    return static_cast<double>(ticks) / static_cast<double>(sysconf(_SC_CLK_TCK));
  };
  std::this_thread::sleep_for(milliseconds(300));  // Past its start.
  const double cpu0 = cpu_s();
  const auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(milliseconds(2000));
  const double cpu1 = cpu_s();
  const std::chrono::duration<double> wall = std::chrono::steady_clock::now() - t0;
  const double share = (cpu1 - cpu0) / wall.count();
  std::printf("cgroups %s: a 200m spinner used %.3f CPU over %.2f s\n", ToString(mode_), share,
              wall.count());
  EXPECT_LT(share, 0.3) << "the quota of 0.2 CPU did not hold";
  EXPECT_GT(cpu1, 0.0) << "the spinner never ran";
  exec_->Stop("spin", milliseconds(100));
  EXPECT_TRUE(WaitExit("spin").stopped);
  EXPECT_TRUE(CgroupGone("spin"));
}

TEST_P(CgroupExecTest, APodWithoutRequestsGetsACgroupWithoutLimits) {
  if (!StartExecutor()) GTEST_SKIP() << "no usable cgroups here: " << skip_;
  PodSpec spec = Sh("free", kPrintLimits);
  ASSERT_TRUE(exec_->Start(spec).ok());
  PodExit e = WaitExit("free");
  EXPECT_EQ(e.exit_code, 0) << e.last_lines;
  const std::string log = ReadAll(spec.log_path);
  if (mode_ == CgroupMode::kV2) {
    EXPECT_NE(log.find("cpu.max=max 100000"), std::string::npos) << log;
    EXPECT_NE(log.find("memory.max=max"), std::string::npos) << log;
  } else {
    EXPECT_NE(log.find("cpu.cfs_quota_us=-1"), std::string::npos) << log;
  }
  EXPECT_TRUE(CgroupGone("free"));
}

TEST_P(CgroupExecTest, GoingPastTheMemoryLimitIsAnOomKillNamedInTheReason) {
  // The shell itself holds 128 MiB (a string doubled 27 times), more than
  // its 64Mi: the kernel kills it, and the exit says the memory limit did.
  if (!StartExecutor()) GTEST_SKIP() << "no usable cgroups here: " << skip_;
  PodSpec spec = Sh("oom",
                    "echo start; x=a; i=0; while [ $i -lt 27 ]; do x=$x$x; i=$((i+1)); done; "
                    "echo survived ${#x}");
  spec.memory_bytes = 64 << 20;
  ASSERT_TRUE(exec_->Start(spec).ok());
  PodExit e = WaitExit("oom");
  EXPECT_NE(e.exit_code, 0);
  EXPECT_EQ(e.last_lines.find("survived"), std::string::npos) << e.last_lines;
  EXPECT_NE(e.reason.find("OOMKilled"), std::string::npos) << e.reason;
  EXPECT_NE(e.reason.find("memory limit of 64Mi"), std::string::npos) << e.reason;
  std::printf("cgroups %s, %s: the pod's exit reason: %s\n", ToString(mode_),
              testing::RuntimeName({runtime_, 0}).c_str(), e.reason.c_str());
  EXPECT_FALSE(e.stopped);
  EXPECT_TRUE(CgroupGone("oom"));
}

TEST_P(CgroupExecTest, StopKillsWhatLeftTheProcessGroup) {
  // A child that made a session of its own is out of the group's reach,
  // not of the cgroup's. (In a container it is found by its command line:
  // the pid it prints is the container's own.)
  if (!StartExecutor()) GTEST_SKIP() << "no usable cgroups here: " << skip_;
  const std::string tag = std::to_string(1000000 + getpid());
  PodSpec spec = Sh("escape",
                    "setsid sh -c 'echo escaped=$$; exec sleep " + tag + "' & "
                    "sleep 1000");
  ASSERT_TRUE(exec_->Start(spec).ok());
  int escaped = -1;
  ASSERT_TRUE(WaitFor([&] {
    const std::vector<int> pids = testing::PidsRunning({"sleep", tag});
    escaped = pids.size() == 1 ? pids[0] : -1;
    return escaped > 0 && Tagged(ReadAll(spec.log_path), "escaped") > 0;
  }));
  ASSERT_TRUE(Alive(escaped));
  exec_->Stop("escape", milliseconds(100));
  PodExit e = WaitExit("escape");
  EXPECT_TRUE(e.stopped);
  EXPECT_TRUE(WaitFor([&] { return !Alive(escaped); })) << "pid " << escaped << " survived";
  EXPECT_TRUE(CgroupGone("escape"));
}

TEST_F(CgroupProcessTest, V2JoinKillAndRemovalWithoutControllers) {
  // The v2 path where cgroup v2 has no cpu and memory controllers (they
  // are bound to v1 on hybrid hosts): joining, cgroup.kill and removal.
  CgroupOptions o;
  o.TEST_v2_without_controllers = true;
  if (!StartExecutor(o)) GTEST_SKIP() << "no usable cgroup v2 here: " << skip_;
  ASSERT_EQ(mode_, CgroupMode::kV2);
  PodSpec spec = Sh("v2", "grep ^0:: /proc/self/cgroup; "
                          "setsid sh -c 'echo escaped=$$; exec sleep 1000' & sleep 1000");
  ASSERT_TRUE(exec_->Start(spec).ok());
  int escaped = -1;
  ASSERT_TRUE(WaitFor([&] {
    escaped = Tagged(ReadAll(spec.log_path), "escaped");
    return escaped > 0;
  }));
  const std::string name = "allot-cgroup-test-" + std::to_string(getpid()) + "/v2";
  EXPECT_NE(ReadAll(spec.log_path).find(name), std::string::npos) << ReadAll(spec.log_path);
  exec_->Stop("v2", milliseconds(100));
  PodExit e = WaitExit("v2");
  EXPECT_TRUE(e.stopped);
  EXPECT_TRUE(WaitFor([&] { return !Alive(escaped); })) << "pid " << escaped << " survived";
  EXPECT_TRUE(CgroupGone("v2"));
}

TEST(CgroupDetectTest, LeftoversOfAnEarlierRunAreKilledAndRemoved) {
  // A pod's cgroup with a process in it, as an agent killed with -9 leaves
  // it: the next Detect with the same name empties and removes it.
  CgroupOptions o;
  o.name = "allot-cgroup-left-" + std::to_string(getpid());
  auto first = CgroupManager::Detect(o);
  if (first->mode() == CgroupMode::kNone) {
    GTEST_SKIP() << "no usable cgroups here: " << first->description();
  }
  auto cg = first->Create("left", {});
  ASSERT_TRUE(cg.ok()) << cg.status().ToString();
  std::vector<int> fds = (*cg)->join_fds();
  pid_t pid = fork();
  if (pid == 0) {
    for (int fd : fds) {
      if (write(fd, "0", 1) != 1) _exit(3);
    }
    execlp("sleep", "sleep", "1000", static_cast<char*>(nullptr));
    _exit(127);
  }
  ASSERT_GT(pid, 0);
  (*cg)->CloseJoinFds();
  ASSERT_TRUE(WaitFor([&] {
    return ReadAll((*cg)->dirs()[0] + "/cgroup.procs").find(std::to_string(pid)) !=
           std::string::npos;
  }));
  auto second = CgroupManager::Detect(o);
  EXPECT_EQ(second->leftovers_removed(), 1);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
  for (const std::string& d : (*cg)->dirs()) EXPECT_FALSE(Exists(d)) << d;
  std::vector<std::string> agent_dirs = second->agent_dirs();
  first.reset();
  second.reset();
  for (const std::string& a : agent_dirs) EXPECT_FALSE(Exists(a)) << a;
}

}  // namespace
}  // namespace allot::agent
