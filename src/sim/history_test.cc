// Traces from a server's workload list (the items of GET /api/v1/workloads).
// The live end of it (a real `allot up`) is src/cli/history_e2e_test.cc.
#include "sim/history.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace allot::sim {
namespace {

TEST(HistoryTest, FinishedWorkloadsBecomeJobs) {
  // w1: admitted at +1 s, finished at +61 s: a 60 s job of 2x4 GPUs,
  // submitted first. w2: a MIG notebook submitted 0.5 s later. w3: no GPUs
  // (left out, a note). w4: finished, no creationTimestamp (an issue,
  // item 4).
  auto items = boost::json::parse(R"([
    {"metadata":{"name":"w1","namespace":"a","creationTimestamp":"2024-05-01T10:00:00.000Z"},
     "spec":{"queueName":"qa","type":"training","podSets":[{"name":"main","count":2,
       "template":{"resources":{"requests":{"nvidia.com/gpu":"4","cpu":"8"}}}}]},
     "status":{"priority":5,"conditions":[
       {"type":"Admitted","status":"True","lastTransitionUnixMs":1714557601000},
       {"type":"Finished","status":"True","lastTransitionUnixMs":1714557661000}]}},
    {"metadata":{"name":"w2","namespace":"b","creationTimestamp":"2024-05-01T12:00:00.500+02:00"},
     "spec":{"queueName":"qb","podSets":[{"name":"main","count":1,
       "template":{"resources":{"requests":{"nvidia.com/mig-1g.10gb":1}}}}]},
     "status":{"priority":0,"conditions":[
       {"type":"Admitted","status":"True","lastTransitionUnixMs":1714557600500},
       {"type":"Finished","status":"True","lastTransitionUnixMs":1714557610500}]}},
    {"metadata":{"name":"w3","namespace":"a","creationTimestamp":"2024-05-01T10:00:00Z"},
     "spec":{"queueName":"qa","podSets":[]},"status":{"conditions":[]}},
    {"metadata":{"name":"w4","namespace":"a"},
     "spec":{"queueName":"qa","podSets":[{"name":"m","count":1,
       "template":{"resources":{"requests":{"nvidia.com/gpu":"1"}}}}]},
     "status":{"conditions":[
       {"type":"Admitted","status":"True","lastTransitionUnixMs":1714557601000},
       {"type":"Finished","status":"True","lastTransitionUnixMs":1714557661000}]}}
  ])").as_array();
  Trace t = TraceFromWorkloads(items, "http://x");
  EXPECT_EQ(t.rows, 4);
  ASSERT_EQ(t.jobs.size(), 2u);
  EXPECT_EQ(t.jobs[0].name, "w1");
  EXPECT_EQ(t.jobs[0].submit_ms, 0);
  EXPECT_EQ(t.jobs[0].duration_ms, 60000);
  EXPECT_EQ(t.jobs[0].pods, 2);
  EXPECT_EQ(t.jobs[0].gpus, 4);
  EXPECT_EQ(t.jobs[0].tenant, "a");
  EXPECT_EQ(t.jobs[0].queue, "qa");
  EXPECT_EQ(t.jobs[0].priority, "5");
  EXPECT_EQ(t.jobs[0].type, "training");
  EXPECT_EQ(t.jobs[1].name, "w2");
  EXPECT_EQ(t.jobs[1].submit_ms, 500);  // 12:00:00.5+02:00 = 10:00:00.5Z
  EXPECT_EQ(t.jobs[1].mig_profile, "1g.10gb");
  EXPECT_EQ(t.jobs[1].duration_ms, 10000);
  ASSERT_EQ(t.issues.size(), 1u);
  EXPECT_EQ(t.issues[0].line, 4);
  ASSERT_EQ(t.notes.size(), 1u);
  EXPECT_EQ(t.notes[0], "1 workloads requesting no GPUs left out");
}

