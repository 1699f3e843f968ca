// Autoscaled NodePools end to end (docs/autoscaling.md): a real `allot
// serve`, an exec provider that starts and stops real `allot agent`
// processes with simulated GPUs, and a provider that fails or hangs.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdio>
#include <filesystem>
#include <set>
#include <fstream>
#include <string>

#include "server/agent_test_util.h"
#include "server/test_server.h"
#include "testing/builders.h"
#include "testing/process.h"

namespace allot::server::testing {
namespace {

namespace b = allot::testing;
namespace json = boost::json;

std::string Str(const json::value& v, std::initializer_list<const char*> path) {
  const json::value* x = &v;
  for (const char* k : path) {
    if (!x->is_object() || !x->as_object().contains(k)) return "";
    x = &x->as_object().at(k);
  }
  return x->is_string() ? std::string(x->as_string()) : "";
}

class AutoscaleTest : public ServerTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(StartServer(
        b::Namespace("team-a") + b::FlavorSpec("pool", "{nodeLabels: {allot.dev/pool: p}}") +
        b::FlavorSpec("broken", "{nodeLabels: {allot.dev/pool: q}}") +
        "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: cq}\n"
        "spec:\n  namespaceSelector: {}\n  resourceGroups:\n"
        "  - coveredResources: [nvidia.com/gpu]\n    flavors:\n"
        "    - {name: pool, resources: [{name: nvidia.com/gpu, nominalQuota: 16}]}\n"
        "    - {name: broken, resources: [{name: nvidia.com/gpu, nominalQuota: 16}]}\n---\n" +
        b::LocalQueue("team-a", "q", "cq")));
    dir_ = srv_->dir();
  }
  void TearDown() override {
    if (HasFailure()) std::fprintf(stderr, "allot serve said:\n%s\n", srv_->Log().c_str());
    // Agents the local provider left running (they outlive the server).
    for (const auto& e : std::filesystem::directory_iterator(PoolDir(), ec_)) {
      if (e.path().extension() != ".pid") continue;
      std::ifstream f(e.path());
      pid_t pid = 0;
      if (f >> pid && pid > 0) kill(pid, SIGKILL);
    }
  }
  std::string PoolDir() const { return dir_ + "/allot.db.pools"; }
  pid_t AgentPid(const std::string& node) const {
    std::ifstream f(PoolDir() + "/" + node + ".pid");
    pid_t pid = 0;
    return f >> pid ? pid : 0;
  }

  // `provider`: the flow mapping of spec.provider.
  std::string Pool(const std::string& name, const std::string& provider,
                   const std::string& boot_timeout = "60s") {
    return "apiVersion: allot.dev/v1\nkind: NodePool\nmetadata: {name: " + name +
           "}\nspec:\n  maxNodes: 2\n  gpus: 8\n  product: H100-80GB\n"
           "  labels: {allot.dev/pool: " + name + "}\n"
           "  provider: " + provider + "\n"
           "  scaleDownDelay: 3s\n  bootTimeout: " + boot_timeout + "\n";
  }
  std::string Exec(const std::string& command) { return "{type: exec, command: " + command + "}"; }
  int NodeStatus(const std::string& name) {
    int code = 0;
    srv_->Json("GET", "/api/v1/nodes/" + name, "", &code);
    return code;
  }

  std::string dir_;
  std::error_code ec_;
};

