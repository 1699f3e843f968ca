#include "ctrl/deadlines.h"

#include <algorithm>
#include <string>

namespace allot::ctrl {

Plan Deadlines::Run(const View& view, int64_t now_ms) const {
  Plan p;
  // Consecutive workloads often share a ClusterQueue: one lookup for them.
  std::string_view cq_name;
  const core::ClusterQueue* cq = nullptr;
  bool looked_up = false;
  auto check = [&](const AdmittedView& w) {
    int64_t limit_s = w.max_execution_seconds;
    const bool own = limit_s > 0;
    if (!own) {
      if (!looked_up || w.cluster_queue != cq_name) {
        cq_name = w.cluster_queue;
        cq = view.FindClusterQueue(cq_name);
        looked_up = true;
      }
      if (cq == nullptr || cq->max_run_seconds <= 0) return;
      limit_s = cq->max_run_seconds;
    }
    // Image pulls are not run time (a pull still going moves the end on:
    // the next wake looks again).
    const int64_t end_ms = w.reserved_ms + w.pull_ms + limit_s * 1000;
    if (now_ms < end_ms) {
      p.next_wake_ms = std::min(p.next_wake_ms, end_ms);
      return;
    }
    const std::string what =
        own ? "its maximumExecutionTimeSeconds"
            : "its ClusterQueue's " + std::string(core::kMaxRunDurationKey);
    p.actions.push_back(
        {Action::Type::kFail, std::string(w.key),
         "MaximumExecutionTimeExceeded",
         "ran longer than " + what + " (" + std::to_string(limit_s) + " s)",
         ""});
  };
  view.ForEachAdmittedWithLimit(check);
  return p;
}

}  // namespace allot::ctrl
