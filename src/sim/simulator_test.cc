// The simulator on tiny scenarios whose outcome is computed by hand.
#include "sim/simulator.h"

#include <gtest/gtest.h>

#include <sstream>

#include "core/manifest.h"
#include "sim/policy.h"
#include "sim/report.h"
#include "sim/test_util.h"
#include "testing/builders.h"

namespace allot::sim {
namespace {

namespace json = boost::json;

// One node of 4 GPUs; tenants a and b with 2 GPUs of quota each in one
// cohort; Kueue's default queues (reclaim Any).
std::string ClusterYaml() {
  namespace b = allot::testing;
  const std::string reclaim = "  preemption: {reclaimWithinCohort: Any}\n";
  return b::FlavorSpec("gpu", "{nodeLabels: {pool: p}}") + R"(apiVersion: allot.dev/v1
kind: NodePool
metadata: {name: n}
spec: {count: 1, gpus: 4, labels: {pool: p}}
---
)" + b::GpuCq("a", "c", "gpu", "nominalQuota: 2", reclaim) +
         b::GpuCq("b", "c", "gpu", "nominalQuota: 2", reclaim) + b::LocalQueue("a", "a", "a") +
         b::LocalQueue("b", "b", "b");
}

core::Config Cluster() { return ParseConfig(ClusterYaml()); }

SimResult RunPolicy(const std::string& policy, const Trace& trace,
              SimOptions opt = {}) {
  core::Config base = Cluster();
  auto cfg = ApplyPolicy(base, policy);
  EXPECT_TRUE(cfg.ok()) << cfg.status().ToString();
  auto r = Simulate(*cfg, base, trace, opt, policy);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return *r;
}

// a: 4 GPUs for 100 s at t=0 (borrows b's 2); b: 2 GPUs for 50 s at t=10.
constexpr char kReclaim[] =
    "submit,tenant,gpus_per_pod,duration\n"
    "0,a,4,100\n"
    "10,b,2,50\n";

TEST(SimulatorTest, ReclaimPreemptsAndLosesAllProgress) {
  // b reclaims its quota at t=10: a's job is evicted after 10 s of work
  // (no checkpoint: all lost), b runs 10..60, a restarts at 60 with its
  // full 100 s and ends at 160. a waited 0 + (60-10) = 50 s.
  SimResult r = RunPolicy("kueue", Csv(kReclaim));
  ASSERT_EQ(r.jobs.size(), 2u);
  const JobOutcome& a = r.jobs[0];
  const JobOutcome& b = r.jobs[1];
  EXPECT_EQ(a.first_admit_ms, 0);
  EXPECT_EQ(a.finish_ms, 160000);
  EXPECT_EQ(a.waited_ms, 50000);
  EXPECT_EQ(a.preemptions, 1);
  EXPECT_EQ(a.lost_ms, 10000);
  EXPECT_EQ(b.first_admit_ms, 10000);
  EXPECT_EQ(b.finish_ms, 60000);
  EXPECT_EQ(b.waited_ms, 0);
  EXPECT_EQ(r.preemption_events, 1);
  EXPECT_EQ(r.lost_preemption_gpu_ms, 10000 * 4000);  // 10 s x 4 GPUs
  EXPECT_EQ(r.end_ms, 160000);
}

// The deadlines controller on the virtual clock: ClusterQueue a lets its
// workloads run 30 s; b sets no limit.
TEST(SimulatorTest, ClusterQueueMaxRunDurationStopsLongJobs) {
  std::string text = ClusterYaml();
  const std::string a = "metadata: {name: a}";
  text.replace(text.find(a), a.size(),
               "metadata: {name: a, annotations: {allot.dev/max-run-duration: 30s}}");
  core::Config cfg;
  ASSERT_TRUE(core::ParseManifests(text, "cluster.yaml", &cfg).ok());
  ASSERT_TRUE(core::ValidateConfig(&cfg).ok());
  // a: 2 GPUs for 100 s at t=0 (stopped at 30), 1 GPU for 20 s at t=5
  // (finishes at 25); b: 1 GPU for 100 s at t=0 (no limit: finishes).
  Trace t = Csv(
      "submit,tenant,gpus_per_pod,duration\n"
      "0,a,2,100\n"
      "0,b,1,100\n"
      "5,a,1,20\n");
  auto r = Simulate(cfg, cfg, t, {}, "kueue");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->jobs.size(), 3u);
  EXPECT_EQ(r->jobs[0].killed_ms, 30000);
  EXPECT_EQ(r->jobs[0].finish_ms, -1) << "a stopped job does not finish";
  EXPECT_EQ(r->jobs[1].finish_ms, 100000);
  EXPECT_EQ(r->jobs[2].finish_ms, 25000);
  EXPECT_EQ(r->jobs[2].killed_ms, -1);
  EXPECT_EQ(r->deadline_kills, 1);
  EXPECT_EQ(r->deadline_gpu_ms, 30000 * 2000);
  json::object sum = Summarize(*r, t, 10);
  EXPECT_EQ(sum.at("deadlines").at("jobsKilled").as_int64(), 1);
  EXPECT_EQ(sum.at("jobs").at("completed").as_int64(), 2);
  // Without the annotation nothing is stopped, and the summary says nothing
  // of deadlines.
  SimResult plain = RunPolicy("kueue", t);
  EXPECT_EQ(plain.deadline_kills, 0);
  EXPECT_EQ(plain.jobs[0].finish_ms, 100000);
  EXPECT_EQ(Summarize(plain, t, 10).if_contains("deadlines"), nullptr);
}

