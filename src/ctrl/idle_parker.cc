#include "ctrl/idle_parker.h"

#include <algorithm>
#include <string>

#include "core/duration.h"

namespace allot::ctrl {

Plan IdleParker::Run(const View& view, int64_t now_ms) const {
  Plan p;
  bool any_policy = false;
  view.ForEachAdmittedWithIdlePolicy([&](const AdmittedView& w) {
    int64_t after_s = w.idle_after_seconds;
    if (after_s < 0) {
      const core::ClusterQueue* cq = view.FindClusterQueue(w.cluster_queue);
      after_s = cq == nullptr ? 0 : cq->idle_after_seconds;
    }
    if (after_s <= 0) return;
    any_policy = true;
    if (w.idle_since_ms <= 0) return;
    const int64_t at = w.idle_since_ms + after_s * 1000;
    if (now_ms < at) {
      p.next_wake_ms = std::min(p.next_wake_ms, at);
      return;
    }
    p.actions.push_back({Action::Type::kPark, std::string(w.key), "Idle",
                         "parked by the idle policy: its GPUs stayed under the idle threshold for " +
                             core::FormatDurationSeconds(after_s),
                         ""});
  });
  if (any_policy) p.next_wake_ms = std::min(p.next_wake_ms, now_ms + kPollMs);
  return p;
}

}  // namespace allot::ctrl
