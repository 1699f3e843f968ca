// IdleParker: admitted workloads whose GPUs have all stayed under the
// server's idle threshold (--idle-util-pct, by the agents' telemetry) for
// their idle-after time are parked (docs/parking.md): their pods stop, their
// GPUs go back, their quota stays, and a resume runs them again.
//
// The idle-after time is the workload's own allot.dev/idle-after annotation
// ("0s": never) or, when it has none, its ClusterQueue's; neither: never.
// A burst over the threshold starts the idle time again (the accounting's
// idle_since), so a workload that computes now and then is not parked.
// A workload with a custom signal (allot.dev/idle-signal: activity) is
// idle only while, besides, nothing reported activity for it (POST
// .../workloads/T/N/activity: a notebook's kernels, a service's requests).
// A workload on parked capacity holds no quota to keep: never parked.
#pragma once

#include "ctrl/controller.h"

namespace allot::ctrl {

class IdleParker : public Controller {
 public:
  // While some workload has an idle-after time it runs at least this often
  // (a workload that goes idle wakes it at once: kIdle).
  static constexpr int64_t kPollMs = 30000;

  std::string_view Name() const override { return "idle-parker"; }
  uint32_t Triggers() const override { return kAdmissions | kConfig | kIdle; }
  int64_t MinIntervalMs() const override { return 1000; }
  Plan Run(const View& view, int64_t now_ms) const override;
};

}  // namespace allot::ctrl
