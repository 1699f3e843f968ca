// Scheduler: removals and additions that wake work, determinism, reasons.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "core/manifest.h"
#include "sched/scheduler.h"
#include "sched/scheduler_test_util.h"
#include "sched/test_util.h"

namespace allot::sched {
namespace {

using testing::GpuCq;
using testing::GpuNodes;
using testing::kBase;
using testing::kH100;
using testing::RunScenario;
using testing::Scenario;
using testing::Wl;

TEST(SchedulerTest, RemoveWorkloadAdmitsSetAsideWorkloads) {
  auto s = testing::BuildScheduler(
      kBase + GpuCq("team-a-cq", "research", "h100", "nominalQuota: 8") +
      GpuCq("team-b-cq", "research", "h100", "nominalQuota: 0") +
      Wl("team-a/running").Gpus(8).Admitted("team-a-cq", "h100") +
      Wl("team-a/big").Created(0).Gpus(8) +
      Wl("team-a/half").Created(1).Gpus(4) +
      Wl("team-b/other").Created(2).Gpus(4));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  Scheduler& sched = **s;
  sched.RunUntilQuiescent();
  EXPECT_EQ(sched.AdmittedCount(), 1u);
  EXPECT_EQ(sched.PendingCount(), 3u);
  // Nothing changes while nothing is freed: a quiescent scheduler stays so.
  CycleResult idle = sched.RunCycle();
  EXPECT_FALSE(idle.Changed());

  ASSERT_TRUE(sched.RemoveWorkload("team-a/running").ok());
  EXPECT_EQ(sched.AdmittedCount(), 0u);
  sched.RunUntilQuiescent();
  // team-a's big (created first) takes team-a's 8; team-a/half and
  // team-b/other find nothing left in the cohort.
  std::vector<std::string> admitted;
  for (const auto& a : sched.Admitted()) admitted.push_back(a.workload);
  EXPECT_EQ(admitted, (std::vector<std::string>{"team-a/big"}));

  ASSERT_TRUE(sched.RemoveWorkload("team-a/big").ok());
  sched.RunUntilQuiescent();
  admitted.clear();
  for (const auto& a : sched.Admitted()) admitted.push_back(a.workload);
  // team-a/half (4, within nominal) and team-b/other (4, borrowing from
  // team-a) both fit in the 8 now free.
  EXPECT_EQ(admitted,
            (std::vector<std::string>{"team-a/half", "team-b/other"}));
  EXPECT_EQ(sched.PendingCount(), 0u);

  // Removing a pending or unknown workload.
  EXPECT_EQ(sched.RemoveWorkload("team-a/big").code(), StatusCode::kNotFound);
}

// Devices freed on shared nodes wake the workloads of every quota tree that
// were set aside for placement, not only the tree whose quota was freed.
// team-a-cq and team-b-cq have no cohort (two quota trees) but share the
// only node. team-b/b1 fits its quota but no node has 8 free GPUs, so it is
// set aside. When team-a/a1 is removed, its 8 GPUs are free and b1 must be
// admitted: nothing may wait while what it waits for is free (liveness).
// (Found failing while these tests were written: only team-a-cq's tree was
// retried, leaving b1 pending on an idle node.)
TEST(SchedulerTest, FreedDevicesWakeOtherQuotaTrees) {
  auto s = testing::BuildScheduler(
      kH100 + GpuNodes("h", 1, "H100-80GB") +
      GpuCq("team-a-cq", "", "h100", "nominalQuota: 8") +
      GpuCq("team-b-cq", "", "h100", "nominalQuota: 8") +
      Wl("team-a/a1").Gpus(8).Admitted("team-a-cq", "h100") +
      Wl("team-b/b1").Gpus(8));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  (*s)->RunUntilQuiescent();
  ASSERT_EQ((*s)->PendingCount(), 1u);
  EXPECT_NE((*s)->Pending()[0].reason.find("quota is available"),
            std::string::npos)
      << (*s)->Pending()[0].reason;
  ASSERT_TRUE((*s)->RemoveWorkload("team-a/a1").ok());
  (*s)->RunUntilQuiescent();
  std::vector<std::string> admitted;
  for (const auto& a : (*s)->Admitted()) admitted.push_back(a.workload);
  EXPECT_EQ(admitted, (std::vector<std::string>{"team-b/b1"}));
}

// Removing a pending StrictFIFO head unblocks the queue behind it.
TEST(SchedulerTest, RemovingABlockingHeadUnblocksStrictFifo) {
  auto s =
      testing::BuildScheduler(kBase +
                              GpuCq("team-a-cq", "", "h100", "nominalQuota: 8",
                                    "  queueingStrategy: StrictFIFO\n") +
                              Wl("team-a/big").Created(0).Gpus(16) +
                              Wl("team-a/small").Created(1).Gpus(4));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  (*s)->RunUntilQuiescent();
  EXPECT_EQ((*s)->AdmittedCount(), 0u);
  ASSERT_TRUE((*s)->RemoveWorkload("team-a/big").ok());
  (*s)->RunUntilQuiescent();
  ASSERT_EQ((*s)->Admitted().size(), 1u);
  EXPECT_EQ((*s)->Admitted()[0].workload, "team-a/small");
}

// Workloads added after creation join their queue and are admitted by the
// next cycles; a duplicate key is an error that changes nothing.
TEST(SchedulerTest, AddWorkload) {
  auto s = testing::BuildScheduler(
      kBase + GpuCq("team-a-cq", "", "h100", "nominalQuota: 8"));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  core::Config extra;
  ASSERT_TRUE(
      core::ParseManifests(Wl("team-a/w").Gpus(8).Yaml(), "add.yaml", &extra)
          .ok());
  ASSERT_EQ(extra.workloads.size(), 1u);
  ASSERT_TRUE((*s)->AddWorkload(extra.workloads[0]).ok());
  EXPECT_FALSE((*s)->AddWorkload(extra.workloads[0]).ok());
  EXPECT_EQ((*s)->PendingCount(), 1u);
  CycleResult r = (*s)->RunCycle();
  EXPECT_EQ(r.admitted, (std::vector<std::string>{"team-a/w"}));
  EXPECT_EQ(r.attempts, 1);
  EXPECT_EQ((*s)->AdmittedCount(), 1u);
}

// A node that joins later takes the work set aside for lack of devices; a
// node that clashes with the pool changes nothing.
TEST(SchedulerTest, AddNodeWakesWorkSetAside) {
  auto s = testing::BuildScheduler(
      kH100 + GpuNodes("h", 1, "H100-80GB") +
      GpuCq("team-a-cq", "", "h100", "nominalQuota: 32") +
      Wl("team-a/big").Gpus(8).Count(2).Yaml());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  (*s)->RunUntilQuiescent();
  EXPECT_EQ((*s)->AdmittedCount(), 0u);  // 16 GPUs, one node of 8.

  core::Config more;
  ASSERT_TRUE(core::ParseManifests(GpuNodes("late", 1, "H100-80GB"), "n.yaml", &more).ok());
  ASSERT_EQ(more.nodes.size(), 1u);
  ASSERT_TRUE((*s)->AddNode(more.nodes[0]).ok());
  EXPECT_FALSE((*s)->AddNode(more.nodes[0]).ok());  // The same name again.
  core::Node clash = more.nodes[0];
  clash.name = "clash";  // Same GPU UUIDs as late-0.
  Status st = (*s)->AddNode(clash);
  EXPECT_FALSE(st.ok());
  (*s)->RunUntilQuiescent();
  ASSERT_EQ((*s)->AdmittedCount(), 1u);
  std::optional<core::Admission> adm = (*s)->AdmissionOf("team-a/big");
  ASSERT_TRUE(adm.has_value());
  std::vector<std::string> nodes;
  for (const auto& pl : adm->pod_set_assignments[0].placements) nodes.push_back(pl.node);
  std::sort(nodes.begin(), nodes.end());
  EXPECT_EQ(nodes, (std::vector<std::string>{"h-0", "late-0"}));
}

// The scheduler is pure: the same input gives the same decisions, byte for
// byte, including placements, reasons and the eviction log.
TEST(SchedulerTest, RunUntilQuiescentIsDeterministic) {
  std::string yaml =
      kBase +
      GpuCq("team-a-cq", "research", "h100", "nominalQuota: 24",
            "  preemption: {withinClusterQueue: LowerPriority, "
            "reclaimWithinCohort: Any}\n") +
      GpuCq("team-b-cq", "research", "h100", "nominalQuota: 24",
            "  preemption: {withinClusterQueue: LowerPriority}\n");
  for (int i = 0; i < 12; ++i) {
    yaml += Wl("team-b/b" + std::to_string(i))
                .Priority(i % 3)
                .Created(i)
                .Gpus(1 + i % 4)
                .Count(1 + i % 3);
  }
  for (int i = 0; i < 10; ++i) {
    yaml += Wl("team-a/a" + std::to_string(i))
                .Priority(5 * (i % 2))
                .Created(20 + i)
                .Gpus(2 + i % 3)
                .Count(1 + i % 2);
  }
  auto run = [&] {
    auto s = testing::BuildScheduler(yaml);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    std::unique_ptr<Scheduler> owned = std::move(s).value();
    owned->RunUntilQuiescent();
    return owned;
  };
  std::unique_ptr<Scheduler> x = run(), y = run();
  auto ax = x->Admitted(), ay = y->Admitted();
  ASSERT_EQ(ax.size(), ay.size());
  ASSERT_GT(ax.size(), 0u);
  for (size_t i = 0; i < ax.size(); ++i) {
    SCOPED_TRACE(ax[i].workload);
    EXPECT_EQ(ax[i].workload, ay[i].workload);
    ASSERT_EQ(ax[i].admission.pod_set_assignments.size(),
              ay[i].admission.pod_set_assignments.size());
    for (size_t p = 0; p < ax[i].admission.pod_set_assignments.size(); ++p) {
      const auto& px = ax[i].admission.pod_set_assignments[p];
      const auto& py = ay[i].admission.pod_set_assignments[p];
      EXPECT_EQ(px.count, py.count);
      EXPECT_EQ(px.flavors, py.flavors);
      ASSERT_EQ(px.placements.size(), py.placements.size());
      for (size_t k = 0; k < px.placements.size(); ++k) {
        EXPECT_EQ(px.placements[k].node, py.placements[k].node);
        EXPECT_EQ(px.placements[k].gpus, py.placements[k].gpus);
      }
    }
  }
  auto px = x->Pending(), py = y->Pending();
  ASSERT_EQ(px.size(), py.size());
  for (size_t i = 0; i < px.size(); ++i) {
    EXPECT_EQ(px[i].workload, py[i].workload);
    EXPECT_EQ(px[i].cluster_queue, py[i].cluster_queue);
    EXPECT_EQ(px[i].reason, py[i].reason);
    EXPECT_EQ(px[i].position, py[i].position);
  }
  ASSERT_EQ(x->Preemptions().size(), y->Preemptions().size());
  for (size_t i = 0; i < x->Preemptions().size(); ++i) {
    EXPECT_EQ(testing::Describe(x->Preemptions()[i]),
              testing::Describe(y->Preemptions()[i]));
  }
}

// Reasons name the numbers a user needs, and placement reasons the largest
// free block, when quota is not what is short.
TEST(SchedulerTest, PendingReasons) {
  const std::vector<Scenario> cases = {
      // 6 of team-a's 8 are used and borrowingLimit 0 forbids borrowing
      // team-b's idle 8.
      {"quota reason names unused and borrowable amounts",
       kBase +
           GpuCq("team-a-cq", "research", "h100",
                 "nominalQuota: 8, borrowingLimit: 0") +
           GpuCq("team-b-cq", "research", "h100", "nominalQuota: 8") +
           Wl("team-a/running").Gpus(6).Admitted("team-a-cq", "h100") +
           Wl("team-a/w").Gpus(8),
       {"team-a/running"},
       {},
       {{"team-a/w",
         "needs 8 nvidia.com/gpu of flavor h100; ClusterQueue team-a-cq has 2 "
         "unused and "
         "may borrow 0 more (cohort research has 10 unused)"}}},
      // Quota (16) is not the limit; nodes of 4 GPUs are: no node can host
      // an 8-GPU pod.
      {"placement reason names the largest free block",
       kH100 + GpuNodes("h", 3, "H100-80GB", 4) +
           GpuCq("team-a-cq", "", "h100", "nominalQuota: 16") +
           Wl("team-a/w").Gpus(8),
       {},
       {},
       {{"team-a/w", "quota is available"},
        {"team-a/w", "largest free block: 4 on node h-0"}}},
      // The same 8 GPUs as two 4-GPU pods fit on two nodes.
      {"a gang spread over nodes fits",
       kH100 + GpuNodes("h", 3, "H100-80GB", 4) +
           GpuCq("team-a-cq", "", "h100", "nominalQuota: 16") +
           Wl("team-a/w").Gpus(4).Count(2),
       {"team-a/w"},
       {},
       {}},
      // Nodes are full (16 GPUs on 2 nodes, all in use) although quota (64)
      // is not: the third 8-GPU workload waits for devices.
      {"placement short while quota is not",
       kH100 + GpuNodes("h", 2, "H100-80GB") +
           GpuCq("team-a-cq", "", "h100", "nominalQuota: 64") +
           Wl("team-a/w1").Created(0).Gpus(8) +
           Wl("team-a/w2").Created(1).Gpus(8) +
           Wl("team-a/w3").Created(2).Gpus(8),
       {"team-a/w1", "team-a/w2"},
       {},
       {{"team-a/w3",
         "quota is available in flavor h100 but no schedulable node has 8 free "
         "nvidia.com/gpu"}}},
  };
  for (const Scenario& sc : cases) RunScenario(sc);

  // Positions: pending workloads report their 1-based place in queue.
  auto s = testing::BuildScheduler(
      kBase + GpuCq("team-a-cq", "", "h100", "nominalQuota: 8") +
      Wl("team-a/w1").Created(0).Gpus(8) + Wl("team-a/w2").Created(1).Gpus(8) +
      Wl("team-a/w3").Created(2).Gpus(8).Priority(-1));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  (*s)->RunUntilQuiescent();
  auto pending = (*s)->Pending();
  ASSERT_EQ(pending.size(), 2u);
  EXPECT_EQ(pending[0].workload, "team-a/w2");
  EXPECT_EQ(pending[0].position, 1);
  EXPECT_EQ(pending[0].cluster_queue, "team-a-cq");
  EXPECT_NE(pending[0].reason.find("1st in queue"), std::string::npos)
      << pending[0].reason;
  EXPECT_EQ(pending[1].workload, "team-a/w3");
  EXPECT_EQ(pending[1].position, 2);
  EXPECT_NE(pending[1].reason.find("2nd in queue"), std::string::npos)
      << pending[1].reason;
}

}  // namespace
}  // namespace allot::sched
