// Kueue's scheduler cases (classical, no fair sharing), translated from
// pkg/scheduler/scheduler_test.go (TestSchedule) and run to quiescence:
// the order of heads, the choice of flavor between preemption modes, and
// when a workload may preempt at all.
//
// The rules these cases exercise (Kueue's code, read; not copied):
//  - makeClassicalIterator: heads are ordered by how deep in the cohort
//    tree their assignment borrows (Assignment.Borrowing, the height of the
//    lowest subtree that holds the request, FindHeightOfLowestSubtreeThatFits),
//    then by priority, then by age: a head that borrows from a nearer
//    cohort goes before a higher-priority one that borrows from the root;
//  - flavorassigner.isPreferred: a flavor whose victims are all in other
//    ClusterQueues (reclaim) beats one that preempts in the ClusterQueue
//    itself; equal modes keep the first flavor; flavorFungibility.
//    preference PreemptionOverBorrowing ranks the borrowing depth first;
//  - flavorassigner.fitsResourceQuota: a request above the ClusterQueue's
//    nominal quota may not preempt unless borrowWithinCohort is set or a
//    subtree below the root holds it: NoFit, not a preemption;
//  - classicalPreemptions: a ClusterQueue at or above its nominal quota
//    makes room only among its own workloads (no over-preemption).
// Kueue's resource "gpu" is nvidia.com/gpu here; "cpu" stays cpu.
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

constexpr char kFile[] = "scheduler_test.go: ";
constexpr char kGpu[] = "nvidia.com/gpu";

const std::string kBase = kueue_cases::Base({"default", "on-demand", "spot"});

Wl Gpu(const std::string& key, int prio, const std::string& n,
       const std::string& flavor) {
  return Wl(key).Priority(prio).Request(kGpu, n).Admitted(
      key.substr(0, key.find('/')), flavor);
}
Wl Cpu(const std::string& key, int prio, const std::string& n,
       const std::string& flavor) {
  return Wl(key).Priority(prio).Request("cpu", n).Admitted(
      key.substr(0, key.find('/')), flavor);
}
Fq G(const std::string& flavor, const std::string& n) {
  return Fq(flavor).R(kGpu, n);
}
std::function<void(core::Config*)> Prefer(const std::string& cq,
                                          core::FungibilityPreference p) {
  return [cq, p](core::Config* c) {
    for (core::ClusterQueue& q : c->cluster_queues) {
      if (q.name == cq) q.flavor_fungibility.preference = p;
    }
  };
}

// other-alpha (10 on-demand, 10 spot) and other-beta (none) in "other".
std::string Other(bool beta_preempts) {
  Cq beta = Cq("other-beta").Cohort("other").Group(
      {G("on-demand", "0"), G("spot", "0")});
  if (beta_preempts) beta.Preempt("LowerPriority", "LowerPriority");
  return kBase +
         Cq("other-alpha").Cohort("other")
             .Group({G("on-demand", "10"), G("spot", "10")})
             .Preempt("LowerPriority", "LowerPriority") +
         beta;
}

