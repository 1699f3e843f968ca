// Autoscaled pools on the virtual clock (sim/pools.h, ctrl/autoscaler.h):
// small scenarios whose waits and node time follow from the boot delay and
// the scale-down delay.
#include <gtest/gtest.h>

#include "sim/pools.h"
#include "sim/report.h"
#include "sim/simulator.h"
#include "sim/test_util.h"
#include "testing/builders.h"

namespace allot::sim {
namespace {

constexpr int64_t kMin = 60000;
constexpr int64_t kHour = 60 * kMin;

// Pool p: up to 4 nodes of 8 GPUs, none at first, a 5-minute boot, idle
// nodes suspended after 10 minutes, all at once; tenant a has 32 GPUs.
core::Config Cluster(const std::string& provider = "{type: simulated, bootDelay: 5m}") {
  namespace b = allot::testing;
  return ParseConfig(b::FlavorSpec("gpu", "{nodeLabels: {pool: p}}") +
                     "apiVersion: allot.dev/v1\nkind: NodePool\nmetadata: {name: p}\n"
                     "spec:\n  maxNodes: 4\n  gpus: 8\n  labels: {pool: p}\n"
                     "  provider: " + provider + "\n"
                     "  pricePerNodeHour: \"10\"\n  scaleDownDelay: 10m\n"
                     "  disruptionBudget: {maxNodes: 4}\n---\n" +
                     b::GpuCq("a", "", "gpu", "nominalQuota: 32") + b::LocalQueue("a", "a", "a"));
}

// At 0 a gang of 2x8 GPUs and a job of 8; at 3h one more of 8; an hour each.
const char kTrace[] =
    "submit,tenant,pods,gpus_per_pod,duration\n"
    "0,a,2,8,1h\n"
    "0,a,1,8,1h\n"
    "10800,a,1,8,1h\n";

SimResult RunMode(const std::string& mode, const core::Config& base = Cluster()) {
  auto cfg = ApplyAutoscale(base, mode);
  EXPECT_TRUE(cfg.ok()) << cfg.status().ToString();
  auto r = Simulate(*cfg, base, Csv(kTrace), SimOptions{}, "as-given");
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  r->autoscale = mode;  // As `allot simulate --autoscale` labels it.
  return *r;
}

TEST(AutoscaleSimTest, ReactivePoolsBootForTheBacklogAndSuspendWhenIdle) {
  SimResult r = RunMode("reactive");
  ASSERT_EQ(r.jobs.size(), 3u);
  // Each job waits exactly one boot: three nodes at 0, one at 3h.
  for (const JobOutcome& o : r.jobs) {
    EXPECT_EQ(o.waited_ms, 5 * kMin);
    EXPECT_EQ(o.finish_ms, o.submit_ms + 5 * kMin + kHour);
  }
  ASSERT_EQ(r.pools.size(), 1u);
  const PoolResult& p = r.pools[0];
  EXPECT_EQ(p.boots, 4);
  EXPECT_EQ(p.boot_failures, 0);
  EXPECT_EQ(p.scale_ups, 2);
  EXPECT_EQ(p.suspends, 4);
  EXPECT_EQ(p.peak_nodes, 3);
  // Every node from its resume to 10 minutes after its job: 1h15m each.
  EXPECT_EQ(p.node_ms, 4 * (kHour + 15 * kMin));
  EXPECT_EQ(p.boot_ms, (std::vector<int64_t>{5 * kMin, 5 * kMin, 5 * kMin, 5 * kMin}));
  // The capacity series counts nodes while they are ready.
  int64_t cap = 0;
  for (int64_t c : r.capacity_series) cap += c;
  EXPECT_EQ(cap, 4 * 8000 * (kHour + 10 * kMin));

  const auto s = Summarize(r, Csv(kTrace));
  EXPECT_EQ(s.at("policy").as_string(), "as-given/reactive");
  EXPECT_DOUBLE_EQ(s.at("autoscale").at("nodeHours").to_number<double>(), 5.0);
  EXPECT_DOUBLE_EQ(s.at("autoscale").at("cost").to_number<double>(), 50.0);
}

TEST(AutoscaleSimTest, AFixedPoolNeverWaitsAndCostsItsPeakAllAlong) {
  SimResult r = RunMode("fixed");
  for (const JobOutcome& o : r.jobs) EXPECT_EQ(o.waited_ms, 0);
  ASSERT_EQ(r.pools.size(), 1u);
  EXPECT_EQ(r.pools[0].boots, 0);
  EXPECT_EQ(r.pools[0].suspends, 0);
  EXPECT_EQ(r.pools[0].node_ms, 4 * 4 * kHour);  // Four nodes to the last finish.
}

TEST(AutoscaleSimTest, HeadroomByArrivalsKeepsANodeWhileWorkArrives) {
  // 24 GPUs arrive at 0: over a 5-minute boot that is 2 GPUs, so a fourth
  // node boots beside the three the backlog asks for, and stays while the
  // rate (over the last hour) says work comes.
  SimResult r = RunMode("headroom");
  ASSERT_EQ(r.pools.size(), 1u);
  EXPECT_EQ(r.pools[0].peak_nodes, 4);
  EXPECT_GT(r.pools[0].node_ms, RunMode("reactive").pools[0].node_ms);
  for (const JobOutcome& o : r.jobs) EXPECT_LE(o.waited_ms, 5 * kMin);
}

TEST(AutoscaleSimTest, NodesThatNeverRegisterAreRetriedThenGivenUp) {
  // Every boot fails: the autoscaler reports each at its boot timeout
  // (10m), backs off, and the run still ends with the work never admitted.
  SimResult r = RunMode("reactive", Cluster("{type: simulated, bootDelay: 5m, failureRate: \"1\"}"));
  ASSERT_EQ(r.pools.size(), 1u);
  EXPECT_GT(r.pools[0].boot_failures, 10);
  EXPECT_EQ(r.pools[0].boot_failures, r.pools[0].boots);
  for (const JobOutcome& o : r.jobs) EXPECT_EQ(o.first_admit_ms, -1);
}

TEST(AutoscaleSimTest, ModesAreCheckedAndNeedAnAutoscaledPool) {
  EXPECT_FALSE(ApplyAutoscale(Cluster(), "eager").ok());
  EXPECT_FALSE(ApplyAutoscale(Cluster(), "headroom=soon").ok());
  auto w = ApplyAutoscale(Cluster(), "headroom=30m");
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_TRUE(w->node_pools[0].headroom_arrivals);
  EXPECT_EQ(w->node_pools[0].headroom_window_ms, 30 * kMin);
  auto f = ApplyAutoscale(Cluster(), "fixed");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->node_pools[0].min_nodes, 4);
  core::Config none = Cluster();
  none.node_pools.clear();
  auto r = ApplyAutoscale(none, "reactive");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no autoscaled NodePool"), std::string::npos);
}

}  // namespace
}  // namespace allot::sim
