#include "ctrl/deadlines.h"

#include <algorithm>
#include <string>

namespace allot::ctrl {

Plan Deadlines::Run(const View& view, int64_t now_ms) const {
  Plan p;
  view.ForEachAdmitted([&](const AdmittedView& w) {
    int64_t limit_s = w.max_execution_seconds;
    std::string what = "its maximumExecutionTimeSeconds";
    if (limit_s <= 0) {
      const core::ClusterQueue* cq = view.FindClusterQueue(w.cluster_queue);
      if (cq == nullptr || cq->max_run_seconds <= 0) return;
      limit_s = cq->max_run_seconds;
      what = "its ClusterQueue's " + std::string(core::kMaxRunDurationKey);
    }
    const int64_t end_ms = w.reserved_ms + limit_s * 1000;
    if (now_ms < end_ms) {
      p.next_wake_ms = std::min(p.next_wake_ms, end_ms);
      return;
    }
    p.actions.push_back({Action::Type::kFail, std::string(w.key), "MaximumExecutionTimeExceeded",
                         "ran longer than " + what + " (" + std::to_string(limit_s) + " s)", ""});
  });
  return p;
}

}  // namespace allot::ctrl
