// Parking on the virtual clock (simulator.h, idle_model.h): the idle model
// itself, and small scenarios whose figures follow from the drawn idle
// periods (computed here with the same function).
#include <gtest/gtest.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "sim/idle_model.h"
#include "sim/policy.h"
#include "sim/report.h"
#include "sim/simulator.h"
#include "sim/test_util.h"
#include "testing/builders.h"

namespace allot::sim {
namespace {

constexpr int64_t kHour = 3600000;

TEST(IdleModelTest, ParsesAndRefusesSayingWhy) {
  auto m = ParseIdleModel("busy=2h,idle=6h,long=12h");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->busy_mean_ms, 2 * kHour);
  EXPECT_EQ(m->idle_mean_ms, 6 * kHour);
  EXPECT_EQ(m->long_ms, 12 * kHour);
  for (const char* bad : {"", "busy=2h", "busy=2h,idle=0", "busy=2h,idle=1h,nap=3h",
                          "busy=2h,idle", "busy=soon,idle=1h"}) {
    auto r = ParseIdleModel(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("--idle-model"), std::string::npos) << bad;
  }
  EXPECT_TRUE(LongRunning(*m, "notebook", 1));
  EXPECT_TRUE(LongRunning(*m, "inference", 1));
  EXPECT_FALSE(LongRunning(*m, "batch", 11 * kHour));
  EXPECT_TRUE(LongRunning(*m, "batch", 12 * kHour));
  EXPECT_FALSE(LongRunning(IdleModel{}, "notebook", 100 * kHour));
}

TEST(IdleModelTest, PeriodsAreDisjointWithinTheLifeAndFollowTheMeans) {
  IdleModel m{kHour, 3 * kHour, 0};
  int64_t idle = 0, life = 0;
  for (int64_t i = 0; i < 400; ++i) {
    const int64_t duration = 200 * kHour;
    auto p = IdlePeriods(m, 7, i, duration);
    EXPECT_EQ(p, IdlePeriods(m, 7, i, duration));  // Deterministic.
    int64_t prev = 0;
    for (const auto& [from, to] : p) {
      EXPECT_LT(prev, from);  // Busy first, and between.
      EXPECT_LT(from, to);
      EXPECT_LE(to, duration);
      prev = to;
      idle += to - from;
    }
    life += duration;
  }
  // About 3/4 of the time idle (means 1 h busy, 3 h idle).
  EXPECT_NEAR(double(idle) / double(life), 0.75, 0.03);
  EXPECT_NE(IdlePeriods(m, 7, 1, 200 * kHour), IdlePeriods(m, 8, 1, 200 * kHour));
  // The preemptible draw: about the share asked, the same each time.
  int drawn = 0;
  for (int64_t i = 0; i < 10000; ++i) drawn += DrawnPreemptible(0.3, 1, i);
  EXPECT_NEAR(drawn, 3000, 200);
  EXPECT_EQ(DrawnPreemptible(0.3, 1, 42), DrawnPreemptible(0.3, 1, 42));
  EXPECT_FALSE(DrawnPreemptible(0, 1, 42));
}

// One node of 4 GPUs; tenants a and b with 2 GPUs of quota each in cohort
// c (b_quota: b's, more than the node has left when overcommitted).
core::Config Cluster(int b_quota = 2) {
  namespace b = allot::testing;
  return ParseConfig(b::FlavorSpec("gpu", "{nodeLabels: {pool: p}}") + R"(apiVersion: allot.dev/v1
kind: NodePool
metadata: {name: n}
spec: {count: 1, gpus: 4, labels: {pool: p}}
---
)" + b::GpuCq("a", "c", "gpu", "nominalQuota: 2") +
                     b::GpuCq("b", "c", "gpu", "nominalQuota: " + std::to_string(b_quota)) +
                     b::LocalQueue("a", "a", "a") + b::LocalQueue("b", "b", "b"));
}

