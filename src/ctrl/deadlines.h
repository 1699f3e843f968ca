// Deadlines: admitted workloads that ran past their limit fail.
//
// A workload's limit is its own spec.maximumExecutionTimeSeconds (Kueue's
// field) or, when it sets none, its ClusterQueue's default, the Allot
// extension allot.dev/max-run-duration (Kueue #7029 asks for one). Time
// counts from when its current quota reservation began, as Kueue counts
// it; a requeued workload starts again from zero.
#pragma once

#include "ctrl/controller.h"

namespace allot::ctrl {

// Reads only the admitted workloads that can have a limit
// (View::ForEachAdmittedWithLimit): the simulator's jobs set no limit of
// their own, so its view visits the running jobs of ClusterQueues with a
// default, and none at all when no ClusterQueue sets one; the server's
// visits every admitted workload (View's default).
class Deadlines : public Controller {
 public:
  std::string_view Name() const override { return "deadlines"; }
  uint32_t Triggers() const override { return kAdmissions | kConfig; }
  // A scan over the admitted workloads that can have a limit: at most once
  // a second for changes (a deadline is then checked at most a second
  // late, as before the controllers); its wake-up at the earliest deadline
  // is exact.
  int64_t MinIntervalMs() const override { return 1000; }
  Plan Run(const View& view, int64_t now_ms) const override;
};

}  // namespace allot::ctrl
