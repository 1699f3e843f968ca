// Usage and cost end to end: a real `allot serve`, the test playing the
// agent (exact placements and utilization), reports by every grouping whose
// totals reconcile exactly with their lines and with the workloads', kept
// across deletion and restart, tenant-scoped, and the idle-but-held report.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "server/test_server.h"
#include "server/usage.h"
#include "testing/builders.h"
#include "testing/process.h"

namespace allot::server {
namespace {

using testing::TestServer;
namespace json = boost::json;
using namespace std::chrono_literals;

// Tenants team-a and team-b, each with LocalQueue q into ClusterQueue cq
// (8 GPUs of flavor h100 at 2.5 per GPU-hour); node n1 comes from Sync.
std::string Cluster() {
  namespace b = allot::testing;
  return b::Namespace("team-a") + b::Namespace("team-b") +
         b::FlavorSpec("h100", "{price: {nvidia.com/gpu: 2.5}}") +
         b::GpuCq("cq", "", "h100", "nominalQuota: 8") + b::LocalQueue("team-a", "q", "cq") +
         b::LocalQueue("team-b", "q", "cq");
}

std::string Workload(const std::string& ns, const std::string& name, int gpus) {
  return allot::testing::WorkloadJson(ns + "/" + name).Gpus(gpus).Command({"true"});
}

// Node n1, 8 GPUs; `util` maps GPU index -> utilization (a sample each).
std::string Sync(const std::map<int, int>& util) {
  std::string gpus, samples;
  for (int i = 0; i < 8; ++i) {
    gpus += std::string(i ? "," : "") + R"({"uuid":"GPU-n1-)" + std::to_string(i) +
            R"(","product":"H100-80GB","memory":"80Gi"})";
  }
  for (const auto& [i, u] : util) {
    samples += std::string(samples.empty() ? "" : ",") + R"({"uuid":"GPU-n1-)" +
               std::to_string(i) + R"(","index":)" + std::to_string(i) + R"(,"util":)" +
               std::to_string(u) + "}";
  }
  return R"({"node":{"apiVersion":"allot.dev/v1","kind":"Node","metadata":{"name":"n1"},
      "status":{"capacity":{"cpu":"64","memory":"512Gi"},"gpus":[)" +
         gpus + R"(]}},"gpuSamples":[)" + samples + "]}";
}

class UsageTest : public testing::ServerTest {
 protected:
  void SetUp() override { StartServer(Cluster(), Sync({})); }
  json::value Get(const std::string& target, const std::string& token = "",
                  int want = 200) {
    net::Response r = srv_->Call(token.empty() ? srv_->admin_token() : token, "GET", target);
    EXPECT_EQ(r.status, want) << target << ": " << r.body;
    boost::system::error_code ec;
    json::value v = json::parse(r.body, ec);
    return ec ? json::value() : v;
  }
  // The GPU indexes a workload holds.
  std::vector<int> Held(const std::string& key) {
    json::value w = Get("/api/v1/workloads/" + key);
    std::vector<int> out;
    for (const json::value& g : w.at("status").at("admission").at("podSetAssignments")
                                    .at(0).at("placements").at(0).at("gpus").as_array()) {
      std::string u(g.as_string());
      out.push_back(std::stoi(u.substr(u.rfind('-') + 1)));
    }
    return out;
  }
  int64_t AdmittedAt(const std::string& key) {
    return Get("/api/v1/workloads/" + key).at("status").at("admittedAtMs").as_int64();
  }
};

int64_t Int(const json::value& o, const char* k) { return o.at(k).as_int64(); }