// The first idle period of `periods` longer than park-after (30 min) that
// ends at least `margin` before `life`; periods.size() if none.
size_t FirstParkable(const std::vector<std::pair<int64_t, int64_t>>& periods, int64_t life,
                     int64_t margin) {
  size_t i = 0;
  while (i < periods.size() && (periods[i].second - periods[i].first <= kHour / 2 + 2000 ||
                                periods[i].second + margin >= life)) {
    ++i;
  }
  return i;
}

SimResult RunSim(const std::string& policy, const Trace& trace, SimOptions opt,
                 int b_quota = 2) {
  core::Config base = Cluster(b_quota);
  auto cfg = ApplyPolicy(base, policy);
  EXPECT_TRUE(cfg.ok()) << cfg.status().ToString();
  if (PolicyParks(policy)) opt.park_after_ms = kHour / 2;
  auto r = Simulate(*cfg, base, trace, opt, policy);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return *r;
}

// a's notebook (2 GPUs, 100 h) goes idle at times; b's batch job holds b's
// quota all along. a's second job (not preemptible) must wait for the
// notebook's end with or without parking: parking keeps the quota. b's
// preemptible job, submitted while the notebook is parked, runs on its
// GPUs and is evicted when the notebook resumes, which is at once.
TEST(ParkingSimTest, ParkedQuotaIsKeptLentToPreemptibleWorkAndTakenBackAtOnce) {
  const IdleModel model{4 * kHour, 8 * kHour, 0};
  SimOptions opt;
  opt.idle = model;
  const int64_t life = 100 * kHour;
  const auto periods = IdlePeriods(model, opt.seed, 0, life);
  const size_t first = FirstParkable(periods, life, 0);
  ASSERT_LT(first, periods.size()) << "the draw has no idle period to park in";
  const int64_t parked_at = periods[first].first + kHour / 2;
  const int64_t spot_at = (parked_at / 1000 + 1) * 1000;  // The CSV is in seconds.
  const Trace trace = Csv(
      "submit,tenant,gpus_per_pod,duration,type,preemptible\n"
      "0,a,2,100h,notebook,false\n"
      "0,b,2,200h,batch,false\n"
      "1,a,2,1h,batch,false\n" +
      std::to_string(spot_at / 1000) + ",b,2,300h,batch,true\n");
  int64_t idle_total = 0, parkable = 0;
  for (const auto& [from, to] : periods) {
    idle_total += to - from;
    parkable += std::max<int64_t>(0, (to - from) - kHour / 2);
  }

  for (const std::string policy : {"allot", "park"}) {
    SCOPED_TRACE(policy);
    SimResult r = RunSim(policy, trace, opt);
    ASSERT_EQ(r.jobs.size(), 4u);
    const JobOutcome& notebook = r.jobs[0];
    const JobOutcome& second = r.jobs[2];
    const JobOutcome& spot = r.jobs[3];
    EXPECT_EQ(r.park.long_running_jobs, 1);
    EXPECT_EQ(r.park.preemptible_jobs, 1);
    EXPECT_EQ(notebook.first_admit_ms, 0);
    EXPECT_EQ(notebook.finish_ms, life);  // Its life goes on while parked.
    EXPECT_EQ(notebook.preemptions, 0);
    // a's quota is the notebook's all along: its second job waits for it.
    EXPECT_EQ(second.first_admit_ms, life);
    if (policy == "allot") {
      EXPECT_FALSE(r.parking);
      EXPECT_EQ(r.park.idle_held_gpu_ms, 2000 * idle_total);
      EXPECT_EQ(r.park.parked_gpu_ms, 0);
      EXPECT_EQ(r.park.parks, 0);
      EXPECT_GT(spot.first_admit_ms, life);  // No capacity for it anywhere.
      continue;
    }
    EXPECT_TRUE(r.parking);
    // Every idle period longer than park-after is parked in, and resumed
    // from at its end without waiting (the borrower is evicted).
    EXPECT_EQ(r.park.parked_gpu_ms, 2000 * parkable);
    EXPECT_EQ(r.park.idle_held_gpu_ms, 2000 * (idle_total - parkable));
    EXPECT_GE(r.park.parks, 1);
    EXPECT_EQ(r.park.resumes_waited, 0);
    ASSERT_FALSE(r.park.resume_latency_ms.empty());
    for (int64_t ms : r.park.resume_latency_ms) EXPECT_EQ(ms, 0);
    // The preemptible job ran on the parked GPUs as soon as it came, and
    // was the one to go when the notebook resumed.
    EXPECT_EQ(spot.first_admit_ms, spot_at);
    EXPECT_GE(spot.preemptions, 1);
    EXPECT_GE(r.park.reclaims, 1);
    EXPECT_GT(r.park.lent_gpu_ms, 0);
    EXPECT_LE(r.park.lent_gpu_ms, r.park.parked_gpu_ms);
    EXPECT_EQ(r.preemption_events, r.park.reclaims);
    // The report carries the what-if.
    boost::json::object s = Summarize(r, trace);
    ASSERT_TRUE(s.contains("parking"));
    EXPECT_EQ(s.at("parking").at("reclaims").as_int64(), r.park.reclaims);
    EXPECT_NE(CompareTable({s}).find("given back"), std::string::npos);
  }
}

