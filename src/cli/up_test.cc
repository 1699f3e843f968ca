// `allot up` end to end: the real binary (server + agent in one process,
// simulated GPUs, real pod processes) on loopback, with and without --demo.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/up_fixture.h"
#include "net/http.h"

namespace allot::cli {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using namespace std::chrono_literals;

class UpTest : public testing::UpFixture {};

// The demo tells its story: borrowing, queueing, reclaim by preemption, a
// gang restart and a failure with its log lines, on real processes.
TEST_F(UpTest, DemoShowsBorrowingPreemptionRestartsAndFailures) {
  Start({"--demo", "--demo-delay", "2"});
  int code = 0;
  json::value node = Get("/api/v1/nodes", &code);
  ASSERT_EQ(code, 200);
  // team-b's high-priority eval reclaims the GPUs team-a borrowed.
  json::value train = WaitFor("team-a/train", [](const json::value& w) {
    return HasCondition(w, "Preempted");
  });
  json::value eval = WaitFor("team-b/eval", [](const json::value& w) {
    return State(w) == "Running" || State(w) == "Succeeded";
  });
  json::value flaky = WaitFor("team-b/flaky", [](const json::value& w) {
    return State(w) == "Succeeded" || State(w) == "Failed";
  });
  EXPECT_EQ(State(flaky), "Succeeded");
  EXPECT_EQ(flaky.at("status").at("restarts").as_int64(), 1);
  json::value broken = WaitFor("team-b/broken", [](const json::value& w) {
    return State(w) == "Failed";
  });
  std::string finished;
  for (const json::value& c : broken.at("status").at("conditions").as_array()) {
    if (c.at("type").as_string() == "Finished") finished = c.at("message").as_string();
  }
  EXPECT_NE(finished.find("config.yaml: no such file"), std::string::npos) << finished;
  // Its log, through the server.
  json::value log = Get("/api/v1/workloads/team-b/broken/log", &code);
  ASSERT_EQ(code, 200) << json::serialize(log);
  EXPECT_EQ(std::string(log.at("data").as_string()),
            "loading config\nconfig.yaml: no such file\n")
      << json::serialize(log);

  const std::string out = Output();
  EXPECT_NE(out.find("SIMULATED"), std::string::npos) << out;
  EXPECT_NE(out.find("preempted by team-b/eval (InCohortReclamation)"), std::string::npos) << out;
  EXPECT_NE(out.find("(borrowing"), std::string::npos) << out;
  EXPECT_EQ(Stop(), 0) << Output();
}

// Without --demo the store and the token survive a restart; --demo starts
// from a store of its own, fresh each time.
TEST_F(UpTest, KeepsItsStoreAndTokenAcrossRestarts) {
  Start({});
  const std::string token = token_;
  auto put = client_->Do("POST", "/api/v1/apply",
                         {{"Authorization", "Bearer " + token_},
                          {"Content-Type", "application/yaml"}},
                         "apiVersion: v1\nkind: Namespace\nmetadata: {name: kept}\n");
  ASSERT_TRUE(put.ok());
  ASSERT_EQ(put->status, 200) << put->body;
  EXPECT_EQ(Stop(), 0);
  EXPECT_EQ(fs::status(dir_ + "/admin.token").permissions() & fs::perms::others_read,
            fs::perms::none);

  Start({});
  EXPECT_EQ(token_, token);
  int code = 0;
  Get("/api/v1/tenants/kept", &code);
  EXPECT_EQ(code, 200);
  EXPECT_EQ(Stop(), 0);

  Start({"--demo", "--demo-delay", "600"});
  Get("/api/v1/tenants/kept", &code);
  EXPECT_EQ(code, 404);  // The demo's own store.
  // The demo applies its manifests once the server is up: wait for them.
  allot::testing::WaitFor(
      [&] {
        Get("/api/v1/tenants/team-a", &code);
        return code == 200;
      },
      20s, 100ms);
  EXPECT_EQ(code, 200);
  EXPECT_EQ(Stop(), 0);
}

// The CLI acts in the tenant of its token: a member of team-a submits,
// describes, reads the log of and deletes a workload without -t; -t
// overrides; an admin's token (no tenant) keeps "default".
TEST_F(UpTest, CliDefaultsToTheTenantOfItsToken) {
  Start({});
  int code = 0;
  json::value r = Call("POST", "/api/v1/apply",
                       "apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a}\n---\n"
                       "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nmetadata: {name: f}\n---\n"
                       "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: cq}\n"
                       "spec:\n  namespaceSelector: {}\n  resourceGroups:\n"
                       "  - coveredResources: [nvidia.com/gpu]\n"
                       "    flavors: [{name: f, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}]\n---\n"
                       "apiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueue\n"
                       "metadata: {name: q, namespace: team-a}\nspec: {clusterQueue: cq}\n",
                       &code);
  ASSERT_EQ(code, 200) << json::serialize(r);
  r = Call("POST", "/api/v1/tokens", R"({"user":"ann","role":"member","tenant":"team-a"})", &code);
  ASSERT_EQ(code, 201) << json::serialize(r);
  const std::string ann = std::string(r.at("token").as_string());
  const std::vector<std::string> server = {"--server", url_};
  auto cli = [&](std::vector<std::string> args, const std::string& token) {
    args.insert(args.begin() + 1, server.begin(), server.end());  // Before any "--".
    return Allot(std::move(args), token);
  };

  Ran out = cli({"submit", "--name", "w", "--queue", "q", "--gpus", "1", "--", "sh", "-c",
                 "echo from-w"}, ann);
  ASSERT_EQ(out.code, 0) << out.err;
  EXPECT_NE(out.out.find("workload team-a/w submitted"), std::string::npos) << out.out;
  allot::testing::WaitFor(
      [&] {
        r = Get("/api/v1/workloads/team-a/w", &code);
        return State(r) == "Succeeded";
      },
      20s, 100ms);
  ASSERT_EQ(State(r), "Succeeded") << json::serialize(r);
  out = cli({"describe", "workload", "w"}, ann);
  EXPECT_EQ(out.code, 0) << out.err;
  EXPECT_NE(out.out.find("team-a"), std::string::npos) << out.out;
  out = cli({"logs", "w"}, ann);
  EXPECT_EQ(out.code, 0) << out.err;
  EXPECT_NE(out.out.find("from-w"), std::string::npos) << out.out;
  out = cli({"get", "workload", "w", "-o", "json"}, ann);
  EXPECT_EQ(out.code, 0) << out.err;
  // The node: how it runs pods, and that its GPUs are simulated.
  out = cli({"get", "nodes"}, token_);
  EXPECT_EQ(out.code, 0) << out.err;
  EXPECT_NE(out.out.find("RUNTIME"), std::string::npos) << out.out;
  EXPECT_NE(out.out.find("(simulated)"), std::string::npos) << out.out;
  EXPECT_NE(out.out.find("process (ignores images)"), std::string::npos) << out.out;
  // -t overrides (and team-b is not ann's: not found).
  out = cli({"describe", "workload", "w", "-t", "team-b"}, ann);
  EXPECT_NE(out.code, 0);
  EXPECT_NE(out.err.find("team-b/w does not exist"), std::string::npos) << out.err;
  // The admin's token has no tenant: "default", where w is not.
  out = cli({"describe", "workload", "w"}, token_);
  EXPECT_NE(out.code, 0);
  EXPECT_NE(out.err.find("default/w does not exist"), std::string::npos) << out.err;
  out = cli({"delete", "workload", "w"}, ann);
  EXPECT_EQ(out.code, 0) << out.err;
  Get("/api/v1/workloads/team-a/w", &code);
  EXPECT_EQ(code, 404);
}

}  // namespace
}  // namespace allot::cli
