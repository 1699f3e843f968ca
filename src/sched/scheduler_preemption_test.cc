// Scheduler: classical preemption (Kueue's concepts/preemption and
// concepts/cluster_queue "Preemption"): withinClusterQueue,
// reclaimWithinCohort, borrowWithinCohort, the minimal victim set, and
// Allot's extension, preemption to free an exact placement.
//
// Kueue's rules the scenarios rely on:
//  - candidates are workloads of the preemptor's ClusterQueue allowed by
//    withinClusterQueue, and workloads of other ClusterQueues of the cohort
//    that are borrowing, allowed by reclaimWithinCohort/borrowWithinCohort;
//  - they are tried in order: other ClusterQueues first, lowest priority
//    first, most recently admitted first; taken greedily until the
//    preemptor fits, then the list is walked back and every target whose
//    return still lets the preemptor fit is spared ("minimize the set");
//  - reclaiming in the cohort is only allowed when the preemptor then fits
//    within its nominal quota, unless borrowWithinCohort allows it (only
//    for victims up to maxPriorityThreshold, below the preemptor);
//  - reasons: InClusterQueue, InCohortReclamation,
//    InCohortReclaimWhileBorrowing.
// Admitted workloads given in input are admitted in file order, so "most
// recently admitted" means "last in the file" among them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sched/scheduler.h"
#include "sched/test_util.h"

