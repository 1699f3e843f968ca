// Workload annotations of parking (docs/parking.md): the pod sets a park
// stops (a RayCluster's workers), the others (its head) running on; and a
// custom idle signal.
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

// kIdleSignalKey: "activity" makes the idle policy wait, besides its GPUs,
// for no activity to be reported for it (POST .../workloads/T/N/activity).
inline constexpr char kIdleSignalKey[] = "allot.dev/idle-signal";
// Whether `w` has that signal; InvalidArgument, naming the annotation, for
// another value.
Result<bool> ActivitySignal(const Workload& w);
// Both checks, for a parsed workload.
Status CheckParkingAnnotations(const Workload& w);

}  // namespace allot::core