std::vector<Case> Cases() {
  return {
      // on-demand needs a1 (own queue), spot needs b1 (other-beta borrows
      // it): reclaim wins. End state: b1 fits on-demand by borrowing.
      {std::string(kFile) + "prefer reclamation over cq priority based preemption",
       Other(true) + Gpu("other-alpha/a1", 50, "5", "on-demand") +
           Gpu("other-beta/b1", 50, "5", "spot") +
           Wl("other-alpha/preemptor").Priority(100).Created(10).Request(kGpu, "6"),
       {"other-alpha/a1", "other-alpha/preemptor", "other-beta/b1"},
       {"other-beta/b1 by other-alpha/preemptor: InCohortReclamation"},
       {},
       {{"other-alpha/preemptor", "spot"}, {"other-beta/b1", "on-demand"}}},
      // spot would need b1 and a2: it preempts in the queue too, so it is
      // no better than on-demand, and the first flavor stays.
      {std::string(kFile) +
           "prefer first preemption flavor when second flavor requires both "
           "reclaim and cq priority preemption",
       Other(false) + Gpu("other-alpha/a1", 50, "5", "on-demand") +
           Gpu("other-alpha/a2", 50, "5", "spot") +
           Gpu("other-beta/b1", 50, "5", "spot") +
           Wl("other-alpha/preemptor").Priority(100).Created(10).Request(kGpu, "6"),
       {"other-alpha/a2", "other-alpha/preemptor", "other-beta/b1"},
       {"other-alpha/a1 by other-alpha/preemptor: InClusterQueue"},
       {{"other-alpha/a1", ""}},
       {{"other-alpha/preemptor", "on-demand"}}},
      {std::string(kFile) +
           "prefer first preemption flavor when second flavor also requires cq "
           "preemption",
       Other(false) + Gpu("other-alpha/a1", 50, "6", "on-demand") +
           Gpu("other-alpha/a2", 50, "5", "spot") +
           Gpu("other-beta/b1", 9001, "5", "spot") +
           Wl("other-alpha/preemptor").Priority(100).Created(10).Request(kGpu, "5"),
       {"other-alpha/a2", "other-alpha/preemptor", "other-beta/b1"},
       {"other-alpha/a1 by other-alpha/preemptor: InClusterQueue"},
       {{"other-alpha/a1", ""}},
       {{"other-alpha/preemptor", "on-demand"}}},
      // WL2 fits CQ2's nominal quota (borrows nothing after preempting),
      // WL1 would borrow: WL2 goes first although it is newer and reclaims
      // from CQ3. End state: WL1 waits (CQ1 does not preempt).
      {std::string(kFile) +
           "workload requiring reclaimation prioritized over wl in another full "
           "cq",
       kBase + Cq("cq1").Cohort("other").Group({G("on-demand", "10")}) +
           Cq("cq2").Cohort("other").Group({G("on-demand", "10")})
               .Preempt("", "Any") +
           Cq("cq3").Cohort("other").Group({G("on-demand", "0")}) +
           Gpu("cq1/admitted-workload-1", 0, "5", "on-demand") +
           Gpu("cq3/admitted-workload-2", 0, "5", "on-demand") +
           Gpu("cq3/admitted-workload-3", 1, "5", "on-demand") +
           Wl("cq1/wl1").Created(10).Request(kGpu, "10") +
           Wl("cq2/wl2").Created(11).Request(kGpu, "10"),
       {"cq1/admitted-workload-1", "cq2/wl2", "cq3/admitted-workload-3"},
       {"cq3/admitted-workload-2 by cq2/wl2: InCohortReclamation"},
       {{"cq1/wl1", ""}, {"cq3/admitted-workload-2", ""}}},
      //        root
      //       /    \_
      // guaranteed(4) best-effort(0)
      //      |
      // guaranteed(0)
      // Both borrow; guaranteed only from its own cohort (height 1),
      // best-effort from the root (height 2): guaranteed goes first
      // despite its lower priority.
      {std::string(kFile) +
           "in a hierarchical cohort, workload borrowing less is scheduled first",
       kBase + Co("root") +
           Co("guaranteed").Parent("root").Group({Fq("default").R("cpu", "4")}) +
           Cq("guaranteed").Cohort("guaranteed").Group(
               {Fq("default").R("cpu", "0")}) +
           Cq("best-effort").Cohort("root").Group({Fq("default").R("cpu", "0")}) +
           Wl("guaranteed/guaranteed").Priority(0).Request("cpu", "4") +
           Wl("best-effort/best-effort").Priority(3).Request("cpu", "4"),
       {"guaranteed/guaranteed"},
       {},
       {{"best-effort/best-effort", ""}}},
      // on-demand needs preemption, but cq2 is within its quota: no
      // candidates, so spot, which fits by borrowing.
      {std::string(kFile) +
           "don't assign flavor if there are no candidates for preemption",
       kBase +
           Cq("cq1").Cohort("cohort")
               .Group({Fq("on-demand").R("cpu", "0", "1"),
                       Fq("spot").R("cpu", "0", "1")})
               .Preempt("LowerPriority", "Any")
               .BorrowWithinCohort(std::nullopt)
               .Fungibility(
                   "{whenCanBorrow: MayStopSearch, whenCanPreempt: MayStopSearch}") +
           Cq("cq2").Cohort("cohort").Group(
               {Fq("on-demand").R("cpu", "1"), Fq("spot").R("cpu", "1")}) +
           Cpu("cq2/admitted", 0, "1", "on-demand") +
           Wl("cq1/new").Priority(100).Created(10).Request("cpu", "1"),
       {"cq1/new", "cq2/admitted"},
       {},
       {},
       {{"cq1/new", "spot"}}},
      // 3 CPUs above other-alpha's 2, no borrowWithinCohort, a flat cohort:
      // NoFit; a1 (its own, lower priority) is not evicted.
      {std::string(kFile) +
           "A workload is only eligible to do preemptions if it fits fully "
           "within nominal quota",
       kBase +
           Cq("other-alpha").Cohort("other")
               .Group({Fq("on-demand").R("cpu", "2")})
               .Preempt("LowerPriority", "Any") +
           Cq("other-beta").Cohort("other").Group({Fq("on-demand").R("cpu", "2")}) +
           Cpu("other-alpha/a1", -1, "1", "on-demand") +
           Cpu("other-beta/b1", -1, "1", "on-demand") +
           Wl("other-alpha/incoming").Priority(1).Created(10).Request("cpu", "3"),
       {"other-alpha/a1", "other-beta/b1"},
       {},
       {{"other-alpha/incoming", ""}}},
      // other-alpha is above its quota: only its own two lowest go, not
      // other-beta's (which borrows too).
      {std::string(kFile) + "minimal preemptions when target queue is exhausted",
       kBase +
           Cq("other-alpha").Cohort("other")
               .Group({Fq("on-demand").R("cpu", "2")})
               .Preempt("LowerPriority", "Any") +
           Cq("other-beta").Cohort("other").Group({Fq("on-demand").R("cpu", "2")}) +
           Cq("other-gamma").Cohort("other").Group(
               {Fq("on-demand").R("cpu", "2")}) +
           Cpu("other-alpha/a1", -2, "1", "on-demand") +
           Cpu("other-alpha/a2", -2, "1", "on-demand") +
           Cpu("other-alpha/a3", -1, "1", "on-demand") +
           Cpu("other-beta/b1", 0, "1", "on-demand") +
           Cpu("other-beta/b2", 0, "1", "on-demand") +
           Cpu("other-beta/b3", 0, "1", "on-demand") +
           Wl("other-alpha/incoming").Created(10).Request("cpu", "2"),
       {"other-alpha/a3", "other-alpha/incoming", "other-beta/b1",
        "other-beta/b2", "other-beta/b3"},
       {"other-alpha/a1 by other-alpha/incoming: InClusterQueue",
        "other-alpha/a2 by other-alpha/incoming: InClusterQueue"},
       {{"other-alpha/a1", ""}, {"other-alpha/a2", ""}}},
      // Preempting on on-demand borrows nothing; spot fits only by
      // borrowing. End state: low-pob has no victim on on-demand and fits
      // spot by borrowing.
      {std::string(kFile) +
           "PreemptionOverBorrowing preference: preempt in first flavor "
           "instead of borrowing in second",
       kBase +
           Cq("pob-cq").Cohort("pob-cohort")
               .Group({Fq("on-demand").R("cpu", "5", "0"),
                       Fq("spot").R("cpu", "0", "5")})
               .Preempt("LowerPriority", "")
               .Fungibility(
                   "{whenCanBorrow: TryNextFlavor, whenCanPreempt: TryNextFlavor}") +
           Cq("pob-lender").Cohort("pob-cohort").Group(
               {Fq("on-demand").R("cpu", "0"), Fq("spot").R("cpu", "5")}) +
           Cpu("pob-cq/low-pob", -1, "5", "on-demand") +
           Wl("pob-cq/high-pob").Created(10).Request("cpu", "5"),
       {"pob-cq/high-pob", "pob-cq/low-pob"},
       {"pob-cq/low-pob by pob-cq/high-pob: InClusterQueue"},
       {},
       {{"pob-cq/high-pob", "on-demand"}, {"pob-cq/low-pob", "spot"}},
       Prefer("pob-cq", core::FungibilityPreference::kPreemptionOverBorrowing)},
      //      nopc-root(spot 5)
      //          |
      //       nopc-mid
      //      /        \_
      // nopc-cq(5, limit 0)  nopc-sibling(5)
      // on-demand has no candidate (same priority): even under
      // PreemptionOverBorrowing, spot, which fits, wins.
      {std::string(kFile) +
           "PreemptionOverBorrowing preference: select fitting second flavor "
           "over first flavor with no preemption candidates",
       kBase +
           Co("nopc-root").Group(
               {Fq("on-demand").R("cpu", "0"), Fq("spot").R("cpu", "5")}) +
           Co("nopc-mid").Parent("nopc-root") +
           Cq("nopc-cq").Cohort("nopc-mid")
               .Group({Fq("on-demand").R("cpu", "5", "0"),
                       Fq("spot").R("cpu", "0")})
               .Preempt("LowerPriority", "")
               .Fungibility(
                   "{whenCanBorrow: TryNextFlavor, whenCanPreempt: TryNextFlavor}") +
           Cq("nopc-sibling").Cohort("nopc-mid").Group(
               {Fq("on-demand").R("cpu", "5"), Fq("spot").R("cpu", "0")}) +
           Cpu("nopc-cq/admitted-nopc", 0, "5", "on-demand") +
           Wl("nopc-cq/pending-nopc").Created(10).Request("cpu", "5"),
       {"nopc-cq/admitted-nopc", "nopc-cq/pending-nopc"},
       {},
       {},
       {{"nopc-cq/pending-nopc", "spot"}},
       Prefer("nopc-cq", core::FungibilityPreference::kPreemptionOverBorrowing)},
      {std::string(kFile) +
           "BorrowingOverPreemption preference: borrow in second flavor instead "
           "of preempting in first",
       kBase +
           Cq("bop-cq").Cohort("bop-cohort")
               .Group({Fq("on-demand").R("cpu", "5", "0"),
                       Fq("spot").R("cpu", "0", "5")})
               .Preempt("LowerPriority", "")
               .Fungibility(
                   "{whenCanBorrow: TryNextFlavor, whenCanPreempt: TryNextFlavor}") +
           Cq("bop-lender").Cohort("bop-cohort").Group(
               {Fq("on-demand").R("cpu", "0"), Fq("spot").R("cpu", "5")}) +
           Cpu("bop-cq/low-bop", -1, "5", "on-demand") +
           Wl("bop-cq/high-bop").Created(10).Request("cpu", "5"),
       {"bop-cq/high-bop", "bop-cq/low-bop"},
       {},
       {},
       {{"bop-cq/high-bop", "spot"}},
       Prefer("bop-cq", core::FungibilityPreference::kBorrowingOverPreemption)},
      // scheduler_fs_test.go's "prefer flavor with most local capacity
      // (FS=false)": spot borrows from the nearer cohort.
      {"scheduler_fs_test.go: prefer flavor with most local capacity (FS=false)",
       kBase +
           Co("root-cohort").Group({G("on-demand", "2"), G("spot", "0")}) +
           Co("child-cohort").Parent("root-cohort")
               .Group({G("on-demand", "5"), G("spot", "7")}) +
           Cq("queue1").Cohort("child-cohort")
               .Group({G("on-demand", "3"), G("spot", "3")})
               .Preempt("LowerPriority", "Any")
               .Fungibility(
                   "{whenCanBorrow: TryNextFlavor, whenCanPreempt: TryNextFlavor}") +
           Gpu("queue1/a1", 0, "8", "on-demand") + Gpu("queue1/a2", 0, "3", "spot") +
           Wl("queue1/a3").Created(10).Request(kGpu, "1"),
       {"queue1/a1", "queue1/a2", "queue1/a3"},
       {},
       {},
       {{"queue1/a3", "spot"}}},
  };
}

KUEUE_CASES(KueueSchedulerTest, Cases());

}  // namespace
}  // namespace allot::sched
