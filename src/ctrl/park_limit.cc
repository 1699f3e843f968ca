#include "ctrl/park_limit.h"

#include <algorithm>
#include <string>

#include "core/duration.h"

namespace allot::ctrl {

Plan ParkLimit::Run(const View& view, int64_t now_ms) const {
  Plan p;
  view.ForEachParked([&](const ParkedView& w) {
    const core::ClusterQueue* cq = view.FindClusterQueue(w.cluster_queue);
    if (cq == nullptr || cq->max_parked_seconds <= 0 || w.resuming) return;
    const int64_t at = w.parked_ms + cq->max_parked_seconds * 1000;
    if (now_ms < at) {
      p.next_wake_ms = std::min(p.next_wake_ms, at);
      return;
    }
    p.actions.push_back(
        {Action::Type::kStopParked, std::string(w.key), "MaxParked",
         "parked longer than ClusterQueue " + std::string(w.cluster_queue) + "'s " +
             core::kMaxParkedKey + " (" + core::FormatDurationSeconds(cq->max_parked_seconds) +
             "): its quota was freed",
         ""});
  });
  return p;
}

}  // namespace allot::ctrl
