// Autoscaler: autoscaled node pools (core::NodePool with a provider) follow
// the queue (docs/autoscaling.md).
//
// Scale-up. The demand is the scheduler's capacity-blocked workloads
// (sched::Scheduler::CapacityDemands): pending, within the quota left, set
// aside because no node can take them. In queue order, each workload is
// packed, all its pods or none (a 4x8-GPU gang asks for 4 nodes or
// nothing), into one pool: the first of its flavors, in its ClusterQueue's
// order, with a pool whose nodes carry the flavor's labels, whose taints
// its pods tolerate, and whose node shape fits each pod; among those pools
// the healthy before the degraded, then on-prem before edge before cloud
// (or the ClusterQueue's allot.dev/pool-order, core/pool_order.h), then
// the cheapest per GPU. Pods go (best fit) on free capacity of the
// pool's ready nodes, then on nodes booting (so one backlog never asks
// twice), then on new nodes up to maxNodes. A pool backing off after a
// failed boot takes no new nodes until its retry time. Then each pool is
// brought up to minNodes and to its headroom: `headroom.gpus` free GPUs
// plus, with `headroom.arrivals`, the GPUs expected to arrive (the
// measured arrival rate) within its window, or within one boot time.
//
// Scale-down. A ready node whose GPUs have all been unallocated for the
// pool's scaleDownDelay, that no demand was packed on and that the
// headroom and minNodes do not need, is suspended (cordoned, then stopped
// by the provider), at most disruptionBudget.maxNodes of a pool
// suspending at once and only inside its windows when it has some. A node
// that runs anything is never suspended (GPUs that parked workloads gave
// back are unallocated: they count as idle).
//
// Boot failures: a node booting for longer than bootTimeout is reported
// (kBootFailed); its owner suspends it, counts the failure and backs the
// pool off (BootRetryDelayMs); after failureThreshold failures in a row
// the pool is degraded: still used, after the healthy ones.
//
// Pending reasons: every workload packed on booting or new nodes gets a
// kExplain ("waits for 2 nodes of pool h100-cloud, booting, ready in about
// 3m").
//
// Not done: consolidation (moving preemptible work off an underused node),
// topology requests and MIG-shaped pools.
#pragma once

#include <cstdint>
#include <vector>

#include "ctrl/controller.h"

namespace allot::ctrl {

class Autoscaler : public Controller {
 public:
  // It runs when capacity or demand changes (kCapacity: the owner notes a
  // workload set aside for nodes, a pool node registering, stopping or
  // freeing its last GPU), and wakes for boot timeouts, idle nodes'
  // scale-down times, backoffs and disruption windows.
  std::string_view Name() const override { return "autoscaler"; }
  uint32_t Triggers() const override { return kCapacity | kConfig; }
  int64_t MinIntervalMs() const override { return 1000; }
  Plan Run(const View& view, int64_t now_ms) const override;
};

// The owner's backoff before the next resume of a pool whose last
// `failures` boots in a row failed: 30 s, doubling, at most 10 minutes.
int64_t BootRetryDelayMs(int32_t failures);

// Whether `minute_of_day` (UTC) lies in one of `windows` (an empty list
// always does), as core::NodePool::windows.
bool InWindows(const std::vector<std::pair<int32_t, int32_t>>& windows,
               int32_t minute_of_day);

}  // namespace allot::ctrl