TEST_F(UsageTest, ReportsReconcileAcrossGroupingsDeletionAndRestart) {
  int code = 0;
  for (auto [ns, name, gpus] : {std::tuple{"team-a", "a2", 2}, {"team-a", "a1", 1},
                                {"team-b", "b1", 1}}) {
    srv_->Json("POST", "/api/v1/workloads", Workload(ns, name, gpus), &code);
    ASSERT_EQ(code, 201);
  }
  // Utilization: a2's GPUs at 50 %, the others at 100 %, a few reports.
  std::map<int, int> util;
  for (int g : Held("team-a/a1")) util[g] = 100;
  for (int g : Held("team-b/b1")) util[g] = 100;
  for (int g : Held("team-a/a2")) util[g] = 50;
  for (int i = 0; i < 4; ++i) {
    // Real time between the reports: utilization is counted over the time
    // between samples.
    std::this_thread::sleep_for(150ms);
    srv_->Json("POST", "/api/v1/agents/sync", Sync(util), &code);
    ASSERT_EQ(code, 200);
  }
  const int64_t a1_start = AdmittedAt("team-a/a1");
  const int64_t b1_start = AdmittedAt("team-b/b1");
  const int64_t a2_start = AdmittedAt("team-a/a2");
  // a1 is deleted: its stretch is closed in the store.
  ASSERT_EQ(srv_->Call(srv_->admin_token(), "DELETE", "/api/v1/workloads/team-a/a1").status, 200);
  json::value w = Get("/api/v1/workloads/team-b/b1");
  const int64_t until = a2_start + 300;  // Before now: the figures are fixed.
  allot::testing::WaitFor(
      [&] {
        return std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count() > until;
      },
      5s);
  const std::string window = "&sinceUnixMs=0&untilUnixMs=" + std::to_string(until);

  std::map<std::string, json::value> totals;
  for (const char* by : {"tenant", "queue", "clusterqueue", "flavor", "user", "workload"}) {
    json::value rep = Get(std::string("/api/v1/usage?by=") + by + window);
    int64_t gpu_ms = 0, cost = 0, util_ms = 0;
    for (const json::value& it : rep.at("items").as_array()) {
      gpu_ms += Int(it, "gpuMs");
      cost += Int(it, "costMicros");
      util_ms += Int(it, "utilGpuMs");
    }
    const json::value& t = rep.at("total");
    EXPECT_EQ(Int(t, "gpuMs"), gpu_ms) << by;
    EXPECT_EQ(Int(t, "costMicros"), cost) << by;
    EXPECT_EQ(Int(t, "utilGpuMs"), util_ms) << by;
    EXPECT_EQ(Int(t, "workloads"), 3) << by;
    totals[by] = t;
  }
  for (const auto& [by, t] : totals) {
    EXPECT_EQ(Int(t, "gpuMs"), Int(totals["workload"], "gpuMs")) << by;
    EXPECT_EQ(Int(t, "costMicros"), Int(totals["workload"], "costMicros")) << by;
  }
  // Each workload's figures are exact: devices x (until - admission), and
  // 2.5 per GPU-hour.
  json::value per = Get("/api/v1/usage?by=workload" + window);
  std::map<std::string, json::value> line;
  for (const json::value& it : per.at("items").as_array()) line[std::string(it.at("key").as_string())] = it;
  ASSERT_EQ(line.size(), 3u) << json::serialize(per);
  EXPECT_EQ(Int(line["team-a/a2"], "gpuMs"), 2 * (until - a2_start));
  EXPECT_EQ(Int(line["team-b/b1"], "gpuMs"), until - b1_start);
  EXPECT_GT(Int(line["team-a/a1"], "gpuMs"), 0);
  EXPECT_LE(Int(line["team-a/a1"], "gpuMs"), until - a1_start);
  EXPECT_EQ(Int(line["team-b/b1"], "costMicros"), (until - b1_start) * 2500000 / 3600000);
  // Utilization: a2 ran at 50 %, b1 at 100 % (of the time telemetry covered).
  EXPECT_GT(Int(line["team-b/b1"], "utilGpuMs"), 0);
  EXPECT_LE(Int(line["team-b/b1"], "utilGpuMs"), Int(line["team-b/b1"], "gpuMs"));
  EXPECT_LE(Int(line["team-a/a2"], "utilGpuMs"), Int(line["team-a/a2"], "gpuMs") / 2 + 1);

  // After a restart: the same figures for the same window.
  ASSERT_TRUE(srv_->Restart());
  json::value again = Get("/api/v1/usage?by=workload" + window);
  for (const json::value& it : again.at("items").as_array()) {
    const std::string key(it.at("key").as_string());
    EXPECT_EQ(Int(it, "gpuMs"), Int(line[key], "gpuMs")) << key;
    EXPECT_EQ(Int(it, "costMicros"), Int(line[key], "costMicros")) << key;
  }
  EXPECT_EQ(again.at("items").as_array().size(), 3u);
}

