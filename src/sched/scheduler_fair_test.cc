// Scheduler with fair sharing (Kueue's concepts/preemption "Fair Sharing"
// and concepts/fair_sharing): admission order by weighted dominant resource
// share (DRS), and preemption strategies.
//
// DRS of a ClusterQueue, as Kueue computes it: for each resource, what the
// ClusterQueue uses above its nominal quota (summed over flavors), divided
// by the cohort's lendable quota of that resource, x1000; the largest such
// ratio, divided by the ClusterQueue's fairSharing.weight. A ClusterQueue
// within its nominal quota has DRS 0.
//
// Preemption strategies (concepts/preemption):
//  - LessThanOrEqualToFinalShare: preempt a workload only if the
//    preemptor's ClusterQueue share with the preemptor is <= the target's
//    share without that workload;
//  - LessThanInitialShare: only if the preemptor's share with the
//    preemptor is < the target's current share.
// Targets are taken from the ClusterQueue with the highest share first, with
// reason InCohortFairSharing; a preemptor that stays within its nominal
// quota takes them whatever the shares, with reason InCohortReclamation
// (Kueue's FairSharingPreemptWithinNominal, on by default).
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

const std::string kBase =
    Flavor("h100", "H100-80GB") + GpuNodes("h", 8, "H100-80GB");

std::string FairSharing(const std::string& strategies) {
  return "apiVersion: allot.dev/v1\nkind: SchedulerConfig\n"
         "fairSharing: {enable: true, preemptionStrategies: [" +
         strategies + "]}\n---\n";
}
const std::string kFair =
    FairSharing("LessThanOrEqualToFinalShare, LessThanInitialShare");

const std::string kReclaimAny = "  preemption: {reclaimWithinCohort: Any}\n";

// Cohort of 32: team-a (8) uses 16 (borrows 8, DRS 8/32 = 250), team-b (8)
// uses 12 (borrows 4, DRS 125), team-c (16) is idle. 4 GPUs are left; a1
// and b1 want 4 each, a1 created first.
std::string TwoBorrowers(const std::string& a_extra) {
  return kBase +
         GpuCq("team-a-cq", "research", "h100", "nominalQuota: 8", a_extra) +
         GpuCq("team-b-cq", "research", "h100", "nominalQuota: 8") +
         GpuCq("team-c-cq", "research", "h100", "nominalQuota: 16") +
         Wl("team-a/a0").Gpus(8).Count(2).Admitted("team-a-cq", "h100") +
         Wl("team-b/b0").Gpus(4).Count(3).Admitted("team-b-cq", "h100") +
         Wl("team-a/a1").Created(0).Gpus(4) +
         Wl("team-b/b1").Created(5).Gpus(4);
}

TEST(SchedulerFairTest, AdmissionOrder) {
  const std::vector<Scenario> cases = {
      // Classical: both heads borrow, so priority then creation time
      // decide; a1 is older and takes the last 4.
      {"classical: creation time among borrowers",
       TwoBorrowers(""),
       {"team-a/a0", "team-a/a1", "team-b/b0"},
       {},
       {{"team-b/b1", "needs 4 nvidia.com/gpu"}}},
      // Fair sharing: "Kueue prefers to admit Workloads from ClusterQueues
      // that have the lowest share value first". With its head, team-a
      // would borrow 12 (375), team-b 8 (250): b1 goes first.
      {"fair sharing: lowest share first",
       TwoBorrowers("") + kFair,
       {"team-a/a0", "team-b/b0", "team-b/b1"},
       {},
       {{"team-a/a1", "needs 4 nvidia.com/gpu"}}},
      // Weight 4 divides team-a's share: 375/4 = 93 < 250, so a1 goes first.
      {"fair sharing: weights scale the share",
       TwoBorrowers("  fairSharing: {weight: 4}\n") + kFair,
       {"team-a/a0", "team-a/a1", "team-b/b0"},
       {},
       {{"team-b/b1", "needs 4 nvidia.com/gpu"}}},
  };
  for (const Scenario& sc : cases) RunScenario(sc);
}

