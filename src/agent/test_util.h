// Helpers of the agent's tests with real processes (exec_test.cc,
// cgroup_test.cc): reading files, process liveness, waiting with a
// generous deadline that only fails a test when it passes, and running
// the same test against both runtimes (Runtime, RuntimePods).
#pragma once

#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "agent/container.h"
#include "agent/exec.h"
#include "testing/oci_image.h"

namespace allot::agent::testing {

inline constexpr std::chrono::milliseconds kDeadline{15000};

inline std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

// True while `pid` is a live process (absent or zombie count as dead: a
// reparented zombie may wait for a PID 1 that does not reap).
inline bool Alive(int pid) {
  std::string stat = ReadAll("/proc/" + std::to_string(pid) + "/stat");
  size_t paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat.size()) return false;
  char state = stat[paren + 2];
  return state != 'Z' && state != 'X';
}

// Waits until `pred` holds; false after kDeadline.
template <typename Pred>
bool WaitFor(Pred pred) {
  const auto end = std::chrono::steady_clock::now() + kDeadline;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return pred();
}

// Polls `exec` until pod `id` has exited; what it says of other pods is
// kept in `exits` for later calls.
inline PodExit WaitExit(Executor& exec, std::map<std::string, PodExit>* exits,
                        const std::string& id) {
  PodExit found;
  bool ok = WaitFor([&] {
    for (PodExit& e : exec.Poll()) (*exits)[e.id] = std::move(e);
    auto it = exits->find(id);
    if (it == exits->end()) return false;
    found = it->second;
    return true;
  });
  EXPECT_TRUE(ok) << "pod " << id << " did not exit";
  return found;
}

// Live processes whose command line is exactly `argv` (argv[0] as given,
// not a path), wherever they run: in a container too, where the pod's own
// pids mean nothing to the host.
inline std::vector<int> PidsRunning(const std::vector<std::string>& argv) {
  std::string want;
  for (const std::string& a : argv) want += a + '\0';
  std::vector<int> pids;
  DIR* d = opendir("/proc");
  if (d == nullptr) return pids;
  while (dirent* e = readdir(d)) {
    const int pid = std::atoi(e->d_name);
    if (pid > 0 && ReadAll("/proc/" + std::to_string(pid) + "/cmdline") == want && Alive(pid)) {
      pids.push_back(pid);
    }
  }
  closedir(d);
  return pids;
}

// The runtimes a pod can run under: the process executor, and the
// container executor (runc) over it.
enum class Runtime { kProcess, kContainer };

inline std::string RuntimeName(const ::testing::TestParamInfo<Runtime>& info) {
  return info.param == Runtime::kProcess ? "Process" : "Container";
}

// What container pods need, shared by the tests of this binary: the tiny
// image (testing/oci_image.h) and a state directory where it was pulled
// once, so that no pod's log starts with the pull. Made on the first
// container test, removed at exit.
class RuntimePods {
 public:
  static constexpr uint32_t kUsernsBase = 1u << 20;

  // Why this host cannot run container pods ("" when it can): a container
  // test skips with it. Set up the image and state directory if needed.
  static std::string Prepare() {
    if (!error_.empty() || !dir_.empty()) return error_;
    error_ = allot::testing::ContainersUnavailable();
    if (!error_.empty()) return error_;
    char tmpl[] = "/tmp/allot_runtime_pods.XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return error_ = "mkdtemp failed";
    dir_ = tmpl;
    std::atexit(CleanUp);
    // Container root (an unprivileged host id) must reach the image roots.
    chmod(dir_.c_str(), 0711);
    if (!allot::testing::BuildTinyImage(dir_)) return error_ = "cannot build the tiny image";
    auto exec = NewExecutor(Runtime::kContainer, nullptr);
    PodSpec pull;
    pull.id = "pull";
    pull.command = {"true"};
    pull.log_path = dir_ + "/pull.log";
    Use(Runtime::kContainer, &pull);
    std::map<std::string, PodExit> exits;
    if (!exec->Start(pull).ok() || WaitExit(*exec, &exits, "pull").exit_code != 0) {
      ADD_FAILURE() << "cannot pull the tiny image: " << ReadAll(pull.log_path);
    }
    return error_;
  }

  // An executor of `runtime`, with `cgroups` (null: none).
  static std::unique_ptr<Executor> NewExecutor(Runtime runtime,
                                               std::unique_ptr<CgroupManager> cgroups) {
    auto processes = NewProcessExecutor(std::move(cgroups));
    if (runtime == Runtime::kProcess) return processes;
    ContainerOptions o;
    o.state_dir = dir_ + "/state";
    o.self_exe = std::getenv("ALLOT_BIN");
    o.userns_base = kUsernsBase;
    o.private_network = true;
    return NewContainerExecutor(o, std::move(processes));
  }
  // Makes `spec` a container pod of the tiny image when `runtime` is the
  // container one (its tenant: the id's part before '/', else "t").
  static void Use(Runtime runtime, PodSpec* spec) {
    if (runtime != Runtime::kContainer) return;
    spec->image = "oci:" + dir_ + "/oci:tiny";
    const size_t slash = spec->id.find('/');
    spec->tenant = slash == std::string::npos ? "t" : spec->id.substr(0, slash);
  }
 private:
  static void CleanUp() {
    if (!dir_.empty()) (void)std::system(("rm -rf '" + dir_ + "'").c_str());
  }

  static inline std::string dir_;
  static inline std::string error_;
};

}  // namespace allot::agent::testing