TEST_F(UsageTest, TenantsSeeTheirOwnUsageOnly) {
  int code = 0;
  srv_->Json("POST", "/api/v1/workloads", Workload("team-a", "a", 1), &code);
  srv_->Json("POST", "/api/v1/workloads", Workload("team-b", "b", 1), &code);
  json::value t = srv_->Json("POST", "/api/v1/tokens",
                             R"({"user":"ann","role":"viewer","tenant":"team-a"})", &code);
  ASSERT_EQ(code, 201);
  const std::string ann(t.at("token").as_string());
  // A report lists what held something for some time: both, once the
  // admin's report shows them.
  allot::testing::WaitFor(
      [&] { return Get("/api/v1/usage?by=workload").at("items").as_array().size() == 2; }, 5s);
  json::value rep = Get("/api/v1/usage?by=workload", ann);
  ASSERT_EQ(rep.at("items").as_array().size(), 1u) << json::serialize(rep);
  EXPECT_EQ(rep.at("items").at(0).at("key").as_string(), "team-a/a");
  Get("/api/v1/usage?tenant=team-b", ann, 404);
  json::value m = srv_->Json("POST", "/api/v1/tokens", R"({"user":"p","role":"metrics"})", &code);
  Get("/api/v1/usage", std::string(m.at("token").as_string()), 403);
  // The admin sees both, or one tenant when asked.
  EXPECT_EQ(Get("/api/v1/usage?by=workload").at("items").as_array().size(), 2u);
  EXPECT_EQ(Get("/api/v1/usage?by=workload&tenant=team-b").at("items").as_array().size(), 1u);
}

TEST_F(UsageTest, BadQueriesAreClearErrors) {
  struct Case {
    std::string query, field;
  } cases[] = {
      {"by=team", "by"},
      {"sinceUnixMs=-5", "sinceUnixMs"},
      {"sinceUnixMs=10&untilUnixMs=10", "untilUnixMs"},
      {"untilUnixMs=soon", "untilUnixMs"},
  };
  for (const Case& c : cases) {
    json::value r = Get("/api/v1/usage?" + c.query, "", 400);
    EXPECT_EQ(r.at("error").at("field").as_string(), c.field) << c.query;
  }
  Get("/api/v1/usage/everything", "", 404);
  EXPECT_EQ(srv_->Call(srv_->admin_token(), "POST", "/api/v1/usage").status, 405);
}

TEST_F(UsageTest, IdleButHeldGpusAreReportedWithWhatTheyWaste) {
  int code = 0;
  srv_->Json("POST", "/api/v1/workloads", Workload("team-a", "busy", 2), &code);
  srv_->Json("POST", "/api/v1/workloads", Workload("team-b", "idle", 1), &code);
  std::map<int, int> util;
  for (int g : Held("team-a/busy")) util[g] = 80;
  for (int g : Held("team-b/idle")) util[g] = 2;  // Under 5 %.
  for (int i = 0; i < 3; ++i) {
    // Real time between the reports: idleness is measured over time.
    std::this_thread::sleep_for(100ms);
    srv_->Json("POST", "/api/v1/agents/sync", Sync(util), &code);
  }
  json::value rep = Get("/api/v1/usage/idle?minutes=0");
  ASSERT_EQ(rep.at("items").as_array().size(), 1u) << json::serialize(rep);
  const json::value& it = rep.at("items").at(0);
  EXPECT_EQ(it.at("workload").as_string(), "team-b/idle");
  EXPECT_EQ(it.at("gpus").as_double(), 1.0);
  EXPECT_GT(it.at("wastedGpuHours").as_double(), 0);
  EXPECT_GT(Int(it, "wastedCostMicros"), -1);
  // Not idle for 30 minutes yet.
  EXPECT_EQ(Get("/api/v1/usage/idle").at("items").as_array().size(), 0u);
  // Busy again: off the list.
  for (int g : Held("team-b/idle")) util[g] = 60;
  srv_->Json("POST", "/api/v1/agents/sync", Sync(util), &code);
  EXPECT_EQ(Get("/api/v1/usage/idle?minutes=0").at("items").as_array().size(), 0u);
}

