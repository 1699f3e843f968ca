// Tenants' Secrets end to end: kept sealed in the store across kill -9,
// shown by tenant and role, never in the audit log; a workload's pods get
// them as environment variables on a process agent, a workload naming a
// missing Secret is refused, and a pod whose Secret went away fails to
// start saying which.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "server/agent_test_util.h"

namespace allot::server {
namespace {

using namespace testing;  // The agents' fixture: agent_test_util.h.
namespace json = boost::json;

constexpr char kValue[] = "hunter2-the-value";

std::string SecretBody(const std::string& name) {
  return R"({"apiVersion":"v1","kind":"Secret","metadata":{"name":")" + name +
         R"("},"stringData":{"HF_TOKEN":")" + kValue + R"(","region":"eu"}})";
}

json::object SecretEnv() {
  return json::object{
      {"env", json::array{json::object{
                  {"name", "TOKEN"},
                  {"valueFrom", json::object{{"secretKeyRef",
                                              json::object{{"name", "hf"}, {"key", "HF_TOKEN"}}}}}}}},
      {"envFrom", json::array{json::object{{"prefix", "S_"},
                                           {"secretRef", json::object{{"name", "hf"}}}}}}};
}

// AgentWorkload with the pod set's template given `more` fields.
std::string WithTemplate(const std::string& name, const std::string& script, json::object more) {
  json::value w = json::parse(AgentWorkload(name, 1, 1, script));
  json::object& t = w.at("spec").at("podSets").at(0).at("template").as_object();
  for (const auto& kv : more) {
    if (kv.key() == "env") {
      for (const json::value& e : kv.value().as_array()) t["env"].as_array().push_back(e);
    } else {
      t[kv.key()] = kv.value();
    }
  }
  return json::serialize(w);
}

TEST_F(AgentTest, SecretsAreSealedScopedAndReachThePodsEnvironment) {
  const std::string tadmin = srv_->NewToken("ta", "tenant-admin", "team-a");
  const std::string member = srv_->NewToken("mem", "member", "team-a");
  const std::string viewer = srv_->NewToken("view", "viewer", "team-a");
  ASSERT_TRUE(srv_->Apply("apiVersion: v1\nkind: Namespace\nmetadata: {name: team-b}\n"));
  const std::string other = srv_->NewToken("other", "tenant-admin", "team-b");
  auto call = [&](const std::string& token, const std::string& method, const std::string& path,
                  const std::string& body = "") {
    return srv_->Send("Bearer " + token, method, path, body);
  };

  // A member creates it; the viewer may not; team-b's admin does not see
  // team-a at all.
  EXPECT_EQ(call(member, "POST", "/api/v1/secrets/team-a", SecretBody("hf")).status, 201);
  EXPECT_EQ(call(member, "POST", "/api/v1/secrets/team-a", SecretBody("hf")).status, 409);
  EXPECT_EQ(call(viewer, "POST", "/api/v1/secrets/team-a", SecretBody("v")).status, 403);
  EXPECT_EQ(call(other, "GET", "/api/v1/secrets/team-a").status, 404);
  EXPECT_EQ(call(other, "GET", "/api/v1/secrets/team-a/hf?values=true").status, 404);
  net::Response bad = call(member, "POST", "/api/v1/secrets/team-a",
                           R"({"apiVersion":"v1","kind":"Secret","metadata":{"name":"b"},)"
                           R"("data":{"k":"not base64"}})");
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body.find("data[k]"), std::string::npos) << bad.body;

  // Lists and reads show keys and sizes, never values; only the tenant's
  // admin reads the values.
  net::Response list = call(viewer, "GET", "/api/v1/secrets/team-a");
  ASSERT_EQ(list.status, 200);
  EXPECT_NE(list.body.find("\"HF_TOKEN\":17"), std::string::npos) << list.body;
  EXPECT_EQ(list.body.find(kValue), std::string::npos) << list.body;
  EXPECT_EQ(call(member, "GET", "/api/v1/secrets/team-a/hf?values=true").status, 403);
  net::Response shown = call(tadmin, "GET", "/api/v1/secrets/team-a/hf?values=true");
  ASSERT_EQ(shown.status, 200);
  json::value v = json::parse(shown.body);
  EXPECT_EQ(v.at("data").at("HF_TOKEN").as_string(), "aHVudGVyMi10aGUtdmFsdWU=");

  // A workload naming a Secret that does not exist is refused, naming it.
  int code = 0;
  json::value refused = srv_->Json(
      "POST", "/api/v1/workloads",
      WithTemplate("nosecret", "true",
                   json::object{{"envFrom", json::array{json::object{
                                                {"secretRef", json::object{{"name", "nope"}}}}}}}),
      &code);
  EXPECT_EQ(code, 404) << json::serialize(refused);
  EXPECT_NE(json::serialize(refused).find("Secret team-a/nope not found"), std::string::npos)
      << json::serialize(refused);

  // The store holds no value, and the values survive kill -9.
  srv_->Kill9();
  for (const char* f : {"/allot.db", "/allot.db-wal"}) {
    EXPECT_EQ(allot::testing::ReadFile(srv_->dir() + f).find(kValue), std::string::npos) << f;
  }
  ASSERT_TRUE(srv_->Restart());
  shown = call(tadmin, "GET", "/api/v1/secrets/team-a/hf?values=true");
  EXPECT_NE(shown.body.find("aHVudGVyMi10aGUtdmFsdWU="), std::string::npos) << shown.body;
  // The audit log names the Secret and never its values.
  net::Response audit = srv_->Send("Bearer " + srv_->admin_token(), "GET", "/api/v1/audit");
  EXPECT_NE(audit.body.find("Secret team-a/hf"), std::string::npos) << audit.body;
  EXPECT_NE(audit.body.find("\"reveal\""), std::string::npos) << audit.body;
  EXPECT_EQ(audit.body.find(kValue), std::string::npos);

  // A pod gets them as variables.
  auto a1 = StartReadyAgent("a1", "1xH100-80GB");
  json::value w;
  ASSERT_NO_FATAL_FAILURE(
      RunToEnd("env", WithTemplate("env", "echo token=$TOKEN region=$S_region", SecretEnv()), &w));
  ASSERT_EQ(State(w), "Succeeded") << json::serialize(w);
  EXPECT_NE(a1->PodLog(PodId(w, 0)).find(std::string("token=") + kValue + " region=eu"),
            std::string::npos)
      << a1->PodLog(PodId(w, 0));
  // The agent's own output does not print them.
  EXPECT_EQ(a1->Output().find(kValue), std::string::npos);
}

