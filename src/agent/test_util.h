// Helpers of the agent's tests with real processes (exec_test.cc,
// cgroup_test.cc): reading files, process liveness, and waiting with a
// generous deadline that only fails a test when it passes.
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include "agent/exec.h"

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

}  // namespace allot::agent::testing
