#include "ctrl/node_lifecycle.h"

#include <algorithm>
#include <string>
#include <vector>

namespace allot::ctrl {

Plan NodeLifecycle::Run(const View& view, int64_t now_ms) const {
  Plan p;
  // Nodes that stopped heartbeating first, then silent ones, each in name
  // order: the evicted workloads' message names them so.
  std::vector<Action> silent;
  const int64_t grace_ms = opt_.node_timeout_ms + opt_.agent_max_backoff_ms;
  const int64_t grace_until = view.StartedMs() + grace_ms;
  view.ForEachAgent([&](const AgentView& a) {
    if (!a.ready) return;
    if (a.last_seen_ms == 0) {  // Known from the store, silent since start.
      if (now_ms < grace_until) {
        p.next_wake_ms = std::min(p.next_wake_ms, grace_until);
        return;
      }
      silent.push_back({Action::Type::kNodeNotReady, std::string(a.name), "NodeNotReady",
                        "its agent has not been heard from since the server started (" +
                            std::to_string(grace_ms / 1000) + " s grace period)",
                        "not heard from since the server started"});
    } else if (now_ms - a.last_seen_ms > opt_.node_timeout_ms) {
      p.actions.push_back({Action::Type::kNodeNotReady, std::string(a.name), "NodeNotReady",
                           "its agent stopped heartbeating (nothing for " +
                               std::to_string(opt_.node_timeout_ms / 1000) + " s)",
                           "stopped heartbeating"});
    } else {
      p.next_wake_ms = std::min(p.next_wake_ms, a.last_seen_ms + opt_.node_timeout_ms + 1);
    }
  });
  for (Action& a : silent) p.actions.push_back(std::move(a));
  return p;
}

}  // namespace allot::ctrl
