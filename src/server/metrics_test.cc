// GET /metrics end to end: a real `allot serve`, the test playing the agent
// (so GPU samples and placements are exact), and the exposition parsed line
// by line: Kueue's queue metrics, DCGM's GPU metrics with the holder of each
// GPU, Allot's own, and who may read them.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "server/test_server.h"
#include "testing/builders.h"

namespace allot::server {
namespace {

using testing::TestServer;
namespace json = boost::json;

// Two teams of 4 GPUs in cohort `all`: cq-a may borrow 2, cq-b reclaims.
std::string Cluster() {
  namespace t = allot::testing;
  return t::Namespace("team-a", "{}") + t::Namespace("team-b", "{}") + t::Flavor("h100", "") +
         t::GpuCq("cq-a", "all", "h100", "nominalQuota: 4, borrowingLimit: 2") +
         t::GpuCq("cq-b", "all", "h100", "nominalQuota: 4",
                  "  preemption: {reclaimWithinCohort: Any}\n") +
         t::LocalQueue("team-a", "q", "cq-a") + t::LocalQueue("team-b", "q", "cq-b");
}

std::string Workload(const std::string& ns, const std::string& name, int gpus) {
  return allot::testing::WorkloadJson(ns + "/" + name).Gpus(gpus).Command({"true"});
}

// The node "n1" with 8 GPUs GPU-n1-0..7 and, when `util` is given, one
// sample per GPU (GPU i at util[i] %).
std::string Sync(const std::vector<int>& util, const std::string& extra_sample = "",
                 const std::string& pods = "") {
  std::string gpus, samples;
  for (int i = 0; i < 8; ++i) {
    gpus += std::string(i ? "," : "") + R"({"uuid":"GPU-n1-)" + std::to_string(i) +
            R"(","product":"H100-80GB","memory":"80Gi"})";
  }
  for (size_t i = 0; i < util.size(); ++i) {
    samples += std::string(i ? "," : "") + R"({"uuid":"GPU-n1-)" + std::to_string(i) +
               R"(","index":)" + std::to_string(i) + R"(,"util":)" +
               std::to_string(util[i]) + R"(,"temp":)" + std::to_string(40 + i) +
               R"(,"power":350.5,"fbUsed":1073741824,"eccDbe":0,"xid":)" +
               (i == 7 ? "79" : "0") + "}";
  }
  if (!extra_sample.empty()) samples += (samples.empty() ? "" : ",") + extra_sample;
  return R"({"node":{"apiVersion":"allot.dev/v1","kind":"Node","metadata":{"name":"n1"},
      "status":{"capacity":{"cpu":"64","memory":"512Gi"},"gpus":[)" +
         gpus + R"(]}},"simulated":true,"gpuSamples":[)" + samples + "]" +
         (pods.empty() ? "" : R"(,"pods":[)" + pods + "]") + "}";
}

// One sample: the value of the first line of family `name` whose labels
// include every pair of `want`; NaN when none.
double Value(const std::string& text, const std::string& name,
             const std::map<std::string, std::string>& want) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    size_t brace = line.find('{');
    size_t space = line.rfind(' ');
    std::string metric = line.substr(0, brace == std::string::npos ? space : brace);
    if (metric != name) continue;
    std::map<std::string, std::string> labels;
    if (brace != std::string::npos) {
      std::string body = line.substr(brace + 1, line.rfind('}') - brace - 1);
      size_t at = 0;
      while (at < body.size()) {
        size_t eq = body.find('=', at);
        size_t end = body.find('"', eq + 2);
        labels[body.substr(at, eq - at)] = body.substr(eq + 2, end - eq - 2);
        at = end + 2;  // past '",'
      }
    }
    bool ok = true;
    for (const auto& [k, v] : want) {
      auto it = labels.find(k);
      if (it == labels.end() || it->second != v) ok = false;
    }
    if (ok) return std::stod(line.substr(space + 1));
  }
  return std::nan("");
}

class MetricsTest : public testing::ServerTest {
 protected:
  void SetUp() override { StartServer(Cluster(), Sync({})); }
  std::string Scrape() {
    net::Response r = srv_->Call(srv_->admin_token(), "GET", "/metrics");
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_NE(r.content_type.find("text/plain"), std::string::npos);
    return r.body;
  }
};

