// Kueue's classical preemption cases, translated from
// pkg/scheduler/preemption/preemption_test.go (TestPreemption), and run to
// quiescence: within a ClusterQueue, reclaiming in a flat cohort, lending
// limits, the minimal set. The borrowWithinCohort cases are in
// kueue_borrow_within_cohort_test.cc.
//
// The rules these cases exercise (Kueue's code, read; not copied):
//  - Preemptor.classicalPreemptions: the pass that may not borrow is tried
//    only when the ClusterQueue is under its nominal quota in every
//    flavor-resource that needs preemption
//    (queueUnderNominalInResourcesNeedingPreemption); otherwise only its own
//    workloads and hierarchy candidates can make room, so nobody else is
//    evicted for a workload that would borrow anyway (no over-preemption);
//  - classical.collectCandidatesForHierarchicalReclaim: in a flat cohort a
//    request that fits the ClusterQueue's own nominal quota has the
//    advantage over every ClusterQueue borrowing there (taken in the pass
//    that may borrow, InCohortReclamation); others are candidates only in
//    the pass without borrowing;
//  - fillBackWorkloads: victims not needed are given back, last first;
//  - common.CandidatesOrdering: other ClusterQueues first, lower priority
//    first, most recently admitted first (here: later in the file);
//  - flavorassigner.fitsResourceQuota: a request above nominal quota does
//    not preempt without borrowWithinCohort or a hierarchy advantage.
// Kueue's unit tests give GetTargets a Preempt assignment; here the flavor
// assigner decides, so where the workload fits (Kueue's flavor assigner
// would say Fit) it is admitted without preemption, as each case says.
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

constexpr char kFile[] = "preemption_test.go: ";

const std::string kBase = kueue_cases::Base({"default", "alpha", "beta"});

// A workload admitted in ClusterQueue `cq` (from its key) on `flavor`.
Wl Adm(const std::string& key, int prio, const std::string& res,
       const std::string& q, const std::string& flavor = "default") {
  return Wl(key).Priority(prio).Request(res, q).Admitted(
      key.substr(0, key.find('/')), flavor);
}
Wl Cpu(const std::string& key, int prio, const std::string& cpu) {
  return Adm(key, prio, "cpu", cpu);
}
Wl In(const std::string& cq, int prio) {
  return Wl(cq + "/in").Priority(prio).Created(10);
}

// Kueue's defaultClusterQueues, one cohort at a time.
const std::string kStandalone =
    Cq("standalone")
        .Group({Fq("default").R("cpu", "6")})
        .Group({Fq("alpha").R("memory", "3Gi"), Fq("beta").R("memory", "3Gi")})
        .Preempt("LowerPriority", "");
const std::string kCohort =
    Cq("c1").Cohort("cohort")
        .Group({Fq("default").R("cpu", "6", "6").R("memory", "3Gi", "3Gi")})
        .Preempt("LowerPriority", "LowerPriority") +
    Cq("c2").Cohort("cohort")
        .Group({Fq("default").R("cpu", "6", "6").R("memory", "3Gi", "3Gi")})
        .Preempt("Never", "Any");
const std::string kNoLimits =
    Cq("d1").Cohort("cohort-no-limits")
        .Group({Fq("default").R("cpu", "6").R("memory", "3Gi")})
        .Preempt("LowerPriority", "LowerPriority") +
    Cq("d2").Cohort("cohort-no-limits")
        .Group({Fq("default").R("cpu", "6").R("memory", "3Gi")})
        .Preempt("Never", "Any");
const std::string kLegion =
    Cq("l1").Cohort("legion")
        .Group({Fq("default").R("cpu", "6", "12").R("memory", "3Gi", "6Gi")})
        .Preempt("LowerPriority", "LowerPriority");
const std::string kStarvation = Cq("prevent-starvation")
                                    .Group({Fq("default").R("cpu", "6")})
                                    .Preempt("LowerOrNewerEqualPriority", "");
