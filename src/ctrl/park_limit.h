// ParkLimit: a workload parked longer than its ClusterQueue's
// allot.dev/max-parked (core::ClusterQueue::max_parked_seconds) is
// stopped (docs/parking.md): its admission and quota are freed for the
// queue, and it is held out of the queue (Suspended) until someone resumes
// it, which queues it again. The queue's admin decides how long a team
// may keep GPUs reserved that it does not use. A parked workload whose
// resume waits for devices is coming back, and is left alone.
#pragma once

#include "ctrl/controller.h"

namespace allot::ctrl {

class ParkLimit : public Controller {
 public:
  std::string_view Name() const override { return "park-limit"; }
  uint32_t Triggers() const override { return kParks | kConfig; }
  int64_t MinIntervalMs() const override { return 1000; }
  Plan Run(const View& view, int64_t now_ms) const override;
};

}  // namespace allot::ctrl
