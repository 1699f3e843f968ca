// A first end-to-end check of `allot serve`: apply, submit, admit, restart.
#include <gtest/gtest.h>

#include <fcntl.h>

#include <chrono>

#include "server/test_server.h"
#include "testing/builders.h"

namespace allot::server {
namespace {

using testing::TestServer;
namespace json = boost::json;

// Tenant team-a with LocalQueue q into ClusterQueue cq-a (8 GPUs); node n1
// with 8.
std::string Cluster() {
  namespace b = allot::testing;
  return b::Namespace("team-a") + b::Flavor("h100", "") +
         b::GpuCq("cq-a", "", "h100", "nominalQuota: 8") + b::LocalQueue("team-a", "q", "cq-a") +
         b::Node("n1", "", "64", "512Gi", b::Uuids("G", 8));
}

std::string Workload(const std::string& name, int gpus) {
  return allot::testing::WorkloadJson("team-a/" + name).Gpus(gpus);
}

TEST(ApiSmoke, ApplySubmitAdmitRestart) {
  auto srv = TestServer::StartWith(Cluster());
  ASSERT_NE(srv, nullptr);
  int code = 0;
  json::value r = srv->Json("POST", "/api/v1/workloads", Workload("a", 6), &code);
  ASSERT_EQ(code, 201) << json::serialize(r);
  r = srv->Json("POST", "/api/v1/workloads", Workload("b", 4), &code);
  ASSERT_EQ(code, 201) << json::serialize(r);
  r = srv->Json("GET", "/api/v1/workloads/team-a/a", "", &code);
  EXPECT_EQ(r.at("status").at("state").as_string(), "Admitted");
  json::value before = r.at("status").at("admission");
  r = srv->Json("GET", "/api/v1/workloads/team-a/b", "", &code);
  EXPECT_EQ(r.at("status").at("state").as_string(), "Pending");
  EXPECT_EQ(r.at("status").at("position").as_int64(), 1);

  srv->Kill9();
  ASSERT_TRUE(srv->Restart()) << srv->Log();
  r = srv->Json("GET", "/api/v1/workloads/team-a/a", "", &code);
  ASSERT_EQ(code, 200);
  EXPECT_EQ(json::serialize(r.at("status").at("admission")), json::serialize(before));
  // Deleting a frees its GPUs; b is admitted in the same turn.
  srv->Json("DELETE", "/api/v1/workloads/team-a/a", "", &code);
  EXPECT_EQ(code, 200);
  r = srv->Json("GET", "/api/v1/workloads/team-a/b", "", &code);
  EXPECT_EQ(r.at("status").at("state").as_string(), "Admitted");
  r = srv->Json("GET", "/api/v1/clusterqueues/cq-a", "", &code);
  EXPECT_EQ(r.at("status").at("flavorsUsage").at(0).at("resources").at(0).at("total").as_string(), "4");
}

// A list says when the server read it, so a client can tell how long a
// workload listed as running has run (allot simulate --from-history): at or
// after every condition in it, and within the caller's own clock here.
TEST(ApiSmoke, ListsCarryTheServerTime) {
  auto srv = TestServer::StartWith(Cluster());
  ASSERT_NE(srv, nullptr);
  int code = 0;
  json::value r = srv->Json("POST", "/api/v1/workloads", Workload("a", 2), &code);
  ASSERT_EQ(code, 201) << json::serialize(r);
  auto now = [] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  for (const char* target : {"/api/v1/workloads", "/api/v1/workloads?limit=1",
                             "/api/v1/nodes"}) {
    SCOPED_TRACE(target);
    const int64_t before = now();
    r = srv->Json("GET", target, "", &code);
    const int64_t after = now();
    ASSERT_EQ(code, 200);
    const int64_t at = r.at("serverTimeUnixMs").as_int64();
    EXPECT_GE(at, before);
    EXPECT_LE(at, after);
    for (const json::value& w : r.at("items").as_array()) {
      if (!w.at("status").as_object().contains("conditions")) continue;
      for (const json::value& c : w.at("status").at("conditions").as_array()) {
        EXPECT_LE(c.at("lastTransitionUnixMs").as_int64(), at);
      }
    }
  }
}

// A SchedulerConfig document that sets the defaults (fair sharing off) is
// a change too, not "no document".
TEST(ApiSmoke, SchedulerConfigCanTurnFairSharingOff) {
  auto srv = TestServer::Start();
  ASSERT_NE(srv, nullptr);
  auto apply = [&](bool enable) {
    int code = 0;
    json::value r = srv->Json(
        "POST", "/api/v1/apply",
        std::string("apiVersion: allot.dev/v1\nkind: SchedulerConfig\n"
                    "fairSharing: {enable: ") +
            (enable ? "true" : "false") + "}\n",
        &code);
    EXPECT_EQ(code, 200) << json::serialize(r);
    std::string action;
    for (const json::value& item : r.at("results").as_array()) {
      if (item.at("kind").as_string() == "SchedulerConfig") {
        action = std::string(item.at("action").as_string());
      }
    }
    return action;
  };
  EXPECT_EQ(apply(true), "configured");
  EXPECT_EQ(apply(true), "unchanged");
  EXPECT_EQ(apply(false), "configured");
  EXPECT_EQ(apply(false), "unchanged");
  EXPECT_EQ(apply(true), "configured");
  srv->Kill9();
  ASSERT_TRUE(srv->Restart()) << srv->Log();
  EXPECT_EQ(apply(true), "unchanged");
  EXPECT_EQ(apply(false), "configured");
}

}  // namespace
}  // namespace allot::server