// Cohort of 16: team-a (4) uses 4; team-b (4) borrows 8 with b1 and b2 (6
// each, b2 admitted last): DRS 8/16 = 500; team-c (8) lends. a1 (4) would
// make team-a borrow 4: 250. Without b2, team-b borrows 2: 125.
std::string ShareInversion(const std::string& strategies) {
  return kBase +
         GpuCq("team-a-cq", "research", "h100", "nominalQuota: 4",
               kReclaimAny) +
         GpuCq("team-b-cq", "research", "h100", "nominalQuota: 4") +
         GpuCq("team-c-cq", "research", "h100", "nominalQuota: 8") +
         Wl("team-a/a0").Gpus(4).Admitted("team-a-cq", "h100") +
         Wl("team-b/b1").Gpus(6).Admitted("team-b-cq", "h100") +
         Wl("team-b/b2").Gpus(6).Admitted("team-b-cq", "h100") +
         Wl("team-a/a1").Gpus(4) + FairSharing(strategies);
}

TEST(SchedulerFairTest, PreemptionStrategies) {
  const std::vector<Scenario> cases = {
      // LessThanOrEqualToFinalShare: 250 <= 125 fails for b2 (and b1):
      // preempting would leave team-a with a larger share than team-b.
      {"LessThanOrEqualToFinalShare alone refuses",
       ShareInversion("LessThanOrEqualToFinalShare"),
       {"team-a/a0", "team-b/b1", "team-b/b2"},
       {},
       {{"team-a/a1", "no set of workloads"}}},
      // LessThanInitialShare: 250 < 500 holds; it "chooses to first preempt
      // workloads with the lowest priority and newest start time": b2.
      {"LessThanInitialShare alone preempts",
       ShareInversion("LessThanInitialShare"),
       {"team-a/a0", "team-a/a1", "team-b/b1"},
       {"team-b/b2 by team-a/a1: InCohortFairSharing"},
       {{"team-b/b2", ""}}},
      // The default list tries the first strategy, then the second.
      {"default strategies fall back to LessThanInitialShare",
       ShareInversion("LessThanOrEqualToFinalShare, LessThanInitialShare"),
       {"team-a/a0", "team-a/a1", "team-b/b1"},
       {"team-b/b2 by team-a/a1: InCohortFairSharing"},
       {{"team-b/b2", ""}}},
      // Equal shares: team-b (8) borrows 4 with b1..b3 (4 each): 250.
      // a1 (8) would make team-a (8, using 4) borrow 4: 250 as well. Neither
      // 250 <= 0 (b3 gone) nor 250 < 250 holds: no preemption, so the two
      // ClusterQueues cannot keep preempting each other.
      {"no preemption between equal shares",
       kBase +
           GpuCq("team-a-cq", "research", "h100", "nominalQuota: 8",
                 kReclaimAny) +
           GpuCq("team-b-cq", "research", "h100", "nominalQuota: 8") +
           Wl("team-a/a0").Gpus(4).Admitted("team-a-cq", "h100") +
           Wl("team-b/b1").Gpus(4).Admitted("team-b-cq", "h100") +
           Wl("team-b/b2").Gpus(4).Admitted("team-b-cq", "h100") +
           Wl("team-b/b3").Gpus(4).Admitted("team-b-cq", "h100") +
           Wl("team-a/a1").Gpus(8) + kFair,
       {"team-a/a0", "team-b/b1", "team-b/b2", "team-b/b3"},
       {},
       {{"team-a/a1", "no set of workloads"}}},
      // Same cohort, a1 needs only 4: team-a stays within nominal, so it
      // reclaims whatever the shares (Kueue's
      // queueWithinNominalInResourcesNeedingPreemption): b3, the most
      // recently admitted, is preempted, as a reclamation.
      {"a preemptor within its nominal quota reclaims",
       kBase +
           GpuCq("team-a-cq", "research", "h100", "nominalQuota: 8",
                 kReclaimAny) +
           GpuCq("team-b-cq", "research", "h100", "nominalQuota: 8") +
           Wl("team-a/a0").Gpus(4).Admitted("team-a-cq", "h100") +
           Wl("team-b/b1").Gpus(4).Admitted("team-b-cq", "h100") +
           Wl("team-b/b2").Gpus(4).Admitted("team-b-cq", "h100") +
           Wl("team-b/b3").Gpus(4).Admitted("team-b-cq", "h100") +
           Wl("team-a/a1").Gpus(4) + kFair,
       {"team-a/a0", "team-a/a1", "team-b/b1", "team-b/b2"},
       {"team-b/b3 by team-a/a1: InCohortReclamation"},
       {{"team-b/b3", ""}}},
  };
  for (const Scenario& sc : cases) RunScenario(sc);
}