namespace allot::sched {
namespace {

using testing::Flavor;
using testing::GpuCq;
using testing::GpuNodes;
using testing::RunScenario;
using testing::Scenario;
using testing::Wl;

const std::string kH100 = Flavor("h100", "H100-80GB");
const std::string kBase = kH100 + GpuNodes("h", 8, "H100-80GB");  // 64 GPUs.

constexpr char kNoVictims[] =
    "no set of workloads that ClusterQueue team-a-cq's preemption policy "
    "allows it to preempt "
    "would make room";

// "  preemption: {...}\n" for GpuCq's extra lines.
std::string Preemption(const std::string& policy) {
  return "  preemption: " + policy + "\n";
}

// GPU UUIDs of node `node` (from GpuNodes), slots [from, to).
std::vector<std::string> Gpus(const std::string& node, int from, int to) {
  std::vector<std::string> out;
  for (int i = from; i < to; ++i)
    out.push_back("GPU-" + node + "-" + std::to_string(i));
  return out;
}

TEST(SchedulerPreemptionTest, WithinClusterQueue) {
  const std::string lower = Preemption("{withinClusterQueue: LowerPriority}");
  const std::string newer =
      Preemption("{withinClusterQueue: LowerOrNewerEqualPriority}");
  const std::vector<Scenario> cases = {
      // LowerPriority: "only preempt Workloads in the ClusterQueue that have
      // lower priority than the pending Workload".
      {"LowerPriority preempts a lower-priority workload",
       kBase + GpuCq("team-a-cq", "", "h100", "nominalQuota: 8", lower) +
           Wl("team-a/low").Priority(0).Gpus(8).Admitted("team-a-cq", "h100") +
           Wl("team-a/high").Priority(100).Created(5).Gpus(8),
       {"team-a/high"},
       {"team-a/low by team-a/high: InClusterQueue"},
       {{"team-a/low", "needs 8 nvidia.com/gpu"}}},
      // ... and never one of equal priority.
      {"LowerPriority spares equal priority",
       kBase + GpuCq("team-a-cq", "", "h100", "nominalQuota: 8", lower) +
           Wl("team-a/peer").Gpus(8).Admitted("team-a-cq", "h100") +
           Wl("team-a/late").Created(5).Gpus(8),
       {"team-a/peer"},
       {},
       {{"team-a/late", kNoVictims}}},
      // LowerOrNewerEqualPriority: "equal priority and are newer than the
      // pending workload". The evicted newer workload cannot preempt back:
      // the older one is not newer than it.
      {"LowerOrNewerEqualPriority preempts a newer equal-priority workload",
       kBase + GpuCq("team-a-cq", "", "h100", "nominalQuota: 8", newer) +
           Wl("team-a/newer")
               .Created(10)
               .Gpus(8)
               .Admitted("team-a-cq", "h100") +
           Wl("team-a/older").Created(0).Gpus(8),
       {"team-a/older"},
       {"team-a/newer by team-a/older: InClusterQueue"},
       {{"team-a/newer", kNoVictims}}},
      {"LowerOrNewerEqualPriority spares an older equal-priority workload",
       kBase + GpuCq("team-a-cq", "", "h100", "nominalQuota: 8", newer) +
           Wl("team-a/older").Created(0).Gpus(8).Admitted("team-a-cq", "h100") +
           Wl("team-a/newer").Created(10).Gpus(8),
       {"team-a/older"},
       {},
       {{"team-a/newer", kNoVictims}}},
      // ... and still preempts lower priority, whatever its age.
      {"LowerOrNewerEqualPriority preempts an older lower-priority workload",
       kBase + GpuCq("team-a-cq", "", "h100", "nominalQuota: 8", newer) +
           Wl("team-a/old-low")
               .Priority(0)
               .Created(0)
               .Gpus(8)
               .Admitted("team-a-cq", "h100") +
           Wl("team-a/high").Priority(1).Created(10).Gpus(8),
       {"team-a/high"},
       {"team-a/old-low by team-a/high: InClusterQueue"},
       {{"team-a/old-low", ""}}},
      // Never (the default): nothing is preempted.
      {"Never does not preempt",
       kBase + GpuCq("team-a-cq", "", "h100", "nominalQuota: 8") +
           Wl("team-a/low").Priority(0).Gpus(8).Admitted("team-a-cq", "h100") +
           Wl("team-a/high").Priority(100).Gpus(8),
       {"team-a/low"},
       {},
       {{"team-a/high", "ClusterQueue team-a-cq does not preempt"}}},
      // Preemption only happens when the workload does not fit: 8+8 of 16.
      {"no preemption when the workload fits",
       kBase + GpuCq("team-a-cq", "", "h100", "nominalQuota: 16", lower) +
           Wl("team-a/low").Priority(0).Gpus(8).Admitted("team-a-cq", "h100") +
           Wl("team-a/high").Priority(100).Gpus(8),
       {"team-a/high", "team-a/low"},
       {},
       {}},
      // "Kueue avoids preemptions if it can fit a Workload by borrowing"
      // (concepts/cluster_queue, FlavorFungibility): team-b's 8 are idle.
      {"borrowing is preferred over preemption",
       kBase +
           GpuCq("team-a-cq", "research", "h100", "nominalQuota: 8", lower) +
           GpuCq("team-b-cq", "research", "h100", "nominalQuota: 8") +
           Wl("team-a/low").Priority(0).Gpus(8).Admitted("team-a-cq", "h100") +
           Wl("team-a/high").Priority(100).Gpus(8),
       {"team-a/high", "team-a/low"},
       {},
       {}},
      // A request above the ClusterQueue's nominal quota may preempt only
      // with borrowWithinCohort (or quota of its own subtree lent out):
      // Kueue's flavor assigner says NoFit (fitsResourceQuota), so team-a
      // (4) does not evict its own low (8, borrowing 4) for high (8).
      {"no preemption beyond nominal quota without borrowWithinCohort",
       kBase +
           GpuCq("team-a-cq", "research", "h100", "nominalQuota: 4", lower) +
           GpuCq("team-b-cq", "research", "h100", "nominalQuota: 8") +
           Wl("team-a/low").Priority(0).Gpus(8).Admitted("team-a-cq", "h100") +
           Wl("team-a/high").Priority(100).Gpus(8),
       {"team-a/low"},
       {},
       {{"team-a/high", "more than its nominal quota"}}},
      // With borrowWithinCohort it may: the candidates are its own, so
      // Kueue "greedily qualifies candidates until the preemptor Workload
      // can fit, allowing the usage of the ClusterQueue to be above the
      // nominal quota".
      {"in-queue preemption while borrowing, with borrowWithinCohort",
       kBase +
           GpuCq("team-a-cq", "research", "h100", "nominalQuota: 4",
                 Preemption("{withinClusterQueue: LowerPriority, "
                            "borrowWithinCohort: {policy: LowerPriority}}")) +
           GpuCq("team-b-cq", "research", "h100", "nominalQuota: 8") +
           Wl("team-a/low").Priority(0).Gpus(8).Admitted("team-a-cq", "h100") +
           Wl("team-a/high").Priority(100).Gpus(8),
       {"team-a/high"},
       {"team-a/low by team-a/high: InClusterQueue"},
       {{"team-a/low", ""}}},
      // Victims must hold the contested flavor: high goes to h100 (the first
      // flavor where preemption can make room), so mid (h100, priority 50)
      // is evicted, not low (priority 0), whose GPUs are a100 ones. Retried,
      // mid finds h100 taken by a higher priority and moves on to a100,
      // where it outranks low.
      {"victims hold the contested flavor",
       kBase + GpuNodes("a", 2, "A100-80GB") + Flavor("a100", "A100-80GB") +
           R"(apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: team-a-cq}
spec:
  namespaceSelector: {}
  preemption: {withinClusterQueue: LowerPriority}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: h100
      resources: [{name: nvidia.com/gpu, nominalQuota: 8}]
    - name: a100
      resources: [{name: nvidia.com/gpu, nominalQuota: 8}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: q, namespace: team-a}
spec: {clusterQueue: team-a-cq}
---
)" + Wl("team-a/low").Priority(0).Gpus(8).Admitted("team-a-cq", "a100") +
           Wl("team-a/mid").Priority(50).Gpus(8).Admitted("team-a-cq", "h100") +
           Wl("team-a/high").Priority(100).Gpus(8),
       {"team-a/high", "team-a/mid"},
       {"team-a/mid by team-a/high: InClusterQueue",
        "team-a/low by team-a/mid: InClusterQueue"},
       {{"team-a/low", ""}},
       {{"team-a/high", "h100"}, {"team-a/mid", "a100"}}},
      // withinClusterQueue covers the preemptor's own ClusterQueue only:
      // team-b's low-priority workload is within team-b's nominal quota, so
      // it is no candidate (it is not borrowing), and team-a's own workload
      // has a higher priority.
      {"no candidates outside the ClusterQueue unless they borrow",
       kBase +
           GpuCq("team-a-cq", "research", "h100", "nominalQuota: 8",
                 Preemption("{withinClusterQueue: LowerPriority, "
                            "reclaimWithinCohort: Any}")) +
           GpuCq("team-b-cq", "research", "h100", "nominalQuota: 8") +
           Wl("team-a/a0").Priority(200).Gpus(8).Admitted("team-a-cq", "h100") +
           Wl("team-b/b0").Priority(0).Gpus(8).Admitted("team-b-cq", "h100") +
           Wl("team-a/a1").Priority(100).Gpus(8),
       {"team-a/a0", "team-b/b0"},
       {},
       {{"team-a/a1", kNoVictims}}},
  };
  for (const Scenario& sc : cases) RunScenario(sc);
}

// team-a-cq and team-b-cq hold 8 each; team-b borrows team-a's 8 with two
// 8-GPU workloads (b1 admitted before b2).
std::string TeamBBorrows(const std::string& a_policy, int b_priority) {
  return kBase +
         GpuCq("team-a-cq", "research", "h100", "nominalQuota: 8", a_policy) +
         GpuCq("team-b-cq", "research", "h100", "nominalQuota: 8") +
         Wl("team-b/b1")
             .Priority(b_priority)
             .Gpus(8)
             .Admitted("team-b-cq", "h100") +
         Wl("team-b/b2")
             .Priority(b_priority)
             .Gpus(8)
             .Admitted("team-b-cq", "h100");
}

TEST(SchedulerPreemptionTest, ReclaimWithinCohort) {
  const std::vector<Scenario> cases = {
      // reclaimWithinCohort Any: "if the pending Workload fits within the
      // nominal quota of its ClusterQueue, preempt any Workload in the
      // cohort, irrespective of priority" -- here a higher-priority one.
      // Of the two equal candidates the most recently admitted (b2) goes.
      {"Any reclaims irrespective of priority",
       TeamBBorrows(Preemption("{reclaimWithinCohort: Any}"), 100) +
           Wl("team-a/a1").Priority(0).Gpus(8),
       {"team-a/a1", "team-b/b1"},
       {"team-b/b2 by team-a/a1: InCohortReclamation"},
       {{"team-b/b2", "needs 8 nvidia.com/gpu"}}},
      // LowerPriority reclaims from lower-priority borrowers...
      {"LowerPriority reclaims from a lower-priority borrower",
       TeamBBorrows(Preemption("{reclaimWithinCohort: LowerPriority}"), 0) +
           Wl("team-a/a1").Priority(100).Gpus(8),
       {"team-a/a1", "team-b/b1"},
       {"team-b/b2 by team-a/a1: InCohortReclamation"},
       {{"team-b/b2", ""}}},
      // ... but not from equal-priority ones.
      {"LowerPriority spares an equal-priority borrower",
       TeamBBorrows(Preemption("{reclaimWithinCohort: LowerPriority}"), 100) +
           Wl("team-a/a1").Priority(100).Gpus(8),
       {"team-b/b1", "team-b/b2"},
       {},
       {{"team-a/a1", kNoVictims}}},
      // Never (the default) does not reclaim: team-a waits although team-b
      // uses its quota.
      {"Never does not reclaim",
       TeamBBorrows("", 0) + Wl("team-a/a1").Priority(100).Gpus(8),
       {"team-b/b1", "team-b/b2"},
       {},
       {{"team-a/a1", "ClusterQueue team-a-cq does not preempt"}}},
      // Only ClusterQueues "that are using more than their nominal quota"
      // are reclaimed from: team-b is at its nominal 8 and keeps b1 (lower
      // priority); team-c (nominal 0) borrows 4 and loses c1.
      {"only borrowing ClusterQueues are reclaimed from",
       kBase +
           GpuCq("team-a-cq", "research", "h100", "nominalQuota: 8",
                 Preemption("{reclaimWithinCohort: Any}")) +
           GpuCq("team-b-cq", "research", "h100", "nominalQuota: 8") +
           GpuCq("team-c-cq", "research", "h100", "nominalQuota: 0") +
           Wl("team-b/b1").Priority(0).Gpus(8).Admitted("team-b-cq", "h100") +
           Wl("team-c/c1").Priority(0).Gpus(4).Admitted("team-c-cq", "h100") +
           Wl("team-a/a0").Priority(0).Gpus(4).Admitted("team-a-cq", "h100") +
           Wl("team-a/a1").Priority(100).Gpus(4),
       {"team-a/a0", "team-a/a1", "team-b/b1"},
       {"team-c/c1 by team-a/a1: InCohortReclamation"},
       {{"team-c/c1", ""}}},
      // Reclaiming requires the preemptor to fit within its nominal quota
      // afterwards. team-a (nominal 4) already uses 2; a1 needs 4 more, so
      // it would borrow: without borrowWithinCohort nothing is reclaimed.
      {"no reclaim when the preemptor would borrow",
       kBase +
           GpuCq("team-a-cq", "research", "h100", "nominalQuota: 4",
                 Preemption("{reclaimWithinCohort: Any}")) +
           GpuCq("team-b-cq", "research", "h100", "nominalQuota: 12") +
           Wl("team-b/b1").Priority(0).Gpus(8).Admitted("team-b-cq", "h100") +
           Wl("team-b/b2").Priority(0).Gpus(6).Admitted("team-b-cq", "h100") +
           Wl("team-a/a0").Priority(0).Gpus(2).Admitted("team-a-cq", "h100") +
           Wl("team-a/a1").Priority(100).Gpus(4),
       {"team-a/a0", "team-b/b1", "team-b/b2"},
       {},
       {{"team-a/a1", kNoVictims}}},
  };
  for (const Scenario& sc : cases) RunScenario(sc);
}

// team-a-cq (4) must borrow for a1 (8); team-b-cq (4) borrows 8 with b1
// (12, priority `b_priority`); team-c-cq (8) is an idle lender. Total 16.
std::string PreemptWhileBorrowing(const std::string& a_policy, int b_priority) {
  return kBase +
         GpuCq("team-a-cq", "research", "h100", "nominalQuota: 4", a_policy) +
         GpuCq("team-b-cq", "research", "h100", "nominalQuota: 4") +
         GpuCq("team-c-cq", "research", "h100", "nominalQuota: 8") +
         Wl("team-b/b1")
             .Priority(b_priority)
             .Gpus(4)
             .Count(3)
             .Admitted("team-b-cq", "h100");
}

TEST(SchedulerPreemptionTest, BorrowWithinCohort) {
  const std::vector<Scenario> cases = {
      // borrowWithinCohort LowerPriority: "if the pending Workload requires
      // borrowing, only preempt Workloads in the cohort that have lower
      // priority", "up to the priority indicated by maxPriorityThreshold".
      // 10 <= 50 and 10 < 100.
      {"preempts a borrower below maxPriorityThreshold",
       PreemptWhileBorrowing(
           Preemption("{reclaimWithinCohort: Any, borrowWithinCohort: "
                      "{policy: LowerPriority, maxPriorityThreshold: 50}}"),
           10) +
           Wl("team-a/a1").Priority(100).Gpus(8),
       {"team-a/a1"},
       {"team-b/b1 by team-a/a1: InCohortReclaimWhileBorrowing"},
       {{"team-b/b1", ""}}},
      // "up to" includes the threshold itself.
      {"maxPriorityThreshold is inclusive",
       PreemptWhileBorrowing(
           Preemption("{reclaimWithinCohort: Any, borrowWithinCohort: "
                      "{policy: LowerPriority, maxPriorityThreshold: 10}}"),
           10) +
           Wl("team-a/a1").Priority(100).Gpus(8),
       {"team-a/a1"},
       {"team-b/b1 by team-a/a1: InCohortReclaimWhileBorrowing"},
       {{"team-b/b1", ""}}},
      // 10 > 5: b1 is above the threshold and a1 would have to borrow.
      {"spares a borrower above maxPriorityThreshold",
       PreemptWhileBorrowing(
           Preemption("{reclaimWithinCohort: Any, borrowWithinCohort: "
                      "{policy: LowerPriority, maxPriorityThreshold: 5}}"),
           10) +
           Wl("team-a/a1").Priority(100).Gpus(8),
       {"team-b/b1"},
       {},
       {{"team-a/a1", kNoVictims}}},
      // Without a threshold, any lower priority qualifies.
      {"no threshold: any lower priority",
       PreemptWhileBorrowing(
           Preemption("{reclaimWithinCohort: Any, borrowWithinCohort: "
                      "{policy: LowerPriority}}"),
           99) +
           Wl("team-a/a1").Priority(100).Gpus(8),
       {"team-a/a1"},
       {"team-b/b1 by team-a/a1: InCohortReclaimWhileBorrowing"},
       {{"team-b/b1", ""}}},
      // The threshold never lets a preemptor take equal priority.
      {"never equal priority, whatever the threshold",
       PreemptWhileBorrowing(
           Preemption("{reclaimWithinCohort: Any, borrowWithinCohort: "
                      "{policy: LowerPriority, maxPriorityThreshold: 200}}"),
           100) +
           Wl("team-a/a1").Priority(100).Gpus(8),
       {"team-b/b1"},
       {},
       {{"team-a/a1", kNoVictims}}},
      // Without borrowWithinCohort, reclaimWithinCohort Any alone does not
      // let a borrowing preemptor preempt.
      {"reclaimWithinCohort alone does not preempt while borrowing",
       PreemptWhileBorrowing(Preemption("{reclaimWithinCohort: Any}"), 10) +
           Wl("team-a/a1").Priority(100).Gpus(8),
       {"team-b/b1"},
       {},
       {{"team-a/a1", ""}}},
  };
  for (const Scenario& sc : cases) RunScenario(sc);
}

TEST(SchedulerPreemptionTest, MinimalVictimSet) {
  const std::string cq =
      GpuCq("team-a-cq", "", "h100", "nominalQuota: 8",
            Preemption("{withinClusterQueue: LowerPriority}"));
  auto admitted = [](const std::string& key, int prio, int gpus) {
    return Wl(key).Priority(prio).Gpus(gpus).Admitted("team-a-cq", "h100");
  };
  const std::vector<Scenario> cases = {
      // Lowest priority first: big (5) alone frees the 4 GPUs needed, so the
      // two small priority-10 workloads are never touched.
      {"one big lowest-priority victim suffices",
       kBase + cq + admitted("team-a/s1", 10, 2) +
           admitted("team-a/s2", 10, 2) + admitted("team-a/big", 5, 4) +
           Wl("team-a/high").Priority(100).Gpus(4),
       {"team-a/high", "team-a/s1", "team-a/s2"},
       {"team-a/big by team-a/high: InClusterQueue"},
       {{"team-a/big", ""}}},
      // Greedy order takes tiny (priority 1) then big (priority 5); walking
      // back, returning tiny still leaves 4 free, so tiny is spared.
      {"fill-back spares a victim that turned out unnecessary",
       kBase + cq + admitted("team-a/tiny", 1, 2) +
           admitted("team-a/big", 5, 4) + admitted("team-a/keep", 50, 2) +
           Wl("team-a/high").Priority(100).Gpus(4),
       {"team-a/high", "team-a/keep", "team-a/tiny"},
       {"team-a/big by team-a/high: InClusterQueue"},
       {{"team-a/big", ""}}},
      // No single workload suffices: among equals, the most recently
      // admitted go first (s4, then s3).
      {"most recently admitted first among equals",
       kBase + cq + admitted("team-a/s1", 0, 2) + admitted("team-a/s2", 0, 2) +
           admitted("team-a/s3", 0, 2) + admitted("team-a/s4", 0, 2) +
           Wl("team-a/high").Priority(100).Gpus(4),
       {"team-a/high", "team-a/s1", "team-a/s2"},
       {"team-a/s3 by team-a/high: InClusterQueue",
        "team-a/s4 by team-a/high: InClusterQueue"},
       {{"team-a/s3", ""}, {"team-a/s4", ""}}},
      // Priority beats recency: the older, lower-priority workload goes.
      {"lower priority before more recent",
       kBase + cq + admitted("team-a/old-low", 0, 4) +
           admitted("team-a/new-mid", 5, 4) +
           Wl("team-a/high").Priority(100).Gpus(4),
       {"team-a/high", "team-a/new-mid"},
       {"team-a/old-low by team-a/high: InClusterQueue"},
       {{"team-a/old-low", ""}}},
      // "Workloads from borrowing queues in the cohort" come before the
      // preemptor's own, even of lower priority: team-b's most recent
      // borrower b2 (priority 50) goes, team-a/low (priority 0) stays.
      {"borrowing ClusterQueues' workloads before own",
       kBase +
           GpuCq("team-a-cq", "research", "h100", "nominalQuota: 8",
                 Preemption("{withinClusterQueue: LowerPriority, "
                            "reclaimWithinCohort: Any}")) +
           GpuCq("team-b-cq", "research", "h100", "nominalQuota: 8") +
           admitted("team-a/low", 0, 2) +
           Wl("team-b/b1").Priority(50).Gpus(8).Admitted("team-b-cq", "h100") +
           Wl("team-b/b2").Priority(50).Gpus(2).Admitted("team-b-cq", "h100") +
           Wl("team-a/a1").Priority(100).Gpus(6),
       {"team-a/a1", "team-a/low", "team-b/b1"},
       {"team-b/b2 by team-a/a1: InCohortReclamation"},
       {{"team-b/b2", ""}}},
  };
  for (const Scenario& sc : cases) RunScenario(sc);
}

// BUG: partial admission must also consider preemption for the reduced
// counts. Kueue (pkg/scheduler/scheduler.go, getInitialAssignments): when
// the full assignment neither fits nor finds preemption targets, the
// PodSetReducer searches the largest count for which the assignment is
// Fit, or is Preempt and preemptor.GetTargets finds targets. Here high
// (priority 100) wants 3 pods x 4 GPUs, minCount 1, in a ClusterQueue of 8
// holding low (4, priority 0) and mid (4, priority 200). 12 never fits;
// 2 pods would need mid's GPUs too; 1 pod fits by preempting low. Expected:
// high admitted with 1 pod, low preempted. Allot's TryAdmit only accepts a
// reduced count whose mode is Fit, so high stays pending and low runs on.
TEST(SchedulerPreemptionTest, PartialAdmissionWithPreemption) {
  const std::string yaml =
      kBase +
      GpuCq("team-a-cq", "", "h100", "nominalQuota: 8",
            Preemption("{withinClusterQueue: LowerPriority}")) +
      Wl("team-a/low").Priority(0).Gpus(4).Admitted("team-a-cq", "h100") +
      Wl("team-a/mid").Priority(200).Gpus(4).Admitted("team-a-cq", "h100") +
      Wl("team-a/high").Priority(100).Gpus(4).Count(3).MinCount(1);
  RunScenario({"reduced count admitted by preemption",
               yaml,
               {"team-a/high", "team-a/mid"},
               {"team-a/low by team-a/high: InClusterQueue"},
               {{"team-a/low", ""}}});
  auto s = testing::BuildScheduler(yaml);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  (*s)->RunUntilQuiescent();
  for (const AdmittedWorkload& a : (*s)->Admitted()) {
    if (a.workload == "team-a/high") {
      EXPECT_EQ(a.admission.pod_set_assignments.at(0).count, 1);
    }
  }
}

// BUG: in hierarchical cohorts, reclaiming looks only into subtrees that
// exceed their quota. Kueue (pkg/scheduler/preemption/classical/
// hierarchical_preemption.go, collectCandidatesInSubtree: "don't look for
// candidates in subtrees that are not exceeding their quotas") skips a
// child cohort that is within its nominal quota, even when a ClusterQueue
// inside it uses more than its own nominal quota -- it is using the
// cohort's shared pool (concepts/cohort: a Cohort's nominalQuota "may be
// thought of as a shared pool for the ClusterQueues within it").
// Tree: org -> research {team-a (8), team-b (0)} and prod (8 of its own)
// {team-c (0)}. team-b/b1 borrows team-a's 8; team-c/c1 uses prod's own 8.
// team-a/a1 (8, within team-a's nominal) reclaims: only b1 is a candidate.
// Allot counts team-c as borrowing (usage 8 > its nominal 0) and, c1 being
// the most recently admitted, evicts c1 instead; team-b keeps team-a's
// quota.
TEST(SchedulerPreemptionTest, HierarchicalReclaimSparesSubtreesWithinQuota) {
  const std::string cohorts = R"(apiVersion: kueue.x-k8s.io/v1beta1
kind: Cohort
metadata: {name: org}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: Cohort
metadata: {name: research}
spec: {parentName: org}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: Cohort
metadata: {name: prod}
spec:
  parentName: org
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: h100
      resources: [{name: nvidia.com/gpu, nominalQuota: 8}]
---
)";
  RunScenario(
      {"reclaim from the borrowing sibling, not from a cohort within quota",
       kBase + cohorts +
           GpuCq("team-a-cq", "research", "h100", "nominalQuota: 8",
                 Preemption("{reclaimWithinCohort: Any}")) +
           GpuCq("team-b-cq", "research", "h100", "nominalQuota: 0") +
           GpuCq("team-c-cq", "prod", "h100", "nominalQuota: 0") +
           Wl("team-b/b1").Gpus(8).Admitted("team-b-cq", "h100") +
           Wl("team-c/c1").Gpus(8).Admitted("team-c-cq", "h100") +
           Wl("team-a/a1").Priority(100).Gpus(8),
       {"team-a/a1", "team-c/c1"},
       {"team-b/b1 by team-a/a1: InCohortReclamation"},
       {{"team-b/b1", ""}}});
}

