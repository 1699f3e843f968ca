// Kueue's hierarchical (classical) preemption cases, translated from
// pkg/scheduler/preemption/preemption_hierarchical_test.go
// (TestHierarchicalPreemptions), and run to quiescence.
//
// The rules these cases exercise (Kueue's code, read; not copied):
//  - classical.collectCandidatesForHierarchicalReclaim: walking from the
//    preemptor's ClusterQueue up to the root, candidates are collected in
//    each ancestor's subtree (skipping the subtree already walked and
//    subtrees within their quota in the resources that need preemption);
//    once the request fits in the quota of the subtree walked so far
//    (schdcache.QuantitiesFitInQuota), the preemptor has a hierarchical
//    advantage over every candidate found further up, whatever its own
//    quota: those are taken first, whatever their priority (reclaim
//    policy permitting), with reason InCohortReclamation;
//  - classical.classifyPreemptionVariant: other candidates are
//    ReclaimWhileBorrowing (InCohortReclaimWhileBorrowing) when
//    borrowWithinCohort allows it (lower priority, at most
//    maxPriorityThreshold), else ReclaimWithoutBorrowing
//    (InCohortReclamation, only in the pass without borrowing);
//  - candidateIterator.candidateIsValid: a candidate stops being one once
//    its ClusterQueue, or any cohort between it and the lowest common
//    ancestor, is back within its quota;
//  - FindHeightOfLowestSubtreeThatFits (flavor assigner): a request above
//    the ClusterQueue's nominal quota may preempt only when a subtree below
//    the root would hold it (or borrowWithinCohort is set).
// Each case names its Kueue test case; trees are drawn as in Kueue.
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

constexpr char kFile[] = "preemption_hierarchical_test.go: ";

const std::string kBase = kueue_cases::Base({"default"});

Fq Cpu(const std::string& n) { return Fq("default").R("cpu", n); }
Fq CpuLend(const std::string& n, const std::string& lend) {
  return Fq("default").R("cpu", n, "", lend);
}
// A ClusterQueue in `cohort` with `cpu` nominal, withinClusterQueue
// LowerPriority and reclaimWithinCohort `reclaim`.
Cq Q(const std::string& name, const std::string& cohort,
     const std::string& cpu = "0", const std::string& reclaim = "Any") {
  return Cq(name).Cohort(cohort).Group({Cpu(cpu)}).Preempt("LowerPriority",
                                                          reclaim);
}
// A workload of `cpu` CPUs admitted in ClusterQueue `cq` on "default".
Wl Adm(const std::string& key, int prio, const std::string& cpu) {
  return Wl(key).Priority(prio).Request("cpu", cpu).Admitted(
      key.substr(0, key.find('/')), "default");
}
Wl In(const std::string& cq, int prio, const std::string& cpu) {
  return Wl(cq + "/in").Priority(prio).Request("cpu", cpu).Created(10);
}

// R, and C(2) under it holding 2 CPUs for q (0 of its own).
const std::string kRC2 = Co("r") + Co("c").Parent("r").Group({Cpu("2")});