// Cohort of 16: team-a (8) idle; team-b (4) and team-c (4) each borrow 4
// with one 8-GPU workload (DRS 250 each before weights). "During
// preemption, Kueue prefers to preempt Workloads from ClusterQueues that
// have the highest share value first": the weight picks the target. team-a
// stays within its nominal quota, so the reason is InCohortReclamation.
std::string TwoTargets(const std::string& b_extra, const std::string& c_extra) {
  return kBase +
         GpuCq("team-a-cq", "research", "h100", "nominalQuota: 8",
               kReclaimAny) +
         GpuCq("team-b-cq", "research", "h100", "nominalQuota: 4", b_extra) +
         GpuCq("team-c-cq", "research", "h100", "nominalQuota: 4", c_extra) +
         Wl("team-b/b1").Gpus(8).Admitted("team-b-cq", "h100") +
         Wl("team-c/c1").Gpus(8).Admitted("team-c-cq", "h100") +
         Wl("team-a/a1").Gpus(4) + kFair;
}

TEST(SchedulerFairTest, HighestShareIsPreemptedFirst) {
  const std::vector<Scenario> cases = {
      // team-c has weight 2: 125 < team-b's 250, so team-b loses b1.
      {"weight 2 on team-c protects it",
       TwoTargets("", "  fairSharing: {weight: 2}\n"),
       {"team-a/a1", "team-c/c1"},
       {"team-b/b1 by team-a/a1: InCohortReclamation"},
       {{"team-b/b1", ""}}},
      // And the other way round.
      {"weight 2 on team-b protects it",
       TwoTargets("  fairSharing: {weight: 2}\n", ""),
       {"team-a/a1", "team-b/b1"},
       {"team-c/c1 by team-a/a1: InCohortReclamation"},
       {{"team-c/c1", ""}}},
      // withinClusterQueue still applies under fair sharing, with reason
      // InClusterQueue: team-b is within its nominal quota (no candidate),
      // team-a's own lower-priority workload is.
      {"fair sharing keeps in-queue preemption",
       kBase +
           GpuCq("team-a-cq", "research", "h100", "nominalQuota: 8",
                 "  preemption: {withinClusterQueue: LowerPriority, "
                 "reclaimWithinCohort: Any}\n") +
           GpuCq("team-b-cq", "research", "h100", "nominalQuota: 8") +
           Wl("team-a/low").Priority(0).Gpus(8).Admitted("team-a-cq", "h100") +
           Wl("team-b/b0").Gpus(8).Admitted("team-b-cq", "h100") +
           Wl("team-a/high").Priority(100).Gpus(8) + kFair,
       {"team-a/high", "team-b/b0"},
       {"team-a/low by team-a/high: InClusterQueue"},
       {{"team-a/low", ""}}},
  };
  for (const Scenario& sc : cases) RunScenario(sc);
}

