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
    // On parked capacity it holds no quota to keep: not parked, stopped
    // when its lenders want their GPUs back.
    if (after_s <= 0 || w.on_parked_capacity) return;
    any_policy = true;
    if (w.idle_since_ms <= 0) return;
    // With a custom signal, idle only once it is quiet too.
    const int64_t since = std::max(w.idle_since_ms, w.active_ms);
    const int64_t at = since + after_s * 1000;
    if (now_ms < at) {
      p.next_wake_ms = std::min(p.next_wake_ms, at);
      return;
    }
    p.actions.push_back({Action::Type::kPark, std::string(w.key), "Idle",
                         "parked by the idle policy: its GPUs stayed under the idle threshold" +
                             std::string(w.active_ms >= 0 ? " and it reported no activity" : "") +
                             " for " + core::FormatDurationSeconds(after_s),
                         ""});
  });
  if (any_policy) p.next_wake_ms = std::min(p.next_wake_ms, now_ms + kPollMs);
  return p;
}

}  // namespace allot::ctrl
