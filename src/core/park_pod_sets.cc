// The pod sets a park stops (see park_pod_sets.h).
#include "core/park_pod_sets.h"

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

}  // namespace allot::core
