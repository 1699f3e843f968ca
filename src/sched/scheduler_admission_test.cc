// Scheduler: admission rules, partial admission and input admissions.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/manifest.h"
#include "sched/scheduler.h"
#include "sched/scheduler_test_util.h"
#include "sched/test_util.h"

namespace allot::sched {
namespace {

using testing::GpuCq;
using testing::kBase;
using testing::kQueueA;
using testing::LocalQueue;
using testing::Namespace;
using testing::RunScenario;
using testing::Scenario;
using testing::Wl;

TEST(SchedulerTest, AdmissionRules) {
  const std::string selective = R"(apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: team-a-cq}
spec:
  namespaceSelector: {matchLabels: {team: a}}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: h100
      resources: [{name: nvidia.com/gpu, nominalQuota: 8}]
---
)" + kQueueA;
  const std::string no_selector = R"(apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: team-a-cq}
spec:
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: h100
      resources: [{name: nvidia.com/gpu, nominalQuota: 8}]
---
)" + kQueueA;
  const std::vector<Scenario> cases = {
      // namespaceSelector limits "which namespaces can have workloads
      // admitted in the ClusterQueue": team-b's LocalQueue points at
      // team-a-cq, but namespace team-b lacks team=a.
      {"namespaceSelector admits only matching namespaces",
       kBase + selective + Namespace("team-a", "{team: a}") +
           Namespace("team-b", "{team: b}") +
           LocalQueue("team-b", "qa", "team-a-cq") + Wl("team-a/w").Gpus(1) +
           Wl("team-b/w").Queue("qa").Gpus(1),
       {"team-a/w"},
       {},
       {{"team-b/w",
         "namespace team-b is not selected by ClusterQueue team-a-cq's "
         "namespaceSelector"}}},
      // An absent namespaceSelector matches no namespace (Kueue: "To allow
      // workloads from all namespaces, set the empty selector {}").
      {"absent namespaceSelector matches nothing",
       kBase + no_selector + Wl("team-a/w").Gpus(1),
       {},
       {},
       {{"team-a/w", "is not selected by ClusterQueue team-a-cq"}}},
      // A workload whose LocalQueue does not exist stays pending, and says
      // which one is missing.
      {"missing LocalQueue",
       kBase + GpuCq("team-a-cq", "", "h100", "nominalQuota: 8") +
           Wl("team-a/w").Queue("nope").Gpus(1),
       {},
       {},
       {{"team-a/w", "LocalQueue team-a/nope does not exist"}}},
      // A resource no ClusterQueue covers: Kueue never admits it (no flavor
      // can be assigned).
      {"resource covered by no ClusterQueue",
       kBase + GpuCq("team-a-cq", "", "h100", "nominalQuota: 8") +
           Wl("team-a/w").Gpus(1).Request("cpu", "1"),
       {},
       {},
       {{"team-a/w", "ClusterQueue team-a-cq does not cover resource cpu"}}},
      // Covered by another ClusterQueue but not by the workload's own.
      {"resource covered by another ClusterQueue only",
       kBase + GpuCq("team-a-cq", "", "h100", "nominalQuota: 8") +
           R"(apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: default}
spec: {}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: team-b-cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default
      resources: [{name: cpu, nominalQuota: 64}]
---
)" + LocalQueue("team-b", "q", "team-b-cq") +
           Wl("team-a/w").Gpus(1).Request("cpu", "1") +
           Wl("team-b/w").Request("cpu", "1"),
       {"team-b/w"},
       {},
       {{"team-a/w", "ClusterQueue team-a-cq does not cover resource cpu"}}},
      // stopPolicy Hold stops admission of new workloads (concepts/
      // cluster_queue, "StopPolicy"); admitted ones keep running.
      {"stopPolicy Hold admits nothing new",
       kBase +
           GpuCq("team-a-cq", "", "h100", "nominalQuota: 8",
                 "  stopPolicy: Hold\n") +
           Wl("team-a/running").Gpus(1).Admitted("team-a-cq", "h100") +
           Wl("team-a/w").Gpus(1),
       {"team-a/running"},
       {},
       {{"team-a/w", "ClusterQueue team-a-cq is stopped (stopPolicy Hold)"}}},
  };
  for (const Scenario& sc : cases) RunScenario(sc);
}