// LowerOrNewerEqualPriority preempts only workloads "newer than the pending
// workload". Kueue compares timestamps strictly, so a workload created in
// the same second is not newer, whatever order the two arrived in (and
// Kubernetes timestamps have one-second resolution, so ties are common).
TEST(SchedulerPreemptionTest,
     LowerOrNewerEqualPriorityNeedsAStrictlyNewerVictim) {
  RunScenario(
      {"same creation time is not newer",
       kBase +
           GpuCq(
               "team-a-cq", "", "h100", "nominalQuota: 8",
               Preemption("{withinClusterQueue: LowerOrNewerEqualPriority}")) +
           Wl("team-a/pending").Created(0).Gpus(8) +
           Wl("team-a/running")
               .Created(0)
               .Gpus(8)
               .Admitted("team-a-cq", "h100"),
       {"team-a/running"},
       {},
       {{"team-a/pending", kNoVictims}}});
}

// Quota is ample (64) but nodes are the limit: the victims must free an
// exact placement, not just quota.
TEST(SchedulerPreemptionTest, PreemptionForPlacement) {
  const std::string two_nodes = kH100 + GpuNodes("h", 2, "H100-80GB");
  const std::string cq =
      GpuCq("team-a-cq", "", "h100", "nominalQuota: 64",
            Preemption("{withinClusterQueue: LowerPriority}"));
  auto on = [](const std::string& key, int prio, const std::string& node,
               int from, int to) {
    return Wl(key)
        .Priority(prio)
        .Gpus(to - from)
        .Admitted("team-a-cq", "h100")
        .Placement(node, Gpus(node, from, to));
  };
  const std::vector<Scenario> cases = {
      // 16 GPUs, all in use; an 8-GPU pod needs a whole node. The lowest
      // priority workload (low) holds h-0 alone: it is the only victim.
      {"lowest priority frees a node",
       two_nodes + cq + on("team-a/low", 0, "h-0", 0, 8) +
           on("team-a/mid1", 50, "h-1", 0, 4) +
           on("team-a/mid2", 50, "h-1", 4, 8) +
           Wl("team-a/high").Priority(100).Gpus(8),
       {"team-a/high", "team-a/mid1", "team-a/mid2"},
       {"team-a/low by team-a/high: InClusterQueue"},
       {{"team-a/low",
         "quota is available in flavor h100 but no schedulable node has 8 "
         "free"}}},
      // Candidates in order a (0), c (10), d (20), b (60). a alone frees
      // half of h-0; c and d free h-1. Walking back, returning a still
      // leaves h-1 free, so high spares a (the lowest priority): victims
      // must make room, not just be cheap. Then the evicted d (priority 20,
      // 4 GPUs) is retried: a (priority 0) holds the 4 GPUs of h-0 it could
      // use, so d preempts a in turn. c (10) can preempt neither b (60) nor
      // d (20).
      {"victims that free one node; a useless low-priority one is spared",
       two_nodes + cq + on("team-a/a", 0, "h-0", 0, 4) +
           on("team-a/b", 60, "h-0", 4, 8) + on("team-a/c", 10, "h-1", 0, 4) +
           on("team-a/d", 20, "h-1", 4, 8) +
           Wl("team-a/high").Priority(100).Gpus(8),
       {"team-a/b", "team-a/d", "team-a/high"},
       {"team-a/c by team-a/high: InClusterQueue",
        "team-a/d by team-a/high: InClusterQueue",
        "team-a/a by team-a/d: InClusterQueue"},
       {{"team-a/a", ""}, {"team-a/c", kNoVictims}}},
      // The node is full of team-b's work, within team-b's nominal quota:
      // team-b is not borrowing, so nothing of it may be preempted; a1 waits
      // for devices with a placement reason.
      {"no preemption of a non-borrowing ClusterQueue for placement",
       kH100 + GpuNodes("h", 1, "H100-80GB") +
           GpuCq("team-a-cq", "research", "h100", "nominalQuota: 8",
                 Preemption("{withinClusterQueue: LowerPriority, "
                            "reclaimWithinCohort: Any}")) +
           GpuCq("team-b-cq", "research", "h100", "nominalQuota: 8") +
           Wl("team-b/b1").Priority(0).Gpus(8).Admitted("team-b-cq", "h100") +
           Wl("team-a/a1").Priority(100).Gpus(8),
       {"team-b/b1"},
       {},
       {{"team-a/a1",
         "quota is available in flavor h100 but no schedulable node has 8 "
         "free"}}},
      // Without a preemption policy, the reason says so.
      {"placement short without a preemption policy",
       kH100 + GpuNodes("h", 1, "H100-80GB") +
           GpuCq("team-a-cq", "", "h100", "nominalQuota: 64") +
           Wl("team-a/low").Priority(0).Gpus(8).Admitted("team-a-cq", "h100") +
           Wl("team-a/high").Priority(100).Gpus(8),
       {"team-a/low"},
       {},
       {{"team-a/high", "ClusterQueue team-a-cq does not preempt"}}},
  };
  for (const Scenario& sc : cases) RunScenario(sc);
}

