// Node agents end to end: a real `allot serve` and real `allot agent`
// processes (simulated GPUs, real pod processes) on loopback
// (agent_test_util.h): pods run with their placement and environment, end
// with their workload, move when their node is lost, restart as a gang and
// outlive a server restart or outage. Logs, cgroups and node-bound tokens
// have files of their own (agent_{logs,cgroup,token}_test.cc).
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "server/agent_test_util.h"

namespace allot::server {
namespace {

using namespace testing;  // The agents' fixture: agent_test_util.h.
namespace json = boost::json;

TEST_F(AgentTest, PodRunsWithItsPlacementAndSucceeds) {
  auto n1 = StartReadyAgent("n1", "2xH100-80GB");
  int code = 0;
  json::value node = srv_->Json("GET", "/api/v1/nodes/n1", "", &code);
  EXPECT_EQ(node.at("metadata").at("labels").at("allot.dev/simulated").as_string(), "true");
  json::value w;
  ASSERT_NO_FATAL_FAILURE(
      RunToEnd("env",
               AgentWorkload("env", 1, 2,
                             "echo \"CVD=$CUDA_VISIBLE_DEVICES RANK=$RANK WS=$WORLD_SIZE "
                             "G=$GREETING T=$ALLOT_TENANT\""),
               &w));
  ASSERT_EQ(State(w), "Succeeded") << json::serialize(w);
  const json::object& pl = Placement(w, 0);
  EXPECT_EQ(pl.at("node").as_string(), "n1");
  std::string log = n1->PodLog(PodId(w, 0));
  EXPECT_NE(log.find("CVD=" + Join(pl.at("gpus").as_array()) +
                     " RANK=0 WS=1 G=hi T=team-a"),
            std::string::npos)
      << log << "\nagent:\n" << n1->Output();
  // Its quota is back: the ClusterQueue uses nothing.
  json::value cq = srv_->Json("GET", "/api/v1/clusterqueues/cq-a", "", &code);
  EXPECT_EQ(cq.at("status").at("flavorsUsage").at(0).at("resources").at(0)
                .at("total").as_string(), "0");
}

TEST_F(AgentTest, FailingPodFailsTheWorkloadWithItsLastLines) {
  auto n1 = StartReadyAgent("n1", "2xH100-80GB");
  json::value w;
  ASSERT_NO_FATAL_FAILURE(
      RunToEnd("boom", AgentWorkload("boom", 1, 1, "echo about to fail; exit 3"), &w));
  ASSERT_EQ(State(w), "Failed");
  std::string finished;
  for (const json::value& c : w.at("status").at("conditions").as_array()) {
    if (c.at("type").as_string() == "Finished") {
      finished = std::string(c.at("message").as_string());
    }
  }
  EXPECT_NE(finished.find("exited with code 3"), std::string::npos) << finished;
  EXPECT_NE(finished.find("about to fail"), std::string::npos) << finished;
}

TEST_F(AgentTest, GangPodsGetConsistentRanks) {
  auto n1 = StartAgent("n1", "2xH100-80GB");
  auto n2 = StartAgent("n2", "2xH100-80GB");
  WaitForNode("n1");
  WaitForNode("n2");
  json::value w;
  ASSERT_NO_FATAL_FAILURE(
      RunToEnd("gang",
               AgentWorkload("gang", 2, 2,
                             "echo \"R=$RANK W=$WORLD_SIZE N=$NNODES NR=$NODE_RANK "
                             "M=$MASTER_ADDR:$MASTER_PORT\""),
               &w));
  ASSERT_EQ(State(w), "Succeeded") << json::serialize(w);
  std::string master;
  for (int i = 0; i < 2; ++i) {
    std::string node(Placement(w, i).at("node").as_string());
    std::string log = (node == "n1" ? n1 : n2)->PodLog(PodId(w, i));
    std::smatch m;
    ASSERT_TRUE(std::regex_search(log, m, std::regex(
        "R=([0-9]+) W=2 N=2 NR=([0-9]+) M=(\\S+)")))
        << log;
    EXPECT_EQ(m[1].str(), std::to_string(i));
    EXPECT_EQ(m[2].str(), std::to_string(i));  // One pod per node here.
    if (i == 0) master = m[3].str();
    EXPECT_EQ(m[3].str(), master);
  }
}

TEST_F(AgentTest, DeletingARunningWorkloadEndsItsProcesses) {
  auto n1 = StartReadyAgent("n1", "2xH100-80GB");
  int code = 0;
  json::value w;
  ASSERT_NO_FATAL_FAILURE(RunSleeper("long", 1, &w));
  pid_t child = WaitPodPid(*n1, PodId(w, 0));
  ASSERT_TRUE(Alive(child));
  srv_->Json("DELETE", "/api/v1/workloads/team-a/long", "", &code);
  EXPECT_EQ(code, 200);
  EXPECT_TRUE(WaitDead(child)) << "pid " << child << " survived the delete";
}

// Three agents: a low-priority gang spread over them runs with each pod's
// own GPUs; a high-priority workload preempts it, and every process of the
// gang (children included) ends before the preemptor's pods start.
TEST_F(AgentTest, ThreeAgentsAndPreemptionEndsTheVictimsProcesses) {
  int code = 0;
  srv_->Json("PUT", "/api/v1/clusterqueues/cq-a", R"({"apiVersion":"kueue.x-k8s.io/v1beta1",
      "kind":"ClusterQueue","metadata":{"name":"cq-a"},"spec":{"namespaceSelector":{},
      "preemption":{"withinClusterQueue":"LowerPriority"},
      "resourceGroups":[{"coveredResources":["nvidia.com/gpu"],"flavors":[{"name":"sim",
      "resources":[{"name":"nvidia.com/gpu","nominalQuota":6}]}]}]}})",
             &code);
  ASSERT_EQ(code, 200);
  std::map<std::string, std::unique_ptr<AgentProcess>> agents;
  for (const char* n : {"n1", "n2", "n3"}) agents[n] = StartAgent(n, "2xH100-80GB");
  for (const char* n : {"n1", "n2", "n3"}) WaitForNode(n);
  srv_->Json("POST", "/api/v1/workloads",
             AgentWorkload("low", 3, 2,
                      "sleep 300 & echo PID=$! CVD=$CUDA_VISIBLE_DEVICES; wait",
                      {{"priority", 1}}),
             &code);
  ASSERT_EQ(code, 201);
  json::value w = WaitFor("low", [](const json::value& v) { return State(v) == "Running"; });
  std::vector<pid_t> pids;
  for (int i = 0; i < 3; ++i) {
    const json::object& pl = Placement(w, i);
    const AgentProcess& a = *agents.at(std::string(pl.at("node").as_string()));
    pid_t pid = WaitPodPid(a, PodId(w, i));
    ASSERT_TRUE(Alive(pid)) << a.Output();
    EXPECT_NE(a.PodLog(PodId(w, i)).find("CVD=" + Join(pl.at("gpus").as_array())),
              std::string::npos)
        << a.PodLog(PodId(w, i));
    pids.push_back(pid);
  }
  srv_->Json("POST", "/api/v1/workloads",
             AgentWorkload("high", 1, 2, "echo started", {{"priority", 100}}), &code);
  ASSERT_EQ(code, 201);
  json::value h = WaitFor("high", [](const json::value& v) { return State(v) == "Succeeded"; });
  EXPECT_EQ(State(h), "Succeeded");
  for (pid_t pid : pids) EXPECT_TRUE(WaitDead(pid)) << "pid " << pid << " outlived the preemption";
  json::value l = srv_->Json("GET", "/api/v1/workloads/team-a/low", "", &code);
  bool preempted = false;
  for (const json::value& c : l.at("status").at("conditions").as_array()) {
    preempted = preempted || c.at("type").as_string() == "Preempted";
  }
  EXPECT_TRUE(preempted) << json::serialize(l);
}