// Partial admission (Kueue: podSets[].minCount): when the whole pod set
// does not fit, the largest count down to minCount that fits is admitted.
TEST(SchedulerTest, PartialAdmission) {
  const std::string cq = GpuCq("team-a-cq", "", "h100", "nominalQuota: 8");
  struct Case {
    std::string name;
    std::string yaml;
    int32_t want_count;  // 0: stays pending.
  };
  const std::vector<Case> cases = {
      // 4 pods x 4 GPUs = 16 > 8: the largest count that fits is 2.
      {"down to the largest count that fits",
       kBase + cq + Wl("team-a/w").Gpus(4).Count(4).MinCount(1), 2},
      // minCount 3 needs 12 > 8: nothing fits, the workload pends.
      {"not below minCount",
       kBase + cq + Wl("team-a/w").Gpus(4).Count(4).MinCount(3), 0},
      // Without minCount, a pod set is all or nothing.
      {"all or nothing without minCount",
       kBase + cq + Wl("team-a/w").Gpus(4).Count(4), 0},
      // It fits whole: no reduction.
      {"whole when it fits",
       kBase + cq + Wl("team-a/w").Gpus(2).Count(4).MinCount(1), 4},
      // Partial admission also counts what is in use: 4 of 8 are taken,
      // so 1 pod of 4 GPUs fits.
      {"counts what is in use",
       kBase + cq + Wl("team-a/running").Gpus(4).Admitted("team-a-cq", "h100") +
           Wl("team-a/w").Created(1).Gpus(4).Count(3).MinCount(1),
       1},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto s = testing::BuildScheduler(c.yaml);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    (*s)->RunUntilQuiescent();
    int32_t got = 0;
    for (const AdmittedWorkload& a : (*s)->Admitted()) {
      if (a.workload != "team-a/w") continue;
      got = a.admission.pod_set_assignments.at(0).count;
      EXPECT_EQ(a.admission.pod_set_assignments.at(0).placements.size(),
                size_t(got));
    }
    EXPECT_EQ(got, c.want_count);
  }
}

// Workloads admitted in input keep their ClusterQueue, flavors and given
// placements; their quota and devices count from the start.
TEST(SchedulerTest, AdmittedFromInputKeepTheirPlacement) {
  const std::string yaml = kBase +
                           GpuCq("team-a-cq", "", "h100", "nominalQuota: 16") +
                           R"(apiVersion: allot.dev/v1
kind: Workload
metadata: {name: placed, namespace: team-a, creationTimestamp: "2026-01-01T00:00:00Z"}
spec:
  queueName: q
  priority: 0
  podSets:
  - name: worker
    count: 2
    template:
      resources: {requests: {nvidia.com/gpu: 2}}
status:
  admission:
    clusterQueue: team-a-cq
    podSetAssignments:
    - name: worker
      count: 2
      flavors: {nvidia.com/gpu: h100}
      placements:
      - {node: h-3, gpus: [GPU-h-3-6, GPU-h-3-7]}
      - {node: h-5, gpus: [GPU-h-5-0, GPU-h-5-1]}
---
)" + Wl("team-a/new").Created(1).Gpus(8).Count(2);
  auto s = testing::BuildScheduler(yaml);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  (*s)->RunUntilQuiescent();
  // 4 of 16 GPUs are taken by the input admission: the new 16-GPU workload
  // does not fit in quota.
  auto admitted = (*s)->Admitted();
  ASSERT_EQ(admitted.size(), 1u);
  const AdmittedWorkload& a = admitted[0];
  EXPECT_EQ(a.workload, "team-a/placed");
  EXPECT_EQ(a.admission.cluster_queue, "team-a-cq");
  const core::PodSetAssignment& psa = a.admission.pod_set_assignments.at(0);
  EXPECT_EQ(psa.name, "worker");
  EXPECT_EQ(psa.count, 2);
  EXPECT_EQ(psa.flavors.at("nvidia.com/gpu"), "h100");
  ASSERT_EQ(psa.placements.size(), 2u);
  EXPECT_EQ(psa.placements[0].node, "h-3");
  EXPECT_EQ(psa.placements[0].gpus,
            (std::vector<std::string>{"GPU-h-3-6", "GPU-h-3-7"}));
  EXPECT_EQ(psa.placements[1].node, "h-5");
  EXPECT_EQ(psa.placements[1].gpus,
            (std::vector<std::string>{"GPU-h-5-0", "GPU-h-5-1"}));
  auto pending = (*s)->Pending();
  ASSERT_EQ(pending.size(), 1u);
  EXPECT_NE(pending[0].reason.find(
                "needs 16 nvidia.com/gpu of flavor h100; ClusterQueue "
                "team-a-cq has 12 unused"),
            std::string::npos)
      << pending[0].reason;
}

// An input admission that names a GPU another input admission holds is an
// error naming the workload.
TEST(SchedulerTest, InputAdmissionsCannotShareAGpu) {
  const std::string placed = R"(apiVersion: allot.dev/v1
kind: Workload
metadata: {name: NAME, namespace: team-a}
spec:
  queueName: q
  podSets:
  - name: main
    template:
      resources: {requests: {nvidia.com/gpu: 1}}
status:
  admission:
    clusterQueue: team-a-cq
    podSetAssignments:
    - name: main
      flavors: {nvidia.com/gpu: h100}
      placements:
      - {node: h-0, gpus: [GPU-h-0-0]}
---
)";
  auto named = [&](const std::string& n) {
    std::string s = placed;
    s.replace(s.find("NAME"), 4, n);
    return s;
  };
  auto s = testing::BuildScheduler(
      kBase + GpuCq("team-a-cq", "", "h100", "nominalQuota: 8") + named("one") +
      named("two"));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("GPU-h-0-0"), std::string::npos)
      << s.status().ToString();
}

// RemoveWorkload frees quota and devices at once; the workloads set aside
// in that cohort are retried and admitted in the next cycles.
}  // namespace
}  // namespace allot::sched
