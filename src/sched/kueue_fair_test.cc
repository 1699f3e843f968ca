// Kueue's fair-sharing preemption cases in a flat cohort, translated from
// pkg/scheduler/preemption/preemption_fair_test.go (TestFairPreemptions),
// and run to quiescence with fair sharing on. The cases with nested
// cohorts and zero weights are in kueue_fair_hierarchy_test.cc.
//
// The rules these cases exercise (Kueue's code, read; not copied):
//  - Preemptor.fairPreemptions: the preemptor's usage is simulated first,
//    so its share is the share after admission; runFirstFsStrategy takes,
//    from the ClusterQueue with the highest share, the first workload that
//    passes the first strategy (skipping, not dropping, those that fail),
//    then picks the ClusterQueue again; the preemptor's own ClusterQueue
//    takes part, its lower-priority workloads preempted InClusterQueue;
//  - runSecondFsStrategy (rule S2-b): the workloads the first strategy
//    passed over get a second chance under LessThanInitialShare, one per
//    ClusterQueue, keeping what the first strategy took;
//  - queueWithinNominalInResourcesNeedingPreemption
//    (FairSharingPreemptWithinNominal): a preemptor that stays within its
//    nominal quota takes candidates whatever the shares, with reason
//    InCohortReclamation;
//  - fairsharing.TargetClusterQueueOrdering: a ClusterQueue that does not
//    borrow offers no candidates; ties in share go to the ClusterQueue
//    whose first candidate comes first (common.CandidatesOrdering);
//  - borrowWithinCohort plays no part under fair sharing.
// Kueue's test gives each workload its name as UID, so equal candidates
// go in name order; here equal candidates go most recently admitted first,
// so the admitted workloads are listed in reverse name order.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sched/kueue_cases_util.h"