const std::string kLend =
    Cq("lend1").Cohort("cohort-lend")
        .Group({Fq("default").R("cpu", "6", "", "4")})
        .Preempt("LowerPriority", "LowerPriority") +
    Cq("lend2").Cohort("cohort-lend")
        .Group({Fq("default").R("cpu", "6", "", "2")})
        .Preempt("LowerPriority", "LowerPriority");
const std::string kThree =
    Cq("a").Cohort("cohort-three")
        .Group({Fq("default").R("cpu", "2").R("memory", "2")})
        .Preempt("LowerPriority", "Any") +
    Cq("b").Cohort("cohort-three")
        .Group({Fq("default").R("cpu", "2").R("memory", "2")}) +
    Cq("c").Cohort("cohort-three")
        .Group({Fq("default").R("cpu", "2").R("memory", "2")});

std::vector<Case> Cases() {
  const std::string s = kBase + kStandalone;
  const std::string co = kBase + kCohort;
  const std::string three = kBase + kThree;
  // Six workloads of one CPU in a and b of cohort-three, a's at -2, -2, -1.
  const std::string three_full =
      three + Cpu("a/a1", -2, "1") + Cpu("a/a2", -2, "1") +
      Cpu("a/a3", -1, "1") + Cpu("b/b1", 0, "1") + Cpu("b/b2", 0, "1") +
      Cpu("b/b3", 0, "1");
  return {
      // End state (here and below): a victim with nothing below its own
      // priority to preempt waits.
      {std::string(kFile) + "preempt lowest priority",
       s + Cpu("standalone/low", -1, "2") + Cpu("standalone/mid", 0, "2") +
           Cpu("standalone/high", 1, "2") +
           In("standalone", 1).Request("cpu", "2"),
       {"standalone/high", "standalone/in", "standalone/mid"},
       {"standalone/low by standalone/in: InClusterQueue"},
       {{"standalone/low", ""}}},
      {std::string(kFile) + "preempt multiple",
       s + Cpu("standalone/low", -1, "2") + Cpu("standalone/mid", 0, "2") +
           Cpu("standalone/high", 1, "2") +
           In("standalone", 1).Request("cpu", "3"),
       {"standalone/high", "standalone/in"},
       {"standalone/low by standalone/in: InClusterQueue",
        "standalone/mid by standalone/in: InClusterQueue"},
       {{"standalone/low", ""}, {"standalone/mid", ""}}},
      {std::string(kFile) + "no preemption for low priority",
       s + Cpu("standalone/low", -1, "3") + Cpu("standalone/mid", 0, "3") +
           In("standalone", -1).Request("cpu", "1"),
       {"standalone/low", "standalone/mid"},
       {},
       {{"standalone/in", ""}}},
      {std::string(kFile) + "not enough low priority workloads",
       s + Cpu("standalone/low", -1, "3") + Cpu("standalone/mid", 0, "3") +
           In("standalone", 0).Request("cpu", "4"),
       {"standalone/low", "standalone/mid"},
       {},
       {{"standalone/in", ""}}},
      {std::string(kFile) + "some free quota, preempt low priority",
       s + Cpu("standalone/low", -1, "1") + Cpu("standalone/mid", 0, "1") +
           Cpu("standalone/high", 1, "3") +
           In("standalone", 1).Request("cpu", "2"),
       {"standalone/high", "standalone/in", "standalone/mid"},
       {"standalone/low by standalone/in: InClusterQueue"},
       {{"standalone/low", ""}}},
      // low is taken first, then mid; low is given back (fill-back).
      {std::string(kFile) + "minimal set excludes low priority",
       s + Cpu("standalone/low", -1, "1") + Cpu("standalone/mid", 0, "2") +
           Cpu("standalone/high", 1, "3") +
           In("standalone", 1).Request("cpu", "2"),
       {"standalone/high", "standalone/in", "standalone/low"},
       {"standalone/mid by standalone/in: InClusterQueue"},
       {{"standalone/mid", ""}}},
      // Kueue's unit test assigns memory on beta. Here the flavor assigner
      // chooses, and with alpha first it would pick alpha (both need
      // preemption, neither borrows: the first wins); the flavors are
      // listed beta, alpha so that beta is chosen, and only beta's
      // workloads are candidates: mid, not the lower-priority low. End
      // state: mid fits alpha's last free 1Gi.
      {std::string(kFile) + "only preempt workloads using the chosen flavor",
       kBase +
           Cq("standalone")
               .Group({Fq("default").R("cpu", "6")})
               .Group({Fq("beta").R("memory", "3Gi"),
                       Fq("alpha").R("memory", "3Gi")})
               .Preempt("LowerPriority", "") +
           Adm("standalone/low", -1, "memory", "2Gi", "alpha") +
           Adm("standalone/mid", 0, "memory", "1Gi", "beta") +
           Adm("standalone/high", 1, "memory", "1Gi", "beta") +
           In("standalone", 1).Request("cpu", "1").Request("memory", "2Gi"),
       {"standalone/high", "standalone/in", "standalone/low", "standalone/mid"},
       {"standalone/mid by standalone/in: InClusterQueue"}},
      // c1-low is spared: the request fits c1's nominal quota, so c2's
      // borrowed quota is reclaimed first. End state: c2-mid waits (c2 is
      // at its quota; c1 does not borrow).
      {std::string(kFile) + "reclaim quota from borrower",
       co + Cpu("c1/c1-low", -1, "3") + Cpu("c2/c2-mid", 0, "3") +
           Cpu("c2/c2-high", 1, "6") + In("c1", 1).Request("cpu", "3"),
       {"c1/c1-low", "c1/in", "c2/c2-high"},
       {"c2/c2-mid by c1/in: InCohortReclamation"},
       {{"c2/c2-mid", ""}}},
      {std::string(kFile) +
           "reclaim quota if workload requests 0 resources for a resource at "
           "nominal quota",
       co +
           Wl("c1/c1-low").Priority(-1).Request("cpu", "3")
               .Request("memory", "3Gi")
               .Admitted("c1", "default") +
           Cpu("c2/c2-mid", 0, "3") + Cpu("c2/c2-high", 1, "6") +
           In("c1", 1).Request("cpu", "3").Request("memory", "0"),
       {"c1/c1-low", "c1/in", "c2/c2-high"},
       {"c2/c2-mid by c1/in: InCohortReclamation"},
       {{"c2/c2-mid", ""}}},
      // Kueue's unit test forces a Preempt assignment and finds no target;
      // here 4 of the cohort's 12 CPUs are free, so the flavor assigner
      // says Fit and c1 borrows them without preempting.
      {std::string(kFile) + "no workloads borrowing",
       co + Cpu("c1/c1-high", 1, "4") + Cpu("c2/c2-low-1", -1, "4") +
           In("c1", 1).Request("cpu", "4"),
       {"c1/c1-high", "c1/in", "c2/c2-low-1"},
       {}},
      // c1 would borrow 2 after admission: the pass without borrowing runs
      // (c1 is under nominal) but stops once c2 is back within its quota.
      {std::string(kFile) + "not enough workloads borrowing",
       co + Cpu("c1/c1-high", 1, "4") + Cpu("c2/c2-low-1", -1, "4") +
           Cpu("c2/c2-low-2", -1, "4") + In("c1", 1).Request("cpu", "4"),
       {"c1/c1-high", "c2/c2-low-1", "c2/c2-low-2"},
       {},
       {{"c1/in", ""}}},
      // Memory fits only by borrowing, so the pass without borrowing fails
      // and c2's lower-priority workload (no advantage) is not taken.
      {std::string(kFile) +
           "preempting locally and borrowing other resources in cohort, "
           "without cohort candidates",
       co + Cpu("c1/c1-low", -1, "4") + Cpu("c2/c2-low-1", -1, "4") +
           Cpu("c2/c2-high-2", 1, "4") +
           In("c1", 1).Request("cpu", "4").Request("memory", "5Gi"),
       {"c1/in", "c2/c2-high-2", "c2/c2-low-1"},
       {"c1/c1-low by c1/in: InClusterQueue"},
       {{"c1/c1-low", ""}}},
      {std::string(kFile) +
           "preempting locally and borrowing same resource in cohort",
       co + Cpu("c1/c1-med", 0, "4") + Cpu("c1/c1-low", -1, "4") +
           Cpu("c2/c2-low-1", -1, "4") + In("c1", 1).Request("cpu", "4"),
       {"c1/c1-med", "c1/in", "c2/c2-low-1"},
       {"c1/c1-low by c1/in: InClusterQueue"},
       {{"c1/c1-low", ""}}},
      {std::string(kFile) +
           "preempting locally and borrowing same resource in cohort; no "
           "borrowing limit in the cohort",
       kBase + kNoLimits + Cpu("d1/d1-med", 0, "4") +
           Cpu("d1/d1-low", -1, "4") + Cpu("d2/d2-low-1", -1, "4") +
           In("d1", 1).Request("cpu", "4"),
       {"d1/d1-med", "d1/in", "d2/d2-low-1"},
       {"d1/d1-low by d1/in: InClusterQueue"},
       {{"d1/d1-low", ""}}},
      // One cycle in Kueue: c1-med is the victim. Run on: c1-med returns
      // and now fits c1's nominal quota (2 + 4 of 6), so it reclaims from
      // c2, which borrows: the most recently admitted of c2's equal
      // priority workloads, c2-low-3, frees enough.
      {std::string(kFile) +
           "preempting locally and borrowing other resources in cohort, with "
           "cohort candidates",
       co + Cpu("c1/c1-med", 0, "4") + Cpu("c2/c2-low-1", -1, "5") +
           Cpu("c2/c2-low-2", -1, "1") + Cpu("c2/c2-low-3", -1, "1") +
           In("c1", 1).Request("cpu", "2").Request("memory", "5Gi"),
       {"c1/c1-med", "c1/in", "c2/c2-low-1", "c2/c2-low-2"},
       {"c1/c1-med by c1/in: InClusterQueue",
        "c2/c2-low-3 by c1/c1-med: InCohortReclamation"},
       {{"c2/c2-low-3", ""}}},
      // Alone in its cohort: only its own workloads; low is given back.
      {std::string(kFile) +
           "preempting locally and not borrowing same resource in 1-queue "
           "cohort",
       kBase + kLegion + Cpu("l1/l1-med", 0, "4") + Cpu("l1/l1-low", -1, "2") +
           In("l1", 1).Request("cpu", "4"),
       {"l1/in", "l1/l1-low"},
       {"l1/l1-med by l1/in: InClusterQueue"},
       {{"l1/l1-med", ""}}},
      {std::string(kFile) +
           "do not reclaim borrowed quota from same priority for "
           "withinCohort=ReclaimFromLowerPriority",
       co + Cpu("c1/c1", 0, "2") + Cpu("c2/c2-1", 0, "4") +
           Cpu("c2/c2-2", 0, "4") + In("c1", 0).Request("cpu", "4"),
       {"c1/c1", "c2/c2-1", "c2/c2-2"},
       {},
       {{"c1/in", ""}}},
      {std::string(kFile) +
           "reclaim borrowed quota from same priority for "
           "withinCohort=ReclaimFromAny",
       co + Cpu("c1/c1-1", 0, "4") + Cpu("c1/c1-2", 1, "4") +
           Cpu("c2/c2", 0, "2") + In("c2", 0).Request("cpu", "4"),
       {"c1/c1-2", "c2/c2", "c2/in"},
       {"c1/c1-1 by c2/in: InCohortReclamation"},
       {{"c1/c1-1", ""}}},
      // c1 is under nominal: the pass without borrowing takes c2-low (c2
      // borrows) and c1-low, and needs both.
      {std::string(kFile) + "preempt from all ClusterQueues in cohort",
       co + Cpu("c1/c1-low", -1, "3") + Cpu("c1/c1-mid", 0, "2") +
           Cpu("c2/c2-low", -1, "3") + Cpu("c2/c2-mid", 0, "4") +
           In("c1", 0).Request("cpu", "4"),
       {"c1/c1-mid", "c1/in", "c2/c2-mid"},
       {"c1/c1-low by c1/in: InClusterQueue",
        "c2/c2-low by c1/in: InCohortReclamation"},
       {{"c1/c1-low", ""}, {"c2/c2-low", ""}}},
      // Kueue's unit test forces Preempt; here 3 + 4 CPUs of c2's 6 plus
      // the cohort's free ones fit by borrowing: admitted, nobody evicted.
      {std::string(kFile) +
           "can't preempt workloads in ClusterQueue for "
           "withinClusterQueue=Never",
       co + Cpu("c2/c2-low", -1, "3") + In("c2", 1).Request("cpu", "4"),
       {"c2/c2-low", "c2/in"},
       {}},
      // The launcher goes to alpha, the workers (alpha being full after the
      // launcher) to beta; each flavor frees its own.
      {std::string(kFile) + "each podset preempts a different flavor",
       s + Adm("standalone/low-alpha", -1, "memory", "2Gi", "alpha") +
           Adm("standalone/low-beta", -1, "memory", "2Gi", "beta") +
           Wl("standalone/in").Created(10).Request("memory", "2Gi")
               .PodSet("workers").Count(2).Request("memory", "1Gi"),
       {"standalone/in"},
       {"standalone/low-alpha by standalone/in: InClusterQueue",
        "standalone/low-beta by standalone/in: InClusterQueue"},
       {{"standalone/low-alpha", ""}, {"standalone/low-beta", ""}}},
      // Equal priority, created later than the preemptor: wl2 and wl3 both
      // qualify; wl2 was admitted last (later in the file), so it goes.
      {std::string(kFile) + "preempt newer workloads with the same priority",
       kBase + kStarvation + Cpu("prevent-starvation/wl1", 2, "2") +
           Wl("prevent-starvation/wl3").Priority(1).Created(15)
               .Request("cpu", "2")
               .Admitted("prevent-starvation", "default") +
           Wl("prevent-starvation/wl2").Priority(1).Created(15)
               .Request("cpu", "2")
               .Admitted("prevent-starvation", "default") +
           Wl("prevent-starvation/in").Priority(1).Created(0).Request("cpu",
                                                                      "2"),
       {"prevent-starvation/in", "prevent-starvation/wl1",
        "prevent-starvation/wl3"},
       {"prevent-starvation/wl2 by prevent-starvation/in: InClusterQueue"},
       {{"prevent-starvation/wl2", ""}}},
      // lend1 keeps 2 of its 6 CPUs (lendingLimit 4); lend2 keeps 4. The
      // request fits lend1's nominal quota: lend2's borrowed quota is
      // reclaimed.
      {std::string(kFile) + "reclaim quota from lender",
       kBase + kLend + Cpu("lend1/lend1-low", -1, "3") +
           Cpu("lend2/lend2-mid", 0, "3") + Cpu("lend2/lend2-high", 1, "4") +
           In("lend1", 1).Request("cpu", "3"),
       {"lend1/in", "lend1/lend1-low", "lend2/lend2-high"},
       {"lend2/lend2-mid by lend1/in: InCohortReclamation"},
       {{"lend2/lend2-mid", ""}}},
      {std::string(kFile) + "preempt from all ClusterQueues in cohort-lend",
       kBase + kLend + Cpu("lend1/lend1-low", -1, "3") +
           Cpu("lend1/lend1-mid", 0, "2") + Cpu("lend2/lend2-low", -1, "3") +
           Cpu("lend2/lend2-mid", 0, "4") + In("lend1", 0).Request("cpu", "4"),
       {"lend1/in", "lend1/lend1-mid", "lend2/lend2-mid"},
       {"lend1/lend1-low by lend1/in: InClusterQueue",
        "lend2/lend2-low by lend1/in: InCohortReclamation"},
       {{"lend1/lend1-low", ""}, {"lend2/lend2-low", ""}}},
      // 9 CPUs exceed what lend1 can ever hold (its 2 kept plus the
      // cohort's 6): NoFit, nobody evicted.
      {std::string(kFile) +
           "cannot preempt from other ClusterQueues if exceeds requestable "
           "quota including lending limit",
       kBase + kLend + Cpu("lend2/lend2-low", -1, "10") +
           In("lend1", 0).Request("cpu", "9"),
       {"lend2/lend2-low"},
       {},
       {{"lend1/in", "more than it can ever hold"}}},
      // a is at its nominal quota (3 of 2): only its own workloads may make
      // room; b's (borrowing) are left alone: no over-preemption.
      {std::string(kFile) +
           "preemptions from cq when target queue is exhausted for the single "
           "requested resource",
       three_full + In("a", 0).Request("cpu", "2"),
       {"a/a3", "a/in", "b/b1", "b/b2", "b/b3"},
       {"a/a1 by a/in: InClusterQueue", "a/a2 by a/in: InClusterQueue"},
       {{"a/a1", ""}, {"a/a2", ""}}},
      {std::string(kFile) +
           "preemptions from cq when target queue is exhausted for two "
           "requested resources",
       three +
           Wl("a/a1").Priority(-2).Request("cpu", "1").Request("memory", "1")
               .Admitted("a", "default") +
           Wl("a/a2").Priority(-2).Request("cpu", "1").Request("memory", "1")
               .Admitted("a", "default") +
           Wl("a/a3").Priority(-1).Request("cpu", "1").Request("memory", "1")
               .Admitted("a", "default") +
           Wl("b/b1").Request("cpu", "1").Request("memory", "1")
               .Admitted("b", "default") +
           Wl("b/b2").Request("cpu", "1").Request("memory", "1")
               .Admitted("b", "default") +
           Wl("b/b3").Request("cpu", "1").Request("memory", "1")
               .Admitted("b", "default") +
           In("a", 0).Request("cpu", "2").Request("memory", "2"),
       {"a/a3", "a/in", "b/b1", "b/b2", "b/b3"},
       {"a/a1 by a/in: InClusterQueue", "a/a2 by a/in: InClusterQueue"},
       {{"a/a1", ""}, {"a/a2", ""}}},
      {std::string(kFile) +
           "preemptions from cq when target queue is exhausted for one "
           "requested resource, but not the other",
       three_full + In("a", 0).Request("cpu", "2").Request("memory", "2"),
       {"a/a3", "a/in", "b/b1", "b/b2", "b/b3"},
       {"a/a1 by a/in: InClusterQueue", "a/a2 by a/in: InClusterQueue"},
       {{"a/a1", ""}, {"a/a2", ""}}},
      // a is under nominal (1 of 2): the pass without borrowing takes b5,
      // then b's others while b borrows, then a1; fill-back returns all of
      // b's but b5.
      {std::string(kFile) +
           "allow preemption from other cluster queues if target cq is not "
           "exhausted for the requested resource",
       three + Cpu("a/a1", -1, "1") + Cpu("b/b1", 0, "1") +
           Cpu("b/b2", 0, "1") + Cpu("b/b3", 0, "1") + Cpu("b/b4", 0, "1") +
           Cpu("b/b5", -1, "1") + In("a", 0).Request("cpu", "2"),
       {"a/in", "b/b1", "b/b2", "b/b3", "b/b4"},
       {"a/a1 by a/in: InClusterQueue", "b/b5 by a/in: InCohortReclamation"},
       {{"a/a1", ""}, {"b/b5", ""}}},
  };
}

KUEUE_CASES(KueuePreemptionTest, Cases());

}  // namespace
}  // namespace allot::sched