// The preemptor is admitted in the same cycle as the evictions, with a
// placement on the freed devices; the victims' devices are free again.
TEST(SchedulerPreemptionTest, PreemptorTakesTheFreedDevices) {
  auto s = testing::BuildScheduler(
      kH100 + GpuNodes("h", 1, "H100-80GB") +
      GpuCq("team-a-cq", "", "h100", "nominalQuota: 8",
            Preemption("{withinClusterQueue: LowerPriority}")) +
      Wl("team-a/low").Priority(0).Gpus(8).Admitted("team-a-cq", "h100") +
      Wl("team-a/high").Priority(100).Gpus(8));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  CycleResult r = (*s)->RunCycle();
  EXPECT_EQ(r.admitted, (std::vector<std::string>{"team-a/high"}));
  ASSERT_EQ(r.preempted.size(), 1u);
  EXPECT_EQ(testing::Describe(r.preempted[0]),
            "team-a/low by team-a/high: InClusterQueue");
  auto admitted = (*s)->Admitted();
  ASSERT_EQ(admitted.size(), 1u);
  const auto& placements =
      admitted[0].admission.pod_set_assignments.at(0).placements;
  ASSERT_EQ(placements.size(), 1u);
  EXPECT_EQ(placements[0].node, "h-0");
  EXPECT_EQ(placements[0].gpus.size(), 8u);
  // The victim is pending again, in its queue, with the preemptor named in
  // the eviction log.
  ASSERT_EQ((*s)->Preemptions().size(), 1u);
  EXPECT_EQ((*s)->Preemptions()[0].workload, "team-a/low");
  EXPECT_EQ((*s)->PendingCount(), 1u);
}

}  // namespace
}  // namespace allot::sched