TEST_F(AgentTest, KilledAgentsWorkRequeuesAndItsLeftoversAreStopped) {
  auto n1 = StartReadyAgent("n1", "2xH100-80GB");
  json::value w;
  ASSERT_NO_FATAL_FAILURE(RunSleeper("moved", 2, &w));
  const std::string first_pod = PodId(w, 0);
  pid_t orphan = WaitPodPid(*n1, first_pod);
  ASSERT_TRUE(Alive(orphan));

  auto n2 = StartReadyAgent("n2", "2xH100-80GB");
  n1->Kill9();  // Its pod keeps running, unsupervised.
  // After the node timeout (3 s) n1 is NotReady and the workload moves.
  w = WaitFor("moved", [](const json::value& v) {
    return State(v) == "Running" &&
           Placement(v, 0).at("node").as_string() == "n2";
  });
  EXPECT_EQ(Placement(w, 0).at("node").as_string(), "n2");
  EXPECT_EQ(w.at("status").at("attempt").as_int64(), 2);
  bool evicted = false;
  int64_t ready_ms = 0, admitted_ms = 0;
  for (const json::value& c : w.at("status").at("conditions").as_array()) {
    if (c.at("type").as_string() == "Requeued") {
      evicted = c.at("reason").as_string() == "NodeNotReady";
    }
    if (c.at("type").as_string() == "PodsReady") ready_ms = c.at("lastTransitionUnixMs").as_int64();
    if (c.at("type").as_string() == "QuotaReserved") admitted_ms = c.at("lastTransitionUnixMs").as_int64();
  }
  EXPECT_TRUE(evicted) << json::serialize(w);
  // PodsReady is of the new admission's pods, not left from the first.
  EXPECT_GE(ready_ms, admitted_ms) << json::serialize(w);
  // n1 comes back: what its earlier run left behind is stopped.
  n1->Launch();
  EXPECT_TRUE(WaitDead(orphan)) << "pid " << orphan << " survived\n" << n1->Output();
}

