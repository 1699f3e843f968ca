// Gang restarts: a workload whose pod failed starts again, whole.
//
// When a pod of a workload's current attempt exits non-zero, every pod of
// the workload (the gang) starts again as a new attempt on the same
// admission, up to its spec.backoffLimit restarts (Kubernetes Jobs'
// field); past that the workload fails with the pod's exit and last lines.
#pragma once

#include "ctrl/controller.h"

namespace allot::ctrl {

class GangRestart : public Controller {
 public:
  std::string_view Name() const override { return "gang-restart"; }
  // In the turn of the report: the other pods stop at once.
  uint32_t Triggers() const override { return kPodFailures; }
  Plan Run(const View& view, int64_t now_ms) const override;
};

}  // namespace allot::ctrl