TEST_F(AgentTest, APodWhoseSecretIsGoneFailsToStartNamingIt) {
  int code = 0;
  srv_->Json("POST", "/api/v1/secrets/team-a", SecretBody("hf"), &code);
  ASSERT_EQ(code, 201);
  // Admitted only once a node is there: the Secret goes first.
  srv_->Json("POST", "/api/v1/workloads", WithTemplate("late", "echo $TOKEN", SecretEnv()), &code);
  ASSERT_EQ(code, 201);
  srv_->Json("DELETE", "/api/v1/secrets/team-a/hf", "", &code);
  ASSERT_EQ(code, 200);
  auto a1 = StartReadyAgent("a1", "1xH100-80GB");
  json::value w = WaitFor("late", [](const json::value& v) { return State(v) == "Failed"; });
  ASSERT_EQ(State(w), "Failed") << json::serialize(w);
  EXPECT_NE(json::serialize(w).find("CreateContainerConfigError: Secret team-a/hf not found"),
            std::string::npos)
      << json::serialize(w);
}

// `allot apply` takes a Kubernetes v1 Secret beside the workloads that
// name it: the Secret goes through the Secrets API (sealed, never in the
// apply's audit record), before the workload; applying again changes
// nothing; an error in a later document keeps the file's numbering.
TEST_F(AgentTest, ApplyTakesSecretsBesideTheWorkloadsThatNameThem) {
  const std::string member = srv_->NewToken("mem", "member", "team-a");
  const std::string file = srv_->dir() + "/with-secret.yaml";
  std::ofstream(file) << "apiVersion: v1\nkind: Secret\nmetadata: {name: hf}\n"
                         "stringData: {HF_TOKEN: " << kValue << ", region: eu}\n---\n"
                      << WithTemplate("applied", "echo token=$TOKEN region=$S_region", SecretEnv())
                      << "\n";
  int rc = -1;
  std::string out = RunCli(*srv_, member, {"apply", "-f", file}, &rc);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("Secret team-a/hf created\nWorkload team-a/applied created"),
            std::string::npos)
      << out;
  out = RunCli(*srv_, member, {"apply", "-f", file}, &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("Secret team-a/hf unchanged"), std::string::npos) << out;

  auto a1 = StartReadyAgent("a1", "1xH100-80GB");
  json::value w = WaitFor("applied", [](const json::value& v) { return State(v) == "Succeeded"; });
  ASSERT_EQ(State(w), "Succeeded") << json::serialize(w);
  EXPECT_NE(a1->PodLog(PodId(w, 0)).find(std::string("token=") + kValue + " region=eu"),
            std::string::npos)
      << a1->PodLog(PodId(w, 0));
  net::Response audit = srv_->Send("Bearer " + srv_->admin_token(), "GET", "/api/v1/audit");
  EXPECT_EQ(audit.body.find(kValue), std::string::npos);

  // A bad document after a Secret: the error counts the Secret's document.
  std::ofstream(file) << "apiVersion: v1\nkind: Secret\nmetadata: {name: hf2}\n"
                         "stringData: {K: v}\n---\napiVersion: allot.dev/v1\nkind: Workload\n"
                         "metadata: {name: bad}\nspec: {queueName: q, podSets: oops}\n";
  out = RunCli(*srv_, member, {"apply", "-f", file}, &rc);
  EXPECT_NE(rc, 0) << out;
  EXPECT_NE(out.find("document 1"), std::string::npos) << out;
}

}  // namespace
}  // namespace allot::server