TEST_F(AgentTest, BackoffLimitRestartsTheGangAsANewAttempt) {
  auto n1 = StartReadyAgent("n1", "2xH100-80GB");
  // Fails in its first attempt, succeeds in the second.
  json::value w;
  ASSERT_NO_FATAL_FAILURE(RunToEnd(
      "retry",
      AgentWorkload("retry", 1, 1,
                    "echo attempt $ALLOT_ATTEMPT; [ \"$ALLOT_ATTEMPT\" = 2 ] || exit 4",
                    {{"backoffLimit", 1}}),
      &w));
  ASSERT_EQ(State(w), "Succeeded") << json::serialize(w);
  EXPECT_EQ(w.at("status").at("attempt").as_int64(), 2);
  EXPECT_EQ(w.at("status").at("restarts").as_int64(), 1);

  // With backoffLimit 1, a pod that always fails ends Failed after 2 tries.
  ASSERT_NO_FATAL_FAILURE(
      RunToEnd("always", AgentWorkload("always", 1, 1, "exit 5", {{"backoffLimit", 1}}), &w));
  EXPECT_EQ(State(w), "Failed");
  EXPECT_EQ(w.at("status").at("attempt").as_int64(), 2);
}

TEST_F(AgentTest, MaximumExecutionTimeEndsTheWorkload) {
  auto n1 = StartReadyAgent("n1", "2xH100-80GB");
  int code = 0;
  srv_->Json("POST", "/api/v1/workloads",
             AgentWorkload("slow", 1, 1, "sleep 300 & echo PID=$!; wait",
                      {{"maximumExecutionTimeSeconds", 1}}),
             &code);
  ASSERT_EQ(code, 201);
  json::value w = WaitFor("slow", [](const json::value& v) { return State(v) == "Running"; });
  const std::string pod = PodId(w, 0);
  pid_t child = WaitPodPid(*n1, pod);
  w = WaitFor("slow", [](const json::value& v) { return State(v) == "Failed"; });
  std::string reason;
  for (const json::value& c : w.at("status").at("conditions").as_array()) {
    if (c.at("type").as_string() == "Finished") reason = std::string(c.at("reason").as_string());
  }
  EXPECT_EQ(reason, "MaximumExecutionTimeExceeded");
  EXPECT_TRUE(WaitDead(child)) << "pid " << child << " outlived its deadline";
}

// A GPU that turns unhealthy takes only its own workload off the node, with
// a reason naming it; the node's other workload keeps running. (The test
// plays the agent.)
TEST_F(AgentTest, UnhealthyGpuRequeuesOnlyItsWorkloadAndSaysWhy) {
  auto sync = [&](const std::string& health0) {
    int code = 0;
    json::value r = srv_->Json(
        "POST", "/api/v1/agents/sync",
        R"({"node":{"apiVersion":"allot.dev/v1","kind":"Node","metadata":{"name":"sick"},
            "status":{"capacity":{"cpu":"8","memory":"8Gi"},"gpus":[
            {"uuid":"GPU-sick-0","product":"H100-80GB","memory":"80Gi","health":")" +
            health0 + R"("},
            {"uuid":"GPU-sick-1","product":"H100-80GB","memory":"80Gi"}]}}})",
        &code);
    EXPECT_EQ(code, 200) << json::serialize(r);
  };
  sync("Healthy");
  int code = 0;
  for (const char* name : {"one", "two"}) {
    srv_->Json("POST", "/api/v1/workloads", AgentWorkload(name, 1, 1, "true"), &code);
    ASSERT_EQ(code, 201);
  }
  std::map<std::string, std::string> gpu_of;
  for (const char* name : {"one", "two"}) {
    json::value w = WaitFor(name, [](const json::value& v) { return State(v) == "Admitted"; });
    gpu_of[name] = std::string(Placement(w, 0).at("gpus").at(0).as_string());
  }
  const std::string on0 = gpu_of["one"] == "GPU-sick-0" ? "one" : "two";
  const std::string on1 = on0 == "one" ? "two" : "one";
  sync("Unhealthy");
  json::value w = WaitFor(on0, [](const json::value& v) { return State(v) == "Requeued"; });
  std::string reason, message;
  for (const json::value& c : w.at("status").at("conditions").as_array()) {
    if (c.at("type").as_string() == "Evicted") {
      reason = c.at("reason").as_string();
      message = c.at("message").as_string();
    }
  }
  EXPECT_EQ(reason, "GPUUnhealthy");
  EXPECT_NE(message.find("GPU GPU-sick-0 on node sick"), std::string::npos) << message;
  json::value other = srv_->Json("GET", "/api/v1/workloads/team-a/" + on1, "", &code);
  EXPECT_EQ(State(other), "Admitted") << json::serialize(other);
  EXPECT_EQ(other.at("status").at("attempt").as_int64(), 1);  // Not restarted.
}

