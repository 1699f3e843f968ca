#include "metrics/metrics.h"

#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>

#include <cmath>
#include <map>
#include <sstream>
#include <string>

namespace allot::metrics {
namespace {

// Every sample line of an exposition: "name{labels}" -> value. Label sets
// are written as given, so two writers of the same families agree on keys.
std::map<std::string, double> Samples(const std::string& text) {
  std::map<std::string, double> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    size_t space = line.rfind(' ');
    std::string key = line.substr(0, space);
    std::string v = line.substr(space + 1);
    // TextSerializer writes le="1.000000" style bounds in some versions:
    // normalize numbers inside le="...".
    size_t le = key.find("le=\"");
    if (le != std::string::npos) {
      size_t end = key.find('"', le + 4);
      double b = v.empty() ? 0 : std::stod(key.substr(le + 4, end - le - 4) == "+Inf"
                                               ? "inf"
                                               : key.substr(le + 4, end - le - 4));
      std::ostringstream n;
      n << b;
      key = key.substr(0, le + 4) + n.str() + key.substr(end);
    }
    out[key] = v == "+Inf" ? INFINITY : v == "-Inf" ? -INFINITY : std::stod(v);
  }
  return out;
}

TEST(WriteTextTest, SameSamplesAsPrometheusCppsSerializer) {
  Metrics m;
  m.AdmissionAttempt(true, 0.003);
  m.AdmissionAttempt(false, 0.2);
  m.Admitted({"cq-a", "team-a", "main", "high"}, 12.5);
  m.Evicted({"cq-a", "team-a", "main", ""}, "Preempted");
  m.ApiRequest("GET", "/api/v1/workloads", 200, 0.0004);
  Gauges g;
  g.Family("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).");
  g.Add({{"gpu", "0"}, {"UUID", "GPU-a"}, {"modelName", "H100 \"SXM\"\\x\nnew"}}, 97);
  g.Add({{"gpu", "1"}, {"UUID", "GPU-b"}, {"modelName", ""}}, 0.1);
  g.Family("allot_total_things", "Things.", true);
  g.Add({}, 1e21);
  g.Add({{"k", "v"}}, -3.25);
  std::vector<prometheus::MetricFamily> levels = g.Take();

  std::string ours = m.Render(levels);
  // prometheus-cpp's own serializer on the same families.
  std::string theirs = prometheus::TextSerializer().Serialize(levels);
  std::string ours_levels;
  WriteText(levels, &ours_levels);
  EXPECT_EQ(Samples(ours_levels), Samples(theirs)) << ours_levels << "\n---\n" << theirs;
  // HELP and TYPE lines are the same, byte for byte.
  auto meta = [](const std::string& t) {
    std::string out, line;
    std::istringstream in(t);
    while (std::getline(in, line)) {
      if (line[0] == '#') out += line + "\n";
    }
    return out;
  };
  EXPECT_EQ(meta(ours_levels), meta(theirs));
  // (prometheus-cpp 1.0 leaves HELP unescaped; the format escapes \\ and
  // newlines there, so a help text cannot break a scrape.)
  Gauges h;
  h.Family("x", "a \\ b\nc");
  h.Add({}, 1);
  std::string hx;
  WriteText(h.Take(), &hx);
  EXPECT_EQ(hx, "# HELP x a \\\\ b\\nc\n# TYPE x gauge\nx 1\n");
  EXPECT_NE(ours_levels.find(R"(modelName="H100 \"SXM\"\\x\nnew")"), std::string::npos)
      << ours_levels;

  // The event families: counters and histograms with Kueue's buckets.
  std::map<std::string, double> s = Samples(ours);
  EXPECT_EQ(s[R"(kueue_admission_attempts_total{result="success"})"], 1);
  EXPECT_EQ(s[R"(kueue_admission_attempts_total{result="inadmissible"})"], 1);
  EXPECT_EQ(s[R"(kueue_admitted_workloads_total{cluster_queue="cq-a",priority_class="high"})"], 1);
  EXPECT_EQ(s[R"(kueue_admission_wait_time_seconds_count{cluster_queue="cq-a",priority_class="high"})"], 1);
  EXPECT_EQ(s[R"(kueue_admission_wait_time_seconds_bucket{cluster_queue="cq-a",priority_class="high",le="10"})"], 0);
  EXPECT_EQ(s[R"(kueue_admission_wait_time_seconds_bucket{cluster_queue="cq-a",priority_class="high",le="20"})"], 1);
  EXPECT_EQ(s[R"(kueue_admission_wait_time_seconds_bucket{cluster_queue="cq-a",priority_class="high",le="inf"})"], 1);
  EXPECT_EQ(s[R"(kueue_local_queue_evicted_workloads_total{name="main",namespace="team-a",priority_class="",reason="Preempted"})"], 1);
  EXPECT_EQ(s[R"(allot_http_requests_total{code="200",method="GET",route="/api/v1/workloads"})"], 1);
  EXPECT_EQ(s[R"(DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-b",modelName=""})"], 0.1);
}

TEST(WriteTextTest, WaitBucketsAreKueues) {
  std::vector<double> b = WaitBuckets();
  ASSERT_EQ(b.size(), 14u);
  EXPECT_EQ(b[0], 1);
  EXPECT_EQ(b[1], 2.5);
  EXPECT_EQ(b[13], 2.5 * 4096);
}

}  // namespace
}  // namespace allot::metrics