namespace allot::sched {
namespace {

using kueue_cases::Case;
using kueue_cases::Cq;
using kueue_cases::Fq;
using kueue_cases::Wl;

constexpr char kFile[] = "preemption_fair_test.go: ";

const std::string kPlain = kueue_cases::Base({"default"});
const std::string kBase = kPlain + kueue_cases::kFairSharing;

// Kueue's baseCQs: a, b and c with 3 CPUs each, and preemptible with none.
Cq Member(const std::string& name, const std::string& weight = "") {
  Cq cq = Cq(name).Cohort("all").Group({Fq("default").R("cpu", "3")})
              .Preempt("LowerPriority", "Any")
              .BorrowWithinCohort(-3);
  if (!weight.empty()) cq.Weight(weight);
  return cq;
}
const std::string kCqs =
    kBase + Member("a") + Member("b") + Member("c") +
    Cq("preemptible").Cohort("all").Group({Fq("default").R("cpu", "0")});
// Kueue's "CQ with higher weight" setups: a, b and c without
// borrowWithinCohort, with weights.
Cq Weighted(const std::string& name, const std::string& weight) {
  Cq cq = Cq(name).Cohort("all").Group({Fq("default").R("cpu", "3")})
              .Preempt("LowerPriority", "Any");
  if (!weight.empty()) cq.Weight(weight);
  return cq;
}

// Admitted workloads `prefix`1..`prefix`n of one CPU in ClusterQueue `cq`,
// listed last first (so that `prefix`1 is the most recently admitted).
std::string Units(const std::string& cq, const std::string& prefix, int n,
                  int prio = 0) {
  std::string out;
  for (int i = n; i >= 1; --i) {
    out += Wl(cq + "/" + prefix + std::to_string(i)).Priority(prio)
               .Request("cpu", "1")
               .Admitted(cq, "default")
               .Yaml();
  }
  return out;
}
Wl Adm(const std::string& key, int prio, const std::string& cpu) {
  return Wl(key).Priority(prio).Request("cpu", cpu).Admitted(
      key.substr(0, key.find('/')), "default");
}
Wl In(const std::string& key, const std::string& cpu, int prio = 0) {
  return Wl(key).Priority(prio).Created(10).Request("cpu", cpu);
}
std::string Strategies(const std::string& list) {
  return "apiVersion: allot.dev/v1\nkind: SchedulerConfig\n"
         "fairSharing: {enable: true, preemptionStrategies: [" + list +
         "]}\n---\n";
}

std::vector<Case> Cases() {
  const std::string abc9 =
      kCqs + Units("a", "a", 3) + Units("b", "b", 5) + Units("c", "c", 1);
  return {
      // c stays within its nominal quota: b's workload goes whatever the
      // shares, as a reclamation.
      {std::string(kFile) + "reclaim nominal from user using the most",
       abc9 + In("c/c-incoming", "1"),
       {"a/a1", "a/a2", "a/a3", "b/b2", "b/b3", "b/b4", "b/b5", "c/c1",
        "c/c-incoming"},
       {"b/b1 by c/c-incoming: InCohortReclamation"},
       {{"b/b1", ""}}},
      // b1 (the highest share's first) is not enough; a1 is; b1 is given
      // back (fill-back).
      {std::string(kFile) +
           "can reclaim from queue using less, if taking the latest workload "
           "from user using the most isn't enough",
       kCqs + Adm("a/a2", 0, "1") + Adm("a/a1", 0, "3") + Adm("b/b2", 0, "3") +
           Adm("b/b1", 0, "2") + In("c/c-incoming", "3"),
       {"a/a2", "b/b1", "b/b2", "c/c-incoming"},
       {"a/a1 by c/c-incoming: InCohortReclamation"},
       {{"a/a1", ""}}},
      {std::string(kFile) + "reclaim borrowable quota from user using the most",
       abc9 + In("a/a-incoming", "1"),
       {"a/a-incoming", "a/a1", "a/a2", "a/a3", "b/b2", "b/b3", "b/b4", "b/b5",
        "c/c1"},
       {"b/b1 by a/a-incoming: InCohortFairSharing"},
       {{"b/b1", ""}}},
      {std::string(kFile) + "preempt one from each CQ borrowing",
       kCqs + Adm("a/a3", 0, "3") + Adm("a/a2", 0, "500m") +
           Adm("a/a1", 0, "500m") + Adm("b/b3", 0, "3") +
           Adm("b/b2", 0, "500m") + Adm("b/b1", 0, "500m") +
           In("c/c-incoming", "2"),
       {"a/a2", "a/a3", "b/b2", "b/b3", "c/c-incoming"},
       {"a/a1 by c/c-incoming: InCohortReclamation",
        "b/b1 by c/c-incoming: InCohortReclamation"},
       {{"a/a1", ""}, {"b/b1", ""}}},
      {std::string(kFile) + "can't preempt when everyone under nominal",
       kCqs + Units("a", "a", 3) + Units("b", "b", 3) + Units("c", "c", 3) +
           In("c/c-incoming", "1"),
       {"a/a1", "a/a2", "a/a3", "b/b1", "b/b2", "b/b3", "c/c1", "c/c2",
        "c/c3"},
       {},
       {{"c/c-incoming", ""}}},
      {std::string(kFile) + "can't preempt when it would switch the imbalance",
       kCqs + Units("a", "a", 3) + Units("b", "b", 5) + In("a/a-incoming", "2"),
       {"a/a1", "a/a2", "a/a3", "b/b1", "b/b2", "b/b3", "b/b4", "b/b5"},
       {},
       {{"a/a-incoming", ""}}},
      {std::string(kFile) + "can preempt lower priority workloads from same CQ",
       kCqs + Adm("a/a4", 0, "1") +
           Adm("a/a3", 0, "1") + Adm("a/a2-low", -1, "1") +
           Adm("a/a1-low", -1, "1") + Units("b", "b", 5) +
           In("a/a-incoming", "2"),
       {"a/a-incoming", "a/a3", "a/a4", "b/b1", "b/b2", "b/b3", "b/b4",
        "b/b5"},
       {"a/a1-low by a/a-incoming: InClusterQueue",
        "a/a2-low by a/a-incoming: InClusterQueue"},
       {{"a/a1-low", ""}, {"a/a2-low", ""}}},
      {std::string(kFile) +
           "can preempt a combination of same CQ and highest user",
       kCqs + Adm("a/a3", 0, "1") + Adm("a/a2", 0, "1") +
           Adm("a/a-low", -1, "1") + Units("b", "b", 6) +
           In("a/a-incoming", "2"),
       {"a/a-incoming", "a/a2", "a/a3", "b/b2", "b/b3", "b/b4", "b/b5",
        "b/b6"},
       {"a/a-low by a/a-incoming: InClusterQueue",
        "b/b1 by a/a-incoming: InCohortFairSharing"},
       {{"a/a-low", ""}, {"b/b1", ""}}},
      // a stays within its nominal quota: InCohortReclamation (Kueue's
      // FairSharingPreemptWithinNominal). End state: b1 waits; above its
      // nominal quota, with nobody borrowing, it has no victims.
      {std::string(kFile) +
           "preempt huge workload if there is no other option, as long as the "
           "target CQ gets a lower share",
       kCqs + Adm("b/b1", 0, "9") + In("a/a-incoming", "2"),
       {"a/a-incoming"},
       {"b/b1 by a/a-incoming: InCohortReclamation"},
       {{"b/b1", ""}}},
      {std::string(kFile) + "can't preempt huge workload if the incoming is also huge",
       kCqs + Adm("a/a1", 0, "2") + Adm("b/b1", 0, "7") +
           In("a/a-incoming", "5"),
       {"a/a1", "b/b1"},
       {},
       {{"a/a-incoming", ""}}},
      // S2-b takes one workload of b, not enough, and stops there.
      {std::string(kFile) + "can't preempt 2 smaller workloads if the incoming is huge",
       kCqs + Adm("b/b3", 0, "3") + Adm("b/b2", 0, "2") + Adm("b/b1", 0, "2") +
           In("a/a-incoming", "6"),
       {"b/b1", "b/b2", "b/b3"},
       {},
       {{"a/a-incoming", ""}}},
      // First strategy: a1-low (own), then a2-low; b's fail it. S2-b then
      // takes b1, keeping what the first strategy took; fill-back returns
      // a2-low.
      {std::string(kFile) + "preempt from target and others even if over nominal",
       kCqs + Adm("a/a2-low", -1, "1") + Adm("a/a1-low", -1, "2") +
           Adm("b/b2", 0, "3") + Adm("b/b1", 0, "3") +
           In("a/a-incoming", "4"),
       {"a/a-incoming", "a/a2-low", "b/b2"},
       {"a/a1-low by a/a-incoming: InClusterQueue",
        "b/b1 by a/a-incoming: InCohortFairSharing"},
       {{"a/a1-low", ""}, {"b/b1", ""}}},
      // b1 fails the first strategy (b would drop to 0 share), b2 passes.
      {std::string(kFile) +
           "prefer to preempt workloads that don't make the target CQ have the "
           "biggest share",
       kCqs + Adm("b/b3", 0, "2") + Adm("b/b2", 0, "1") + Adm("b/b1", 0, "2") +
           Adm("c/c1", 0, "1") + In("a/a-incoming", "3500m"),
       {"a/a-incoming", "b/b1", "b/b3", "c/c1"},
       {"b/b2 by a/a-incoming: InCohortFairSharing"},
       {{"b/b2", ""}}},
      {std::string(kFile) +
           "preempt from different cluster queues if the end result has a "
           "smaller max share",
       kCqs + Adm("b/b2", 0, "2500m") + Adm("b/b1", 0, "2") +
           Adm("c/c2", 0, "2500m") + Adm("c/c1", 0, "2") +
           In("a/a-incoming", "3500m"),
       {"a/a-incoming", "b/b2", "c/c2"},
       {"b/b1 by a/a-incoming: InCohortFairSharing",
        "c/c1 by a/a-incoming: InCohortFairSharing"},
       {{"b/b1", ""}, {"c/c1", ""}}},
      {std::string(kFile) + "scenario above does not flap",
       kCqs + Adm("a/a1", 0, "3500m") + Adm("b/b2", 0, "2500m") +
           Adm("c/c2", 0, "2500m") + In("b/b-incoming", "2"),
       {"a/a1", "b/b2", "c/c2"},
       {},
       {{"b/b-incoming", ""}}},
      {std::string(kFile) +
           "cannot preempt if it would make the candidate CQ go under nominal "
           "after preempting one element",
       kCqs + Adm("b/b2", 0, "3") + Adm("b/b1", 0, "3") + Adm("c/c1", 0, "3") +
           In("a/a-incoming", "4"),
       {"b/b1", "b/b2", "c/c1"},
       {},
       {{"a/a-incoming", ""}}},
      // borrowWithinCohort (threshold -3) plays no part: one of the
      // preemptible workloads passes the first strategy but is not enough,
      // and nothing else passes; all is given back.
      {std::string(kFile) +
           "workloads under priority threshold not capriciously preempted",
       kCqs + Units("a", "a", 3) + Units("b", "b", 3) +
           Units("preemptible", "preemptible", 3, -3) +
           In("a/a-incoming", "2"),
       {"a/a1", "a/a2", "a/a3", "b/b1", "b/b2", "b/b3",
        "preemptible/preemptible1", "preemptible/preemptible2",
        "preemptible/preemptible3"},
       {},
       {{"a/a-incoming", ""}}},
      {std::string(kFile) + "preempt lower priority first, even if big",
       kPlain + Strategies("LessThanInitialShare") + Member("a") + Member("b") +
           Member("c") + Adm("a/a1", 0, "3") + Adm("b/b-low", 0, "5") +
           Adm("b/b-high", 1, "1") + In("a/a-incoming", "1"),
       {"a/a-incoming", "a/a1", "b/b-high"},
       {"b/b-low by a/a-incoming: InCohortFairSharing"},
       {{"b/b-low", ""}}},
      // One cycle in Kueue: b-high goes. Run on: b-high returns and, its
      // ClusterQueue having the higher share, preempts b (its own,
      // lower-priority) b-low, which then waits.
      {std::string(kFile) +
           "preempt workload that doesn't transfer the imbalance, even if high "
           "priority",
       kPlain + Strategies("LessThanOrEqualToFinalShare") + Member("a") +
           Member("b") + Member("c") + Adm("a/a1", 0, "3") +
           Adm("b/b-low", 0, "5") + Adm("b/b-high", 1, "1") +
           In("a/a-incoming", "1"),
       {"a/a-incoming", "a/a1", "b/b-high"},
       {"b/b-high by a/a-incoming: InCohortFairSharing",
        "b/b-low by b/b-high: InClusterQueue"},
       {{"b/b-low", ""}}},
      {std::string(kFile) + "CQ with higher weight can preempt more",
       kBase + Weighted("a", "2") + Weighted("b", "") + Weighted("c", "") +
           Units("a", "a", 3) + Units("b", "b", 6) + In("a/a-incoming", "2"),
       {"a/a-incoming", "a/a1", "a/a2", "a/a3", "b/b3", "b/b4", "b/b5",
        "b/b6"},
       {"b/b1 by a/a-incoming: InCohortFairSharing",
        "b/b2 by a/a-incoming: InCohortFairSharing"},
       {{"b/b1", ""}, {"b/b2", ""}}},
      // b's weight is 0: its share is infinite while it borrows. b3 (which
      // would bring b to its quota) passes only the second strategy.
      {std::string(kFile) + "can preempt anything borrowing from CQ with 0 weight",
       kBase + Weighted("a", "") + Weighted("b", "0") + Weighted("c", "") +
           Units("a", "a", 3) + Units("b", "b", 6) + In("a/a-incoming", "3"),
       {"a/a-incoming", "a/a1", "a/a2", "a/a3", "b/b4", "b/b5", "b/b6"},
       {"b/b1 by a/a-incoming: InCohortFairSharing",
        "b/b2 by a/a-incoming: InCohortFairSharing",
        "b/b3 by a/a-incoming: InCohortFairSharing"},
       {{"b/b1", ""}, {"b/b2", ""}, {"b/b3", ""}}},
      {std::string(kFile) + "can't preempt nominal from CQ with 0 weight",
       kBase + Weighted("a", "") + Weighted("b", "0") + Units("a", "a", 3) +
           Units("b", "b", 3) + In("a/a-incoming", "1"),
       {"a/a1", "a/a2", "a/a3", "b/b1", "b/b2", "b/b3"},
       {},
       {{"a/a-incoming", ""}}},
      {std::string(kFile) + "can preempt within cluster queue when no cohort",
       kBase +
           Cq("a").Group({Fq("default").R("cpu", "1")})
               .Preempt("LowerPriority", "") +
           Units("a", "a", 1) + In("a/a-incoming", "1", 1000),
       {"a/a-incoming"},
       {"a/a1 by a/a-incoming: InClusterQueue"},
       {{"a/a1", ""}}},
  };
}

KUEUE_CASES(KueueFairTest, Cases());

}  // namespace
}  // namespace allot::sched