// Cohort of 16: team-a (4) uses 4; team-b (4) borrows 8 with small1,
// small2 (2 each, priority 5) and big (8, priority 0): DRS 500. a1 (2)
// would make team-a borrow 2: 125.
//
// Under LessThanOrEqualToFinalShare, a candidate that fails the strategy
// does not end the search in its ClusterQueue. Kueue (pkg/scheduler/
// preemption/fair_strategy.go, iterateWithFirstFsStrategy) walks every
// candidate of the target ClusterQueue: big first (lowest priority) fails,
// since team-b without big borrows 0 and 125 <= 0 is false; it goes to the
// retry list and the next candidate, small2 (most recently admitted of
// priority 5), passes: team-b without it borrows 6, 375, and 125 <= 375.
// The docs say this strategy "might favor preemption of smaller workloads in
// the target ClusterQueue, regardless of priority". So only small2 is
// preempted (2 GPUs, exactly what a1 needs), not big (8 GPUs), also when
// LessThanInitialShare follows in the list.
std::string SmallerVictim(const std::string& strategies) {
  return kBase +
         GpuCq("team-a-cq", "research", "h100", "nominalQuota: 4",
               kReclaimAny) +
         GpuCq("team-b-cq", "research", "h100", "nominalQuota: 4") +
         GpuCq("team-c-cq", "research", "h100", "nominalQuota: 8") +
         Wl("team-a/a0").Gpus(4).Admitted("team-a-cq", "h100") +
         Wl("team-b/small1").Priority(5).Gpus(2).Admitted("team-b-cq", "h100") +
         Wl("team-b/small2").Priority(5).Gpus(2).Admitted("team-b-cq", "h100") +
         Wl("team-b/big").Priority(0).Gpus(8).Admitted("team-b-cq", "h100") +
         Wl("team-a/a1").Gpus(2) + FairSharing(strategies);
}

TEST(SchedulerFairTest, FinalShareStrategyTriesEveryCandidateOfATarget) {
  RunScenario({"LessThanOrEqualToFinalShare alone",
               SmallerVictim("LessThanOrEqualToFinalShare"),
               {"team-a/a0", "team-a/a1", "team-b/big", "team-b/small1"},
               {"team-b/small2 by team-a/a1: InCohortFairSharing"},
               {{"team-b/small2", ""}}});
  RunScenario(
      {"default strategies",
       SmallerVictim("LessThanOrEqualToFinalShare, LessThanInitialShare"),
       {"team-a/a0", "team-a/a1", "team-b/big", "team-b/small1"},
       {"team-b/small2 by team-a/a1: InCohortFairSharing"},
       {{"team-b/small2", ""}}});
}

// Hierarchical fair sharing honours Cohort fairSharing weights. Kueue's
// concepts/cohort example gives important-org weight 0.75 and regular-org 0.25
// under one root, so that "the important org will trend towards using 75% of
// common resources". Kueue orders heads by a tournament (pkg/scheduler/
// fair_sharing_iterator.go): at each cohort, the child (ClusterQueue or
// cohort) with the lowest DRS after admitting its nominee wins, each child's
// DRS divided by its own weight. Here the root holds 16; imp-cq (under
// important-org) uses 8 and reg-cq (under regular-org) uses 4; both want 4
// more and 4 are left. important-org would borrow 12 of 16 (750) / 0.75 =
// 1000; regular-org 8 of 16 (500) / 0.25 = 2000: imp-cq/w wins (comparing
// ClusterQueue shares alone, 750 vs 500, would wrongly pick reg-cq/w).
TEST(SchedulerFairTest, CohortWeightsOrderHierarchicalAdmission) {
  const std::string tree = R"(apiVersion: kueue.x-k8s.io/v1beta1
kind: Cohort
metadata: {name: root-cohort}
spec:
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: h100
      resources: [{name: nvidia.com/gpu, nominalQuota: 16}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: Cohort
metadata: {name: important-org}
spec: {parentName: root-cohort, fairSharing: {weight: "0.75"}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: Cohort
metadata: {name: regular-org}
spec: {parentName: root-cohort, fairSharing: {weight: "0.25"}}
---
)";
  RunScenario({"cohort weights decide between orgs",
               kBase + tree +
                   GpuCq("imp-cq", "important-org", "h100", "nominalQuota: 0") +
                   GpuCq("reg-cq", "regular-org", "h100", "nominalQuota: 0") +
                   Wl("imp/w0").Gpus(8).Admitted("imp-cq", "h100") +
                   Wl("reg/w0").Gpus(4).Admitted("reg-cq", "h100") +
                   Wl("imp/w").Created(5).Gpus(4) +
                   Wl("reg/w").Created(0).Gpus(4) + kFair,
               {"imp/w", "imp/w0", "reg/w0"},
               {},
               {{"reg/w", "needs 4 nvidia.com/gpu"}}});
}

}  // namespace
}  // namespace allot::sched