// What the server lists besides finished workloads, as its JSON shows it
// (src/server/state_api.cc WorkloadJson): r is running (admitted at
// t0 + 2 s); p is pending; e was evicted and waits again (Admitted False);
// x was preempted once and then finished: its run is the last admission's.
constexpr char kLiveList[] = R"([
  {"metadata":{"name":"r","namespace":"a","creationTimestamp":"2024-05-01T10:00:00.000Z"},
   "spec":{"queueName":"q","podSets":[{"name":"main","count":1,
     "template":{"resources":{"requests":{"nvidia.com/gpu":"1"}}}}]},
   "status":{"state":"Running","priority":0,"conditions":[
     {"type":"QuotaReserved","status":"True","lastTransitionUnixMs":1714557602000},
     {"type":"Admitted","status":"True","lastTransitionUnixMs":1714557602000},
     {"type":"PodsReady","status":"True","lastTransitionUnixMs":1714557602100}]}},
  {"metadata":{"name":"p","namespace":"a","creationTimestamp":"2024-05-01T10:00:01.000Z"},
   "spec":{"queueName":"q","podSets":[{"name":"main","count":1,
     "template":{"resources":{"requests":{"nvidia.com/gpu":"8"}}}}]},
   "status":{"state":"Pending","priority":0,"conditions":[
     {"type":"QuotaReserved","status":"False","lastTransitionUnixMs":1714557601000}]}},
  {"metadata":{"name":"e","namespace":"b","creationTimestamp":"2024-05-01T10:00:01.000Z"},
   "spec":{"queueName":"q","podSets":[{"name":"main","count":1,
     "template":{"resources":{"requests":{"nvidia.com/gpu":"1"}}}}]},
   "status":{"state":"Requeued","priority":0,"conditions":[
     {"type":"QuotaReserved","status":"False","lastTransitionUnixMs":1714557605000},
     {"type":"Admitted","status":"False","lastTransitionUnixMs":1714557605000},
     {"type":"Evicted","status":"True","lastTransitionUnixMs":1714557605000}]}},
  {"metadata":{"name":"x","namespace":"b","creationTimestamp":"2024-05-01T10:00:00.000Z"},
   "spec":{"queueName":"q","podSets":[{"name":"main","count":3,
     "template":{"resources":{"requests":{"nvidia.com/gpu":"2"}}}}]},
   "status":{"state":"Succeeded","priority":0,"conditions":[
     {"type":"QuotaReserved","status":"False","lastTransitionUnixMs":1714557630000},
     {"type":"Admitted","status":"True","lastTransitionUnixMs":1714557610000},
     {"type":"Evicted","status":"False","lastTransitionUnixMs":1714557610000},
     {"type":"Preempted","status":"True","lastTransitionUnixMs":1714557605000},
     {"type":"Finished","status":"True","lastTransitionUnixMs":1714557630000}]}}
])";

TEST(HistoryTest, RunningWorkloadsEndWhenTheListWasRead) {
  auto items = boost::json::parse(kLiveList).as_array();
  // Read at t0 + 12 s: r has run 10 s.
  Trace t = TraceFromWorkloads(items, "http://x", 1714557612000);
  ASSERT_EQ(t.jobs.size(), 2u);
  EXPECT_EQ(t.jobs[0].name, "r");
  EXPECT_EQ(t.jobs[0].duration_ms, 10000);
  EXPECT_EQ(t.jobs[1].name, "x");
  EXPECT_EQ(t.jobs[1].submit_ms, 0);
  EXPECT_EQ(t.jobs[1].duration_ms, 20000);
  EXPECT_EQ(t.jobs[1].pods, 3);
  EXPECT_EQ(t.jobs[1].gpus, 2);
  EXPECT_TRUE(t.issues.empty());
  ASSERT_EQ(t.notes.size(), 2u);
  EXPECT_EQ(t.notes[0],
            "1 workloads still running when the history was read: replayed "
            "with their run time so far");
  EXPECT_EQ(t.notes[1],
            "2 workloads not admitted when the history was read (pending, or "
            "requeued after an eviction) left out");

  // Without the server's time, a running workload has no end: left out.
  t = TraceFromWorkloads(items, "http://x");
  ASSERT_EQ(t.jobs.size(), 1u);
  EXPECT_EQ(t.jobs[0].name, "x");
  EXPECT_EQ(t.notes[0], "1 workloads still running left out (the server did not say its time)");
}

TEST(HistoryTest, PagesReadOneByOneMatchOneArray) {
  auto items = boost::json::parse(kLiveList).as_array();
  HistoryReader r("http://x");
  r.AddNote("only tenant a's workloads");
  for (const auto& w : items) r.Add(w);
  Trace paged = r.Finish(1714557612000);
  Trace whole = TraceFromWorkloads(items, "http://x", 1714557612000);
  ASSERT_EQ(paged.jobs.size(), whole.jobs.size());
  for (size_t i = 0; i < paged.jobs.size(); ++i) {
    EXPECT_EQ(paged.jobs[i].name, whole.jobs[i].name);
    EXPECT_EQ(paged.jobs[i].line, whole.jobs[i].line);
  }
  EXPECT_EQ(paged.notes.size(), whole.notes.size() + 1);
  EXPECT_EQ(paged.notes[0], "only tenant a's workloads");
}

TEST(HistoryTest, Rfc3339) {
  int64_t ms = 0;
  ASSERT_TRUE(ParseRfc3339Ms("1970-01-01T00:00:01.250Z", &ms));
  EXPECT_EQ(ms, 1250);
  ASSERT_TRUE(ParseRfc3339Ms("1970-01-01T01:00:00+01:00", &ms));
  EXPECT_EQ(ms, 0);
  EXPECT_FALSE(ParseRfc3339Ms("1970-01-01", &ms));
  EXPECT_FALSE(ParseRfc3339Ms("1970-13-01T00:00:00Z", &ms));
}

}  // namespace
}  // namespace allot::sim
