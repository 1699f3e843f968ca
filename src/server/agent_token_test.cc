// Node tokens bound to a node name, or to a prefix of names, end to end
// (agent_test_util.h): such a token syncs and answers log reads only as
// its node(s), its refusals are audited, and the binding is stored with
// the token.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "server/agent_test_util.h"

namespace allot::server {
namespace {

using namespace testing;  // The agents' fixture: agent_test_util.h.
namespace json = boost::json;

// A sync body for a node without GPUs.
std::string NodeSync(const std::string& name) {
  return R"({"node":{"apiVersion":"allot.dev/v1","kind":"Node","metadata":{"name":")" + name +
         R"("},"status":{"capacity":{"cpu":"8","memory":"8Gi"}}}})";
}

TEST_F(AgentTest, ABoundNodeTokenActsOnlyAsItsNode) {
  int code = 0;
  json::value r = srv_->Json("POST", "/api/v1/tokens",
                             R"({"user":"gpu-07","role":"node","node":"gpu-07"})", &code);
  ASSERT_EQ(code, 201) << json::serialize(r);
  EXPECT_EQ(r.at("node").as_string(), "gpu-07");
  const std::string bound(r.at("token").as_string());
  auto check = [&] {
    net::Response ok = srv_->Call(bound, "POST", "/api/v1/agents/sync", NodeSync("gpu-07"));
    EXPECT_EQ(ok.status, 200) << ok.body;
    // Another node: 403 naming both, and nothing changes.
    net::Response no = srv_->Call(bound, "POST", "/api/v1/agents/sync", NodeSync("gpu-08"));
    EXPECT_EQ(no.status, 403) << no.body;
    EXPECT_NE(no.body.find("bound to node gpu-07; it may not act as node gpu-08"),
              std::string::npos)
        << no.body;
    int c = 0;
    srv_->Json("GET", "/api/v1/nodes/gpu-08", "", &c);
    EXPECT_EQ(c, 404);
    // Nor may it answer another node's log reads.
    no = srv_->Call(bound, "POST", "/api/v1/agents/logs", R"({"node":"gpu-08","logs":[]})");
    EXPECT_EQ(no.status, 403) << no.body;
  };
  check();
  // Audited as failures.
  json::value audit = srv_->Json("GET", "/api/v1/audit?principal=gpu-07", "", &code);
  ASSERT_EQ(code, 200);
  std::vector<std::string> seen;
  for (const json::value& a : audit.at("items").as_array()) {
    seen.push_back(std::string(a.at("verb").as_string()) + " " +
                   std::string(a.at("object").as_string()) + " " +
                   std::string(a.at("outcome").as_string()).substr(0, 3));
  }
  EXPECT_NE(std::find(seen.begin(), seen.end(), "sync Node gpu-08 403"), seen.end())
      << json::serialize(audit);
  EXPECT_NE(std::find(seen.begin(), seen.end(), "logs Node gpu-08 403"), seen.end())
      << json::serialize(audit);
  // The binding is stored with the token: the same after a restart.
  ASSERT_TRUE(srv_->Restart()) << srv_->Log();
  check();
  // Listed with it; the unbound join token has none.
  json::value list = srv_->Json("GET", "/api/v1/tokens", "", &code);
  std::map<std::string, std::string> node_of;
  for (const json::value& t : list.at("items").as_array()) {
    node_of[std::string(t.at("user").as_string())] = std::string(t.at("node").as_string());
  }
  EXPECT_EQ(node_of["gpu-07"], "gpu-07");
  EXPECT_EQ(node_of["agents"], "");
}

TEST_F(AgentTest, NodeBindingsAreValidated) {
  // Only node tokens are bound; a binding is a node name, or a prefix with
  // one '*' at its end.
  for (const char* body : {R"({"user":"x","role":"member","tenant":"team-a","node":"n1"})",
                           R"({"user":"x","role":"cluster-admin","node":"n1"})",
                           R"({"user":"x","role":"node","node":"Bad_Name"})",
                           R"({"user":"x","role":"node","node":"a*b"})",
                           R"({"user":"x","role":"node","node":"*"})",
                           R"({"user":"x","role":"node","node":"sim-**"})",
                           R"({"user":"x","role":"node","node":"-n1"})",
                           R"({"user":"x","role":"node","node":"n1","node":"n2"})",
                           R"({"user":"x","role":"node","node":7})"}) {
    SCOPED_TRACE(body);
    int code = 0;
    json::value r = srv_->Json("POST", "/api/v1/tokens", body, &code);
    EXPECT_EQ(code, 400) << json::serialize(r);
    EXPECT_EQ(r.at("error").at("field").as_string(), "node") << json::serialize(r);
  }
  int code = 0;
  json::value list = srv_->Json("GET", "/api/v1/tokens", "", &code);
  EXPECT_EQ(list.at("items").as_array().size(), 2u) << json::serialize(list);  // Admin, agents.
}

TEST_F(AgentTest, APrefixBoundTokenServesSimulatedNodes) {
  // --simulate-nodes 3 runs sim-00000 .. sim-00002 with one token: 'sim-*'.
  int rc = -1;
  std::string out = RunCli(*srv_, srv_->admin_token(),
                           {"token", "create", "--user", "sims", "--role", "node", "--node", "sim-*"},
                           &rc);
  ASSERT_EQ(rc, 0) << out;
  std::string token = out.substr(out.rfind("allot_"));
  token = token.substr(0, token.find_first_of(" \n"));
  EXPECT_NE(out.find("(node, bound to node sim-*)"), std::string::npos) << out;
  auto sims = std::make_unique<AgentProcess>(
      *srv_, token, "sim", "1xH100-80GB", dir_ + "/agent-sim",
      std::vector<std::string>{"--simulate-nodes", "3", "--simulate-exec"});
  for (const char* n : {"sim-00000", "sim-00001", "sim-00002"}) WaitForNode(n);
  net::Response no = srv_->Call(token, "POST", "/api/v1/agents/sync", NodeSync("gpu-01"));
  EXPECT_EQ(no.status, 403) << no.body;
  EXPECT_NE(no.body.find("bound to node sim-*"), std::string::npos) << no.body;
  out = RunCli(*srv_, srv_->admin_token(), {"token", "list"}, &rc);
  EXPECT_NE(out.find("sim-*"), std::string::npos) << out;
}

}  // namespace
}  // namespace allot::server