namespace allot::server {
namespace {

// A list carries each pending workload's reason and place in line, the
// same as its own GET, page by page; admitted ones carry neither.
TEST(ApiSmoke, ListsCarryPendingReasonAndPosition) {
  auto srv = TestServer::StartWith(Cluster());
  ASSERT_NE(srv, nullptr);
  int code = 0;
  json::value r;
  for (const auto& [name, gpus] : std::vector<std::pair<std::string, int>>{
           {"a", 6}, {"b", 4}, {"c", 3}, {"d", 5}}) {
    srv->Json("POST", "/api/v1/workloads", Workload(name, gpus), &code);
    ASSERT_EQ(code, 201);
  }
  for (const char* target : {"/api/v1/workloads", "/api/v1/workloads?limit=2",
                             "/api/v1/workloads?state=Pending"}) {
    SCOPED_TRACE(target);
    std::string next = target;
    int pending = 0;
    for (int page = 0; !next.empty() && page < 10; ++page) {
      r = srv->Json("GET", next, "", &code);
      ASSERT_EQ(code, 200) << json::serialize(r);
      for (const json::value& w : r.at("items").as_array()) {
        const json::object& st = w.at("status").as_object();
        const std::string name(w.at("metadata").at("name").as_string());
        if (st.at("state").as_string() != "Pending") {
          EXPECT_FALSE(st.contains("pendingReason")) << name;
          continue;
        }
        ++pending;
        json::value one = srv->Json("GET", "/api/v1/workloads/team-a/" + name, "", &code);
        EXPECT_EQ(st.at("pendingReason"), one.at("status").at("pendingReason")) << name;
        EXPECT_EQ(st.at("position"), one.at("status").at("position")) << name;
        EXPECT_EQ(st.at("clusterQueue").as_string(), "cq-a");
        EXPECT_NE(st.at("pendingReason").as_string().find("in queue"), std::string::npos);
      }
      const json::value* c = r.as_object().if_contains("continue");
      next = c ? std::string(target) + (std::string(target).find('?') == std::string::npos ? "?" : "&") +
                     "continue=" + std::string(c->as_string())
               : "";
      if (std::string(target).find("limit") == std::string::npos) next.clear();
    }
    EXPECT_EQ(pending, 3);  // b, c and d wait behind a (6 of 8 GPUs).
  }
  r = srv->Json("GET", "/api/v1/workloads/team-a/d", "", &code);
  EXPECT_EQ(r.at("status").at("position").as_int64(), 3);
}

}  // namespace
}  // namespace allot::server