TEST_F(MetricsTest, KueueQueueMetricsMatchTheApi) {
  int code = 0;
  // team-a: 4 GPUs, then 2 borrowed from cq-b's idle quota; then one that
  // cannot fit anywhere (inadmissible, set aside).
  for (auto [name, gpus] : {std::pair{"w4", 4}, {"w2", 2}, {"huge", 8}}) {
    srv_->Json("POST", "/api/v1/workloads", Workload("team-a", name, gpus), &code);
    ASSERT_EQ(code, 201);
  }
  std::string m = Scrape();
  const std::map<std::string, std::string> cq{{"cluster_queue", "cq-a"}};
  const std::map<std::string, std::string> cell{
      {"cohort", "all"}, {"cluster_queue", "cq-a"}, {"flavor", "h100"},
      {"resource", "nvidia.com/gpu"}};
  EXPECT_EQ(Value(m, "kueue_admitted_active_workloads", cq), 2) << m;
  EXPECT_EQ(Value(m, "kueue_reserving_active_workloads", cq), 2);
  EXPECT_EQ(Value(m, "kueue_pending_workloads",
                  {{"cluster_queue", "cq-a"}, {"status", "inadmissible"}}), 1);
  EXPECT_EQ(Value(m, "kueue_pending_workloads",
                  {{"cluster_queue", "cq-a"}, {"status", "active"}}), 0);
  EXPECT_EQ(Value(m, "kueue_cluster_queue_nominal_quota", cell), 4);
  // GPU states count without telemetry too (none was sent yet).
  EXPECT_EQ(Value(m, "allot_gpus", {{"state", "allocated"}, {"simulated", "true"}}), 6);
  EXPECT_EQ(Value(m, "allot_gpus", {{"state", "free"}, {"simulated", "true"}}), 2);
  EXPECT_EQ(Value(m, "kueue_cluster_queue_borrowing_limit", cell), 2);
  EXPECT_EQ(Value(m, "kueue_cluster_queue_resource_usage", cell), 6);
  EXPECT_EQ(Value(m, "kueue_cluster_queue_resource_reservation", cell), 6);
  EXPECT_EQ(Value(m, "allot_cluster_queue_resource_borrowed", cell), 2);
  // cq-b, idle, is the only lender: it lends what cq-a borrows.
  std::map<std::string, std::string> cell_b = cell;
  cell_b["cluster_queue"] = "cq-b";
  EXPECT_EQ(Value(m, "allot_cluster_queue_resource_lent", cell_b), 2);
  EXPECT_EQ(Value(m, "allot_cluster_queue_resource_lent", cell), 0);
  EXPECT_TRUE(std::isnan(Value(m, "kueue_cluster_queue_lending_limit", cell)));
  EXPECT_EQ(Value(m, "kueue_cluster_queue_status",
                  {{"cluster_queue", "cq-a"}, {"status", "active"}}), 1);
  EXPECT_GT(Value(m, "kueue_cluster_queue_weighted_share", cq), 0);
  EXPECT_EQ(Value(m, "kueue_admitted_workloads_total", cq), 2);
  EXPECT_EQ(Value(m, "kueue_quota_reserved_workloads_total", cq), 2);
  EXPECT_EQ(Value(m, "kueue_admission_wait_time_seconds_count", cq), 2);
  EXPECT_GE(Value(m, "kueue_admission_attempts_total", {{"result", "success"}}), 1);
  EXPECT_GE(Value(m, "kueue_admission_attempts_total", {{"result", "inadmissible"}}), 1);
  const std::map<std::string, std::string> lq{{"name", "q"}, {"namespace", "team-a"}};
  EXPECT_EQ(Value(m, "kueue_local_queue_admitted_active_workloads", lq), 2);
  EXPECT_EQ(Value(m, "kueue_local_queue_pending_workloads",
                  {{"name", "q"}, {"namespace", "team-a"}, {"status", "inadmissible"}}), 1);
  EXPECT_EQ(Value(m, "kueue_local_queue_resource_usage",
                  {{"name", "q"}, {"namespace", "team-a"}, {"flavor", "h100"},
                   {"resource", "nvidia.com/gpu"}}), 6);
  EXPECT_EQ(Value(m, "kueue_local_queue_status",
                  {{"name", "q"}, {"namespace", "team-a"}, {"active", "True"}}), 1);

  // The same numbers as the API's ClusterQueue status.
  json::value st = srv_->Json("GET", "/api/v1/clusterqueues/cq-a");
  EXPECT_EQ(st.at("status").at("admittedWorkloads").as_int64(), 2);
  EXPECT_EQ(st.at("status").at("pendingWorkloads").as_int64(), 1);
  json::value stb = srv_->Json("GET", "/api/v1/clusterqueues/cq-b");
  EXPECT_EQ(stb.at("status").at("flavorsUsage").at(0).at("resources").at(0).at("lent").as_string(),
            "2") << json::serialize(stb);

  // team-b reclaims its quota: w2 (borrowing) is preempted and evicted.
  srv_->Json("POST", "/api/v1/workloads", Workload("team-b", "b4", 4), &code);
  ASSERT_EQ(code, 201);
  m = Scrape();
  EXPECT_EQ(Value(m, "kueue_preempted_workloads_total",
                  {{"preempting_cluster_queue", "cq-b"}, {"reason", "InCohortReclamation"}}),
            1) << m;
  EXPECT_EQ(Value(m, "kueue_evicted_workloads_total",
                  {{"cluster_queue", "cq-a"}, {"reason", "Preempted"}}), 1);
  EXPECT_EQ(Value(m, "kueue_local_queue_evicted_workloads_total",
                  {{"name", "q"}, {"namespace", "team-a"}, {"reason", "Preempted"}}), 1);
  EXPECT_EQ(Value(m, "kueue_admitted_active_workloads", {{"cluster_queue", "cq-b"}}), 1);
  EXPECT_EQ(Value(m, "kueue_cluster_queue_resource_usage", cell), 4);

  // Finishing: an agent's report of exit 0 counts; deleting does not.
  json::value w4 = srv_->Json("GET", "/api/v1/workloads/team-a/w4");
  const std::string pod = "team-a/w4/a" + std::to_string(w4.at("status").at("attempt").as_int64()) +
                          "/main/0";
  json::value r = srv_->Json("POST", "/api/v1/agents/sync",
                             Sync({}, "", R"({"id":")" + pod + R"(","exited":true,"exitCode":0})"),
                             &code);
  ASSERT_EQ(code, 200) << json::serialize(r);
  ASSERT_EQ(srv_->Json("GET", "/api/v1/workloads/team-a/w4").at("status").at("state").as_string(),
            "Succeeded");
  ASSERT_EQ(srv_->Call(srv_->admin_token(), "DELETE", "/api/v1/workloads/team-b/b4").status, 200);
  m = Scrape();
  EXPECT_EQ(Value(m, "kueue_finished_workloads_total", cq), 1) << m;
  EXPECT_EQ(Value(m, "kueue_finished_workloads", cq), 1);
  EXPECT_TRUE(std::isnan(Value(m, "kueue_finished_workloads_total", {{"cluster_queue", "cq-b"}})));
  EXPECT_EQ(Value(m, "kueue_local_queue_finished_workloads_total", lq), 1);
  EXPECT_EQ(Value(m, "kueue_admitted_active_workloads", {{"cluster_queue", "cq-b"}}), 0);
  // Requests are counted by route pattern.
  EXPECT_GE(Value(m, "allot_http_requests_total",
                  {{"method", "POST"}, {"route", "/api/v1/workloads"}, {"code", "201"}}), 4);
  EXPECT_GE(Value(m, "allot_scheduling_cycles_total", {}), 1);
  EXPECT_GE(Value(m, "allot_store_commit_duration_seconds_count", {}), 1);
}

