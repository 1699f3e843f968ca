// Node lifecycle: agent-run nodes that fall silent become NotReady.
//
// A node whose agent has not been heard from for the node timeout (the
// server's --node-timeout) becomes NotReady: unschedulable, and its
// workloads go back to their queues (whole gangs). A node known from the
// store but not heard from since the server started gets a grace period
// first: one timeout plus the agents' longest reconnect backoff, so that
// agents that backed off while the server was down are not evicted. The
// node is Ready again when its agent is heard from (server::State).
#pragma once

#include "ctrl/controller.h"

namespace allot::ctrl {

class NodeLifecycle : public Controller {
 public:
  explicit NodeLifecycle(const Options& o) : opt_(o) {}
  std::string_view Name() const override { return "node-lifecycle"; }
  // A node heard from for the first time moves its deadline earlier.
  uint32_t Triggers() const override { return kAgents; }
  Plan Run(const View& view, int64_t now_ms) const override;

 private:
  Options opt_;
};

}  // namespace allot::ctrl