TEST_F(AgentTest, ServerRestartAdoptsRunningPods) {
  auto n1 = StartReadyAgent("n1", "2xH100-80GB");
  int code = 0;
  json::value w;
  ASSERT_NO_FATAL_FAILURE(RunSleeper("kept", 1, &w));
  const std::string pod = PodId(w, 0);
  pid_t child = WaitPodPid(*n1, pod);
  ASSERT_TRUE(Alive(child));

  srv_->Kill9();
  ASSERT_TRUE(srv_->Restart()) << srv_->Log();
  // The agent reconnects; its pod is adopted, not restarted: same attempt,
  // same process, reported running again.
  w = WaitFor("kept", [](const json::value& v) {
    const json::value* n = v.at("status").as_object().if_contains("podsRunning");
    return n != nullptr && n->as_int64() == 1;
  });
  EXPECT_EQ(State(w), "Running");
  EXPECT_EQ(PodId(w, 0), pod);
  // Nothing to wait for: the pod must still be alive a while after the
  // adoption, so real time passes.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_TRUE(Alive(child)) << n1->Output();
  srv_->Json("DELETE", "/api/v1/workloads/team-a/kept", "", &code);
  EXPECT_EQ(code, 200);
  EXPECT_TRUE(WaitDead(child));
}

// The server down for more than twice the node timeout (3 s): the agent,
// whose backoff is capped at 2 s, is back within the restarted server's
// grace period (one timeout plus that cap), so its running pod is neither
// evicted nor restarted, and the node reports Ready again.
TEST_F(AgentTest, LongServerOutageEvictsNobody) {
  auto n1 = StartReadyAgent("n1", "2xH100-80GB");
  int code = 0;
  json::value w;
  ASSERT_NO_FATAL_FAILURE(RunSleeper("kept", 1, &w));
  const std::string pod = PodId(w, 0);

  srv_->Kill9();
  // The outage itself is what is tested: the agent backs off meanwhile.
  std::this_thread::sleep_for(std::chrono::seconds(8));
  ASSERT_TRUE(srv_->Restart()) << srv_->Log();
  w = WaitFor("kept", [](const json::value& v) {
    const json::value* n = v.at("status").as_object().if_contains("podsRunning");
    return n != nullptr && n->as_int64() == 1;
  });
  // Past the grace period (3 s + 2 s) and one more timeout: real time,
  // since what is tested is that nothing happens meanwhile.
  std::this_thread::sleep_for(std::chrono::seconds(6));
  w = srv_->Json("GET", "/api/v1/workloads/team-a/kept", "", &code);
  EXPECT_EQ(State(w), "Running") << json::serialize(w);
  EXPECT_EQ(PodId(w, 0), pod);
  for (const json::value& c : w.at("status").at("conditions").as_array()) {
    EXPECT_NE(c.at("reason").as_string(), "NodeNotReady") << json::serialize(c);
  }
  json::value node = srv_->Json("GET", "/api/v1/nodes/n1", "", &code);
  const json::value& ready = node.at("status").at("conditions").at(0);
  EXPECT_EQ(ready.at("type").as_string(), "Ready");
  EXPECT_EQ(ready.at("status").as_string(), "True") << json::serialize(ready);
  EXPECT_TRUE(ready.as_object().contains("lastHeartbeatTime"));
  EXPECT_NE(n1->Output().find("retrying"), std::string::npos);
}

