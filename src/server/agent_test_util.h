// The fixture of the node agents' end-to-end tests (agent_*_test.cc): a
// real `allot serve` (TestServer, node timeout 3 s) with one ClusterQueue
// cq-a of 8 simulated GPUs behind LocalQueue team-a/q and a node token,
// real `allot agent` processes (AgentProcess) started on demand, and the
// waits and reads those tests share. Header-only; tests only.
#pragma once

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <boost/json.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "server/test_server.h"
#include "testing/builders.h"
#include "testing/oci_image.h"
#include "testing/process.h"

namespace allot::server::testing {

// A one-pod-set Workload "team-a/<name>" of `pods` pods with `gpus` GPUs
// each, running `script` with sh -c and GREETING=hi in its environment,
// with a 2 s termination grace period; `extra_spec` adds spec fields.
inline std::string AgentWorkload(const std::string& name, int pods, int gpus,
                                 const std::string& script,
                                 boost::json::object extra_spec = {}) {
  namespace json = boost::json;
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

// Images and bundles where container root can reach them (mode 0711),
// with the tiny image built in them; removed at the end of the test.
struct ContainerState {
  explicit ContainerState(std::string d) : dir(std::move(d)), image("oci:" + dir + "/image/oci:tiny") {
    std::filesystem::create_directories(dir + "/image");
    ok = chmod(dir.c_str(), 0711) == 0 && allot::testing::BuildTinyImage(dir + "/image");
  }
  ~ContainerState() { std::filesystem::remove_all(dir); }
  std::string dir, image;
  bool ok = false;
};

// A workload's status.state ("" before it has one).
inline std::string WorkloadStateOf(const boost::json::value& w) {
  const boost::json::value* s = w.as_object().if_contains("status");
  return s ? std::string(s->at("state").as_string()) : "";
}

class AgentTest : public ServerTest {
 protected:
  void SetUp() override {
    namespace b = allot::testing;
    ASSERT_NO_FATAL_FAILURE(StartServer(b::Namespace("team-a") + b::Flavor("sim", "") +
                                            b::GpuCq("cq-a", "", "sim", "nominalQuota: 8") +
                                            b::LocalQueue("team-a", "q", "cq-a"),
                                        "", {"--node-timeout", "3"}));
    node_token_ = srv_->NewToken(R"({"user":"agents","role":"node"})");
    ASSERT_FALSE(node_token_.empty());
    dir_ = srv_->dir();
  }

  // StartAgent, then WaitForNode.
  std::unique_ptr<AgentProcess> StartReadyAgent(const std::string& name, const std::string& gpus,
                                                std::vector<std::string> extra = {}) {
    auto agent = StartAgent(name, gpus, std::move(extra));
    WaitForNode(name);
    return agent;
  }
  std::unique_ptr<AgentProcess> StartAgent(const std::string& name,
                                           const std::string& gpus,
                                           std::vector<std::string> extra = {}) {
    return std::make_unique<AgentProcess>(*srv_, node_token_, name, gpus,
                                          dir_ + "/agent-" + name, std::move(extra));
  }

  // Waits (up to 30 s) until `pred` holds for the workload team-a/<name>.
  boost::json::value WaitFor(const std::string& name,
                             const std::function<bool(const boost::json::value&)>& pred) {
    return srv_->WaitForWorkload("team-a/" + name, pred);
  }
  // Submits team-a/<name>, one pod of `gpus` GPUs that starts a child
  // sleeping 300 s and prints its pid as "PID=N", asserting a 201, and
  // waits until it is Running, asserting that it is; its JSON in *w.
  void RunSleeper(const std::string& name, int gpus, boost::json::value* w) {
    int code = 0;
    srv_->Json("POST", "/api/v1/workloads",
               AgentWorkload(name, 1, gpus, "sleep 300 & echo PID=$!; wait"), &code);
    ASSERT_EQ(code, 201);
    *w = WaitFor(name, [](const boost::json::value& v) { return State(v) == "Running"; });
    ASSERT_EQ(State(*w), "Running");
  }
  // Submits workload team-a/<name> as `body`, asserting a 201, and waits
  // until it has ended (Succeeded or Failed); its JSON in *w.
  void RunToEnd(const std::string& name, const std::string& body, boost::json::value* w) {
    int code = 0;
    srv_->Json("POST", "/api/v1/workloads", body, &code);
    ASSERT_EQ(code, 201);
    *w = WaitFor(name, [](const boost::json::value& v) {
      return State(v) == "Succeeded" || State(v) == "Failed";
    });
  }
  static std::string State(const boost::json::value& w) { return WorkloadStateOf(w); }
  // Waits (up to 10 s) until `name` is registered.
  void WaitForNode(const std::string& name) {
    bool registered = allot::testing::WaitFor(
        [&] {
          int code = 0;
          srv_->Json("GET", "/api/v1/nodes/" + name, "", &code);
          return code == 200;
        },
        std::chrono::seconds(10));
    if (!registered) ADD_FAILURE() << "node " << name << " never registered";
  }

  std::string node_token_;
  std::string dir_;
};

// The pod id of pod `index` of the workload's current attempt.
inline std::string PodId(const boost::json::value& w, int index) {
  return std::string(w.at("metadata").at("namespace").as_string()) + "/" +
         std::string(w.at("metadata").at("name").as_string()) +
         "/a" + std::to_string(w.at("status").at("attempt").as_int64()) +
         "/main/" + std::to_string(index);
}

inline const boost::json::object& Placement(const boost::json::value& w, int index) {
  return w.at("status").at("admission").at("podSetAssignments").at(0)
      .at("placements").at(index).as_object();
}

inline std::string Join(const boost::json::array& a) {
  std::string out;
  for (const boost::json::value& v : a) {
    if (!out.empty()) out += ",";
    out += std::string(v.as_string());
  }
  return out;
}

// The pid a pod printed as "PID=N" in its log (0: not yet).
inline pid_t PodPid(const AgentProcess& a, const std::string& pod) {
  std::smatch m;
  std::string log = a.PodLog(pod);
  if (!std::regex_search(log, m, std::regex("PID=([0-9]+)"))) return 0;
  return pid_t(std::stoi(m[1].str()));
}

// Waits (up to 5 s) for the pod to print its "PID=N"; N, or 0.
inline pid_t WaitPodPid(const AgentProcess& a, const std::string& pod) {
  pid_t pid = 0;
  allot::testing::WaitFor(
      [&] {
        pid = PodPid(a, pod);
        return pid != 0;
      },
      std::chrono::seconds(5));
  return pid;
}

inline bool Alive(pid_t pid) { return pid > 0 && ::kill(pid, 0) == 0; }

// Waits (up to 10 s) for `pid` to end; whether it did.
inline bool WaitDead(pid_t pid) {
  return allot::testing::WaitFor([&] { return !Alive(pid); }, std::chrono::seconds(10));
}

// Runs `allot ARGS` against the server as `token` (ALLOT_SERVER and
// ALLOT_TOKEN); its stdout and stderr together, and its exit code in *rc.
inline std::string RunCli(const TestServer& srv, const std::string& token,
                          std::vector<std::string> args, int* rc) {
  const std::vector<std::string> env = allot::testing::Environment(
      {"ALLOT_SERVER", "ALLOT_TOKEN"}, {"ALLOT_SERVER=" + srv.url(), "ALLOT_TOKEN=" + token});
  args.insert(args.begin(), std::getenv("ALLOT_BIN"));
  allot::testing::Ran r = allot::testing::Run(std::move(args), &env, /*merge_stderr=*/true);
  *rc = r.code;
  return r.out;
}

}  // namespace allot::server::testing
