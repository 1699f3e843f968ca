// Parking in part (docs/parking.md): the workload annotation that names the
// pod sets a park stops (a RayCluster's workers), the others (its head)
// running on.
#pragma once

#include <string>
#include <vector>

#include "core/model.h"
#include "core/status.h"

namespace allot::core {

inline constexpr char kParkPodSetsKey[] = "allot.dev/park-pod-sets";

// The pod sets a park of `w` stops, from its kParkPodSetsKey annotation
// ("workers" or "a,b"): empty when it has none (a park stops them all).
// InvalidArgument, naming the annotation, for an empty name, a pod set it
// does not have or one named twice.
Result<std::vector<std::string>> ParkPodSets(const Workload& w);

}  // namespace allot::core
