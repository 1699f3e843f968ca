#include "ctrl/gang_restart.h"

#include <string>

namespace allot::ctrl {

Plan GangRestart::Run(const View& view, int64_t /*now_ms*/) const {
  Plan p;
  view.ForEachPodFailure([&](const PodFailureView& f) {
    if (f.restarts < f.backoff_limit) {
      p.actions.push_back({Action::Type::kRestartGang, std::string(f.key), "PodFailed",
                           "restart " + std::to_string(f.restarts + 1) + " of " +
                               std::to_string(f.backoff_limit) + ": " + std::string(f.why),
                           ""});
    } else {
      p.actions.push_back(
          {Action::Type::kFail, std::string(f.key), "PodFailed", std::string(f.why), ""});
    }
  });
  return p;
}

}  // namespace allot::ctrl
