// Scheduler::CapacityDemands: what an autoscaler may add nodes for.
#include <gtest/gtest.h>

#include "sched/scheduler_test_util.h"

namespace allot::sched::testing {
namespace {

std::vector<std::string> Keys(const std::vector<CapacityDemand>& d) {
  std::vector<std::string> out;
  for (const CapacityDemand& x : d) out.push_back(x.key);
  return out;
}

TEST(CapacityDemandTest, ListsOnlyWhatTheQuotaLeftWouldAdmitInQueueOrder) {
  // One 8-GPU node; 32 GPUs of quota in cohort c, all team-a's, which
  // team-b may borrow. Everything but a/run waits for nodes; the quota
  // left (24) holds a/w1 (8), then b/x (8, borrowed), not a/w2 (16), then
  // a/w3 (8): a/w2 and a/w4 wait for quota too and ask for no node.
  auto s = BuildScheduler(
      kH100 + GpuNodes("h", 1, "H100-80GB") + GpuCq("team-a-cq", "c", "h100", "nominalQuota: 32") +
      GpuCq("team-b-cq", "c", "h100", "nominalQuota: 0") +
      Wl("team-a/run").Queue("q").Created(1).Gpus(8).Yaml() +
      Wl("team-a/w1").Queue("q").Created(2).Gpus(8).Yaml() +
      Wl("team-b/x").Queue("q").Created(3).Gpus(8).Yaml() +
      Wl("team-a/w2").Queue("q").Created(4).Gpus(8).Count(2).Yaml() +
      Wl("team-a/w3").Queue("q").Created(5).Gpus(8).Yaml() +
      Wl("team-a/w4").Queue("q").Created(6).Gpus(8).Yaml());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  Scheduler& sched = **s;
  sched.RunUntilQuiescent();
  sched.TEST_SettleAll();
  ASSERT_TRUE(sched.AdmissionOf("team-a/run").has_value());
  const std::vector<CapacityDemand> d = sched.CapacityDemands();
  EXPECT_EQ(Keys(d), (std::vector<std::string>{"team-a/w1", "team-b/x", "team-a/w3"}));
  ASSERT_FALSE(d.empty());
  EXPECT_EQ(d[0].cluster_queue, "team-a-cq");
  EXPECT_EQ(d[0].flavors, (std::vector<std::string>{"h100"}));
  ASSERT_EQ(d[0].pod_sets.size(), 1u);
  EXPECT_EQ(d[0].pod_sets[0].count, 1);
  EXPECT_EQ(d[0].pod_sets[0].gpus, 8);
  // The per-flavor count has all five waiting ones: each alone fits the
  // quota left.
  const std::vector<CapacityBlocked> by = sched.CapacityBlockedByFlavor();
  ASSERT_EQ(by.size(), 1u);
  EXPECT_EQ(by[0].workloads, 5);

  // The node's GPUs and what is free on it.
  std::optional<NodePool::NodeFree> f = sched.NodeFree("h-0");
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->gpus, 8);
  EXPECT_EQ(f->gpus_free, 0);
  EXPECT_FALSE(sched.NodeFree("nope").has_value());
  EXPECT_NE(sched.Flavor("h100"), nullptr);
  EXPECT_EQ(sched.Flavor("nope"), nullptr);
}

}  // namespace
}  // namespace allot::sched::testing
