// Traces from a server's workload list (the items of GET /api/v1/workloads).
#include "sim/history.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace allot::sim {
namespace {

TEST(HistoryTest, FinishedWorkloadsBecomeJobs) {
  // w1: admitted at +1 s, finished at +61 s: a 60 s job of 2x4 GPUs,
  // submitted first. w2: a MIG notebook submitted 0.5 s later. w3: not
  // finished (left out, a note). w4: finished, no GPUs (an issue, item 4).
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
    {"metadata":{"name":"w4","namespace":"a","creationTimestamp":"2024-05-01T10:00:00Z"},
     "spec":{"queueName":"qa","podSets":[{"name":"m","count":1,"template":{}}]},
     "status":{"conditions":[
       {"type":"Admitted","status":"True","lastTransitionUnixMs":1714557601000},
       {"type":"Finished","status":"True","lastTransitionUnixMs":1714557661000}]}}
  ])").as_array();
  Trace t = TraceFromWorkloads(items, "http://x");
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
  EXPECT_NE(t.notes[0].find("1 workloads not finished"), std::string::npos);
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