// Quota above capacity (64 GPUs of quota, one node of 8): what waits only
// for nodes is pending in Kueue's terms (set aside until the cluster
// changes: inadmissible, as Kueue defines it; Kueue itself would admit it
// and leave its pods pending) and Allot's capacity-blocked metrics count
// it per flavor, which is what an autoscaler (deploy/keda) reads. What
// quota blocks is not in them.
class CapacityMetricsTest : public testing::ServerTest {
 protected:
  void SetUp() override {
    namespace t = allot::testing;
    StartServer(t::Namespace("team-a", "{}") + t::Flavor("h100", "") +
                    t::GpuCq("cq-a", "", "h100", "nominalQuota: 64") +
                    t::LocalQueue("team-a", "q", "cq-a"),
                Sync({}));
  }
};

TEST_F(CapacityMetricsTest, WorkWaitingOnlyForNodesIsCountedPerFlavor) {
  int code = 0;
  for (auto [name, gpus] : {std::pair{"w1", 8}, {"w2", 8}, {"w3", 4}, {"huge", 80}}) {
    srv_->Json("POST", "/api/v1/workloads", Workload("team-a", name, gpus), &code);
    ASSERT_EQ(code, 201);
  }
  net::Response r = srv_->Call(srv_->admin_token(), "GET", "/metrics");
  const std::string& m = r.body;
  EXPECT_EQ(Value(m, "kueue_admitted_active_workloads", {{"cluster_queue", "cq-a"}}), 1) << m;
  EXPECT_EQ(Value(m, "kueue_pending_workloads",
                  {{"cluster_queue", "cq-a"}, {"status", "inadmissible"}}) +
                Value(m, "kueue_pending_workloads",
                      {{"cluster_queue", "cq-a"}, {"status", "active"}}),
            3);
  // w2 and w3 wait for nodes; huge (80 > 64) for quota.
  EXPECT_EQ(Value(m, "allot_capacity_blocked_workloads", {{"flavor", "h100"}}), 2) << m;
  EXPECT_EQ(Value(m, "allot_capacity_blocked_gpus",
                  {{"flavor", "h100"}, {"resource", "nvidia.com/gpu"}}),
            12);
  // w1 ends: w2 runs; w3 still waits (8 GPUs are w2's).
  ASSERT_EQ(srv_->Call(srv_->admin_token(), "DELETE", "/api/v1/workloads/team-a/w1").status, 200);
  const std::string m2 = srv_->Call(srv_->admin_token(), "GET", "/metrics").body;
  EXPECT_EQ(Value(m2, "allot_capacity_blocked_workloads", {{"flavor", "h100"}}), 1) << m2;
  EXPECT_EQ(Value(m2, "allot_capacity_blocked_gpus",
                  {{"flavor", "h100"}, {"resource", "nvidia.com/gpu"}}),
            4);
}

