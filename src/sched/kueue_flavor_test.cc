// Kueue's flavor assigner cases, translated from
// pkg/scheduler/flavorassigner/flavorassigner_test.go (TestAssignFlavors,
// TestReclaimBeforePriorityPreemption, TestHierarchical) and run to
// quiescence. Kueue's tests set usage on the ClusterQueues' snapshots and
// mock the preemption oracle's answer; here the usage is admitted
// workloads and the oracle's answer comes from them (a lower-priority
// workload of the same ClusterQueue for "Preempt", one of a borrowing
// ClusterQueue for "Reclaim", none for "NoCandidates").
//
// The rules these cases exercise (Kueue's code, read; not copied):
//  - flavorassigner.findFlavorForPodSets and shouldTryNextFlavor: flavors
//    are tried in order; the search stops at one that fits without
//    borrowing, at one that borrows when whenCanBorrow is MayStopSearch, at
//    one that needs preemption (with candidates) when whenCanPreempt is
//    MayStopSearch; a flavor needing preemption without candidates never
//    stops it;
//  - isPreferred: otherwise the best one tried wins: fit > reclaim (all
//    victims elsewhere) > preempt (a victim in the ClusterQueue) > no
//    candidates, ties by how deep the quota is borrowed; equal options
//    keep the first;
//  - fitsResourceQuota: a flavor whose request exceeds what the
//    ClusterQueue could ever hold is NoFit.
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

constexpr char kAssign[] = "flavorassigner_test.go: ";
constexpr char kGpu[] = "nvidia.com/gpu";

Wl Adm(const std::string& key, int prio, const std::string& res,
       const std::string& n, const std::string& flavor) {
  return Wl(key).Priority(prio).Request(res, n).Admitted(
      key.substr(0, key.find('/')), flavor);
}
Wl In(const std::string& key, const std::string& res, const std::string& n) {
  return Wl(key).Created(10).Request(res, n);
}

// TestReclaimBeforePriorityPreemption's ClusterQueues: test-cq holds 10
// cpu and 10 GPUs in each of uno, due and tre; other-cq none.
std::string UnoDueTre(const std::string& fungibility = "") {
  auto fq = [](const std::string& f, const std::string& n) {
    return Fq(f).R("cpu", n).R(kGpu, n);
  };
  Cq test = Cq("test-cq").Cohort("cohort")
                .Group({fq("uno", "10"), fq("due", "10"), fq("tre", "10")})
                .Preempt("LowerPriority", "LowerPriority");
  if (!fungibility.empty()) test.Fungibility(fungibility);
  return kueue_cases::Base({"uno", "due", "tre"}) + test +
         Cq("other-cq").Cohort("cohort").Group(
             {fq("uno", "0"), fq("due", "0"), fq("tre", "0")});
}

// TestHierarchical's tree: cohort three (4 CPUs of flavor three) holds
// cohort two (4 of two), which holds cohort one (4 of one); test-cq is in
// one, other-cq in two.
std::string OneTwoThree(const Cq& test) {
  return kueue_cases::Base({"one", "two", "three"}) +
         Co("three").Group({Fq("three").R("cpu", "4")}) +
         Co("two").Parent("three").Group({Fq("two").R("cpu", "4")}) +
         Co("one").Parent("two").Group({Fq("one").R("cpu", "4")}) + test +
         Cq("other-cq").Cohort("two").Group({Fq("one").R("cpu", "0"),
                                             Fq("two").R("cpu", "0"),
                                             Fq("three").R("cpu", "0")});
}
Cq TestCq(std::vector<Fq> flavors) {
  return Cq("test-cq").Cohort("one").Group(std::move(flavors))
      .Preempt("LowerPriority", "LowerPriority");
}

// TestAssignFlavors' ClusterQueue with flavors one and two of 10 CPUs.
std::string OneTwo(const Cq& test, const std::string& more = "") {
  return kueue_cases::Base({"one", "two"}) + test + more;
}

