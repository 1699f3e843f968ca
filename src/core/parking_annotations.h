// Annotations of parking (docs/parking.md): a workload's pod sets a park
// stops (a RayCluster's workers), the others (its head) running on, and its
// custom idle signal; a ClusterQueue's idle action.
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

// kIdleActionKey, a ClusterQueue annotation: what its idle policy does to
// an idle workload: "Park" (the default: its quota is kept) or "Stop" (parked
// and stopped at once: its quota is freed, it is held out of the queue,
// Suspended, until resumed; a notebook keeps its files).
inline constexpr char kIdleActionKey[] = "allot.dev/idle-action";
// Whether the annotations say Stop; InvalidArgument, naming the
// annotation, for another value than Park or Stop.
Result<bool> IdleActionStops(const Labels& annotations);

}  // namespace allot::core