TEST_F(MetricsTest, DcgmGpuMetricsNameWhoHoldsEachGpu) {
  int code = 0;
  srv_->Json("POST", "/api/v1/workloads", Workload("team-a", "train", 2), &code);
  ASSERT_EQ(code, 201);
  json::value w = srv_->Json("GET", "/api/v1/workloads/team-a/train");
  const json::array& held = w.at("status").at("admission").at("podSetAssignments")
                                .at(0).at("placements").at(0).at("gpus").as_array();
  ASSERT_EQ(held.size(), 2u) << json::serialize(w);
  std::vector<int> util = {10, 20, 30, 40, 50, 60, 70, 80};
  json::value r = srv_->Json("POST", "/api/v1/agents/sync", Sync(util), &code);
  ASSERT_EQ(code, 200) << json::serialize(r);
  std::string m = Scrape();
  for (int i = 0; i < 8; ++i) {
    std::string uuid = "GPU-n1-" + std::to_string(i);
    bool is_held = false;
    for (const json::value& h : held) is_held |= h.as_string() == uuid;
    std::map<std::string, std::string> want{
        {"gpu", std::to_string(i)}, {"UUID", uuid}, {"device", "nvidia" + std::to_string(i)},
        {"modelName", "H100-80GB"}, {"Hostname", "n1"}, {"simulated", "true"},
        {"namespace", is_held ? "team-a" : ""}, {"workload", is_held ? "train" : ""}};
    EXPECT_EQ(Value(m, "DCGM_FI_DEV_GPU_UTIL", want), util[i]) << uuid << "\n" << m;
    EXPECT_EQ(Value(m, "DCGM_FI_DEV_GPU_TEMP", want), 40 + i);
    EXPECT_EQ(Value(m, "DCGM_FI_DEV_POWER_USAGE", want), 350.5);
    EXPECT_EQ(Value(m, "DCGM_FI_DEV_FB_USED", want), 1024);
    EXPECT_EQ(Value(m, "DCGM_FI_DEV_FB_FREE", want), 80 * 1024 - 1024);
    EXPECT_EQ(Value(m, "DCGM_FI_DEV_XID_ERRORS", want), i == 7 ? 79 : 0);
    EXPECT_EQ(Value(m, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", want), 0);
  }
  EXPECT_EQ(Value(m, "allot_gpus", {{"state", "allocated"}, {"simulated", "true"}}), 2);
  EXPECT_EQ(Value(m, "allot_gpus", {{"state", "free"}, {"simulated", "true"}}), 6);
  EXPECT_EQ(Value(m, "allot_gpus", {{"state", "free"}, {"simulated", "false"}}), 0);
  EXPECT_EQ(Value(m, "allot_agents_connected", {}), 1);
  // Busy: no idle series for it. All its GPUs idle: since when, for
  // autoscalers that park (time() minus it); parked: its own series.
  const std::map<std::string, std::string> train{
      {"namespace", "team-a"}, {"workload", "train"}, {"cluster_queue", "cq-a"}};
  EXPECT_TRUE(std::isnan(Value(m, "allot_workload_idle_since_seconds", train))) << m;
  r = srv_->Json("POST", "/api/v1/agents/sync", Sync({0, 0, 0, 0, 0, 0, 0, 0}), &code);
  ASSERT_EQ(code, 200) << json::serialize(r);
  m = Scrape();
  EXPECT_GT(Value(m, "allot_workload_idle_since_seconds", train), 1.7e9) << m;
  srv_->Json("POST", "/api/v1/workloads/team-a/train/park", "", &code);
  ASSERT_EQ(code, 200);
  m = Scrape();
  EXPECT_EQ(Value(m, "allot_workload_parked", train), 1) << m;
  EXPECT_TRUE(std::isnan(Value(m, "allot_workload_idle_since_seconds", train)));
  EXPECT_EQ(Value(m, "allot_parked_workloads", {{"cluster_queue", "cq-a"}}), 1);
  EXPECT_EQ(Value(m, "allot_parked_gpus", {{"cluster_queue", "cq-a"}}), 2);
  EXPECT_EQ(Value(m, "allot_workloads", {{"state", "Parked"}}), 1);
  EXPECT_EQ(Value(m, "allot_gpus", {{"state", "allocated"}, {"simulated", "true"}}), 0);
}

TEST_F(MetricsTest, BadSamplesAreRefusedAndChangeNothing) {
  int code = 0;
  json::value r = srv_->Json("POST", "/api/v1/agents/sync", Sync({55}), &code);
  ASSERT_EQ(code, 200);
  struct Bad {
    std::string sample, field;
  } bad[] = {
      {R"({"uuid":"GPU-elsewhere","util":5})", "gpuSamples.uuid"},
      {R"({"uuid":"GPU-n1-1","util":101})", "gpuSamples.util"},
      {R"({"uuid":"GPU-n1-1","power":"hot"})", "gpuSamples.power"},
      {R"({"util":5})", "gpuSamples.uuid"},
  };
  for (const Bad& b : bad) {
    r = srv_->Json("POST", "/api/v1/agents/sync", Sync({}, b.sample), &code);
    EXPECT_EQ(code, 400) << b.sample << " " << json::serialize(r);
    if (code == 400) {
      EXPECT_EQ(r.at("error").at("field").as_string(), b.field) << json::serialize(r);
    }
  }
  std::string m = Scrape();
  EXPECT_EQ(Value(m, "DCGM_FI_DEV_GPU_UTIL", {{"UUID", "GPU-n1-0"}}), 55) << m;
  EXPECT_TRUE(std::isnan(Value(m, "DCGM_FI_DEV_GPU_UTIL", {{"UUID", "GPU-n1-1"}})));
}

TEST_F(MetricsTest, OnlyAdminsAndMetricsTokensMayScrape) {
  std::string scraper = srv_->NewToken(R"({"user":"prometheus","role":"metrics"})");
  std::string member = srv_->NewToken(R"({"user":"ann","role":"member","tenant":"team-a"})");
  EXPECT_EQ(srv_->Call(scraper, "GET", "/metrics").status, 200);
  EXPECT_EQ(srv_->Call(member, "GET", "/metrics").status, 403);
  EXPECT_EQ(srv_->Call("", "GET", "/metrics").status, 401);
  EXPECT_EQ(srv_->Call(srv_->admin_token(), "POST", "/metrics").status, 404);
  // A metrics token reads nothing else: every object read, list and watch
  // is a 403 naming what it may do (not an empty list, which would read as
  // an empty cluster), and so is a node token's.
  int code = 0;
  srv_->Json("POST", "/api/v1/workloads", Workload("team-a", "w", 1), &code);
  ASSERT_EQ(code, 201);
  std::string node = srv_->NewToken(R"({"user":"agent","role":"node"})");
  for (const std::string& tok : {scraper, node}) {
    for (const char* path :
         {"/api/v1/workloads", "/api/v1/workloads?watch=true", "/api/v1/localqueues",
          "/api/v1/clusterqueues", "/api/v1/nodes?watch=1", "/api/v1/tenants",
          "/api/v1/workloads/team-a/w", "/api/v1/clusterqueues/cq-a", "/api/v1/tokens",
          "/api/v1/workloads/team-a/w/log"}) {
      net::Response r = srv_->Call(tok, "GET", path);
      EXPECT_EQ(r.status, 403) << path << " " << r.body;
      EXPECT_NE(r.body.find(tok == node ? "a node token may not read"
                                        : "a metrics token may not read"),
                std::string::npos)
          << path << " " << r.body;
    }
  }
  // A metrics token has no tenant.
  srv_->Json("POST", "/api/v1/tokens",
             R"({"user":"p2","role":"metrics","tenant":"team-a"})", &code);
  EXPECT_EQ(code, 400);
}

}  // namespace
}  // namespace allot::server
