// Scheduling policies for `allot simulate --policy/--compare`: each is a
// transformation of the given cluster config (docs/simulate.md), so the
// same trace can be replayed under each on the same nodes.
//
//   as-given  the config unchanged.
//   fifo      no quotas, one global FIFO: every LocalQueue points at one
//             StrictFIFO ClusterQueue whose quota is unlimited (1e9 of every
//             resource and flavor the ClusterQueues list); only nodes limit.
//   strict    quotas without borrowing: every ClusterQueue StrictFIFO, out of
//             its cohort, no preemption across queues.
//   kueue     Kueue's default with a cohort: BestEffortFIFO, borrowing in the
//             cohort (ClusterQueues without one join cohort "allot-sim"),
//             reclaimWithinCohort Any, withinClusterQueue LowerPriority,
//             fair sharing off.
//   fair      kueue plus fair sharing (Kueue's admission fair sharing with
//             the default preemption strategies).
//   allot     Allot's recommendation for batch traces (see docs/simulate.md
//             for the reasoning and the measurements behind it).
//   park      allot's config with parking on (SimOptions::park_after_ms):
//             idle long-running jobs park and lend their GPUs to
//             preemptible jobs. Run by --compare when an idle model is
//             given (without one nothing is ever idle and it is allot).
// Borrowing and lending limits stay as given except where a policy drops
// the cohort.
#pragma once

#include <string>
#include <vector>

#include "core/model.h"
#include "core/status.h"

namespace allot::sim {

// Every policy name, in the order --compare runs them (park, which needs an
// idle model, is not among them).
const std::vector<std::string>& PolicyNames();
// Whether `name` turns parking on.
bool PolicyParks(const std::string& name);
// One line describing a policy (for tables and reports).
std::string PolicyDescription(const std::string& name);
// The config under `policy`; InvalidArgument for an unknown name. The
// result is validated.
Result<core::Config> ApplyPolicy(const core::Config& config,
                                 const std::string& policy);

}  // namespace allot::sim
