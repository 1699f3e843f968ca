// The cluster that the scheduler's scenario tests share: 64 H100 and team-a.
#pragma once

#include <string>

#include "sched/test_util.h"

namespace allot::sched::testing {

inline const std::string kH100 = Flavor("h100", "H100-80GB");
inline const std::string kNodes = GpuNodes("h", 8, "H100-80GB");  // 64 GPUs.
// GpuCq("team-x-cq", ...) also declares LocalQueue team-x/q; ClusterQueues
// written out in full get theirs from kQueueA.
inline const std::string kQueueA = LocalQueue("team-a", "q", "team-a-cq");
inline const std::string kBase = kH100 + kNodes;

}  // namespace allot::sched::testing