// A node timeout the agents' retries cannot meet is refused at start.
TEST(ServeFlagsTest, RefusesANodeTimeoutAgentsCannotMeet) {
  const char* bin = std::getenv("ALLOT_BIN");
  ASSERT_NE(bin, nullptr);
  allot::testing::Ran ran = allot::testing::Run(
      {bin, "serve", "--listen", "127.0.0.1:0", "--node-timeout", "2"}, nullptr,
      /*merge_stderr=*/true);
  const std::string& out = ran.out;
  EXPECT_NE(ran.code, 0);
  EXPECT_NE(out.find("--node-timeout 2 is too short"), std::string::npos) << out;
  EXPECT_NE(out.find("retries every 2 s"), std::string::npos) << out;
}

TEST_F(AgentTest, PodsRunAsTheirTenantsOwnIdsOrTheUserRunAsNames) {
  if (::geteuid() != 0) GTEST_SKIP() << "--run-as needs root";
  // An unknown user is refused at start, naming it.
  int rc = -1;
  std::string out = RunCli(*srv_, node_token_,
                           {"agent", "--name", "bad", "--simulate-gpus", "1xH100-80GB",
                            "--run-as", "team-a=no-such-user-here"},
                           &rc);
  EXPECT_EQ(rc, 2) << out;
  EXPECT_NE(out.find("no unix user 'no-such-user-here'"), std::string::npos) << out;

  // By default (the agent is root): the tenant's own unprivileged ids,
  // no groups, a home of its own that is also the working directory.
  auto n0 = StartReadyAgent("n0", "2xH100-80GB");
  EXPECT_NE(n0->Output().find("each tenant's pods run as its own host ids (from 1048576"),
            std::string::npos)
      << n0->Output();
  json::value w;
  ASSERT_NO_FATAL_FAILURE(RunToEnd(
      "own", AgentWorkload("own", 1, 1,
                           "echo uid=$(id -u) gid=$(id -g) groups=$(id -G) home=$HOME;"
                           " [ \"$(pwd)\" = \"$HOME\" ] && touch ./x && echo works-at-home;"
                           " cat /proc/1/environ >/dev/null 2>&1 || echo not-root"),
      &w));
  ASSERT_EQ(State(w), "Succeeded") << json::serialize(w) << n0->Output();
  const std::string home =
      std::filesystem::path(n0->log_dir() + "/../homes/team-a").lexically_normal().string();
  EXPECT_EQ(n0->PodLog(PodId(w, 0)), "uid=1048576 gid=1048576 groups=1048576 home=" + home +
                                         "\nworks-at-home\nnot-root\n");
  struct stat st {};
  ASSERT_EQ(::stat(home.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 1048576u);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  // Its log is the agent's alone: another tenant's pods cannot read it.
  std::string flat = PodId(w, 0);
  std::replace(flat.begin(), flat.end(), '/', '_');
  ASSERT_EQ(::stat((n0->log_dir() + "/" + flat + ".log").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  n0.reset();

  // --run-as maps the tenant to a unix user instead.
  auto n1 = StartReadyAgent("n1", "2xH100-80GB", {"--run-as", "team-a=nobody"});
  ASSERT_NO_FATAL_FAILURE(
      RunToEnd("who", AgentWorkload("who", 1, 1, "echo uid=$(id -u) user=$USER"), &w));
  ASSERT_EQ(State(w), "Succeeded") << json::serialize(w) << n1->Output();
  EXPECT_EQ(n1->PodLog(PodId(w, 0)), "uid=65534 user=nobody\n");
}

TEST_F(AgentTest, CpuAndMemoryOverridesAreCheckedAndReported) {
  int rc = -1;
  std::string out = RunCli(*srv_, node_token_, {"agent", "--name", "bad", "--cpus", "lots"}, &rc);
  EXPECT_EQ(rc, 2) << out;
  EXPECT_NE(out.find("--cpus wants a positive quantity"), std::string::npos) << out;
  auto n1 = StartReadyAgent("n1", "1xH100-80GB", {"--cpus", "96", "--memory", "512Gi"});
  int code = 0;
  json::value node = srv_->Json("GET", "/api/v1/nodes/n1", "", &code);
  ASSERT_EQ(code, 200);
  EXPECT_EQ(node.at("status").at("capacity").at("cpu").as_string(), "96") << json::serialize(node);
  EXPECT_EQ(node.at("status").at("capacity").at("memory").as_string(), "512Gi");
}

}  // namespace
}  // namespace allot::server