// Parked time is reserved, not used: its GPU-hours are reported apart,
// with their value at the flavor's price, and charge nothing; a borrower
// of the parked GPUs is charged as any run, its hours also shown as on
// parked capacity. The stretches tile the owner's admission exactly and
// are kept across a restart.
TEST_F(UsageTest, ParkedTimeIsReservedAndLentTimeIsChargedToTheBorrower) {
  int code = 0;
  srv_->Json("POST", "/api/v1/workloads", Workload("team-a", "owner", 8), &code);
  ASSERT_EQ(code, 201);
  const int64_t admitted = AdmittedAt("team-a/owner");
  const auto now_ms = [] {
    return int64_t(std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count());
  };
  const auto wait_past = [&](int64_t t) {
    allot::testing::WaitFor([&] { return now_ms() > t; }, 5s);
  };
  wait_past(admitted + 20);
  srv_->Json("POST", "/api/v1/workloads/team-a/owner/park", "", &code);
  ASSERT_EQ(code, 200);
  int64_t parked = 0;
  const json::value pw = Get("/api/v1/workloads/team-a/owner");
  for (const json::value& c : pw.at("status").at("conditions").as_array()) {
    if (c.at("type").as_string() == "PodsReady" && c.at("reason").as_string() == "Parked") {
      parked = Int(c, "lastTransitionUnixMs");
    }
  }
  ASSERT_GT(parked, admitted);
  // A preemptible team-b workload runs on the parked GPUs (no quota of its own left).
  json::value spot = json::parse(std::string(Workload("team-b", "spot", 2)));
  spot.at("metadata").as_object()["annotations"] = json::object{{"allot.dev/preemptible", "true"}};
  srv_->Json("POST", "/api/v1/workloads", json::serialize(spot), &code);
  ASSERT_EQ(code, 201);
  json::value sw = Get("/api/v1/workloads/team-b/spot");
  ASSERT_TRUE(sw.at("status").at("onParkedCapacity").as_bool()) << json::serialize(sw);
  const int64_t lent = AdmittedAt("team-b/spot");
  // While parked, an open report shows the reservation up to now.
  wait_past(parked + 50);
  json::value open = Get("/api/v1/usage?by=workload");
  for (const json::value& it : open.at("items").as_array()) {
    if (it.at("key").as_string() == "team-a/owner") {
      EXPECT_GT(Int(it, "reservedGpuMs"), 0) << json::serialize(it);
    }
  }
  // The borrower is taken back (evicted) by the resume; then a fixed window.
  srv_->Json("POST", "/api/v1/workloads/team-a/owner/resume", "", &code);
  ASSERT_EQ(code, 200);
  const int64_t resumed = AdmittedAt("team-a/owner");
  ASSERT_GE(resumed, parked);
  const int64_t until = resumed + 100;
  wait_past(until);
  const std::string window = "&sinceUnixMs=0&untilUnixMs=" + std::to_string(until);
  for (bool restarted : {false, true}) {
    if (restarted) {
      ASSERT_TRUE(srv_->Restart());
    }
    std::map<std::string, json::value> line;
    json::value rep = Get("/api/v1/usage?by=workload" + window);
    for (const json::value& it : rep.at("items").as_array()) {
      line[std::string(it.at("key").as_string())] = it;
    }
    SCOPED_TRACE(json::serialize(rep));
    const json::value& owner = line["team-a/owner"];
    // Runs [admitted, parked) and [resumed, until); reserved [parked, resumed).
    EXPECT_EQ(Int(owner, "gpuMs"), 8 * ((parked - admitted) + (until - resumed)));
    EXPECT_EQ(Int(owner, "reservedGpuMs"), 8 * (resumed - parked));
    EXPECT_EQ(Int(owner, "reservedCostMicros"), 8 * (resumed - parked) * 2500000 / 3600000);
    EXPECT_EQ(Int(owner, "onParkedGpuMs"), 0);
    EXPECT_LE(Int(owner, "costMicros"), 8 * ((parked - admitted) + (until - resumed)) * 2500000 /
                                            3600000);
    const json::value& borrower = line["team-b/spot"];
    ASSERT_TRUE(borrower.is_object());
    EXPECT_GT(Int(borrower, "gpuMs"), 0);
    EXPECT_LE(Int(borrower, "gpuMs"), 2 * (resumed - lent));
    EXPECT_EQ(Int(borrower, "onParkedGpuMs"), Int(borrower, "gpuMs"));
    EXPECT_GT(Int(borrower, "costMicros"), 0);
    EXPECT_EQ(Int(borrower, "reservedGpuMs"), 0);
    const json::value& total = rep.at("total");
    EXPECT_EQ(Int(total, "reservedGpuMs"), Int(owner, "reservedGpuMs"));
    EXPECT_EQ(Int(total, "gpuMs"), Int(owner, "gpuMs") + Int(borrower, "gpuMs"));
  }
}