std::vector<Case> Cases() {
  const std::string kReclaim = "TestReclaimBeforePriorityPreemption: ";
  return {
      // uno needs own-queue preemption, due and tre reclaim: due, the
      // first reclaim. End state: o-due fits uno by borrowing.
      {std::string(kAssign) + kReclaim +
           "Select first flavor where gpu reclamation is possible",
       UnoDueTre() + Adm("test-cq/t-uno", -1, kGpu, "1", "uno") +
           Adm("other-cq/o-due", -1, kGpu, "1", "due") +
           Adm("other-cq/o-tre", -1, kGpu, "1", "tre") +
           In("test-cq/in", kGpu, "10"),
       {"other-cq/o-due", "other-cq/o-tre", "test-cq/in", "test-cq/t-uno"},
       {"other-cq/o-due by test-cq/in: InCohortReclamation"},
       {},
       {{"test-cq/in", "due"}, {"other-cq/o-due", "uno"}}},
      // End state (here and in the next case): the victim fits due.
      {std::string(kAssign) + kReclaim +
           "Select first flavor when flavor fungibility is disabled",
       UnoDueTre("{whenCanPreempt: MayStopSearch}") +
           Adm("test-cq/t-uno", -1, kGpu, "1", "uno") +
           Adm("other-cq/o-due", -1, kGpu, "1", "due") +
           Adm("other-cq/o-tre", -1, kGpu, "1", "tre") +
           In("test-cq/in", kGpu, "10"),
       {"other-cq/o-due", "other-cq/o-tre", "test-cq/in", "test-cq/t-uno"},
       {"test-cq/t-uno by test-cq/in: InClusterQueue"},
       {},
       {{"test-cq/in", "uno"}, {"test-cq/t-uno", "due"}}},
      {std::string(kAssign) + kReclaim +
           "Select first flavor where priority based preemption is possible",
       UnoDueTre() + Adm("test-cq/t-uno", -1, kGpu, "1", "uno") +
           Adm("test-cq/t-due", -1, kGpu, "1", "due") +
           Adm("test-cq/t-tre", -1, kGpu, "1", "tre") +
           In("test-cq/in", kGpu, "10"),
       {"test-cq/in", "test-cq/t-due", "test-cq/t-tre", "test-cq/t-uno"},
       {"test-cq/t-uno by test-cq/in: InClusterQueue"},
       {},
       {{"test-cq/in", "uno"}, {"test-cq/t-uno", "due"}}},
      // due needs own-queue preemption for cpu, so its mode is preempt;
      // tre needs only reclaim (its cpu fits): tre. End state: o-tre fits
      // uno by borrowing.
      {std::string(kAssign) + kReclaim +
           "Select second flavor where gpu reclamation is possible, as compute "
           "Fits",
       UnoDueTre() +
           Wl("test-cq/t-uno").Priority(-1).Request(kGpu, "1")
               .Request("cpu", "1")
               .Admitted("test-cq", "uno") +
           Adm("test-cq/t-due", -1, "cpu", "1", "due") +
           Adm("other-cq/o-due", -1, kGpu, "1", "due") +
           Adm("other-cq/o-tre", -1, kGpu, "1", "tre") +
           Wl("test-cq/in").Created(10).Request(kGpu, "10").Request("cpu", "10"),
       {"other-cq/o-due", "other-cq/o-tre", "test-cq/in", "test-cq/t-due",
        "test-cq/t-uno"},
       {"other-cq/o-tre by test-cq/in: InCohortReclamation"},
       {},
       {{"test-cq/in", "tre"}, {"other-cq/o-tre", "uno"}}},
      // one and two are used up by a workload of the same priority (no
      // candidates) and by other-cq (not borrowing): three fits.
      {std::string(kAssign) + "TestHierarchical: Select the top flavor",
       OneTwoThree(TestCq({Fq("one").R("cpu", "0"), Fq("two").R("cpu", "0"),
                           Fq("three").R("cpu", "0")})) +
           Adm("test-cq/t1", 0, "cpu", "4", "one") +
           Adm("other-cq/o1", 0, "cpu", "4", "two") + In("test-cq/in", "cpu", "4"),
       {"other-cq/o1", "test-cq/in", "test-cq/t1"},
       {},
       {},
       {{"test-cq/in", "three"}}},
      {std::string(kAssign) + "TestHierarchical: Select the first flavor which fits",
       OneTwoThree(TestCq({Fq("one").R("cpu", "0"), Fq("two").R("cpu", "0"),
                           Fq("three").R("cpu", "0")})) +
           Adm("test-cq/t1", 0, "cpu", "4", "one") + In("test-cq/in", "cpu", "4"),
       {"test-cq/in", "test-cq/t1"},
       {},
       {},
       {{"test-cq/in", "two"}}},
      {std::string(kAssign) +
           "TestHierarchical: Select deeper-borrowing flavor that fits when "
           "shallower-borrowing flavor has no preemption candidates",
       OneTwoThree(TestCq({Fq("one").R("cpu", "4", "0"), Fq("two").R("cpu", "0"),
                           Fq("three").R("cpu", "0")})
                       .Fungibility(
                           "{whenCanBorrow: TryNextFlavor, whenCanPreempt: "
                           "TryNextFlavor}")) +
           Adm("test-cq/t1", 0, "cpu", "4", "one") + In("test-cq/in", "cpu", "4"),
       {"test-cq/in", "test-cq/t1"},
       {},
       {},
       {{"test-cq/in", "two"}},
       [](core::Config* c) {
         for (core::ClusterQueue& q : c->cluster_queues) {
           if (q.name == "test-cq")
             q.flavor_fungibility.preference =
                 core::FungibilityPreference::kPreemptionOverBorrowing;
         }
       }},
      // Kueue's unit test mocks the oracle's "Preempt" for flavor one; here
      // a lower-priority workload of the ClusterQueue gives it. End state:
      // the victim fits two.
      {std::string(kAssign) + "preempt before try next flavor",
       OneTwo(Cq("test-cq")
                  .Group({Fq("one").R("cpu", "10"), Fq("two").R("cpu", "10")})
                  .Preempt("LowerPriority", "")
                  .Fungibility(
                      "{whenCanBorrow: MayStopSearch, whenCanPreempt: "
                      "MayStopSearch}")) +
           Adm("test-cq/low", -1, "cpu", "2", "one") + In("test-cq/in", "cpu", "9"),
       {"test-cq/in", "test-cq/low"},
       {"test-cq/low by test-cq/in: InClusterQueue"},
       {},
       {{"test-cq/in", "one"}, {"test-cq/low", "two"}}},
      {std::string(kAssign) + "preempt try next flavor",
       OneTwo(Cq("test-cq")
                  .Group({Fq("one").R("cpu", "10"), Fq("two").R("cpu", "10")})
                  .Preempt("LowerPriority", "")) +
           Adm("test-cq/low", -1, "cpu", "2", "one") + In("test-cq/in", "cpu", "9"),
       {"test-cq/in", "test-cq/low"},
       {},
       {},
       {{"test-cq/in", "two"}}},
      {std::string(kAssign) + "borrow try next flavor, found the second flavor",
       OneTwo(Cq("test-cq").Cohort("test-cohort")
                  .Group({Fq("one").R("cpu", "10", "1"), Fq("two").R("cpu", "10")})
                  .Fungibility(
                      "{whenCanBorrow: TryNextFlavor, whenCanPreempt: "
                      "TryNextFlavor}"),
              Cq("test-secondary-cq").Cohort("test-cohort").Group(
                  {Fq("one").R("cpu", "1")})) +
           Adm("test-cq/used", 0, "cpu", "2", "one") + In("test-cq/in", "cpu", "9"),
       {"test-cq/in", "test-cq/used"},
       {},
       {},
       {{"test-cq/in", "two"}}},
      {std::string(kAssign) + "borrow before try next flavor",
       OneTwo(Cq("test-cq").Cohort("test-cohort").Group(
                  {Fq("one").R("cpu", "10", "1"), Fq("two").R("cpu", "10")}),
              Cq("test-secondary-cq").Cohort("test-cohort").Group(
                  {Fq("one").R("cpu", "1")})) +
           Adm("test-cq/used", 0, "cpu", "2", "one") + In("test-cq/in", "cpu", "9"),
       {"test-cq/in", "test-cq/used"},
       {},
       {},
       {{"test-cq/in", "one"}}},
      {std::string(kAssign) +
           "cannot preempt in cohort (oracle returns None) for the first "
           "flavor, tries the second flavor (which fits)",
       OneTwo(Cq("test-cq").Cohort("test-cohort")
                  .Group({Fq("one").R("cpu", "0", "2"),
                          Fq("two").R("cpu", "0", "2")})
                  .Preempt("", "LowerPriority")
                  .BorrowWithinCohort(std::nullopt)
                  .Fungibility(
                      "{whenCanBorrow: MayStopSearch, whenCanPreempt: "
                      "MayStopSearch}"),
              Cq("test-secondary-cq").Cohort("test-cohort").Group(
                  {Fq("one").R("cpu", "2"), Fq("two").R("cpu", "2")})) +
           Adm("test-secondary-cq/s1", -1, "cpu", "2", "one") +
           In("test-cq/in", "cpu", "2"),
       {"test-cq/in", "test-secondary-cq/s1"},
       {},
       {},
       {{"test-cq/in", "two"}}},
      // one keeps 9 for test-cq (lendingLimit 1) but fits only by
      // borrowing; two (lendingLimit 0) fits without: two.
      {std::string(kAssign) + "lend try next flavor, found the second flavor",
       OneTwo(Cq("test-cq").Cohort("test-cohort")
                  .Group({Fq("one").R("cpu", "10", "", "1"),
                          Fq("two").R("cpu", "10", "", "0")})
                  .Fungibility(
                      "{whenCanBorrow: TryNextFlavor, whenCanPreempt: "
                      "TryNextFlavor}"),
              Cq("test-secondary-cq").Cohort("test-cohort").Group(
                  {Fq("one").R("cpu", "1"), Fq("two").R("cpu", "0")})) +
           Adm("test-cq/used", 0, "cpu", "2", "one") + In("test-cq/in", "cpu", "9"),
       {"test-cq/in", "test-cq/used"},
       {},
       {},
       {{"test-cq/in", "two"}}},
      // test-cq uses 9 of its 2 + 8 (borrowingLimit): 1 more is left, 2
      // are asked. The request fits its nominal quota, so it may preempt:
      // its own lower-priority workload (Kueue's oracle is mocked;
      // here that workload is the 9 in use). End state: low waits (9
      // above the nominal 2 with nobody to preempt but in: NoFit).
      {std::string(kAssign) + "past max, but can preempt in ClusterQueue",
       kueue_cases::Base({"one"}) +
           Cq("test-cq").Cohort("test-cohort")
               .Group({Fq("one").R("cpu", "2", "8")})
               .Preempt("LowerPriority", "") +
           Cq("test-secondary-cq").Cohort("test-cohort").Group(
               {Fq("one").R("cpu", "98")}) +
           Adm("test-cq/low", -1, "cpu", "9", "one") +
           Adm("test-secondary-cq/s1", 0, "cpu", "9", "one") +
           In("test-cq/in", "cpu", "2"),
       {"test-cq/in", "test-secondary-cq/s1"},
       {"test-cq/low by test-cq/in: InClusterQueue"},
       {{"test-cq/low", ""}}},
      // The ClusterQueue covers "pods": each of the 3 pods counts one,
      // though the pod set requests none (Kueue's assignFlavors sets it).
      {std::string(kAssign) + "num pods fit",
       kueue_cases::Base({"default"}) +
           Cq("test-cq").Group({Fq("default").R("pods", "3").R("cpu", "10")}) +
           Wl("test-cq/in").Count(3).Request("cpu", "1"),
       {"test-cq/in"},
       {},
       {},
       {{"test-cq/in", "default"}}},
      // 3 pods over a quota of 2: it waits (Kueue's NoFit,
      // ExceedsMaxQuota), with all the cpu it needs free.
      {std::string(kAssign) + "num pods don't fit",
       kueue_cases::Base({"default"}) +
           Cq("test-cq").Group({Fq("default").R("pods", "2").R("cpu", "10")}) +
           Wl("test-cq/in").Count(3).Request("cpu", "1"),
       {},
       {},
       {{"test-cq/in", "pods"}}},
  };
}

KUEUE_CASES(KueueFlavorTest, Cases());

}  // namespace
}  // namespace allot::sched