TEST_F(AutoscaleTest, ABacklogBootsWholeGangsAndIdleNodesAreSuspended) {
  // The local provider: an `allot agent` per node, started by the server
  // after a 2 s "boot".
  ASSERT_TRUE(srv_->Apply(Pool("p", "{type: local, bootDelay: 2s}")));
  // Nothing is up, and nothing boots without demand.
  EXPECT_EQ(NodeStatus("p-0"), 404);
  int code = 0;
  srv_->Json("POST", "/api/v1/workloads", AgentWorkload("gang", 2, 8, "sleep 4"), &code);
  ASSERT_EQ(code, 201);
  // While it waits, it says for what; then it runs on the two new nodes.
  std::set<std::string> reasons;
  json::value w = srv_->WaitForWorkload("team-a/gang", [&](const json::value& v) {
    reasons.insert(Str(v, {"status", "pendingReason"}));
    return WorkloadStateOf(v) == "Running";
  }, std::chrono::seconds(60));
  std::string seen;
  bool told = false;
  for (const std::string& r : reasons) {
    seen += "\n  " + r;
    told = told || r.find("of pool p") != std::string::npos;
  }
  EXPECT_TRUE(told) << "reasons seen:" << seen;
  const std::string nodes = std::string(Placement(w, 0).at("node").as_string()) + "," +
                            std::string(Placement(w, 1).at("node").as_string());
  EXPECT_NE(nodes.find("p-0"), std::string::npos) << nodes;
  EXPECT_NE(nodes.find("p-1"), std::string::npos) << nodes;
  // The nodes carry the pool's labels (their agents know nothing of them).
  json::value n = srv_->Json("GET", "/api/v1/nodes/p-0", "", &code);
  EXPECT_EQ(Str(n, {"metadata", "labels", "allot.dev/pool"}), "p");
  // The agents outlive a restart of the server, which finds them (`list`)
  // and lets the gang finish where it runs.
  const pid_t p0 = AgentPid("p-0");
  ASSERT_GT(p0, 0);
  ASSERT_TRUE(srv_->Restart());
  w = srv_->WaitForWorkload("team-a/gang", [&](const json::value& v) {
    return WorkloadStateOf(v) == "Succeeded" || WorkloadStateOf(v) == "Failed";
  }, std::chrono::seconds(60));
  EXPECT_EQ(WorkloadStateOf(w), "Succeeded") << json::serialize(w);
  EXPECT_EQ(AgentPid("p-0"), p0);
  json::value pool = srv_->Json("GET", "/api/v1/nodepools/p", "", &code);
  const json::value* ready = pool.as_object().contains("status")
                                 ? pool.at("status").as_object().if_contains("nodes")
                                 : nullptr;
  ASSERT_NE(ready, nullptr) << json::serialize(pool);
  EXPECT_EQ(ready->at("suspended").as_int64() + ready->at("ready").as_int64(), 2)
      << json::serialize(pool);
  // Idle for 3 s: suspended, the agents stopped, the nodes gone.
  EXPECT_TRUE(allot::testing::WaitFor(
      [&] { return NodeStatus("p-0") == 404 && NodeStatus("p-1") == 404; },
      std::chrono::seconds(30)));
  EXPECT_TRUE(allot::testing::WaitFor([&] { return kill(p0, 0) != 0; }, std::chrono::seconds(15)));
  // The metrics count what happened since the restart: no boot (the
  // server found the nodes up), 2 suspends.
  const std::string m = srv_->Admin("GET", "/metrics", "").body;
  EXPECT_NE(m.find("allot_pool_boots_total{pool=\"p\"} 0"), std::string::npos) << m;
  EXPECT_NE(m.find("allot_pool_suspends_total{pool=\"p\"} 2"), std::string::npos) << m;
  EXPECT_NE(m.find("allot_pool_nodes{pool=\"p\",state=\"suspended\"} 2"), std::string::npos);
}

TEST_F(AutoscaleTest, AProviderThatFailsOrHangsIsReportedAndBackedOff) {
  // One program exits 3 saying why; the other never returns.
  ASSERT_TRUE(srv_->Apply(
      Pool("q", Exec("[/bin/sh, -c, 'echo no capacity in zone >&2; exit 3', prog]")) + "---\n" +
      Pool("p", Exec("[/bin/sh, -c, 'sleep 600', prog]"), "2s")));
  int code = 0;
  srv_->Json("POST", "/api/v1/workloads", AgentWorkload("one", 1, 8, "true"), &code);
  ASSERT_EQ(code, 201);
  // The pool tried first (p, "pool" comes first in the ClusterQueue) hangs
  // and is killed at its boot timeout; q's program fails at once. The
  // workload says so while it waits.
  json::value w = srv_->WaitForWorkload("team-a/one", [&](const json::value& v) {
    const std::string r = Str(v, {"status", "pendingReason"});
    return r.find("no capacity in zone") != std::string::npos &&
           r.find("exited with code 3") != std::string::npos;
  }, std::chrono::seconds(60));
  EXPECT_EQ(WorkloadStateOf(w), "Pending");
  const std::string m = srv_->Admin("GET", "/metrics", "").body;
  EXPECT_NE(m.find("allot_pool_boot_failures_total{pool=\"q\"}"), std::string::npos) << m;
  // The pools are objects like any other: kept across a restart.
  ASSERT_TRUE(srv_->Restart());
  json::value q = srv_->Json("GET", "/api/v1/nodepools/q", "", &code);
  EXPECT_EQ(code, 200) << json::serialize(q);
  EXPECT_EQ(Str(q, {"spec", "provider", "type"}), "exec");
  // And listed by the CLI, one row each.
  const std::string cmd = std::string(std::getenv("ALLOT_BIN")) + " get nodepools --server " +
                          srv_->url() + " --token " + srv_->admin_token() + " 2>&1";
  std::string table;
  if (FILE* f = popen(cmd.c_str(), "r")) {
    char buf[512];
    while (fgets(buf, sizeof buf, f)) table += buf;
    pclose(f);
  }
  EXPECT_NE(table.find("PRICE/NODE-H"), std::string::npos) << table;
  EXPECT_NE(table.find("8xH100-80GB"), std::string::npos) << table;
  EXPECT_NE(table.find("HEALTH"), std::string::npos) << table;
  // A provider the server does not run is refused, naming the field.
  net::Response r = srv_->Admin(
      "POST", "/api/v1/apply",
      "apiVersion: allot.dev/v1\nkind: NodePool\nmetadata: {name: l}\n"
      "spec: {maxNodes: 1, gpus: 8, provider: {type: simulated}}\n");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("spec.provider.type"), std::string::npos) << r.body;
}

}  // namespace
}  // namespace allot::server::testing
