// Pod logs end to end (agent_test_util.h): read through the server with
// the tenant rules of a GET, from an offset, followed to the pod's end by
// `allot logs -f`; a read of a node that stopped polling times out.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "server/agent_test_util.h"

namespace allot::server {
namespace {

using namespace testing;  // The agents' fixture: agent_test_util.h.
namespace json = boost::json;

TEST_F(AgentTest, LogsAreReadThroughTheServerWithTenantRules) {
  auto n1 = StartReadyAgent("n1", "4xH100-80GB");
  int code = 0;
  srv_->Json("POST", "/api/v1/workloads",
             AgentWorkload("talk", 2, 1,
                      "echo \"hello from rank $RANK\"; printf 'caf\\303\\251 \\377\\n'"),
             &code);
  ASSERT_EQ(code, 201);
  json::value w = WaitFor("talk", [](const json::value& v) { return State(v) == "Succeeded"; });

  json::value r = srv_->Json("GET", "/api/v1/workloads/team-a/talk/log?pod=1", "", &code);
  ASSERT_EQ(code, 200) << json::serialize(r);
  EXPECT_EQ(r.at("data").as_string(), "hello from rank 1\ncaf\xc3\xa9 ?\n");  // Invalid byte: '?'.
  EXPECT_EQ(r.at("pod").as_string(), PodId(w, 1));
  EXPECT_TRUE(r.at("finished").as_bool());
  EXPECT_TRUE(r.at("exists").as_bool());
  // From an offset; past the end gives nothing new.
  r = srv_->Json("GET", "/api/v1/workloads/team-a/talk/log?pod=0&offset=6", "", &code);
  ASSERT_EQ(code, 200);
  EXPECT_EQ(r.at("data").as_string().subview().substr(0, 12), "from rank 0\n");
  const int64_t end = r.at("nextOffset").as_int64();
  r = srv_->Json("GET", "/api/v1/workloads/team-a/talk/log?offset=" + std::to_string(end), "", &code);
  EXPECT_EQ(r.at("data").as_string(), "");

  // Bad input names what is wrong.
  r = srv_->Json("GET", "/api/v1/workloads/team-a/talk/log?pod=2", "", &code);
  EXPECT_EQ(code, 400);
  EXPECT_EQ(r.at("error").at("field").as_string(), "pod");
  r = srv_->Json("GET", "/api/v1/workloads/team-a/talk/log?offset=x", "", &code);
  EXPECT_EQ(code, 400);
  srv_->Json("GET", "/api/v1/workloads/team-a/nothing/log", "", &code);
  EXPECT_EQ(code, 404);

  // Another tenant's member sees nothing: 404, as for a GET.
  srv_->Json("POST", "/api/v1/apply", "apiVersion: v1\nkind: Namespace\nmetadata: {name: team-b}\n", &code);
  ASSERT_EQ(code, 200);
  r = srv_->Json("POST", "/api/v1/tokens", R"({"user":"bob","role":"member","tenant":"team-b"})", &code);
  ASSERT_EQ(code, 201);
  const std::string bob(r.at("token").as_string());
  EXPECT_EQ(srv_->Call(bob, "GET", "/api/v1/workloads/team-a/talk/log").status, 404);
  r = srv_->Json("POST", "/api/v1/tokens", R"({"user":"ann","role":"viewer","tenant":"team-a"})", &code);
  ASSERT_EQ(code, 201);
  const std::string ann(r.at("token").as_string());
  EXPECT_EQ(srv_->Call(ann, "GET", "/api/v1/workloads/team-a/talk/log").status, 200);

  // The CLI prints the log; a tenant's viewer may read it.
  int rc = -1;
  std::string out = RunCli(*srv_, ann, {"logs", "team-a/talk", "--pod", "0"}, &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("hello from rank 0"), std::string::npos) << out;
  out = RunCli(*srv_, bob, {"logs", "talk", "-t", "team-a"}, &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("404"), std::string::npos) << out;
}

// A node that stops polling cannot answer: the reader gets 504 after 10 s
// (and the read is not asked of it later).
TEST_F(AgentTest, LogReadOfASilentNodeTimesOut) {
  int code = 0;
  const std::string node = R"({"node":{"apiVersion":"allot.dev/v1","kind":"Node",
      "metadata":{"name":"quiet"},"status":{"capacity":{"cpu":"8","memory":"8Gi"},
      "gpus":[{"uuid":"GPU-quiet-0","product":"H100-80GB","memory":"80Gi"}]}}})";
  json::value r = srv_->Json("POST", "/api/v1/agents/sync", node, &code);
  ASSERT_EQ(code, 200) << json::serialize(r);
  srv_->Json("POST", "/api/v1/workloads", AgentWorkload("mute", 1, 1, "true"), &code);
  ASSERT_EQ(code, 201);
  WaitFor("mute", [](const json::value& v) { return State(v) == "Admitted"; });
  const auto start = std::chrono::steady_clock::now();
  r = srv_->Json("GET", "/api/v1/workloads/team-a/mute/log", "", &code);
  EXPECT_EQ(code, 504) << json::serialize(r);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::seconds(9));
  // Its next sync carries no stale read.
  r = srv_->Json("POST", "/api/v1/agents/sync", node, &code);
  ASSERT_EQ(code, 200);
  EXPECT_EQ(r.as_object().if_contains("logRequests"), nullptr) << json::serialize(r);
}

TEST_F(AgentTest, LogsFollowARunningPodToItsEnd) {
  auto n1 = StartReadyAgent("n1", "2xH100-80GB");
  int code = 0;
  // A pending workload has no log yet.
  srv_->Json("POST", "/api/v1/workloads", AgentWorkload("huge", 1, 64, "true"), &code);
  ASSERT_EQ(code, 201);
  srv_->Json("GET", "/api/v1/workloads/team-a/huge/log", "", &code);
  EXPECT_EQ(code, 409);

  srv_->Json("POST", "/api/v1/workloads",
             AgentWorkload("stream", 1, 1, "for i in 1 2 3 4 5 6; do echo line $i; sleep 0.3; done"),
             &code);
  ASSERT_EQ(code, 201);
  WaitFor("stream", [](const json::value& v) { return State(v) == "Running"; });
  int rc = -1;
  const auto start = std::chrono::steady_clock::now();
  std::string out = RunCli(*srv_, srv_->admin_token(), {"logs", "-f", "team-a/stream"}, &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out, "line 1\nline 2\nline 3\nline 4\nline 5\nline 6\n");
  // It ended with the pod, not at a timeout.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(15));
  EXPECT_EQ(State(WaitFor("stream", [](const json::value& v) { return State(v) == "Succeeded"; })),
            "Succeeded");
}

}  // namespace
}  // namespace allot::server
