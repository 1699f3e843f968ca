// NotebookProbe: every period, asks each running notebook's Jupyter (at its
// pod's endpoint, with its token) whether someone works in it, and reports
// activity for those that do (State::ReportActivity, the idle parker's
// custom signal; docs/notebooks.md). Active: a kernel busy now (a silent
// long cell counts), or a kernel's or a terminal's last_activity that moved
// since the last look (output, input). Jupyter's /api/status last_activity
// is not read: the probe's own requests move it. Its own thread; the
// answers it posts to the owner.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "server/owner.h"

namespace allot::server {

class NotebookProbe {
 public:
  NotebookProbe(Owner* owner, int64_t period_ms);
  ~NotebookProbe();  // Stops and joins.

  // What one look at a Jupyter found, from its /api/kernels and
  // /api/terminals answers (JSON arrays); `seen` is what the last look
  // found and becomes this one's. Exposed for tests.
  static bool Active(const std::string& kernels_json, const std::string& terminals_json,
                     std::string* seen);

 private:
  void Loop();
  Owner* owner_;
  int64_t period_ms_;
  std::map<std::string, std::string> seen_;  // Workload -> last look (Loop only).
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace allot::server
