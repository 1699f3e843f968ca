// Metrics: Jain's index, percentiles, and a summary computed by hand.
#include "sim/report.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace allot::sim {
namespace {

TEST(JainIndexTest, KnownValues) {
  EXPECT_DOUBLE_EQ(JainIndex({1, 1, 1}), 1.0);
  EXPECT_DOUBLE_EQ(JainIndex({1, 0}), 0.5);          // One of two served.
  EXPECT_DOUBLE_EQ(JainIndex({1, 0.5}), 2.25 / 2.5);  // (1.5)^2 / (2 x 1.25)
  EXPECT_DOUBLE_EQ(JainIndex({1, 0, 0, 0}), 0.25);   // 1/n
  EXPECT_DOUBLE_EQ(JainIndex({}), 1.0);
}

TEST(PercentileTest, NearestRank) {
  std::vector<double> v = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  EXPECT_EQ(Percentile(v, 50), 5);   // ceil(5) = 5th
  EXPECT_EQ(Percentile(v, 95), 10);  // ceil(9.5) = 10th
  EXPECT_EQ(Percentile(v, 10), 1);
  EXPECT_EQ(Percentile({}, 50), 0);
}

TEST(SummarizeTest, UtilizationAndFairnessFromWindows) {
  // Two tenants entitled to 2 GPUs each, a 4-GPU cluster, 2 windows of
  // 100 s. Window 0: a runs 4 GPUs, b demands 2 and gets 0 (pending):
  // x_a = min(1, 400/min(400, 200)) = 1, x_b = 0 -> J = 0.5. Window 1:
  // a runs 2 GPUs and b demands nothing: nobody waits, not contended.
  // Utilization: (400 + 200) / (400 + 400) GPU-windows = 0.75.
  SimResult r;
  r.policy = "p";
  r.tenants = {"a", "b"};
  r.entitlement_milli = {2000, 2000};
  r.capacity_milli = 4000;
  r.window_ms = 100000;
  r.end_ms = 200000;
  r.capacity_series = {4000 * 100000LL, 4000 * 100000LL};
  r.series.resize(2);
  r.series[0].alloc = {4000 * 100000LL, 2000 * 100000LL};
  r.series[0].demand = r.series[0].alloc;
  r.series[1].alloc = {0, 0};
  r.series[1].demand = {2000 * 100000LL, 0};
  r.series[1].pending = {1000 * 100000LL, 0};
  JobOutcome a{0, 2, 0, 150000, 4000, 0, 150000, 0, 0, 0, 0};
  JobOutcome b{1, 3, 0, 100000, 2000, 100000, 200000, 100000, 0, 0, 0};
  r.jobs = {a, b};
  Trace t;
  boost::json::object s = Summarize(r, t);
  EXPECT_DOUBLE_EQ(s["utilization"].at("overall").as_double(), 0.75);
  EXPECT_DOUBLE_EQ(s["fairness"].at("jainMean").as_double(), 0.5);
  EXPECT_EQ(s["fairness"].at("contendedWindows").as_int64(), 1);
  EXPECT_DOUBLE_EQ(s["jctSeconds"].at("mean").as_double(), 175);
  EXPECT_DOUBLE_EQ(s["queueingDelaySeconds"].at("p99").as_double(), 100);
  EXPECT_DOUBLE_EQ(s["makespanSeconds"].as_double(), 200);
  const auto& pend = s["timeseries"].at("pendingJobs").at("b").as_array();
  EXPECT_DOUBLE_EQ(pend[0].as_double(), 1.0);  // One job pending all window.
  const auto& jain = s["timeseries"].at("jain").as_array();
  EXPECT_TRUE(jain[1].is_null());
}

TEST(ToJsonTest, ReadableNumbers) {
  boost::json::object o;
  o["a"] = 3600.0;
  o["b"] = 0.123456;
  o["c"] = int64_t(7);
  o["d"] = "x<y";
  EXPECT_EQ(ToJson(o), R"({"a":3600,"b":0.1235,"c":7,"d":"x<y"})");
}

TEST(HtmlReportTest, SelfContained) {
  boost::json::object s;
  s["policy"] = "</script><b>";
  std::string html = HtmlReport({s}, "t");
  EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org/2000/svg"));
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find("</script><b>"), std::string::npos);
  EXPECT_NE(html.find("createElementNS"), std::string::npos);
}

}  // namespace
}  // namespace allot::sim
