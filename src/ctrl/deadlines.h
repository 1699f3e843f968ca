// Deadlines: admitted workloads that ran past their limit fail.
//
// A workload's limit is its own spec.maximumExecutionTimeSeconds (Kueue's
// field) or, when it sets none, its ClusterQueue's default, the Allot
// extension allot.dev/max-run-duration (Kueue #7029 asks for one). Time
// counts from when its current quota reservation began, as Kueue counts
// it; a requeued workload starts again from zero.
#pragma once

#include <functional>

#include "ctrl/controller.h"

namespace allot::ctrl {

// What a View may also implement when it knows which admitted workloads
// can have a limit; Deadlines then reads only those instead of every
// admitted workload. The simulator's view does: its jobs set no limit of
// their own, so it visits the running jobs of ClusterQueues with a
// default, and none at all when no ClusterQueue sets one. Other views
// (the server's, tests') are scanned in full (View::ForEachAdmitted).
class AdmittedWithLimits {
 public:
  virtual ~AdmittedWithLimits() = default;
  // Every admitted workload with a limit of its own or whose ClusterQueue
  // sets a default (core::ClusterQueue::max_run_seconds), in the order
  // View::ForEachAdmitted would visit them; it may visit others too.
  virtual void ForEachAdmittedWithLimit(
      const std::function<void(const AdmittedView&)>& fn) const = 0;
};

class Deadlines : public Controller {
 public:
  std::string_view Name() const override { return "deadlines"; }
  uint32_t Triggers() const override { return kAdmissions | kConfig; }
  // A scan over every admitted workload (or only those that can have a
  // limit: AdmittedWithLimits): at most once a second for changes (a
  // deadline is then checked at most a second late, as before the
  // controllers); its wake-up at the earliest deadline is exact.
  int64_t MinIntervalMs() const override { return 1000; }
  Plan Run(const View& view, int64_t now_ms) const override;
};

}  // namespace allot::ctrl