TEST(SimulatorTest, CheckpointsKeepProgress) {
  struct Case {
    int64_t interval_ms;
    int64_t finish_ms;
    int64_t lost_ms;
  };
  // Evicted after 10 s of run time: a 5 s interval keeps all 10 s (ends
  // at 60 + 90); a 4 s one keeps 8 s and loses 2 (ends at 60 + 92); a 30 s
  // one keeps nothing.
  const Case cases[] = {{5000, 150000, 0}, {4000, 152000, 2000},
                        {30000, 160000, 10000}};
  for (const Case& k : cases) {
    SCOPED_TRACE(k.interval_ms);
    SimOptions opt;
    opt.checkpoint_interval_ms = k.interval_ms;
    SimResult r = RunPolicy("kueue", Csv(kReclaim), opt);
    EXPECT_EQ(r.jobs[0].finish_ms, k.finish_ms);
    EXPECT_EQ(r.jobs[0].lost_ms, k.lost_ms);
    EXPECT_EQ(r.lost_preemption_gpu_ms, k.lost_ms * 4000);
  }
}

TEST(SimulatorTest, NoPreemptionMeansWaiting) {
  // allot: borrowing without preemption. a runs 0..100 on all 4 GPUs; b
  // waits from 10 to 100 and runs to 150.
  SimResult r = RunPolicy("allot", Csv(kReclaim));
  EXPECT_EQ(r.jobs[0].finish_ms, 100000);
  EXPECT_EQ(r.jobs[1].first_admit_ms, 100000);
  EXPECT_EQ(r.jobs[1].waited_ms, 90000);
  EXPECT_EQ(r.jobs[1].finish_ms, 150000);
  EXPECT_EQ(r.preemption_events, 0);
}

TEST(SimulatorTest, StrictQuotasRejectWhatCanNeverFit) {
  // Without borrowing a's 4-GPU job exceeds its 2-GPU quota forever: it is
  // not submitted (it would block a StrictFIFO queue), and b runs alone.
  SimResult r = RunPolicy("strict", Csv(kReclaim));
  ASSERT_EQ(r.infeasible.size(), 1u);
  EXPECT_EQ(r.infeasible[0].line, 2);
  ASSERT_EQ(r.jobs.size(), 1u);
  EXPECT_EQ(r.jobs[0].finish_ms, 60000);
}

TEST(SimulatorTest, GlobalFifoOrdersBySubmission) {
  // fifo: one StrictFIFO queue. a1 takes 3 GPUs 0..100; a2 (2 GPUs, t=1)
  // is the head and waits; b (1 GPU, t=2) fits but is behind a2, so it
  // waits too: a2 runs 100..110, b 100..105.
  SimResult r = RunPolicy("fifo", Csv("submit,tenant,gpus_per_pod,duration\n"
                                "0,a,3,100\n"
                                "1,a,2,10\n"
                                "2,b,1,5\n"));
  EXPECT_EQ(r.jobs[1].first_admit_ms, 100000);
  EXPECT_EQ(r.jobs[2].first_admit_ms, 100000);
  EXPECT_EQ(r.jobs[2].finish_ms, 105000);
}