// GET /api/v1/overview: the dashboard's summary. GPUs by state over the
// fleet (shared, unnamed), workloads by state of what the token may see,
// and this month's cost as the usage report gives it.
TEST_F(UsageTest, OverviewCountsGpusByStateAndScopesWorkloads) {
  int code = 0;
  srv_->Json("POST", "/api/v1/workloads", Workload("team-a", "busy", 2), &code);
  srv_->Json("POST", "/api/v1/workloads", Workload("team-b", "idle", 1), &code);
  srv_->Json("POST", "/api/v1/workloads", Workload("team-a", "big", 8), &code);  // Waits.
  std::map<int, int> util;
  for (int g : Held("team-a/busy")) util[g] = 80;
  for (int g : Held("team-b/idle")) util[g] = 2;  // Under 5 %.
  for (int i = 0; i < 2; ++i) {
    // Real time between the reports: idleness is measured over time.
    std::this_thread::sleep_for(100ms);
    srv_->Json("POST", "/api/v1/agents/sync", Sync(util), &code);
    ASSERT_EQ(code, 200);
  }
  auto gpus = [&](const json::value& o, const char* state) {
    return Int(o.at("gpus"), state);
  };
  json::value o = Get("/api/v1/overview?idleMinutes=0");
  EXPECT_EQ(gpus(o, "allocated"), 2) << json::serialize(o);
  EXPECT_EQ(gpus(o, "idle"), 1);
  EXPECT_EQ(gpus(o, "free"), 5);
  EXPECT_EQ(gpus(o, "unhealthy"), 0);
  EXPECT_EQ(gpus(o, "simulated"), 0);
  EXPECT_EQ(Int(o, "idleMinutes"), 0);
  EXPECT_EQ(Int(o, "idleUtilPct"), 5);
  ASSERT_EQ(o.at("byFlavorAndLocation").as_array().size(), 1u);
  const json::value& g = o.at("byFlavorAndLocation").at(0);
  EXPECT_EQ(g.at("flavor").as_string(), "h100");
  EXPECT_EQ(g.at("location").as_string(), "onprem");
  EXPECT_EQ(Int(g, "free") + Int(g, "allocated") + Int(g, "idle"), 8);
  EXPECT_EQ(Int(o.at("workloads"), "Pending"), 1);
  EXPECT_EQ(Int(o.at("workloads"), "Admitted"), 2);
  // Cost this month: what the usage report says for the same window.
  const int64_t since = Int(o.at("thisMonth"), "sinceUnixMs");
  EXPECT_GT(Int(o.at("thisMonth").at("total"), "costMicros"), 0);
  EXPECT_EQ(Int(o.at("thisMonth").at("total"), "workloads"), 2);
  EXPECT_LE(since, AdmittedAt("team-a/busy"));
  // Not idle for the default 30 minutes yet.
  EXPECT_EQ(gpus(Get("/api/v1/overview"), "idle"), 0);
  EXPECT_EQ(gpus(Get("/api/v1/overview"), "allocated"), 3);
  // The node list says how many of a node's GPUs are held.
  EXPECT_EQ(Int(Get("/api/v1/nodes/n1").at("status"), "allocatedGpus"), 3);

  // A team-b viewer: the same fleet, its own workloads and cost only.
  json::value t = srv_->Json("POST", "/api/v1/tokens",
                             R"({"user":"bo","role":"viewer","tenant":"team-b"})", &code);
  ASSERT_EQ(code, 201);
  json::value b = Get("/api/v1/overview", std::string(t.at("token").as_string()));
  EXPECT_EQ(gpus(b, "allocated"), 3);
  EXPECT_FALSE(b.at("workloads").as_object().contains("Pending")) << json::serialize(b);
  EXPECT_EQ(Int(b.at("workloads"), "Admitted"), 1);
  EXPECT_EQ(Int(b.at("thisMonth").at("total"), "workloads"), 1);

  // An unhealthy GPU leaves "free".
  std::string sick = Sync(util);
  const std::string last = R"("uuid":"GPU-n1-7","product":"H100-80GB","memory":"80Gi")";
  ASSERT_NE(sick.find(last), std::string::npos);
  sick.replace(sick.find(last), last.size(), last + R"(,"health":"Unhealthy")");
  srv_->Json("POST", "/api/v1/agents/sync", sick, &code);
  ASSERT_EQ(code, 200);
  json::value u = Get("/api/v1/overview");
  EXPECT_EQ(gpus(u, "unhealthy"), 1);
  EXPECT_EQ(gpus(u, "free") + gpus(u, "allocated") + gpus(u, "unhealthy"), 8);

  // Bad queries and roles.
  EXPECT_EQ(Get("/api/v1/overview?idleMinutes=-1", "", 400).at("error").at("field").as_string(),
            "idleMinutes");
  json::value m = srv_->Json("POST", "/api/v1/tokens", R"({"user":"p","role":"metrics"})", &code);
  Get("/api/v1/overview", std::string(m.at("token").as_string()), 403);
  EXPECT_EQ(srv_->Call(srv_->admin_token(), "POST", "/api/v1/overview").status, 405);
}

// The arithmetic on its own: clipping is proportional and exact.
TEST(UsageClipTest, ClipsToTheWindow) {
  store::UsageRow u;
  u.quantity_milli = 2000;
  u.start_unix_ms = 1000;
  u.end_unix_ms = 3600000 + 1000;
  u.util_milli_ms = 2000LL * 3600000 / 2;  // 50 %.
  u.price_micros_per_hour = 2500000;
  UsageAmounts all = Clip(u, 0, 1LL << 50);
  EXPECT_EQ(all.gpu_ms, 2 * 3600000);
  EXPECT_EQ(all.util_gpu_ms, 3600000);
  EXPECT_EQ(all.cost_micros, 5000000);
  UsageAmounts half = Clip(u, 1000 + 1800000, 1LL << 50);
  EXPECT_EQ(half.gpu_ms, 3600000);
  EXPECT_EQ(half.cost_micros, 2500000);
  EXPECT_EQ(Clip(u, 0, 1000).gpu_ms, 0);
}

}  // namespace
}  // namespace allot::server
