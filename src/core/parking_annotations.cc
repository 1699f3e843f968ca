// The pod sets a park stops (see park_pod_sets.h).
#include "core/parking_annotations.h"

#include <algorithm>

#include "core/names.h"

namespace allot::core {

Result<std::vector<std::string>> ParkPodSets(const Workload& w) {
  std::vector<std::string> out;
  auto it = w.annotations.find(kParkPodSetsKey);
  if (it == w.annotations.end()) return out;
  const std::string field = std::string("metadata.annotations.") + kParkPodSetsKey;
  std::string names;
  for (const PodSet& ps : w.pod_sets) names += (names.empty() ? "" : ", ") + ps.name;
  const std::string& v = it->second;
  for (std::string& name : SplitCommaList(v)) {
    if (name.empty()) {
      return Status::InvalidArgument(std::string(kParkPodSetsKey) + ": \"" + v +
                                         "\" has an empty pod set name (give names, "
                                         "comma-separated: the pod sets a park stops)",
                                     field);
    }
    if (std::none_of(w.pod_sets.begin(), w.pod_sets.end(),
                     [&](const PodSet& ps) { return ps.name == name; })) {
      return Status::InvalidArgument(std::string(kParkPodSetsKey) + ": the workload has no pod set " +
                                         name + " (its pod sets: " + names + ")",
                                     field);
    }
    if (std::find(out.begin(), out.end(), name) != out.end()) {
      return Status::InvalidArgument(
          std::string(kParkPodSetsKey) + ": pod set " + name + " is named twice", field);
    }
    out.push_back(std::move(name));
  }
  return out;
}

Result<bool> ActivitySignal(const Workload& w) {
  auto it = w.annotations.find(kIdleSignalKey);
  if (it == w.annotations.end()) return false;
  if (it->second != "activity") {
    return Status::InvalidArgument(std::string(kIdleSignalKey) + ": \"" + it->second +
                                       "\" is not a signal Allot knows (use \"activity\": "
                                       "reports to POST .../workloads/TENANT/NAME/activity)",
                                   std::string("metadata.annotations.") + kIdleSignalKey);
  }
  return true;
}

Result<bool> IdleActionStops(const Labels& annotations) {
  auto it = annotations.find(kIdleActionKey);
  if (it == annotations.end() || it->second == "Park") return false;
  if (it->second == "Stop") return true;
  return Status::InvalidArgument(std::string(kIdleActionKey) + ": \"" + it->second +
                                     "\" is not an idle action (Park keeps the quota, Stop "
                                     "frees it)",
                                 std::string("metadata.annotations.") + kIdleActionKey);
}

Status CheckParkingAnnotations(const Workload& w) {
  ALLOT_RETURN_IF_ERROR(ParkPodSets(w).status());
  return ActivitySignal(w).status();
}

}  // namespace allot::core
