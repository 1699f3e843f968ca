// Kueue's fair-sharing cases over nested cohorts and with zero weights,
// translated from pkg/scheduler/preemption/preemption_fair_test.go
// (TestFairPreemptions) and pkg/scheduler/scheduler_fs_test.go
// (TestScheduleForFairSharing), and run to quiescence.
//
// The rules these cases exercise (Kueue's code, read; not copied):
//  - fairsharing.TargetClusterQueueOrdering.nextTarget: victims are sought
//    from the root down, at each cohort in the child (cohort or
//    ClusterQueue) with the highest share; a cohort that does not borrow
//    is pruned (its ClusterQueues are protected even when they borrow
//    inside it) unless the preemptor is below it;
//  - TargetClusterQueue.ComputeShares / getAlmostLCAs: the strategies
//    compare the shares of the preemptor's and the target's ancestors just
//    below their lowest common ancestor, not of the ClusterQueues;
//  - schdcache.CompareDRS and dominantResourceShare: a node with weight 0
//    that borrows has an infinite share; two such nodes compare by their
//    unweighted ratio; the ratio's denominator is what the parent could
//    lend (potentialAvailable), summed over flavors;
//  - fsStrategyUnsatisfiable: an infinite preemptor share against a finite
//    target share passes neither strategy;
//  - fairSharingIterator / entryComparer.less (scheduler): heads compete
//    in a tournament down the tree; at each cohort the child not borrowing
//    on the head's flavor-resources wins first
//    (FairSharingPrioritizeNonBorrowing), then the lower share after
//    admission, then priority, then age;
//  - flavorassigner.isPreferred: between flavors, the one borrowing less
//    deep in the tree wins when both fit.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sched/kueue_cases_util.h"

