// Cluster configs generated for traces that come without one, as manifest
// YAML that `allot simulate -f` (and `allot apply`) reads back.
#pragma once

#include <istream>
#include <string>

#include "core/status.h"
#include "sim/trace.h"

namespace allot::sim {

// The Philly cluster of the Helios artifact: `vc_nodes` is philly_vc_nodes.csv
// (header "vc,node num", one VC a row). One NodePool "philly" of 8-GPU
// nodes (the sum of the rows: 352 nodes, 2,816 GPUs) and one flavor; per VC
// a ClusterQueue "vc-VC" in cohort "philly" whose nominal quota is its
// nodes x 8 GPUs, and a LocalQueue VC/VC. VCs of `trace` missing from the
// file get a ClusterQueue with nominal quota 0: they run only on what they
// borrow. Queues are Kueue's default (BestEffortFIFO, reclaimWithinCohort
// Any, withinClusterQueue LowerPriority).
// `scale` multiplies every VC's nodes (rounded, at least 1): 0.25 gives a
// cluster a quarter the size with the same shares, where the trace
// contends.
Result<std::string> PhillyConfigYaml(std::istream& vc_nodes,
                                     const std::string& source,
                                     const Trace& trace, double scale = 1.0);

// A synthetic cluster for benchmarks: `gpus` / 8 nodes of 8 GPUs and
// `tenants` tenants t00, t01, ... with equal quotas (the remainder to the
// first ones) in one cohort, queues as for Philly.
std::string SyntheticConfigYaml(int64_t gpus, int32_t tenants);

}  // namespace allot::sim
