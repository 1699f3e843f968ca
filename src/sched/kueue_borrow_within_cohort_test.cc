// Kueue's borrowWithinCohort and long-range preemption cases, translated
// from pkg/scheduler/preemption/preemption_test.go (TestPreemption), and
// run to quiescence.
//
// The rules these cases exercise (Kueue's code, read; not copied):
//  - classical.classifyPreemptionVariant and isAboveBorrowingThreshold: a
//    workload of another ClusterQueue may be preempted while the preemptor
//    borrows (InCohortReclaimWhileBorrowing) only when it has lower
//    priority than the preemptor and at most maxPriorityThreshold; one
//    above the threshold only by a preemptor that then fits without
//    borrowing (InCohortReclamation); candidates must first pass
//    reclaimWithinCohort;
//  - flavorassigner.canPreemptWhileBorrowing: with borrowWithinCohort a
//    request above nominal quota may preempt;
//  - candidateIterator.candidateIsValid: a ClusterQueue back within its
//    quota offers no more candidates;
//  - collectCandidatesForHierarchicalReclaim: quota held in the
//    preemptor's own subtree is reclaimed from any distance.
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

constexpr char kFile[] = "preemption_test.go: ";

const std::string kBase = kueue_cases::Base({"default"});

Wl Cpu(const std::string& key, int prio, const std::string& cpu) {
  return Wl(key).Priority(prio).Request("cpu", cpu).Admitted(
      key.substr(0, key.find('/')), "default");
}
Wl In(const std::string& cq, int prio, const std::string& cpu) {
  return Wl(cq + "/in").Priority(prio).Created(10).Request("cpu", cpu);
}

// Kueue's with_shared_cq cohort: 13 CPUs, 10 of them in "shared".
Cq Member(const std::string& name, const std::string& nominal,
          const std::string& within, const std::string& reclaim) {
  return Cq(name).Cohort("with-shared-cq")
      .Group({Fq("default").R("cpu", nominal, nominal == "0" ? "13" : "12")})
      .Preempt(within, reclaim)
      .BorrowWithinCohort(0);
}
const std::string kShared =
    kBase + Member("a-standard", "1", "Never", "LowerPriority") +
    Member("b-standard", "1", "LowerPriority", "Any") +
    Member("a-best-effort", "1", "Never", "LowerPriority") +
    Member("b-best-effort", "0", "Never", "LowerPriority") +
    Cq("shared").Cohort("with-shared-cq").Group(
        {Fq("default").R("cpu", "10")});

std::vector<Case> Cases() {
  return {
      // a-standard borrows 9 after admission; a-best-effort's workload is
      // below the threshold. b-best-effort's is taken too, then given back.
      {std::string(kFile) +
           "use BorrowWithinCohort; allow preempting a lower-priority workload "
           "from another ClusterQueue while borrowing",
       kShared + Cpu("a-best-effort/a-best-effort-low", -1, "10") +
           Cpu("b-best-effort/b-best-effort-low", -1, "1") +
           In("a-standard", 0, "10"),
       {"a-standard/in", "b-best-effort/b-best-effort-low"},
       {"a-best-effort/a-best-effort-low by a-standard/in: "
        "InCohortReclaimWhileBorrowing"},
       {{"a-best-effort/a-best-effort-low", ""}}},
      {std::string(kFile) +
           "use BorrowWithinCohort; don't allow preempting a lower-priority "
           "workload with priority above MaxPriorityThreshold, if borrowing is "
           "required even after the preemption",
       kShared + Cpu("b-standard/b-standard", 1, "10") +
           In("a-standard", 2, "10"),
       {"b-standard/b-standard"},
       {},
       {{"a-standard/in", ""}}},
      // The request fits a-standard's nominal quota: advantage over the
      // borrower, whatever the threshold.
      {std::string(kFile) +
           "use BorrowWithinCohort; allow preempting a lower-priority workload "
           "with priority above MaxPriorityThreshold, if borrowing is not "
           "required after the preemption",
       kShared + Cpu("b-standard/b-standard", 1, "13") +
           In("a-standard", 2, "1"),
       {"a-standard/in"},
       {"b-standard/b-standard by a-standard/in: InCohortReclamation"},
       {{"b-standard/b-standard", ""}}},
      {std::string(kFile) +
           "use BorrowWithinCohort; don't allow for preemption of "
           "lower-priority workload from the same ClusterQueue",
       kShared + Cpu("a-standard/a-standard", 1, "13") +
           In("a-standard", 2, "1"),
       {"a-standard/a-standard"},
       {},
       {{"a-standard/in", ""}}},
      // b-standard is above nominal; a-standard's workloads are above the
      // threshold (only without borrowing, which cannot be): b-standard's
      // own lowest goes. End state: it waits (a-standard's workloads are
      // not below its priority 1).
      {std::string(kFile) +
           "use BorrowWithinCohort; only preempt from CQ if no workloads "
           "below threshold and already above nominal",
       kShared + Cpu("a-standard/a-standard-1", 1, "10") +
           Cpu("a-standard/a-standard-2", 1, "1") +
           Cpu("b-standard/b-standard-1", 1, "1") +
           Cpu("b-standard/b-standard-2", 2, "1") + In("b-standard", 3, "1"),
       {"a-standard/a-standard-1", "a-standard/a-standard-2",
        "b-standard/b-standard-2", "b-standard/in"},
       {"b-standard/b-standard-1 by b-standard/in: InClusterQueue"},
       {{"b-standard/b-standard-1", ""}}},
      // a-best-effort-lower goes first (lowest priority); then a-best-effort
      // is within its quota, so a-best-effort-low is no longer a candidate
      // and b-standard-mid makes up the rest.
      {std::string(kFile) +
           "use BorrowWithinCohort; preempt from CQ and from other CQs with "
           "workloads below threshold",
       kShared + Cpu("b-standard/b-standard-high", 2, "10") +
           Cpu("b-standard/b-standard-mid", 1, "1") +
           Cpu("a-best-effort/a-best-effort-low", -1, "1") +
           Cpu("a-best-effort/a-best-effort-lower", -2, "1") +
           In("b-standard", 2, "2"),
       {"a-best-effort/a-best-effort-low", "b-standard/b-standard-high",
        "b-standard/in"},
       {"a-best-effort/a-best-effort-lower by b-standard/in: "
        "InCohortReclaimWhileBorrowing",
        "b-standard/b-standard-mid by b-standard/in: InClusterQueue"},
       {{"a-best-effort/a-best-effort-lower", ""},
        {"b-standard/b-standard-mid", ""}}},
      //        root
      //       /    \_
      // cohort-left cohort-right
      //      |          |
      //   cq-left(10) cq-right(0)
      {std::string(kFile) + "long range preemption",
       kBase + Co("root") + Co("cohort-left").Parent("root") +
           Co("cohort-right").Parent("root") +
           Cq("cq-left").Cohort("cohort-left")
               .Group({Fq("default").R("cpu", "10")})
               .Preempt("", "Any") +
           Cq("cq-right").Cohort("cohort-right").Group(
               {Fq("default").R("cpu", "0")}) +
           Cpu("cq-right/to-be-preempted", 0, "5") + In("cq-left", 0, "8"),
       {"cq-left/in"},
       {"cq-right/to-be-preempted by cq-left/in: InCohortReclamation"},
       {{"cq-right/to-be-preempted", ""}}},
  };
}

KUEUE_CASES(KueueBorrowWithinCohortTest, Cases());

}  // namespace
}  // namespace allot::sched