// Quota overcommitted (b: 4 of a 4-GPU node beside a's 2): b's plain job
// takes the GPUs a parked notebook gave back, within b's own quota. The
// notebook's resume finds none, waits, and runs the instant that job ends.
TEST(ParkingSimTest, AResumeWithoutDevicesWaitsForThem) {
  const IdleModel model{4 * kHour, 8 * kHour, 0};
  SimOptions opt;
  opt.idle = model;
  const int64_t life = 100 * kHour;
  const auto periods = IdlePeriods(model, opt.seed, 0, life);
  const size_t first = FirstParkable(periods, life, kHour);
  ASSERT_LT(first, periods.size()) << "the draw has no idle period to park in";
  const int64_t taken_at = (periods[first].first + kHour / 2) / 1000 * 1000 + 1000;
  const int64_t wake = periods[first].second;
  const int64_t freed = (wake + 600000) / 1000 * 1000;  // 10 min after the wake.
  const Trace trace = Csv("submit,tenant,gpus_per_pod,duration,type\n"
                          "0,a,2,100h,notebook\n"
                          "0,b,2,200h,batch\n" +
                          std::to_string(taken_at / 1000) + ",b,2," +
                          std::to_string((freed - taken_at) / 1000) + ",batch\n");
  SimResult r = RunSim("park", trace, opt, /*b_quota=*/4);
  ASSERT_EQ(r.jobs.size(), 3u);
  EXPECT_EQ(r.jobs[2].first_admit_ms, taken_at);
  EXPECT_EQ(r.jobs[2].finish_ms, freed);
  EXPECT_EQ(r.park.resumes_waited, 1);
  EXPECT_EQ(r.park.reclaims, 0);  // Nothing to take back: b runs on its own quota.
  ASSERT_FALSE(r.park.resume_latency_ms.empty());
  EXPECT_EQ(*std::max_element(r.park.resume_latency_ms.begin(), r.park.resume_latency_ms.end()),
            freed - wake);
  EXPECT_EQ(r.jobs[0].finish_ms, life);
  EXPECT_EQ(r.park.resumes_unserved, 0);
}

// The same run twice gives the same figures, bit for bit.
TEST(ParkingSimTest, IsDeterministic) {
  SimOptions opt;
  opt.idle = IdleModel{kHour, 2 * kHour, 10 * kHour};
  opt.preemptible_fraction = 0.5;
  Trace t = Csv(
      "submit,tenant,gpus_per_pod,duration,type\n"
      "0,a,1,40h,inference\n0,a,1,30h,notebook\n0,b,2,12h,batch\n"
      "60,a,1,2h,batch\n90,b,1,3h,batch\n120,b,2,5h,batch\n300,a,2,1h,batch\n");
  SimResult x = RunSim("park", t, opt), y = RunSim("park", t, opt);
  EXPECT_EQ(ToJson(Summarize(x, t)), ToJson(Summarize(y, t)));
  EXPECT_EQ(x.park.long_running_jobs, 3);  // Two by type, one by length.
}

}  // namespace
}  // namespace allot::sim