TEST(SimulatorTest, RejectsRowsTheClusterCannotRun) {
  // Line 2: a pod of 8 GPUs on 4-GPU nodes; line 3: no LocalQueue for c;
  // line 4: fine; line 5: 2 pods of 4 GPUs exceed what a can ever hold
  // (2 nominal + 2 borrowable): infeasible, not malformed.
  Trace t = Csv("submit,tenant,gpus_per_pod,duration,pods\n"
                "0,a,8,10,1\n"
                "0,c,1,10,1\n"
                "0,b,1,10,1\n"
                "0,a,4,10,2\n");
  SimResult r = RunPolicy("kueue", t);
  ASSERT_EQ(r.issues.size(), 2u);
  EXPECT_EQ(r.issues[0].line, 2);
  EXPECT_NE(r.issues[0].message.find("largest node has 4"), std::string::npos);
  EXPECT_EQ(r.issues[1].line, 3);
  EXPECT_NE(r.issues[1].message.find("no LocalQueue c/c"), std::string::npos);
  ASSERT_EQ(r.infeasible.size(), 1u);
  EXPECT_EQ(r.infeasible[0].line, 5);
  ASSERT_EQ(r.jobs.size(), 1u);
  EXPECT_EQ(r.jobs[0].finish_ms, 10000);
}

TEST(SimulatorTest, TotalsAreSplitIntoPodsThatFitANode) {
  // A Philly-style total of 8 GPUs on 4-GPU nodes becomes 2 pods of 4; 6
  // becomes 2 pods of 3. Without quotas (fifo) quota never stops them; the
  // single node can hold one 4-GPU pod only, so the 8-GPU job never runs
  // and the run ends with it pending.
  Trace t = Csv("submit,tenant,gpus_per_pod,duration\n0,a,1,10\n0,b,1,10\n");
  t.jobs[0].pods = 0;
  t.jobs[0].gpus = 8;
  t.jobs[1].pods = 0;
  t.jobs[1].gpus = 3;
  SimResult r = RunPolicy("fifo", t);
  EXPECT_TRUE(r.issues.empty());
  ASSERT_EQ(r.jobs.size(), 2u);
  EXPECT_EQ(r.jobs[0].gpu_milli, 8000);
  EXPECT_EQ(r.jobs[0].finish_ms, -1);
  EXPECT_EQ(r.jobs[0].first_admit_ms, -1);
  // StrictFIFO: the blocked 8-GPU head holds back the 3-GPU job too.
  EXPECT_EQ(r.jobs[1].finish_ms, -1);
}

TEST(SimulatorTest, NodeFailuresKillAndRequeueDeterministically) {
  // Long jobs on the one node with an MTBF of an hour: failures kill them
  // and they restart; the same seed gives the same outcome, another seed
  // another one.
  std::string csv = "submit,tenant,gpus_per_pod,duration\n";
  for (int i = 0; i < 20; ++i) csv += std::to_string(i * 600) + ",a,2,7200\n";
  Trace t = Csv(csv);
  SimOptions opt;
  opt.mtbf_ms = 3600 * 1000;
  opt.mttr_ms = 600 * 1000;
  opt.seed = 42;
  SimResult r1 = RunPolicy("kueue", t, opt);
  SimResult r2 = RunPolicy("kueue", t, opt);
  EXPECT_GT(r1.failure_events, 0);
  EXPECT_GT(r1.failure_kills, 0);
  EXPECT_GT(r1.lost_failure_gpu_ms, 0);
  for (const JobOutcome& o : r1.jobs) EXPECT_GE(o.finish_ms, 0);
  EXPECT_EQ(ToJson(Summarize(r1, t)), ToJson(Summarize(r2, t)));
  opt.seed = 43;
  SimResult r3 = RunPolicy("kueue", t, opt);
  EXPECT_NE(ToJson(Summarize(r1, t)), ToJson(Summarize(r3, t)));
}

TEST(SimulatorTest, SameInputsGiveByteIdenticalJson) {
  // A synthetic trace on a small cluster with contention, preemption and
  // failures: two runs, the same bytes.
  Trace t = SyntheticTrace(800, 5, 16, 2);
  for (TraceJob& j : t.jobs) {
    j.tenant = j.tenant == "t00" ? "a" : "b";
    if (j.pods * j.gpus > 4) {
      j.pods = 1;
      j.gpus = 4;
    }
  }
  SimOptions opt;
  opt.mtbf_ms = 50 * 3600 * 1000LL;
  opt.checkpoint_interval_ms = 600 * 1000;
  std::string first, second;
  for (std::string* out : {&first, &second}) {
    for (const char* p : {"fifo", "kueue", "fair"}) {
      *out += ToJson(Summarize(RunPolicy(p, t, opt), t)) + "\n";
    }
  }
  EXPECT_EQ(first, second);
  EXPECT_GT(first.size(), 1000u);
}

}  // namespace
}  // namespace allot::sim