std::vector<Case> Cases() {
  return {
      //            R
      //      /      |
      //   C(2) q_borrowing(0)
      //  /
      // q
      // q's subtree C holds the 2 CPUs that q_borrowing uses: q reclaims
      // them with 0 quota of its own. End state: the victim waits (R has
      // no quota left for a ClusterQueue of 0 quota: NoFit).
      {std::string(kFile) + "preempt with hierarchical advantage",
       kBase + kRC2 + Q("q", "c") + Q("q-borrowing", "r") +
           Adm("q-borrowing/admitted2", 0, "2") + In("q", 0, "2"),
       {"q/in"},
       {"q-borrowing/admitted2 by q/in: InCohortReclamation"},
       {{"q-borrowing/admitted2", ""}}},
      //             R
      //      /      |         \_
      //   C(2) q_borrowing(0)  q_nominal(2)
      //  /
      // q
      // q_nominal is within its quota: its lower-priority workload is not a
      // candidate.
      {std::string(kFile) + "avoid queues within nominal quota",
       kBase + kRC2 + Q("q-nominal", "r", "2") + Q("q", "c") +
           Q("q-borrowing", "r") + Adm("q-nominal/admitted1", -10, "2") +
           Adm("q-borrowing/admitted2", 0, "2") + In("q", 0, "2"),
       {"q-nominal/admitted1", "q/in"},
       {"q-borrowing/admitted2 by q/in: InCohortReclamation"},
       {{"q-borrowing/admitted2", ""}}},
      //            R(0)
      //      /      |
      //   C(2) q_borrowing(0)
      //  /
      // q(0)
      {std::string(kFile) + "preempt multiple with hierarchical advantage",
       kBase + kRC2 + Q("q", "c") + Q("q-borrowing", "r") +
           Adm("q-borrowing/admitted1", 1, "1") +
           Adm("q-borrowing/admitted2", 2, "1") + In("q", 0, "2"),
       {"q/in"},
       {"q-borrowing/admitted1 by q/in: InCohortReclamation",
        "q-borrowing/admitted2 by q/in: InCohortReclamation"},
       {{"q-borrowing/admitted1", ""}, {"q-borrowing/admitted2", ""}}},
      //        R(0)
      //      /
      //   C(3)
      //  /   \_
      // q(0) q_same_cohort(0)
      // No advantage over a sibling: borrowWithinCohort lets q take the
      // priority-0 workload (at the threshold) while borrowing, and its own
      // lower-priority one. Kueue's case admits admitted_preemptible with
      // an assignment of 2 CPUs for a request of 1 (4 CPUs used of 3); here
      // it uses 1, so C is exactly full; the victims are the same. End
      // state: both victims wait (no quota; own_queue's oracle finds no
      // victim: the sibling's priority-1 workload is not below its own).
      {std::string(kFile) + "preempt in cohort and own CQ",
       kBase + Co("r") + Co("c").Parent("r").Group({Cpu("3")}) +
           Cq("q").Cohort("c").Group({Cpu("0")})
               .Preempt("LowerPriority", "Any")
               .BorrowWithinCohort(0) +
           Q("q-same-cohort", "c") +
           Adm("q-same-cohort/admitted-not-preemptible", 1, "1") +
           Adm("q-same-cohort/admitted-preemptible", 0, "1") +
           Adm("q/admitted-own-queue", -1, "1") + In("q", 1, "2"),
       {"q-same-cohort/admitted-not-preemptible", "q/in"},
       {"q/admitted-own-queue by q/in: InClusterQueue",
        "q-same-cohort/admitted-preemptible by q/in: "
        "InCohortReclaimWhileBorrowing"},
       {{"q-same-cohort/admitted-preemptible", ""},
        {"q/admitted-own-queue", ""}}},
      //            R(0)
      //      /      |
      //   C(2) q_borrowing(0)
      //  /
      // q(0)
      // The hierarchy candidate goes first, although its priority (1) is
      // above the own-queue candidate's (-2).
      {std::string(kFile) + "prefer to preempt hierarchical candidate",
       kBase + kRC2 + Q("q", "c") + Q("q-borrowing", "r") +
           Adm("q-borrowing/admitted-borrowing", 1, "1") +
           Adm("q/admitted-same-queue", -2, "1") + In("q", 0, "1"),
       {"q/admitted-same-queue", "q/in"},
       {"q-borrowing/admitted-borrowing by q/in: InCohortReclamation"},
       {{"q-borrowing/admitted-borrowing", ""}}},
      //           R(0)
      //      /      |
      //   C(2)   q_nominal(2)
      //  /   \_
      // q(0) q_same_cohort(0)
      {std::string(kFile) + "forced to preempt priority candidate",
       kBase + kRC2 +
           Cq("q").Cohort("c").Group({Cpu("0")})
               .Preempt("LowerPriority", "Any")
               .BorrowWithinCohort(0) +
           Q("q-nominal", "r", "2") + Q("q-same-cohort", "c") +
           Adm("q-nominal/admitted-nominal", -10, "2") +
           Adm("q-same-cohort/admitted-same-cohort", -1, "2") +
           In("q", 0, "2"),
       {"q-nominal/admitted-nominal", "q/in"},
       {"q-same-cohort/admitted-same-cohort by q/in: "
        "InCohortReclaimWhileBorrowing"},
       {{"q-same-cohort/admitted-same-cohort", ""}}},
      //           R(0)
      //      /      |
      //   C(2)   q_borrowing(0)
      //  /    \_
      // q(4)  q_same_cohort(0)
      // The request fits q's own quota: advantage over everyone borrowing,
      // even at priority 10 against 0.
      {std::string(kFile) + "incoming workload fits in CQ nominal quota",
       kBase + kRC2 + Q("q", "c", "4") + Q("q-borrowing", "r") +
           Q("q-same-cohort", "c") +
           Adm("q-borrowing/admitted-borrowing", 10, "3") +
           Adm("q-same-cohort/admitted-same-cohort", 10, "3") +
           In("q", 0, "4"),
       {"q/in"},
       {"q-borrowing/admitted-borrowing by q/in: InCohortReclamation",
        "q-same-cohort/admitted-same-cohort by q/in: InCohortReclamation"},
       {{"q-borrowing/admitted-borrowing", ""},
        {"q-same-cohort/admitted-same-cohort", ""}}},
      //           R(1)
      //      /      |
      //   C(4)   q_borrowing(0)
      //  /    \_
      // q(0)  q_same_cohort(0)
      // One cycle in Kueue: the two victims. Run on: q_same_cohort's
      // returning workload fits C's quota (3 + 1 of 4), so it has the
      // advantage over q_borrowing, whose remaining workload borrows from R
      // and is reclaimed (its priority 1 does not protect it: reclaim Any).
      {std::string(kFile) + "preempt hierarchical and priority candidates",
       kBase + Co("r").Group({Cpu("1")}) +
           Co("c").Parent("r").Group({Cpu("4")}) +
           Cq("q").Cohort("c").Group({Cpu("0")})
               .Preempt("LowerPriority", "LowerPriority")
               .BorrowWithinCohort(0) +
           Q("q-borrowing", "r") + Q("q-same-cohort", "c") +
           Adm("q-borrowing/admitted-borrowing", -1, "2") +
           Adm("q-same-cohort/admitted-same-cohort-preemptible", -1, "1") +
           Adm("q-borrowing/admitted-borrowing-not-preemptible", 1, "2") +
           In("q", 0, "3"),
       {"q-same-cohort/admitted-same-cohort-preemptible", "q/in"},
       {"q-borrowing/admitted-borrowing by q/in: InCohortReclamation",
        "q-same-cohort/admitted-same-cohort-preemptible by q/in: "
        "InCohortReclaimWhileBorrowing",
        "q-borrowing/admitted-borrowing-not-preemptible by "
        "q-same-cohort/admitted-same-cohort-preemptible: InCohortReclamation"},
       {{"q-borrowing/admitted-borrowing", ""},
        {"q-borrowing/admitted-borrowing-not-preemptible", ""}}},
      // Same tree; the second victim is in q itself. End state: the
      // own-queue victim waits: its oracle finds no candidate (the
      // remaining borrower has priority 1, reclaim is LowerPriority).
      {std::string(kFile) + "preempt hierarchical candidates and inside CQ",
       kBase + Co("r").Group({Cpu("1")}) +
           Co("c").Parent("r").Group({Cpu("4")}) +
           Cq("q").Cohort("c").Group({Cpu("0")})
               .Preempt("LowerPriority", "LowerPriority")
               .BorrowWithinCohort(0) +
           Q("q-borrowing", "r") + Q("q-same-cohort", "c") +
           Adm("q-borrowing/admitted-borrowing", -1, "2") +
           Adm("q/admitted-same-queue-preemptible", -1, "1") +
           Adm("q-borrowing/admitted-borrowing-not-preemptible", 1, "2") +
           In("q", 0, "3"),
       {"q-borrowing/admitted-borrowing-not-preemptible", "q/in"},
       {"q-borrowing/admitted-borrowing by q/in: InCohortReclamation",
        "q/admitted-same-queue-preemptible by q/in: InClusterQueue"},
       {{"q-borrowing/admitted-borrowing", ""},
        {"q/admitted-same-queue-preemptible", ""}}},
      //           R(0)
      //      /      |        \_
      //   C(3) q_borrowing(0) q_nominal(2)
      //  /
      // q(0)
      {std::string(kFile) +
           "reclaim nominal quota from lowest priority workload, excluding "
           "non-borrowing",
       kBase + Co("r") + Co("c").Parent("r").Group({Cpu("3")}) +
           Q("q", "c") + Q("q-borrowing", "r") + Q("q-nominal", "r", "2") +
           Adm("q-borrowing/admitted-borrowing-prio-8", 8, "1") +
           Adm("q-borrowing/admitted-borrowing-prio-9", 9, "1") +
           Adm("q-borrowing/admitted-borrowing-prio-10", 9, "1") +
           Adm("q-nominal/admitted-nominal", -2, "2") + In("q", 0, "1"),
       {"q-borrowing/admitted-borrowing-prio-10",
        "q-borrowing/admitted-borrowing-prio-9", "q-nominal/admitted-nominal",
        "q/in"},
       {"q-borrowing/admitted-borrowing-prio-8 by q/in: InCohortReclamation"},
       {{"q-borrowing/admitted-borrowing-prio-8", ""}}},
      //          R
      //       /     \_
      //   C(2)      C_other(2)
      //  /    \         |
      // q(0) q_same_cohort(0) q_other(0)
      // Kueue's unit test calls the preemptor with a Preempt assignment and
      // finds no target (C_other is within its quota; the sibling's
      // workload is no lower priority and q would borrow). Here the flavor
      // assigner already says NoFit: 2 CPUs above q's 0 and no subtree
      // below R holds them (FindHeightOfLowestSubtreeThatFits).
      {std::string(kFile) +
           "infeasible preemption all available workloads in pruned subtrees",
       kBase + Co("r") + Co("c").Parent("r").Group({Cpu("2")}) +
           Co("c-other").Parent("r").Group({Cpu("2")}) +
           Q("q-other", "c-other") + Q("q", "c") + Q("q-same-cohort", "c") +
           Adm("q-other/admitted-other-1", -10, "1") +
           Adm("q-other/admitted-other-2", -10, "1") +
           Adm("q-same-cohort/admitted-same-cohort", 0, "2") +
           In("q", 0, "2"),
       {"q-other/admitted-other-1", "q-other/admitted-other-2",
        "q-same-cohort/admitted-same-cohort"},
       {},
       {{"q/in", ""}}},
      //        R(3CPU, 0Gi)
      //      /      |
      //   C(4CPU,4Gi) q_borrowing(0)
      //  /    \_
      // q(0)  q_same_cohort(0)
      // Only memory needs preemption; the request fits C in both
      // resources, so the memory borrower under R is a hierarchy candidate
      // and the sibling (no advantage, no borrowWithinCohort) is not taken.
      {std::string(kFile) + "hiearchical preemption with multiple resources",
       kBase +
           Co("r").Group({Fq("default").R("cpu", "3").R("memory", "0")}) +
           Co("c").Parent("r").Group(
               {Fq("default").R("cpu", "4").R("memory", "4Gi")}) +
           Cq("q").Cohort("c")
               .Group({Fq("default").R("cpu", "0").R("memory", "0")})
               .Preempt("LowerPriority", "Any") +
           Cq("q-borrowing").Cohort("r")
               .Group({Fq("default").R("cpu", "0").R("memory", "0")})
               .Preempt("LowerPriority", "Any") +
           Cq("q-same-cohort").Cohort("c")
               .Group({Fq("default").R("cpu", "0").R("memory", "0")})
               .Preempt("LowerPriority", "Any") +
           Wl("q-borrowing/admitted-borrowing")
               .Request("cpu", "3")
               .Request("memory", "1Gi")
               .Admitted("q-borrowing", "default") +
           Wl("q-same-cohort/admitted-same-cohort")
               .Priority(-2)
               .Request("cpu", "1")
               .Request("memory", "3Gi")
               .Admitted("q-same-cohort", "default") +
           Wl("q/in").Priority(-2).Request("cpu", "2").Request("memory",
                                                                "1Gi"),
       {"q-same-cohort/admitted-same-cohort", "q/in"},
       {"q-borrowing/admitted-borrowing by q/in: InCohortReclamation"},
       {{"q-borrowing/admitted-borrowing", ""}}},
      // "prefer to preempt evicted workloads" is not translated: Allot has
      // no workload that is evicted but still holds its quota (victims
      // release it at once; docs/scheduling.md).
      //
      //            R(0)
      //      /      |
      //   C(2) q_borrowing(0)
      //  /
      // q(3, lending limit 2)
      // q keeps 1 CPU to itself; with C's 2 and the 2 it lends, 5 CPUs sit
      // in C's subtree, all used by q_borrowing but for q's own 1.
      {std::string(kFile) + "respect lending limits",
       kBase + kRC2 +
           Cq("q").Cohort("c").Group({CpuLend("3", "2")})
               .Preempt("LowerPriority", "Any") +
           Q("q-borrowing", "r") + Adm("q-borrowing/admitted-borrowing", 0, "4") +
           In("q", -2, "5"),
       {"q/in"},
       {"q-borrowing/admitted-borrowing by q/in: InCohortReclamation"},
       {{"q-borrowing/admitted-borrowing", ""}}},
      //             r
      //          /     \_
      //       c11       c12
      //     /  |  \       \_
      //  c21  c22  c23     q1
      //  / |    |    |
      // c31 c32 q3   q2
      //  |    |
      //  q5   q4
      // Cohorts hold 4 CPUs each, ClusterQueues none. q5 needs 7: c21's
      // subtree holds it, so everything borrowing outside c21 is a
      // hierarchy candidate; q4's (inside c21) are not. After the first
      // victim of q2, c23 is back within its quota and q2's other workload
      // stops being a candidate. End state: both victims wait (NoFit).
      {std::string(kFile) + "reclaim in complex hierarchy",
       kBase + Co("r") + Co("c11").Parent("r").Group({Cpu("4")}) +
           Co("c12").Parent("r").Group({Cpu("4")}) +
           Co("c21").Parent("c11").Group({Cpu("4")}) +
           Co("c22").Parent("c11").Group({Cpu("4")}) +
           Co("c23").Parent("c11").Group({Cpu("4")}) +
           Co("c31").Parent("c21").Group({Cpu("4")}) +
           Co("c32").Parent("c21").Group({Cpu("4")}) + Q("q1", "c12") +
           Q("q2", "c23") + Q("q3", "c22") + Q("q4", "c32") + Q("q5", "c31") +
           Adm("q1/admitted-borrowing-1", -6, "4") +
           Adm("q1/admitted-borrowing-2", -5, "4") +
           Adm("q2/admitted-borrowing-3", -9, "4") +
           Adm("q2/admitted-borrowing-4", -10, "4") +
           Adm("q3/admitted-borrowing-5", -4, "4") +
           Adm("q3/admitted-borrowing-6", -3, "3") +
           Adm("q4/admitted-borrowing-7", 4, "2") +
           Adm("q4/admitted-borrowing-8", 2, "3") + In("q5", -2, "7"),
       {"q1/admitted-borrowing-2", "q2/admitted-borrowing-3",
        "q3/admitted-borrowing-5", "q3/admitted-borrowing-6",
        "q4/admitted-borrowing-7", "q4/admitted-borrowing-8", "q5/in"},
       {"q1/admitted-borrowing-1 by q5/in: InCohortReclamation",
        "q2/admitted-borrowing-4 by q5/in: InCohortReclamation"},
       {{"q1/admitted-borrowing-1", ""}, {"q2/admitted-borrowing-4", ""}}},
  };
}

KUEUE_CASES(KueueHierarchicalTest, Cases());

}  // namespace
}  // namespace allot::sched
