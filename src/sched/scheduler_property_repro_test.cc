// Minimal reproductions of bugs the property tests found (regressions).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/model.h"
#include "sched/random_cluster.h"
#include "sched/scheduler.h"
#include "sched/scheduler_property_util.h"

namespace allot::sched::proptest {
namespace {
// ---------------------------------------------------------------------------
// Minimal reproductions of bugs the random runs found (seeds refer to the
// scheduler as it was then), kept as regression tests; each comment says
// which invariant broke and how.

core::ResourceFlavor Flavor(const std::string& name) {
  core::ResourceFlavor f;
  f.name = name;
  f.node_labels[proptest::kProductLabel] = "p0";
  return f;
}

core::Node GpuNode(const std::string& name, int32_t gpus) {
  core::Node n;
  n.name = name;
  n.labels[proptest::kProductLabel] = "p0";
  n.cpu = Quantity::FromUnits(64);
  n.memory = proptest::Gi(256);
  for (int32_t g = 0; g < gpus; ++g)
    n.gpus.push_back(
        {"GPU-" + name + "-" + std::to_string(g), "p0", {}, true, {}});
  return n;
}

core::ClusterQueue GpuQueue(const std::string& name, const std::string& cohort,
                            int64_t nominal, core::QueueingStrategy strategy) {
  core::ClusterQueue q;
  q.name = name;
  q.cohort = cohort;
  q.namespace_selector = core::LabelSelector{};
  q.queueing_strategy = strategy;
  core::ResourceGroup g;
  g.covered_resources = {core::kGpuResource};
  core::FlavorQuotas fq;
  fq.name = "f";
  fq.resources.push_back(
      {core::kGpuResource, Quantity::FromUnits(nominal), {}, {}});
  g.flavors.push_back(fq);
  q.resource_groups.push_back(g);
  return q;
}

core::Workload GpuWorkload(const std::string& name, const std::string& queue,
                           int64_t created, int32_t gpus_per_pod,
                           int32_t priority = 0) {
  core::Workload w;
  w.ns = "team";
  w.name = name;
  w.queue_name = queue;
  w.priority = priority;
  w.creation_unix_ms = created;
  core::PodSet ps;
  ps.name = "main";
  ps.count = 1;
  ps.requests[core::kGpuResource] = Quantity::FromUnits(gpus_per_pod);
  w.pod_sets.push_back(ps);
  return w;
}

bool IsAdmitted(const Scheduler& s, const std::string& key) {
  for (const auto& a : s.Admitted()) {
    if (a.workload == key) return true;
  }
  return false;
}

// Bug (found by RandomClusters seed 179, QuotaFreeClusters seed 29,
// ContendedClusters seed 106, QuotaBoundClusters seed 99): [liveness].
// Nodes are shared by every cohort tree, so devices freed in one tree must
// wake the workloads of other trees (or of ClusterQueues without a cohort)
// that were set aside because no node had room. At first nothing woke them
// (RemoveWorkload only requeued its own tree). With placement waiters
// (WakePlacementWaiters) the one-flavor case passed, but a ClusterQueue
// whose resource group lists several flavors still got stuck: every flavor
// placement-short with no victims, the preemption oracle turned each into
// NoFit, the assignment was NoFit with placement_short unset, so the
// workload was never registered as a placement waiter and stayed pending
// for ever although a node was free and its quota untouched.
TEST(SchedulerPropertyRepro, FreedDevicesRequeueOtherCohortTrees) {
  for (auto strategy : {core::QueueingStrategy::kBestEffortFIFO,
                        core::QueueingStrategy::kStrictFIFO}) {
    for (bool two_flavors : {false, true}) {
      core::Config c;
      c.flavors = {Flavor("f"), Flavor("g")};
      c.flavors[1].node_labels[proptest::kProductLabel] =
          "p1";  // No node has it.
      c.nodes = {GpuNode("n0", 1)};
      // Two ClusterQueues without a cohort, so two cohort "trees", both with
      // plenty of quota; one 1-GPU node between them.
      c.cluster_queues = {
          GpuQueue("a", "", 8, core::QueueingStrategy::kBestEffortFIFO),
          GpuQueue("b", "", 8, strategy)};
      if (two_flavors) {
        core::FlavorQuotas fq;
        fq.name = "g";
        fq.resources.push_back(
            {core::kGpuResource, Quantity::FromUnits(8), {}, {}});
        c.cluster_queues[1].resource_groups[0].flavors.push_back(fq);
      }
      c.local_queues = {{"team", "qa", "a", {}, {}}, {"team", "qb", "b", {}, {}}};
      auto created = Scheduler::Create(c);
      ASSERT_TRUE(created.ok()) << created.status().ToString();
      Scheduler& s = **created;
      ASSERT_TRUE(s.AddWorkload(GpuWorkload("a1", "qa", 0, 1)).ok());
      s.RunCycle();
      ASSERT_TRUE(IsAdmitted(s, "team/a1"));
      ASSERT_TRUE(s.AddWorkload(GpuWorkload("b1", "qb", 1, 1)).ok());
      s.RunCycle();  // No node has a free GPU: b1 is set aside (or blocks b).
      ASSERT_FALSE(IsAdmitted(s, "team/b1"));
      ASSERT_TRUE(s.RemoveWorkload("team/a1").ok());  // n0's GPU is free again.
      s.RunUntilQuiescent();
      EXPECT_TRUE(IsAdmitted(s, "team/b1"))
          << (strategy == core::QueueingStrategy::kStrictFIFO
                  ? "StrictFIFO"
                  : "BestEffortFIFO")
          << (two_flavors ? ", flavors [f, g]" : ", flavor [f]")
          << ": b1 stays pending although n0 is free and b has quota:\n"
          << StateText(s);
    }
  }
}

// Bug (found with every ClusterQueue in one cohort tree, RandomClusters
// seed 307 under ALLOT_PROP_SINGLE_TREE=1): [liveness]. In one cycle, the
// head b1 of ClusterQueue b preempts a1 of StrictFIFO ClusterQueue a;
// a1 goes back to a's queue AHEAD of a's head a2 (earlier creation). a2 is
// tried later in the same cycle (the heads were taken at its start), fails,
// and marks a as blocked. a's head is now a1, which was never tried and fits
// (node n1 is free), but a blocked queue has no head to try, so a1 stays
// pending until something else changes in the tree.
TEST(SchedulerPropertyRepro, StrictFifoBlockedByStaleHeadAfterPreemption) {
  core::Config c;
  c.flavors = {Flavor("f")};
  c.nodes = {GpuNode("n0", 4), GpuNode("n1", 1)};
  c.cohorts = {core::Cohort{"co", "", {}, 1000, {}}};
  // a has no quota of its own: all it runs is borrowed from b, so b may
  // reclaim it.
  c.cluster_queues = {
      GpuQueue("a", "co", 0, core::QueueingStrategy::kStrictFIFO),
      GpuQueue("b", "co", 100, core::QueueingStrategy::kBestEffortFIFO)};
  c.cluster_queues[1].preemption.reclaim_within_cohort =
      core::ReclaimWithinCohort::kAny;
  c.local_queues = {{"team", "qa", "a", {}, {}}, {"team", "qb", "b", {}, {}}};
  auto created = Scheduler::Create(c);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  Scheduler& s = **created;
  // x takes n1 (best fit), so a1 lands on n0; then x leaves and n1 is free.
  ASSERT_TRUE(s.AddWorkload(GpuWorkload("x", "qb", 0, 1)).ok());
  ASSERT_TRUE(s.AddWorkload(GpuWorkload("a1", "qa", 0, 1)).ok());
  s.RunCycle();
  ASSERT_TRUE(IsAdmitted(s, "team/a1"));
  ASSERT_TRUE(s.RemoveWorkload("team/x").ok());
  s.RunUntilQuiescent();
  // a2 can never be placed (no node has 8 GPUs); b1 needs all of n0.
  ASSERT_TRUE(s.AddWorkload(GpuWorkload("a2", "qa", 10, 8)).ok());
  ASSERT_TRUE(s.AddWorkload(GpuWorkload("b1", "qb", 20, 4)).ok());
  CycleResult r = s.RunCycle();
  ASSERT_EQ(r.preempted.size(), 1u) << CycleText(r);
  ASSERT_EQ(r.preempted[0].workload, "team/a1");
  ASSERT_TRUE(IsAdmitted(s, "team/b1"));
  s.RunUntilQuiescent();
  // a1 is a's head again and fits on n1 (borrowing from b, which has 96
  // unused): it must be tried and admitted.
  EXPECT_TRUE(IsAdmitted(s, "team/a1"))
      << "a1 stays pending behind a blocked StrictFIFO queue:\n"
      << StateText(s);
}

// Bug (found by RandomClusters seed 818 once the liveness bugs above are
// patched out locally; QuotaBoundClusters seed 624 too): [api]
// RunUntilQuiescent never settles: two workloads of two ClusterQueues
// preempt each other in turn, every cycle, for ever.
//  - b1 (ClusterQueue b, priority 0, borrowWithinCohort LowerPriority) is
//    short of PLACEMENT, not quota; the victim search then treats every
//    flavor-resource b1 uses (GPU of f AND cpu of c) as needed, and counts a
//    as "borrowing" because a borrows CPU (for a_cpu), although a1 runs
//    within a's nominal GPU quota. So b1 evicts a1 (priority -1) as
//    InCohortReclaimWhileBorrowing.
//  - a1 then needs the GPU back: a is within its nominal GPU quota and b
//    borrows GPUs, so a1 reclaims it from b1 (reclaimWithinCohort Any) as
//    InCohortReclamation. b1 is requeued and the two repeat.
// Kueue only preempts for the flavor-resources short of quota, and a
// ClusterQueue within its nominal quota of those is never a borrower there.
TEST(SchedulerPropertyRepro, PlacementPreemptionPingPong) {
  core::Config c;
  c.flavors = {Flavor("f")};
  core::ResourceFlavor cpu;
  cpu.name = "c";  // No labels: any node.
  c.flavors.push_back(cpu);
  c.nodes = {GpuNode("n0", 1)};
  c.cohorts = {core::Cohort{"co", "", {}, 1000, {}}};
  // Quota: GPUs of f - a has 1, b has 0, the cohort has 4 more (b may
  // borrow them); cpu of c - a has 0 (it borrows), b has 10.
  core::ResourceGroup cohort_gpu;
  cohort_gpu.covered_resources = {core::kGpuResource};
  cohort_gpu.flavors.push_back(
      {"f", {{core::kGpuResource, Quantity::FromUnits(4), {}, {}}}});
  c.cohorts[0].resource_groups.push_back(cohort_gpu);
  auto queue = [](const std::string& name, int64_t gpus, int64_t cpus) {
    core::ClusterQueue q =
        GpuQueue(name, "co", gpus, core::QueueingStrategy::kBestEffortFIFO);
    core::ResourceGroup g;
    g.covered_resources = {core::kCpuResource};
    g.flavors.push_back(
        {"c", {{core::kCpuResource, Quantity::FromUnits(cpus), {}, {}}}});
    q.resource_groups.push_back(g);
    return q;
  };
  c.cluster_queues = {queue("a", 1, 0), queue("b", 0, 10)};
  c.cluster_queues[0].preemption.reclaim_within_cohort =
      core::ReclaimWithinCohort::kAny;
  c.cluster_queues[1].preemption.borrow_within_cohort =
      core::BorrowWithinCohortPolicy::kLowerPriority;
  c.local_queues = {{"team", "qa", "a", {}, {}}, {"team", "qb", "b", {}, {}}};
  auto created = Scheduler::Create(c);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  Scheduler& s = **created;

  core::Workload a_cpu = GpuWorkload("a-cpu", "qa", 0, 1);
  a_cpu.pod_sets[0].requests.clear();
  a_cpu.pod_sets[0].requests[core::kCpuResource] =
      Quantity::FromUnits(1);  // a now borrows CPU.
  ASSERT_TRUE(s.AddWorkload(a_cpu).ok());
  ASSERT_TRUE(
      s.AddWorkload(GpuWorkload("a1", "qa", 1, 1, /*priority=*/-1)).ok());
  s.RunUntilQuiescent();
  ASSERT_TRUE(IsAdmitted(s, "team/a-cpu"));
  ASSERT_TRUE(IsAdmitted(s, "team/a1"));  // Within a's nominal GPU quota.

  core::Workload b1 = GpuWorkload("b1", "qb", 2, 1, /*priority=*/0);
  b1.pod_sets[0].requests[core::kCpuResource] = Quantity::FromUnits(1);
  ASSERT_TRUE(s.AddWorkload(b1).ok());
  int32_t cycles = s.RunUntilQuiescent(200);
  EXPECT_LT(cycles, 200)
      << "RunUntilQuiescent does not settle; " << s.Preemptions().size()
      << " preemptions so far, the last ones:\n"
      << (s.Preemptions().size() >= 2
              ? EventText(s.Preemptions()[s.Preemptions().size() - 2]) + "\n" +
                    EventText(s.Preemptions().back())
              : StateText(s));
  // a1 uses no more than a's own nominal GPU quota: no one may take it.
  EXPECT_TRUE(IsAdmitted(s, "team/a1")) << StateText(s);
}

// Bug (found by QuotaBoundClusters seed 624 once the liveness bugs above are
// patched out locally): [api] RunUntilQuiescent never settles under fair
// sharing (LessThanInitialShare): three workloads evict each other in a
// loop, each step allowed on its own:
//  {a1}  b1 (b, weight 2, priority 100) preempts a1 (a borrows 4 cpu at
//        weight 0.5: share 363 > b's share 113 after admitting b1);
//  {b1}  a2 (a, priority 0, within a's nominal: share 0) reclaims from b
//        (reclaimWithinCohort Any), preempting b1;
//  {a2}  a1 (a, priority 5) preempts a2 in its own ClusterQueue
//        (withinClusterQueue LowerPriority), borrowing again; back to {a1}.
// Some cycles also admit a workload and preempt it again in the same cycle.
// Kueue documents fair-sharing strategies as loop-free for two workloads;
// the in-ClusterQueue step closes this three-workload loop.
TEST(SchedulerPropertyRepro, FairSharingPreemptionLoop) {
  core::Config c;
  core::ResourceFlavor cpu;
  cpu.name = "c";
  c.flavors = {cpu};
  core::Node n0;
  n0.name = "n0";
  n0.cpu = Quantity::FromUnits(64);
  n0.memory = proptest::Gi(256);
  c.nodes = {n0};
  c.cohorts = {core::Cohort{"co", "", {}, 1000, {}}};
  auto queue = [](const std::string& name, int64_t cpus, int64_t weight_milli) {
    core::ClusterQueue q;
    q.name = name;
    q.cohort = "co";
    q.namespace_selector = core::LabelSelector{};
    q.fair_weight_milli = weight_milli;
    core::ResourceGroup g;
    g.covered_resources = {core::kCpuResource};
    g.flavors.push_back(
        {"c", {{core::kCpuResource, Quantity::FromUnits(cpus), {}, {}}}});
    q.resource_groups.push_back(g);
    return q;
  };
  c.cluster_queues = {queue("a", 12, 500), queue("b", 11, 2000)};
  c.cluster_queues[0].preemption.within_cluster_queue =
      core::WithinClusterQueue::kLowerPriority;
  c.cluster_queues[0].preemption.reclaim_within_cohort =
      core::ReclaimWithinCohort::kAny;
  c.cluster_queues[1].preemption.reclaim_within_cohort =
      core::ReclaimWithinCohort::kLowerPriority;
  c.local_queues = {{"team", "qa", "a", {}, {}}, {"team", "qb", "b", {}, {}}};
  c.scheduler.fair_sharing = true;
  c.scheduler.preemption_strategies = {
      core::FairSharingStrategy::kLessThanInitialShare};
  auto cpu_workload = [](const std::string& name, const std::string& queue,
                         int64_t created, int32_t priority, int64_t cpus) {
    core::Workload w = GpuWorkload(name, queue, created, 1, priority);
    w.pod_sets[0].requests.clear();
    w.pod_sets[0].requests[core::kCpuResource] = Quantity::FromUnits(cpus);
    return w;
  };
  auto created = Scheduler::Create(c);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  Scheduler& s = **created;
  ASSERT_TRUE(s.AddWorkload(cpu_workload("a1", "qa", 0, 5, 16)).ok());
  s.RunUntilQuiescent();
  ASSERT_TRUE(IsAdmitted(s, "team/a1"));  // Borrows 4 cpu.
  ASSERT_TRUE(s.AddWorkload(cpu_workload("b1", "qb", 1, 100, 16)).ok());
  ASSERT_TRUE(s.AddWorkload(cpu_workload("a2", "qa", 2, 0, 10)).ok());
  int32_t cycles = s.RunUntilQuiescent(300);
  EXPECT_LT(cycles, 300)
      << "RunUntilQuiescent does not settle; " << s.Preemptions().size()
      << " preemptions so far, the last three:\n"
      << (s.Preemptions().size() >= 3
              ? EventText(s.Preemptions()[s.Preemptions().size() - 3]) + "\n" +
                    EventText(s.Preemptions()[s.Preemptions().size() - 2]) +
                    "\n" + EventText(s.Preemptions().back())
              : StateText(s));
}

// Bug (found by ContendedClusters seed 767 with ALLOT_PROP_SEEDS=5000):
// [liveness]. A workload with minCount whose full size is short of QUOTA
// but whose minCount is short only of NODES is set aside as a quota waiter
// (placement_short comes from the full-size attempt), so devices freed in
// another cohort tree never wake it, although its minCount pods now fit.
TEST(SchedulerPropertyRepro, PartialAdmissionWaitsForFreedDevices) {
  core::Config c;
  c.flavors = {Flavor("f")};
  c.nodes = {GpuNode("n0", 1)};
  // a and b have no cohort: two trees. b can hold 1 GPU only.
  c.cluster_queues = {
      GpuQueue("a", "", 8, core::QueueingStrategy::kBestEffortFIFO),
      GpuQueue("b", "", 1, core::QueueingStrategy::kBestEffortFIFO)};
  c.local_queues = {{"team", "qa", "a", {}, {}}, {"team", "qb", "b", {}, {}}};
  auto created = Scheduler::Create(c);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  Scheduler& s = **created;
  ASSERT_TRUE(s.AddWorkload(GpuWorkload("a1", "qa", 0, 1)).ok());
  s.RunUntilQuiescent();
  ASSERT_TRUE(IsAdmitted(s, "team/a1"));  // Takes n0's only GPU.
  core::Workload b1 = GpuWorkload("b1", "qb", 1, 1);
  b1.pod_sets[0].count = 2;      // 2 GPUs: more than b can ever hold...
  b1.pod_sets[0].min_count = 1;  // ...but 1 pod would do.
  ASSERT_TRUE(s.AddWorkload(b1).ok());
  s.RunUntilQuiescent();
  ASSERT_FALSE(IsAdmitted(s, "team/b1"));  // n0 is full.
  ASSERT_TRUE(s.RemoveWorkload("team/a1").ok());
  s.RunUntilQuiescent();
  EXPECT_TRUE(IsAdmitted(s, "team/b1"))
      << "b1's minCount pod fits on the free n0:\n"
      << StateText(s);
}

// Bug (found by PreemptionHeavyClusters seed 18 and QuotaBoundClusters seed
// 994 with ALLOT_PROP_SEEDS=5000): [liveness]. After a preemption, set-aside
// workloads of the cohort tree are retried only if the victims freed more
// of a flavor than the preemptor takes. But the preemptor (a) takes from
// its own nominal quota, while the victim's ClusterQueue (b) regains room
// under its borrowingLimit: b3, set aside because b was at nominal +
// borrowingLimit, now fits but is never retried (Pending() itself says
// "fits now; waiting for the next scheduling cycle", for ever).
TEST(SchedulerPropertyRepro, PreemptionFreesQuotaOfTheVictimsQueue) {
  core::Config c;
  c.flavors = {Flavor("f")};
  c.nodes = {GpuNode("n0", 8), GpuNode("n1", 8)};
  c.cohorts = {core::Cohort{"co", "", {}, 1000, {}}};
  c.cluster_queues = {
      GpuQueue("a", "co", 10, core::QueueingStrategy::kBestEffortFIFO),
      GpuQueue("b", "co", 2, core::QueueingStrategy::kBestEffortFIFO)};
  c.cluster_queues[0].preemption.reclaim_within_cohort =
      core::ReclaimWithinCohort::kAny;
  c.cluster_queues[1]
      .resource_groups[0]
      .flavors[0]
      .resources[0]
      .borrowing_limit = Quantity::FromUnits(2);
  c.local_queues = {{"team", "qa", "a", {}, {}}, {"team", "qb", "b", {}, {}}};
  auto created = Scheduler::Create(c);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  Scheduler& s = **created;
  ASSERT_TRUE(s.AddWorkload(GpuWorkload("b1", "qb", 0, 1)).ok());
  ASSERT_TRUE(s.AddWorkload(GpuWorkload("b2", "qb", 1, 3)).ok());
  s.RunUntilQuiescent();
  ASSERT_TRUE(IsAdmitted(s, "team/b1"));
  ASSERT_TRUE(
      IsAdmitted(s, "team/b2"));  // b uses 4 = nominal 2 + borrowingLimit 2.
  ASSERT_TRUE(s.AddWorkload(GpuWorkload("b3", "qb", 2, 2)).ok());
  s.RunUntilQuiescent();
  ASSERT_FALSE(
      IsAdmitted(s, "team/b3"));  // Over b's borrowing limit: set aside.
  core::Workload a1 = GpuWorkload("a1", "qa", 3, 3);
  a1.pod_sets[0].count = 3;  // 9 GPUs: a needs 1 back from b.
  ASSERT_TRUE(s.AddWorkload(a1).ok());
  s.RunUntilQuiescent();
  ASSERT_TRUE(IsAdmitted(s, "team/a1"));
  ASSERT_FALSE(IsAdmitted(s, "team/b2"));  // Reclaimed.
  // b now uses 1 (b1); the cohort has 12 - 10 = 2 left; b3 needs 2 and n0/n1
  // have 6 free GPUs.
  EXPECT_TRUE(IsAdmitted(s, "team/b3")) << StateText(s);
}

// Bug (found by RandomClusters seed 6108 and ContendedClusters seed 2742
// with ALLOT_PROP_SEEDS=8000): [liveness]. A workload short of quota whose
// victims would free the quota but not the nodes (no node has room even
// after the preemption) is set aside as a quota waiter only; when another
// cohort tree frees a node, nothing wakes it, so it never preempts the
// lower-priority workload and runs.
TEST(SchedulerPropertyRepro, PreemptionNeedsDevicesFreedInAnotherTree) {
  core::Config c;
  c.flavors = {Flavor("f")};
  c.nodes = {GpuNode("n0", 2), GpuNode("n1", 1)};
  // No cohorts: a and b are two trees. b holds 2 GPUs and preempts by priority.
  c.cluster_queues = {
      GpuQueue("a", "", 8, core::QueueingStrategy::kBestEffortFIFO),
      GpuQueue("b", "", 2, core::QueueingStrategy::kBestEffortFIFO)};
  c.cluster_queues[1].preemption.within_cluster_queue =
      core::WithinClusterQueue::kLowerPriority;
  c.local_queues = {{"team", "qa", "a", {}, {}}, {"team", "qb", "b", {}, {}}};
  auto created = Scheduler::Create(c);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  Scheduler& s = **created;
  ASSERT_TRUE(s.AddWorkload(GpuWorkload("a1", "qa", 0, 2)).ok());  // All of n0.
  ASSERT_TRUE(s.AddWorkload(GpuWorkload("b-low", "qb", 1, 1, /*priority=*/0))
                  .ok());  // n1.
  s.RunUntilQuiescent();
  ASSERT_TRUE(IsAdmitted(s, "team/a1"));
  ASSERT_TRUE(IsAdmitted(s, "team/b-low"));
  // b-high needs b's whole quota (so b-low must go) and a 2-GPU node.
  ASSERT_TRUE(
      s.AddWorkload(GpuWorkload("b-high", "qb", 2, 2, /*priority=*/100)).ok());
  s.RunUntilQuiescent();
  ASSERT_FALSE(IsAdmitted(s, "team/b-high"));  // n0 is a1's.
  ASSERT_TRUE(s.RemoveWorkload("team/a1").ok());
  s.RunUntilQuiescent();
  EXPECT_TRUE(IsAdmitted(s, "team/b-high"))
      << "b-high can preempt b-low for quota and run on the free n0:\n"
      << StateText(s);
}

// Bug (found by PreemptionHeavyClusters seed 352 once the liveness bugs
// above are patched out locally; no fair sharing, quota only - the nodes
// have room for everything): [api] RunUntilQuiescent never settles; three
// workloads of b and one of a evict each other in a loop, each step allowed
// by its ClusterQueue's policy on its own. Quota of GPUs: a 5, b 12 (17 in
// the cohort); b1 (b, 8 GPUs, priority 80) stays admitted throughout.
//  {b1, a1}  a1 (a, 6 GPUs, priority 90) borrows 1. b3 (b, 4 GPUs,
//            priority 60) fits b's nominal quota: it reclaims a1
//            (reclaimWithinCohort Any).
//  {b1, b3}  b2 (b, 6 GPUs, priority 80) evicts b3 (withinClusterQueue
//            LowerPriority) and borrows 2.
//  {b1, b2}  a1 evicts b2 (borrowWithinCohort LowerPriority: b borrows and
//            b2 has lower priority) and borrows 1: back to {b1, a1}.
TEST(SchedulerPropertyRepro, ClassicalPreemptionLoop) {
  core::Config c;
  c.flavors = {Flavor("f")};
  c.nodes = {GpuNode("n0", 8), GpuNode("n1", 8), GpuNode("n2", 8)};
  c.cohorts = {core::Cohort{"co", "", {}, 1000, {}}};
  c.cluster_queues = {
      GpuQueue("a", "co", 5, core::QueueingStrategy::kBestEffortFIFO),
      GpuQueue("b", "co", 12, core::QueueingStrategy::kBestEffortFIFO)};
  c.cluster_queues[0].preemption.borrow_within_cohort =
      core::BorrowWithinCohortPolicy::kLowerPriority;
  c.cluster_queues[1].preemption.within_cluster_queue =
      core::WithinClusterQueue::kLowerPriority;
  c.cluster_queues[1].preemption.reclaim_within_cohort =
      core::ReclaimWithinCohort::kAny;
  c.local_queues = {{"team", "qa", "a", {}, {}}, {"team", "qb", "b", {}, {}}};
  auto created = Scheduler::Create(c);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  Scheduler& s = **created;
  core::Workload b1 = GpuWorkload("b1", "qb", 0, 4, 80);
  b1.pod_sets[0].count = 2;  // 8 GPUs.
  ASSERT_TRUE(s.AddWorkload(b1).ok());
  core::Workload a1 = GpuWorkload("a1", "qa", 1, 3, 90);
  a1.pod_sets[0].count = 2;  // 6 GPUs.
  ASSERT_TRUE(s.AddWorkload(a1).ok());
  s.RunUntilQuiescent();
  ASSERT_TRUE(IsAdmitted(s, "team/b1"));
  ASSERT_TRUE(IsAdmitted(s, "team/a1"));
  core::Workload b2 = GpuWorkload("b2", "qb", 2, 3, 80);
  b2.pod_sets[0].count = 2;  // 6 GPUs.
  ASSERT_TRUE(s.AddWorkload(b2).ok());
  ASSERT_TRUE(s.AddWorkload(GpuWorkload("b3", "qb", 3, 4, 60)).ok());
  int32_t cycles = s.RunUntilQuiescent(300);
  EXPECT_LT(cycles, 300)
      << "RunUntilQuiescent does not settle; " << s.Preemptions().size()
      << " preemptions so far, the last three:\n"
      << (s.Preemptions().size() >= 3
              ? EventText(s.Preemptions()[s.Preemptions().size() - 3]) + "\n" +
                    EventText(s.Preemptions()[s.Preemptions().size() - 2]) +
                    "\n" + EventText(s.Preemptions().back())
              : StateText(s));
}

}  // namespace
}  // namespace allot::sched::proptest
