// Node agents end to end: a real `allot serve` and real `allot agent`
// processes (simulated GPUs, real pod processes) on loopback.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "server/test_server.h"

namespace allot::server {
namespace {

using testing::TestServer;
namespace json = boost::json;
namespace fs = std::filesystem;

// One `allot agent` process.
class AgentProcess {
 public:
  AgentProcess(const TestServer& srv, std::string token, std::string name,
               std::string gpus, std::string log_dir,
               std::vector<std::string> extra = {})
      : extra_(std::move(extra)),
        url_(srv.url()),
        token_(std::move(token)),
        name_(std::move(name)),
        gpus_(std::move(gpus)),
        log_dir_(std::move(log_dir)) {
    fs::create_directories(log_dir_);
    Launch();
  }
  ~AgentProcess() { Stop(); }

  void Launch() {
    const char* bin = std::getenv("ALLOT_BIN");
    std::vector<std::string> args = {bin,        "agent",          "--server",
                                     url_,       "--token",        token_,
                                     "--name",   name_,            "--log-dir",
                                     log_dir_,   "--simulate-gpus", gpus_,
                                     "--poll-seconds", "1"};
    args.insert(args.end(), extra_.begin(), extra_.end());
    proc_.Spawn(std::move(args), log_dir_ + "/agent.out", /*append=*/true);
  }
  void Kill9() { proc_.Kill9(); }
  void Stop() { proc_.Terminate(std::chrono::seconds(15)); }
  const std::string& log_dir() const { return log_dir_; }
  std::string PodLog(const std::string& pod_id) const {
    std::string file = pod_id;
    std::replace(file.begin(), file.end(), '/', '_');
    return allot::testing::ReadFile(log_dir_ + "/" + file + ".log");
  }
  std::string Output() const { return allot::testing::ReadFile(log_dir_ + "/agent.out"); }

 private:
  std::vector<std::string> extra_;
  std::string url_, token_, name_, gpus_, log_dir_;
  allot::testing::ChildProcess proc_;
};

constexpr char kCluster[] = R"(
apiVersion: v1
kind: Namespace
metadata: {name: team-a}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: sim}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq-a}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: sim
      resources: [{name: nvidia.com/gpu, nominalQuota: 8}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: q, namespace: team-a}
spec: {clusterQueue: cq-a}
)";

std::string Workload(const std::string& name, int pods, int gpus,
                     const std::string& script, json::object extra_spec = {}) {
  json::object tmpl{
      {"resources", json::object{{"requests", json::object{{"nvidia.com/gpu", gpus}}}}},
      {"command", json::array{"sh", "-c", script}},
      {"env", json::array{json::object{{"name", "GREETING"}, {"value", "hi"}}}}};
  json::object w{
      {"apiVersion", "allot.dev/v1"},
      {"kind", "Workload"},
      {"metadata", json::object{{"name", name}, {"namespace", "team-a"},
                                {"annotations", json::object{{"allot.dev/termination-grace-period", "2s"}}}}},
      {"spec", json::object{{"queueName", "q"},
                            {"podSets", json::array{json::object{{"name", "main"},
                                                                 {"count", pods},
                                                                 {"template", tmpl}}}}}}};
  for (const auto& kv : extra_spec) w["spec"].as_object()[kv.key()] = kv.value();
  return json::serialize(w);
}

class AgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    srv_ = TestServer::Start("", {"--node-timeout", "3"});
    ASSERT_NE(srv_, nullptr);
    int code = 0;
    json::value r = srv_->Json("POST", "/api/v1/apply", kCluster, &code);
    ASSERT_EQ(code, 200) << json::serialize(r);
    r = srv_->Json("POST", "/api/v1/tokens",
                   R"({"user":"agents","role":"node"})", &code);
    ASSERT_EQ(code, 201) << json::serialize(r);
    node_token_ = std::string(r.at("token").as_string());
    dir_ = srv_->dir();
  }

  std::unique_ptr<AgentProcess> StartAgent(const std::string& name,
                                           const std::string& gpus,
                                           std::vector<std::string> extra = {}) {
    return std::make_unique<AgentProcess>(*srv_, node_token_, name, gpus,
                                          dir_ + "/agent-" + name, std::move(extra));
  }

  // Waits (up to 30 s) until `pred` holds for the workload's JSON.
  json::value WaitFor(const std::string& name,
                      const std::function<bool(const json::value&)>& pred) {
    json::value last;
    for (int i = 0; i < 300; ++i) {
      int code = 0;
      last = srv_->Json("GET", "/api/v1/workloads/team-a/" + name, "", &code);
      if (code == 200 && pred(last)) return last;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ADD_FAILURE() << "timed out; last: " << json::serialize(last);
    return last;
  }
  static std::string State(const json::value& w) {
    const json::value* s = w.as_object().if_contains("status");
    return s ? std::string(s->at("state").as_string()) : "";
  }
  // Waits until `name` is registered and Ready.
  void WaitForNode(const std::string& name) {
    for (int i = 0; i < 200; ++i) {
      int code = 0;
      srv_->Json("GET", "/api/v1/nodes/" + name, "", &code);
      if (code == 200) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ADD_FAILURE() << "node " << name << " never registered";
  }

  std::unique_ptr<TestServer> srv_;
  std::string node_token_;
  std::string dir_;
};

// The pod id of pod `index` of the workload's current attempt.
std::string PodId(const json::value& w, int index) {
  return "team-a/" + std::string(w.at("metadata").at("name").as_string()) +
         "/a" + std::to_string(w.at("status").at("attempt").as_int64()) +
         "/main/" + std::to_string(index);
}

const json::object& Placement(const json::value& w, int index) {
  return w.at("status").at("admission").at("podSetAssignments").at(0)
      .at("placements").at(index).as_object();
}

std::string Join(const json::array& a) {
  std::string out;
  for (const json::value& v : a) {
    if (!out.empty()) out += ",";
    out += std::string(v.as_string());
  }
  return out;
}

TEST_F(AgentTest, PodRunsWithItsPlacementAndSucceeds) {
  auto n1 = StartAgent("n1", "2xH100-80GB");
  WaitForNode("n1");
  int code = 0;
  json::value node = srv_->Json("GET", "/api/v1/nodes/n1", "", &code);
  EXPECT_EQ(node.at("metadata").at("labels").at("allot.dev/simulated").as_string(), "true");
  srv_->Json("POST", "/api/v1/workloads",
             Workload("env", 1, 2,
                      "echo \"CVD=$CUDA_VISIBLE_DEVICES RANK=$RANK WS=$WORLD_SIZE "
                      "G=$GREETING T=$ALLOT_TENANT\""),
             &code);
  ASSERT_EQ(code, 201);
  json::value w = WaitFor("env", [](const json::value& v) {
    return State(v) == "Succeeded" || State(v) == "Failed";
  });
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
  auto n1 = StartAgent("n1", "2xH100-80GB");
  WaitForNode("n1");
  int code = 0;
  srv_->Json("POST", "/api/v1/workloads",
             Workload("boom", 1, 1, "echo about to fail; exit 3"), &code);
  ASSERT_EQ(code, 201);
  json::value w = WaitFor("boom", [](const json::value& v) {
    return State(v) == "Succeeded" || State(v) == "Failed";
  });
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
  int code = 0;
  srv_->Json("POST", "/api/v1/workloads",
             Workload("gang", 2, 2,
                      "echo \"R=$RANK W=$WORLD_SIZE N=$NNODES NR=$NODE_RANK "
                      "M=$MASTER_ADDR:$MASTER_PORT\""),
             &code);
  ASSERT_EQ(code, 201);
  json::value w = WaitFor("gang", [](const json::value& v) {
    return State(v) == "Succeeded" || State(v) == "Failed";
  });
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

// The pid a pod printed as "PID=N" in its log (0: not yet).
pid_t PodPid(const AgentProcess& a, const std::string& pod) {
  std::smatch m;
  std::string log = a.PodLog(pod);
  if (!std::regex_search(log, m, std::regex("PID=([0-9]+)"))) return 0;
  return pid_t(std::stoi(m[1].str()));
}

bool Alive(pid_t pid) { return pid > 0 && ::kill(pid, 0) == 0; }

bool WaitDead(pid_t pid) {
  for (int i = 0; i < 200 && Alive(pid); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return !Alive(pid);
}

TEST_F(AgentTest, DeletingARunningWorkloadEndsItsProcesses) {
  auto n1 = StartAgent("n1", "2xH100-80GB");
  WaitForNode("n1");
  int code = 0;
  srv_->Json("POST", "/api/v1/workloads",
             Workload("long", 1, 1, "sleep 300 & echo PID=$!; wait"), &code);
  ASSERT_EQ(code, 201);
  json::value w = WaitFor("long", [](const json::value& v) { return State(v) == "Running"; });
  ASSERT_EQ(State(w), "Running");
  pid_t child = 0;
  for (int i = 0; i < 100 && child == 0; ++i) {
    child = PodPid(*n1, PodId(w, 0));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
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
             Workload("low", 3, 2,
                      "sleep 300 & echo PID=$! CVD=$CUDA_VISIBLE_DEVICES; wait",
                      {{"priority", 1}}),
             &code);
  ASSERT_EQ(code, 201);
  json::value w = WaitFor("low", [](const json::value& v) { return State(v) == "Running"; });
  std::vector<pid_t> pids;
  for (int i = 0; i < 3; ++i) {
    const json::object& pl = Placement(w, i);
    const AgentProcess& a = *agents.at(std::string(pl.at("node").as_string()));
    pid_t pid = 0;
    for (int k = 0; k < 100 && pid == 0; ++k) {
      pid = PodPid(a, PodId(w, i));
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ASSERT_TRUE(Alive(pid)) << a.Output();
    EXPECT_NE(a.PodLog(PodId(w, i)).find("CVD=" + Join(pl.at("gpus").as_array())),
              std::string::npos)
        << a.PodLog(PodId(w, i));
    pids.push_back(pid);
  }
  srv_->Json("POST", "/api/v1/workloads",
             Workload("high", 1, 2, "echo started", {{"priority", 100}}), &code);
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
  auto n1 = StartAgent("n1", "2xH100-80GB");
  WaitForNode("n1");
  int code = 0;
  srv_->Json("POST", "/api/v1/workloads",
             Workload("moved", 1, 2, "sleep 300 & echo PID=$!; wait"), &code);
  ASSERT_EQ(code, 201);
  json::value w = WaitFor("moved", [](const json::value& v) { return State(v) == "Running"; });
  ASSERT_EQ(State(w), "Running");
  const std::string first_pod = PodId(w, 0);
  pid_t orphan = 0;
  for (int i = 0; i < 100 && orphan == 0; ++i) {
    orphan = PodPid(*n1, first_pod);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(Alive(orphan));

  auto n2 = StartAgent("n2", "2xH100-80GB");
  WaitForNode("n2");
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
  auto n1 = StartAgent("n1", "2xH100-80GB");
  WaitForNode("n1");
  int code = 0;
  // Fails in its first attempt, succeeds in the second.
  srv_->Json("POST", "/api/v1/workloads",
             Workload("retry", 1, 1,
                      "echo attempt $ALLOT_ATTEMPT; [ \"$ALLOT_ATTEMPT\" = 2 ] || exit 4",
                      {{"backoffLimit", 1}}),
             &code);
  ASSERT_EQ(code, 201);
  json::value w = WaitFor("retry", [](const json::value& v) {
    return State(v) == "Succeeded" || State(v) == "Failed";
  });
  ASSERT_EQ(State(w), "Succeeded") << json::serialize(w);
  EXPECT_EQ(w.at("status").at("attempt").as_int64(), 2);
  EXPECT_EQ(w.at("status").at("restarts").as_int64(), 1);

  // With backoffLimit 1, a pod that always fails ends Failed after 2 tries.
  srv_->Json("POST", "/api/v1/workloads",
             Workload("always", 1, 1, "exit 5", {{"backoffLimit", 1}}), &code);
  ASSERT_EQ(code, 201);
  w = WaitFor("always", [](const json::value& v) {
    return State(v) == "Succeeded" || State(v) == "Failed";
  });
  EXPECT_EQ(State(w), "Failed");
  EXPECT_EQ(w.at("status").at("attempt").as_int64(), 2);
}

TEST_F(AgentTest, MaximumExecutionTimeEndsTheWorkload) {
  auto n1 = StartAgent("n1", "2xH100-80GB");
  WaitForNode("n1");
  int code = 0;
  srv_->Json("POST", "/api/v1/workloads",
             Workload("slow", 1, 1, "sleep 300 & echo PID=$!; wait",
                      {{"maximumExecutionTimeSeconds", 1}}),
             &code);
  ASSERT_EQ(code, 201);
  json::value w = WaitFor("slow", [](const json::value& v) { return State(v) == "Running"; });
  const std::string pod = PodId(w, 0);
  pid_t child = 0;
  for (int i = 0; i < 100 && child == 0; ++i) {
    child = PodPid(*n1, pod);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  w = WaitFor("slow", [](const json::value& v) { return State(v) == "Failed"; });
  std::string reason;
  for (const json::value& c : w.at("status").at("conditions").as_array()) {
    if (c.at("type").as_string() == "Finished") reason = std::string(c.at("reason").as_string());
  }
  EXPECT_EQ(reason, "MaximumExecutionTimeExceeded");
  EXPECT_TRUE(WaitDead(child)) << "pid " << child << " outlived its deadline";
}

// Runs `allot ARGS` against the test server; its stdout, and *rc.
std::string RunCli(const TestServer& srv, const std::string& token,
                   const std::string& args, int* rc) {
  std::string cmd = "ALLOT_SERVER=" + srv.url() + " ALLOT_TOKEN=" + token + " " +
                    std::getenv("ALLOT_BIN") + " " + args + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  *rc = WEXITSTATUS(::pclose(p));
  return out;
}

TEST_F(AgentTest, LogsAreReadThroughTheServerWithTenantRules) {
  auto n1 = StartAgent("n1", "4xH100-80GB");
  WaitForNode("n1");
  int code = 0;
  srv_->Json("POST", "/api/v1/workloads",
             Workload("talk", 2, 1,
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
  std::string out = RunCli(*srv_, ann, "logs team-a/talk --pod 0", &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("hello from rank 0"), std::string::npos) << out;
  out = RunCli(*srv_, bob, "logs talk -t team-a", &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("404"), std::string::npos) << out;
}

TEST_F(AgentTest, RunAsMapsTenantsToUnixUsers) {
  if (::geteuid() != 0) GTEST_SKIP() << "--run-as needs root";
  // An unknown user is refused at start, naming it.
  int rc = -1;
  std::string out = RunCli(*srv_, node_token_,
                           "agent --name bad --simulate-gpus 1xH100-80GB --run-as "
                           "team-a=no-such-user-here",
                           &rc);
  EXPECT_EQ(rc, 2) << out;
  EXPECT_NE(out.find("no unix user 'no-such-user-here'"), std::string::npos) << out;

  auto n1 = StartAgent("n1", "2xH100-80GB", {"--run-as", "team-a=nobody"});
  WaitForNode("n1");
  int code = 0;
  srv_->Json("POST", "/api/v1/workloads",
             Workload("who", 1, 1, "echo uid=$(id -u) user=$USER"), &code);
  ASSERT_EQ(code, 201);
  json::value w = WaitFor("who", [](const json::value& v) {
    return State(v) == "Succeeded" || State(v) == "Failed";
  });
  ASSERT_EQ(State(w), "Succeeded") << json::serialize(w) << n1->Output();
  EXPECT_EQ(n1->PodLog(PodId(w, 0)), "uid=65534 user=nobody\n");
}

TEST_F(AgentTest, CpuAndMemoryOverridesAreCheckedAndReported) {
  int rc = -1;
  std::string out = RunCli(*srv_, node_token_, "agent --name bad --cpus lots", &rc);
  EXPECT_EQ(rc, 2) << out;
  EXPECT_NE(out.find("--cpus wants a positive quantity"), std::string::npos) << out;
  auto n1 = StartAgent("n1", "1xH100-80GB", {"--cpus", "96", "--memory", "512Gi"});
  WaitForNode("n1");
  int code = 0;
  json::value node = srv_->Json("GET", "/api/v1/nodes/n1", "", &code);
  ASSERT_EQ(code, 200);
  EXPECT_EQ(node.at("status").at("capacity").at("cpu").as_string(), "96") << json::serialize(node);
  EXPECT_EQ(node.at("status").at("capacity").at("memory").as_string(), "512Gi");
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
  srv_->Json("POST", "/api/v1/workloads", Workload("mute", 1, 1, "true"), &code);
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
    srv_->Json("POST", "/api/v1/workloads", Workload(name, 1, 1, "true"), &code);
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

TEST_F(AgentTest, LogsFollowARunningPodToItsEnd) {
  auto n1 = StartAgent("n1", "2xH100-80GB");
  WaitForNode("n1");
  int code = 0;
  // A pending workload has no log yet.
  srv_->Json("POST", "/api/v1/workloads", Workload("huge", 1, 64, "true"), &code);
  ASSERT_EQ(code, 201);
  srv_->Json("GET", "/api/v1/workloads/team-a/huge/log", "", &code);
  EXPECT_EQ(code, 409);

  srv_->Json("POST", "/api/v1/workloads",
             Workload("stream", 1, 1, "for i in 1 2 3 4 5 6; do echo line $i; sleep 0.3; done"),
             &code);
  ASSERT_EQ(code, 201);
  WaitFor("stream", [](const json::value& v) { return State(v) == "Running"; });
  int rc = -1;
  const auto start = std::chrono::steady_clock::now();
  std::string out = RunCli(*srv_, srv_->admin_token(), "logs -f team-a/stream", &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out, "line 1\nline 2\nline 3\nline 4\nline 5\nline 6\n");
  // It ended with the pod, not at a timeout.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(15));
  EXPECT_EQ(State(WaitFor("stream", [](const json::value& v) { return State(v) == "Succeeded"; })),
            "Succeeded");
}

TEST_F(AgentTest, ServerRestartAdoptsRunningPods) {
  auto n1 = StartAgent("n1", "2xH100-80GB");
  WaitForNode("n1");
  int code = 0;
  srv_->Json("POST", "/api/v1/workloads",
             Workload("kept", 1, 1, "sleep 300 & echo PID=$!; wait"), &code);
  ASSERT_EQ(code, 201);
  json::value w = WaitFor("kept", [](const json::value& v) { return State(v) == "Running"; });
  ASSERT_EQ(State(w), "Running");
  const std::string pod = PodId(w, 0);
  pid_t child = 0;
  for (int i = 0; i < 100 && child == 0; ++i) {
    child = PodPid(*n1, pod);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
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
  auto n1 = StartAgent("n1", "2xH100-80GB");
  WaitForNode("n1");
  int code = 0;
  srv_->Json("POST", "/api/v1/workloads",
             Workload("kept", 1, 1, "sleep 300 & echo PID=$!; wait"), &code);
  ASSERT_EQ(code, 201);
  json::value w = WaitFor("kept", [](const json::value& v) { return State(v) == "Running"; });
  ASSERT_EQ(State(w), "Running");
  const std::string pod = PodId(w, 0);

  srv_->Kill9();
  // The outage itself is what is tested: the agent backs off meanwhile.
  std::this_thread::sleep_for(std::chrono::seconds(8));
  ASSERT_TRUE(srv_->Restart()) << srv_->Log();
  w = WaitFor("kept", [](const json::value& v) {
    const json::value* n = v.at("status").as_object().if_contains("podsRunning");
    return n != nullptr && n->as_int64() == 1;
  });
  // Past the grace period (3 s + 2 s) and one more timeout.
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
  std::string cmd = std::string(bin) + " serve --listen 127.0.0.1:0 --node-timeout 2 2>&1";
  FILE* f = popen(cmd.c_str(), "r");
  ASSERT_NE(f, nullptr);
  std::string out;
  char buf[512];
  while (size_t n = fread(buf, 1, sizeof buf, f)) out.append(buf, n);
  int rc = pclose(f);
  EXPECT_NE(WEXITSTATUS(rc), 0);
  EXPECT_NE(out.find("--node-timeout 2 is too short"), std::string::npos) << out;
  EXPECT_NE(out.find("retries every 2 s"), std::string::npos) << out;
}

// ---- cgroups: the pod's cpu and memory requests as its limits ------------

// A ClusterQueue that covers cpu and memory too, and its LocalQueue "qr".
constexpr char kCpuMemoryQueue[] = R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq-r}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu, cpu, memory]
    flavors:
    - name: sim
      resources:
      - {name: nvidia.com/gpu, nominalQuota: 8}
      - {name: cpu, nominalQuota: 64}
      - {name: memory, nominalQuota: 256Gi}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: qr, namespace: team-a}
spec: {clusterQueue: cq-r}
)";

// A one-pod workload in "qr" requesting cpu and memory.
std::string Limited(const std::string& name, const std::string& cpu, const std::string& memory,
                    const std::string& script) {
  json::object w = json::parse(Workload(name, 1, 1, script)).as_object();
  json::object& spec = w["spec"].as_object();
  spec["queueName"] = "qr";
  json::object& req = spec["podSets"].as_array()[0].at("template").as_object()["resources"]
                          .as_object()["requests"].as_object();
  req["cpu"] = cpu;
  req["memory"] = memory;
  return json::serialize(w);
}

std::string FinishedMessage(const json::value& w) {
  for (const json::value& c : w.at("status").at("conditions").as_array()) {
    if (c.at("type").as_string() == "Finished") return std::string(c.at("message").as_string());
  }
  return "";
}

class AgentCgroupTest : public AgentTest {
 protected:
  // Starts agent n1 and returns its "cgroups: ..." line; empty (and the
  // test should skip) when the host gives it none.
  std::string StartWithCgroups() {
    n1_ = StartAgent("n1", "2xH100-80GB");
    WaitForNode("n1");
    int code = 0;
    json::value r = srv_->Json("POST", "/api/v1/apply", kCpuMemoryQueue, &code);
    EXPECT_EQ(code, 200) << json::serialize(r);
    std::smatch m;
    const std::regex re("allot agent: (cgroups: [^\n]*)");
    std::string out = n1_->Output();
    if (!std::regex_search(out, m, re)) {
      ADD_FAILURE() << "no cgroups line: " << out;
      return "";
    }
    line_ = m[1];
    return line_.rfind("cgroups: none", 0) == 0 ? "" : line_;
  }
  // The agent's directories for its pods' cgroups, from its line.
  std::vector<std::string> AgentDirs() const {
    std::vector<std::string> dirs;
    std::istringstream in(line_);
    for (std::string w; in >> w;) {
      if (w[0] == '/' && w.find("/allot-n1-") != std::string::npos) {
        while (!w.empty() && (w.back() == ':' || w.back() == ',')) w.pop_back();
        dirs.push_back(w);
      }
    }
    return dirs;
  }
  std::unique_ptr<AgentProcess> n1_;
  std::string line_;
};

TEST_F(AgentCgroupTest, ThePodsRequestsAreItsLimits) {
  // 500m: 50 ms of CPU per 100 ms period; 64Mi: 67108864 bytes. The pod
  // prints the limit files of its own cgroups (v2 or v1 names).
  if (StartWithCgroups().empty()) GTEST_SKIP() << "the agent has no cgroups here: " << line_;
  int code = 0;
  srv_->Json("POST", "/api/v1/workloads",
             Limited("lim", "500m", "64Mi",
                     "dir=$(echo $ALLOT_POD_ID | tr / _); cat /proc/self/cgroup; "
                     "while IFS=: read -r id ctl path; do case $path in */$dir) "
                     "for f in cpu.max memory.max cpu.cfs_quota_us memory.limit_in_bytes; do "
                     "for m in /sys/fs/cgroup /sys/fs/cgroup/*; do "
                     "[ -f \"$m$path/$f\" ] && echo \"$f=$(cat \"$m$path/$f\")\"; "
                     "done; done;; esac; done < /proc/self/cgroup"),
             &code);
  ASSERT_EQ(code, 201);
  json::value w = WaitFor("lim", [](const json::value& v) {
    return State(v) == "Succeeded" || State(v) == "Failed";
  });
  ASSERT_EQ(State(w), "Succeeded") << json::serialize(w);
  const std::string pod = PodId(w, 0);
  const std::string log = n1_->PodLog(pod);
  const bool v2 = line_.rfind("cgroups: v2", 0) == 0;
  EXPECT_NE(log.find(v2 ? "cpu.max=50000 100000" : "cpu.cfs_quota_us=50000"), std::string::npos)
      << log;
  EXPECT_NE(log.find(v2 ? "memory.max=67108864" : "memory.limit_in_bytes=67108864"),
            std::string::npos)
      << log;
  // Gone with the pod.
  std::string dir = pod;
  std::replace(dir.begin(), dir.end(), '/', '_');
  const std::vector<std::string> agent_dirs = AgentDirs();
  ASSERT_FALSE(agent_dirs.empty()) << line_;
  for (const std::string& a : agent_dirs) {
    EXPECT_NE(log.find(a.substr(a.find("/allot-n1-")) + "/" + dir), std::string::npos) << log;
    bool gone = false;
    for (int i = 0; i < 100 && !gone; ++i) {
      gone = !fs::exists(a + "/" + dir);
      if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_TRUE(gone) << a << "/" << dir;
  }
  // The agent removes its own directories when it stops.
  n1_->Stop();
  for (const std::string& a : agent_dirs) EXPECT_FALSE(fs::exists(a)) << a;
}

TEST_F(AgentCgroupTest, APodKilledAtItsMemoryLimitFailsSayingSo) {
  // The shell holds 100 MB, more than the 64Mi it asked for.
  if (StartWithCgroups().empty()) GTEST_SKIP() << "the agent has no cgroups here: " << line_;
  int code = 0;
  srv_->Json("POST", "/api/v1/workloads",
             Limited("hog", "1", "64Mi",
                     "echo start; x=$(head -c 100000000 /dev/zero | tr '\\0' a); echo ${#x}"),
             &code);
  ASSERT_EQ(code, 201);
  json::value w = WaitFor("hog", [](const json::value& v) {
    return State(v) == "Succeeded" || State(v) == "Failed";
  });
  ASSERT_EQ(State(w), "Failed") << json::serialize(w);
  const std::string message = FinishedMessage(w);
  EXPECT_NE(message.find("OOMKilled"), std::string::npos) << message;
  EXPECT_NE(message.find("memory limit of 64Mi (its memory request)"), std::string::npos)
      << message;
}

// ---- node tokens bound to a node name -----------------------------------

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
                           "token create --user sims --role node --node 'sim-*'", &rc);
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
  out = RunCli(*srv_, srv_->admin_token(), "token list", &rc);
  EXPECT_NE(out.find("sim-*"), std::string::npos) << out;
}

}  // namespace
}  // namespace allot::server