namespace allot::sched {
namespace {

using kueue_cases::Case;
using kueue_cases::Co;
using kueue_cases::Cq;
using kueue_cases::Fq;
using kueue_cases::Wl;

constexpr char kFair[] = "preemption_fair_test.go: ";
constexpr char kSched[] = "scheduler_fs_test.go: ";

const std::string kFs = kueue_cases::kFairSharing;

Fq Cpu(const std::string& n) { return Fq("default").R("cpu", n); }
Wl Adm(const std::string& key, int prio, const std::string& cpu,
       const std::string& flavor = "default") {
  return Wl(key).Priority(prio).Request("cpu", cpu).Admitted(
      key.substr(0, key.find('/')), flavor);
}
Wl In(const std::string& key, const std::string& cpu, int prio = 0) {
  return Wl(key).Priority(prio).Created(10).Request("cpu", cpu);
}
// Workloads <cq>/<cq>1..5 of one CPU, priorities 1..5, listed 5 first.
std::string FivePrios(const std::string& cq) {
  std::string out;
  for (int i = 5; i >= 1; --i) out += Adm(cq + "/" + cq + std::to_string(i), i, "1").Yaml();
  return out;
}
// Sets flavorFungibility.preference of ClusterQueue `cq` (the manifests
// cannot say it yet).
std::function<void(core::Config*)> Prefer(const std::string& cq,
                                          core::FungibilityPreference p) {
  return [cq, p](core::Config* c) {
    for (core::ClusterQueue& q : c->cluster_queues) {
      if (q.name == cq) q.flavor_fungibility.preference = p;
    }
  };
}

std::vector<Case> Cases() {
  const std::string base = kueue_cases::Base({"default"}) + kFs;
  const std::string two = kueue_cases::Base({"on-demand", "spot"}) + kFs;
  return {
      //      ROOT
      //     /    \_
      // left-cq  right-cohort(1, weight 0)
      //             |
      //          right-cq(weight 0)
      // right-cohort does not borrow: right-cq, borrowing inside it, is
      // protected.
      {std::string(kFair) + "can't preempt nominal from Cohort with 0 weight",
       base + Co("root") + Co("right-cohort").Parent("root").Weight("0")
                  .Group({Cpu("1")}) +
           Cq("left-cq").Cohort("root").Group({Cpu("0")}).Preempt("", "Any") +
           Cq("right-cq").Cohort("right-cohort").Group({Cpu("0")})
               .Preempt("", "Any").Weight("0") +
           Adm("right-cq/right-1", 0, "1") + In("left-cq/left-1", "1"),
       {"right-cq/right-1"},
       {},
       {{"left-cq/left-1", ""}}},
      //           ROOT(5)
      //      /      |      \_
      //   LEFT(5)  c(1)   RIGHT(5)
      //   /   \           /    \_
      // a(1)  b(1)      d(1)   e(1)
      // a and LEFT weigh 2, e 0.99. End state: the victims wait (their
      // ClusterQueues do not preempt).
      {std::string(kFair) + "hierarchical preemption",
       base + Co("root").Group({Cpu("5")}) +
           Co("left").Parent("root").Weight("2").Group({Cpu("5")}) +
           Co("right").Parent("root").Group({Cpu("5")}) +
           Cq("a").Cohort("left").Weight("2").Group({Cpu("1")})
               .Preempt("", "Any") +
           Cq("b").Cohort("left").Group({Cpu("1")}) +
           Cq("c").Cohort("root").Group({Cpu("1")}) +
           Cq("d").Cohort("right").Group({Cpu("1")}) +
           Cq("e").Cohort("right").Weight("0.99").Group({Cpu("1")}) +
           FivePrios("b") + FivePrios("c") + FivePrios("d") + FivePrios("e") +
           In("a/unit", "5"),
       {"a/unit", "b/b3", "b/b4", "b/b5", "c/c3", "c/c4", "c/c5", "d/d1",
        "d/d2", "d/d3", "d/d4", "d/d5", "e/e2", "e/e3", "e/e4", "e/e5"},
       {"b/b1 by a/unit: InCohortFairSharing",
        "b/b2 by a/unit: InCohortFairSharing",
        "c/c1 by a/unit: InCohortFairSharing",
        "c/c2 by a/unit: InCohortFairSharing",
        "e/e1 by a/unit: InCohortFairSharing"},
       {{"b/b1", ""}, {"b/b2", ""}, {"c/c1", ""}, {"c/c2", ""}, {"e/e1", ""}}},
      //      ROOT
      //     /    \_
      //  a(5)   RIGHT(1)
      //            \_
      //            b(0)
      // RIGHT does not borrow: b is protected although it borrows and
      // weighs 0.1 against a's 10; a preempts its own.
      {std::string(kFair) + "borrowing cq in non-borrowing cohort is protected",
       base + Co("root") +
           Co("right").Parent("root").Weight("0.1").Group({Cpu("1")}) +
           Cq("a").Cohort("root").Weight("10").Group({Cpu("5")})
               .Preempt("LowerPriority", "Any") +
           Cq("b").Cohort("right").Weight("0.1").Group({Cpu("0")}) +
           Adm("a/a3", -1, "1") + Adm("a/a2", -1, "1") + Adm("a/a1", -1, "1") +
           Adm("b/b1", -1, "1") + In("a/unit", "5"),
       {"a/unit", "b/b1"},
       {"a/a1 by a/unit: InClusterQueue", "a/a2 by a/unit: InClusterQueue",
        "a/a3 by a/unit: InClusterQueue"},
       {{"a/a1", ""}, {"a/a2", ""}, {"a/a3", ""}}},
      // b1's priority is above the preemptor's (reclaim LowerPriority).
      {std::string(kFair) +
           "forced to preempt within clusterqueue because borrowing workload "
           "too important",
       base + Co("root") +
           Co("right").Parent("root").Weight("0.1").Group({Cpu("3")}) +
           Cq("a").Cohort("root").Weight("10").Group({Cpu("5")})
               .Preempt("LowerPriority", "LowerPriority") +
           Cq("b").Cohort("right").Weight("0.1").Group({Cpu("0")}) +
           Adm("a/a3", -1, "1") + Adm("a/a2", -1, "1") + Adm("a/a1", -1, "1") +
           Adm("b/b1", 100, "4") + In("a/unit", "4"),
       {"a/unit", "b/b1"},
       {"a/a1 by a/unit: InClusterQueue", "a/a2 by a/unit: InClusterQueue",
        "a/a3 by a/unit: InClusterQueue"},
       {{"a/a1", ""}, {"a/a2", ""}, {"a/a3", ""}}},
      //         ROOT
      //      /   |    \_
      //     A    B     C
      //     |    |     |
      //    AA   BB    CC
      //     |    |     |
      //   AAA  BBB   CCC
      //     |    |     |
      //     a    b   CCCC(1)
      // The strategies compare A (weight 1.01) with B (0.99), the children
      // of the common ancestor. End state: b1 waits (b does not preempt).
      {std::string(kFair) + "deep preemption",
       base + Co("root") + Co("aa1").Parent("root").Weight("1.01") +
           Co("aa2").Parent("aa1") + Co("aa3").Parent("aa2") +
           Co("bb1").Parent("root").Weight("0.99") + Co("bb2").Parent("bb1") +
           Co("bb3").Parent("bb2") + Co("cc1").Parent("root") +
           Co("cc2").Parent("cc1") + Co("cc3").Parent("cc2") +
           Co("cc4").Parent("cc3").Group({Cpu("1")}) +
           Cq("a").Cohort("aa3").Group({Cpu("0")}).Preempt("", "Any") +
           Cq("b").Cohort("bb3").Group({Cpu("0")}) + Adm("b/b1", 0, "1") +
           In("a/a1", "1"),
       {"a/a1"},
       {"b/b1 by a/a1: InCohortFairSharing"},
       {{"b/b1", ""}}},
      // a weighs 0 but stays within its nominal quota: reclamation.
      {std::string(kFair) + "cq with zero weight can reclaim nominal quota",
       base + Co("root") +
           Cq("a").Cohort("root").Weight("0").Group({Cpu("1")})
               .Preempt("", "Any") +
           Cq("b").Cohort("root").Weight("1").Group({Cpu("0")}) +
           Adm("b/b1", 0, "1") + In("a/a1", "1"),
       {"a/a1"},
       {"b/b1 by a/a1: InCohortReclamation"},
       {{"b/b1", ""}}},
      // a is above its own quota (0) but its cohort A (weight 0) is not
      // borrowing: A's share is 0, not infinite, against b's.
      {std::string(kFair) + "cohort with zero weight can reclaim nominal quota",
       base + Co("root") + Co("aa").Parent("root").Weight("0").Group({Cpu("1")}) +
           Cq("a").Cohort("aa").Weight("0").Group({Cpu("0")})
               .Preempt("", "Any") +
           Cq("b").Cohort("root").Weight("1").Group({Cpu("0")}) +
           Adm("b/b1", 0, "1") + In("a/a1", "1"),
       {"a/a1"},
       {"b/b1 by a/a1: InCohortFairSharing"},
       {{"b/b1", ""}}},
      // a borrows 5 cheap CPUs (a high share) but stays within its premium
      // quota, where preemption is needed: b's premium workload goes.
      // End state: b_prem1 fits b's own cheap quota and is admitted there.
      {std::string(kFair) +
           "nominal first: workload fitting within nominal can preempt despite "
           "high aggregate DRS",
       kueue_cases::Base({"premium", "cheap"}) + kFs +
           Cq("a").Cohort("all")
               .Group({Fq("premium").R("cpu", "3"), Fq("cheap").R("cpu", "0")})
               .Preempt("", "Any")
               .Fungibility(
                   "{whenCanBorrow: MayStopSearch, whenCanPreempt: MayStopSearch}") +
           Cq("b").Cohort("all").Group(
               {Fq("premium").R("cpu", "0"), Fq("cheap").R("cpu", "6")}) +
           Adm("a/a-prem1", 0, "1", "premium") +
           Adm("a/a-prem2", 0, "1", "premium") +
           Adm("a/a-cheap1", 0, "1", "cheap") +
           Adm("a/a-cheap2", 0, "1", "cheap") +
           Adm("a/a-cheap3", 0, "1", "cheap") +
           Adm("a/a-cheap4", 0, "1", "cheap") +
           Adm("a/a-cheap5", 0, "1", "cheap") +
           Adm("b/b-prem1", 0, "1", "premium") + In("a/a-incoming", "1"),
       {"a/a-cheap1", "a/a-cheap2", "a/a-cheap3", "a/a-cheap4", "a/a-cheap5",
        "a/a-incoming", "a/a-prem1", "a/a-prem2", "b/b-prem1"},
       {"b/b-prem1 by a/a-incoming: InCohortReclamation"},
       {},
       {{"a/a-incoming", "premium"}, {"b/b-prem1", "cheap"}}},
      // Kueue's case admits 3 CPUs on a cohort of 2; here the cohort holds
      // 1 of its own so that nothing is over quota: a (weight 0) borrows
      // after admission, so its share is infinite against b's finite one.
      {std::string(kFair) +
           "zero weight borrowing preemptor cannot preempt from a borrowing CQ "
           "with a non-zero weight",
       base + Co("all").Group({Cpu("1")}) +
           Cq("a").Cohort("all").Weight("0").Group({Cpu("1")})
               .Preempt("", "Any") +
           Cq("b").Cohort("all").Weight("1").Group({Cpu("1")}) +
           Adm("a/a1", 0, "1") + Adm("b/b2", 0, "1") + Adm("b/b1", 0, "1") +
           In("a/a-incoming", "1"),
       {"a/a1", "b/b1", "b/b2"},
       {},
       {{"a/a-incoming", ""}}},
      // Both weigh 0 and borrow: compared by their unweighted ratios.
      {std::string(kFair) +
           "zero weight borrowing preemptor can preempt from a borrowing CQ "
           "which also has zero weight",
       base + Co("all").Group({Cpu("3")}) +
           Cq("a").Cohort("all").Weight("0").Group({Cpu("1")})
               .Preempt("", "Any") +
           Cq("b").Cohort("all").Weight("0").Group({Cpu("0")}) +
           Adm("b/b3", 0, "1") + Adm("b/b2", 0, "1") + Adm("b/b1", 0, "1") +
           In("a/a-incoming", "2"),
       {"a/a-incoming", "b/b2", "b/b3"},
       {"b/b1 by a/a-incoming: InCohortFairSharing"},
       {{"b/b1", ""}}},
      {std::string(kFair) +
           "non-zero weight borrowing preemptor preempts from a borrowing CQ",
       base + Co("all").Group({Cpu("3")}) +
           Cq("a").Cohort("all").Weight("1").Group({Cpu("1")})
               .Preempt("", "Any") +
           Cq("b").Cohort("all").Weight("1").Group({Cpu("0")}) +
           Adm("b/b3", 0, "1") + Adm("b/b2", 0, "1") + Adm("b/b1", 0, "1") +
           In("a/a-incoming", "2"),
       {"a/a-incoming", "b/b2", "b/b3"},
       {"b/b1 by a/a-incoming: InCohortFairSharing"},
       {{"b/b1", ""}}},
      // b0 holds 4 of A's 8; b1 (priority 9001) and c1 wait. Both
      // ClusterQueues weigh 0 and would borrow: c1 borrows less (4 of 8
      // against 8 of 8), so it goes first whatever the priorities. End
      // state: b1 waits (no victim: c's share is lower).
      {std::string(kSched) +
           "fair sharing two queues with weight 0 schedules workload which "
           "borrows less",
       two + Co("aa").Group({Fq("on-demand").R("cpu", "8")}) +
           Cq("b").Cohort("aa").Weight("0").Group({Fq("on-demand").R("cpu", "0")})
               .Preempt("Never", "Any") +
           Cq("c").Cohort("aa").Weight("0").Group({Fq("on-demand").R("cpu", "0")})
               .Preempt("Never", "Any") +
           Adm("b/b0", 0, "4", "on-demand") + In("b/b1", "4", 9001) +
           In("c/c1", "4"),
       {"b/b0", "c/c1"},
       {},
       {{"b/b1", ""}}},
      {std::string(kSched) +
           "fair sharing two queues with high weight schedules workload which "
           "borrows less",
       two + Co("aa").Group({Fq("on-demand").R("cpu", "8")}) +
           Cq("b").Cohort("aa").Weight("123456789")
               .Group({Fq("on-demand").R("cpu", "0")})
               .Preempt("Never", "Any") +
           Cq("c").Cohort("aa").Weight("123456789")
               .Group({Fq("on-demand").R("cpu", "0")})
               .Preempt("Never", "Any") +
           Adm("b/b0", 0, "4", "on-demand") + In("b/b1", "4", 9001) +
           In("c/c1", "4"),
       {"b/b0", "c/c1"},
       {},
       {{"b/b1", ""}}},
      // on-demand fits only by borrowing from root-cohort (2 levels up),
      // spot from child-cohort (1 level): spot wins.
      {std::string(kSched) + "prefer flavor with most local capacity",
       kueue_cases::Base({"on-demand", "spot"}) + kFs +
           Co("root-cohort").Group({Fq("on-demand").R("nvidia.com/gpu", "2"),
                                    Fq("spot").R("nvidia.com/gpu", "0")}) +
           Co("child-cohort").Parent("root-cohort")
               .Group({Fq("on-demand").R("nvidia.com/gpu", "5"),
                       Fq("spot").R("nvidia.com/gpu", "7")}) +
           Cq("queue1").Cohort("child-cohort")
               .Group({Fq("on-demand").R("nvidia.com/gpu", "3"),
                       Fq("spot").R("nvidia.com/gpu", "3")})
               .Preempt("LowerPriority", "Any")
               .Fungibility(
                   "{whenCanBorrow: TryNextFlavor, whenCanPreempt: TryNextFlavor}") +
           Wl("queue1/a1").Request("nvidia.com/gpu", "8")
               .Admitted("queue1", "on-demand") +
           Wl("queue1/a2").Request("nvidia.com/gpu", "3")
               .Admitted("queue1", "spot") +
           Wl("queue1/a3").Created(10).Request("nvidia.com/gpu", "1"),
       {"queue1/a1", "queue1/a2", "queue1/a3"},
       {},
       {},
       {{"queue1/a3", "spot"}}},
      // on-demand needs priority preemption in other-alpha, spot reclaims
      // from other-beta (fair sharing lets a borrowing preemptor reclaim):
      // spot. End state: b1 fits on-demand by borrowing and is admitted.
      {std::string(kSched) +
           "with fair sharing: prefer reclamation over cq priority based "
           "preemption; with preemption while borrowing",
       two +
           Cq("other-alpha").Cohort("other")
               .Group({Fq("on-demand").R("nvidia.com/gpu", "7"),
                       Fq("spot").R("nvidia.com/gpu", "7")})
               .Preempt("LowerPriority", "LowerPriority") +
           Cq("other-beta").Cohort("other")
               .Group({Fq("on-demand").R("nvidia.com/gpu", "3"),
                       Fq("spot").R("nvidia.com/gpu", "3")}) +
           Wl("other-alpha/a1").Priority(50).Request("nvidia.com/gpu", "5")
               .Admitted("other-alpha", "on-demand") +
           Wl("other-beta/b1").Priority(50).Request("nvidia.com/gpu", "5")
               .Admitted("other-beta", "spot") +
           Wl("other-alpha/preemptor").Priority(100).Created(10)
               .Request("nvidia.com/gpu", "8"),
       {"other-alpha/a1", "other-alpha/preemptor", "other-beta/b1"},
       {"other-beta/b1 by other-alpha/preemptor: InCohortFairSharing"},
       {},
       {{"other-alpha/preemptor", "spot"}, {"other-beta/b1", "on-demand"}}},
      // PreemptionOverBorrowing: preempting on on-demand (no borrowing)
      // beats fitting on spot by borrowing. End state: the victim has no
      // victim on on-demand and fits spot by borrowing.
      {std::string(kSched) +
           "PreemptionOverBorrowing with fair sharing: preempt in first flavor "
           "instead of borrowing in second",
       two +
           Cq("fs-pob-cq").Cohort("fs-pob-cohort").Weight("1")
               .Group({Fq("on-demand").R("cpu", "5", "0"),
                       Fq("spot").R("cpu", "0", "5")})
               .Preempt("LowerPriority", "")
               .Fungibility(
                   "{whenCanBorrow: TryNextFlavor, whenCanPreempt: TryNextFlavor}") +
           Cq("fs-pob-lender").Cohort("fs-pob-cohort").Weight("1")
               .Group({Fq("on-demand").R("cpu", "0"), Fq("spot").R("cpu", "5")}) +
           Adm("fs-pob-cq/fs-low-pob", -1, "5", "on-demand") +
           In("fs-pob-cq/fs-high-pob", "5"),
       {"fs-pob-cq/fs-high-pob", "fs-pob-cq/fs-low-pob"},
       {"fs-pob-cq/fs-low-pob by fs-pob-cq/fs-high-pob: InClusterQueue"},
       {},
       {{"fs-pob-cq/fs-high-pob", "on-demand"},
        {"fs-pob-cq/fs-low-pob", "spot"}},
       Prefer("fs-pob-cq", core::FungibilityPreference::kPreemptionOverBorrowing)},
  };
}

KUEUE_CASES(KueueFairHierarchyTest, Cases());

}  // namespace
}  // namespace allot::sched
