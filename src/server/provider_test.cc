// NodePool providers in the server (docs/autoscaling.md): an exec
// program's call (stdin, exit status, time limit), what a `list` answer
// says, the local provider's agents, and the pool runtime's reconcile
// with a `list` after a restart.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <boost/json.hpp>

#include <filesystem>
#include <fstream>

#include "server/local_provider.h"
#include "server/pools.h"
#include "server/provider.h"
#include "testing/process.h"

namespace allot::server {
namespace {

namespace json = boost::json;

ProviderCall Call(std::vector<std::string> command, std::string input = "{}\n") {
  ProviderCall c;
  c.pool = "p";
  c.verb = "resume";
  c.nodes = {"p-0"};
  c.command = std::move(command);
  c.input = std::move(input);
  c.timeout_ms = 5000;
  return c;
}

TEST(ProviderCallTest, AProgramGetsItsRequestAndItsExitStatusCounts) {
  // It reads the request on stdin and sees the verb as its last argument.
  ProviderResult r = RunProviderCall(Call({"/bin/sh", "-c", "read l; echo \"$1 got $l\"", "x"}, "{\"a\":1}\n"));
  EXPECT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_EQ(r.output, "resume got {\"a\":1}\n");
  r = RunProviderCall(Call({"/bin/sh", "-c", "echo no capacity >&2; exit 3", "x"}));
  EXPECT_FALSE(r.status.ok());
  EXPECT_NE(r.status.message().find("exited with code 3: no capacity"), std::string::npos)
      << r.status.message();
  r = RunProviderCall(Call({"/nonexistent/program"}));
  EXPECT_FALSE(r.status.ok());
  EXPECT_NE(r.status.message().find("/nonexistent/program"), std::string::npos);
  // A program that hangs is killed with what it started (its group).
  ProviderCall hang = Call({"/bin/sh", "-c", "sleep 60 & sleep 60", "x"});
  hang.timeout_ms = 300;
  r = RunProviderCall(hang);
  EXPECT_NE(r.status.message().find("did not finish within 0 s (killed)"), std::string::npos)
      << r.status.message();
  EXPECT_LT(r.took_ms, 5000);
}

TEST(ProviderCallTest, AListAnswerNamesTheNodesUp) {
  const std::vector<std::string> names = {"p-0", "p-1", "p-2", "p-3"};
  std::map<std::string, bool> up = ParseProviderList(
      "checking the BMCs...\np-0 on\np-1 Off\np-2   running\nq-0 on\np-3 on and more\n", names);
  EXPECT_EQ(up, (std::map<std::string, bool>{{"p-0", true}, {"p-1", false}, {"p-2", true}}));
}

class LocalProviderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "local-provider-" + std::to_string(getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    // An "allot" that records its arguments and its token and waits.
    exe_ = dir_ + "/fake-allot";
    std::ofstream(exe_) << "#!/bin/sh\ntrap 'exit 0' TERM\n"
                           "echo \"$@ token=$ALLOT_TOKEN\" > \"" << dir_ << "/args.$$\"\n"
                           "while :; do sleep 0.05; done\n";
    chmod(exe_.c_str(), 0755);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  ProviderCall LocalCall(const std::string& verb, std::vector<std::string> nodes) {
    ProviderCall c;
    c.pool = "p";
    c.verb = verb;
    c.nodes = nodes;
    c.local = true;
    c.timeout_ms = 5000;
    json::array list;
    for (const std::string& n : nodes) {
      list.push_back(json::object{{"name", n}, {"gpus", 2}, {"product", "A100-40GB"},
                                  {"cpu", "16"}});
    }
    c.input = json::serialize(json::object{{"verb", verb}, {"nodes", list}});
    return c;
  }
  std::string dir_, exe_;
};

TEST_F(LocalProviderTest, ResumeStartsAnAgentPerNodeOnceListSeesItSuspendStopsIt) {
  LocalProvider local(dir_ + "/pools", exe_);
  std::string told;
  local.SetOnSecret([&](const std::string& s) { told = s; });
  local.SetServerUrl("http://127.0.0.1:1");
  ProviderResult r = local.Run(LocalCall("resume", {"p-0", "p-1"}));
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  // The token was made (0600) and handed to the server.
  ASSERT_FALSE(told.empty());
  struct stat st {};
  ASSERT_EQ(stat((dir_ + "/pools/node.token").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::string args;
  ASSERT_TRUE(allot::testing::WaitFor([&] {
    args.clear();
    for (const auto& e : std::filesystem::directory_iterator(dir_)) {
      if (e.path().filename().string().rfind("args.", 0) == 0) {
        args += allot::testing::ReadFile(e.path().string());
      }
    }
    return std::count(args.begin(), args.end(), '\n') == 2;
  }, std::chrono::seconds(10)));
  EXPECT_NE(args.find("agent --server http://127.0.0.1:1 --name p-0 --poll-seconds 1"),
            std::string::npos) << args;
  EXPECT_NE(args.find("--simulate-gpus 2xA100-40GB --cpus 16 token=" + told), std::string::npos)
      << args;
  // Asked again, it starts nothing twice.
  r = local.Run(LocalCall("resume", {"p-0"}));
  EXPECT_NE(r.output.find("p-0 runs already"), std::string::npos) << r.output;
  r = local.Run(LocalCall("list", {"p-0", "p-1", "p-2"}));
  EXPECT_EQ(r.output, "p-0 on\np-1 on\np-2 off\n");
  r = local.Run(LocalCall("suspend", {"p-1"}));
  EXPECT_TRUE(r.status.ok()) << r.status.message();
  r = local.Run(LocalCall("list", {"p-0", "p-1"}));
  EXPECT_EQ(r.output, "p-0 on\np-1 off\n");
  local.Run(LocalCall("suspend", {"p-0"}));
  // A provider without a directory says what to give it.
  LocalProvider none("", exe_);
  r = none.Run(LocalCall("resume", {"p-0"}));
  EXPECT_NE(r.status.message().find("--pool-dir"), std::string::npos) << r.status.message();
}

core::NodePool ExecPool() {
  core::NodePool p;
  p.name = "p";
  p.max_nodes = 3;
  p.provider.type = core::PoolProvider::Type::kExec;
  p.provider.command = {"/bin/true"};
  p.boot_timeout_ms = 60000;
  return p;
}

TEST(PoolRuntimeTest, ANewPoolListsFirstAndTakesNodesUpAsBooting) {
  PoolRuntime rt;
  auto none = [](const std::string&) { return false; };
  std::vector<ProviderCall> calls = rt.SetPools({ExecPool()}, none, 1000);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].verb, "list");
  EXPECT_EQ(calls[0].nodes, (std::vector<std::string>{"p-0", "p-1", "p-2"}));
  EXPECT_EQ(rt.Status("p").at("listing"), json::value(true));
  // The same pool again lists nothing more; a changed provider lists again.
  EXPECT_TRUE(rt.SetPools({ExecPool()}, none, 1000).empty());
  ProviderResult r;
  r.call = calls[0];
  r.output = "p-0 on\np-1 off\n";
  std::string event;
  std::vector<ProviderCall> more;  // Suspends of leaked machines: none here.
  EXPECT_TRUE(rt.CallDone(r, 2000, &event, &more).empty());
  json::object st = rt.Status("p");
  EXPECT_FALSE(st.contains("listing"));
  EXPECT_EQ(st.at("nodes").at("booting"), json::value(1));
  EXPECT_EQ(st.at("nodes").at("suspended"), json::value(2));
  // Its agent registers: ready, after a boot counted from the list.
  int64_t boot_ms = 0;
  EXPECT_TRUE(rt.Registered("p-0", 5000, &boot_ms));
  EXPECT_EQ(boot_ms, 3000);
  EXPECT_EQ(rt.Status("p").at("nodes").at("ready"), json::value(1));
  // A boot that times out is stopped by the provider (not left billing).
  ctrl::Action a;
  a.type = ctrl::Action::Type::kResumeNodes;
  a.target = "p";
  a.nodes = {"p-1"};
  ASSERT_EQ(rt.Resume(a, 6000).size(), 1u);
  a.type = ctrl::Action::Type::kBootFailed;
  a.message = "p-1 did not register within 1m";
  calls = rt.BootFailed(a, 70000);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].verb, "suspend");
  EXPECT_EQ(calls[0].nodes, std::vector<std::string>{"p-1"});
  st = rt.Status("p");
  EXPECT_EQ(st.at("bootFailures"), json::value(1));
  EXPECT_EQ(st.at("lastError"), json::value("p-1 did not register within 1m"));
  // Its history: the counts at each change, and the decisions with why.
  const json::array& decisions = st.at("decisions").as_array();
  ASSERT_EQ(decisions.size(), 2u) << json::serialize(st);
  EXPECT_EQ(decisions[0].at("action"), json::value("resume"));
  EXPECT_EQ(decisions[1].at("action"), json::value("boot failed"));
  EXPECT_EQ(decisions[1].at("reason"), json::value("p-1 did not register within 1m"));
  // listed (booting 1), registered (ready 1), resumed (booting 1 ready 1),
  // failed (ready 1): one point each.
  EXPECT_EQ(json::serialize(st.at("history").at("points")),
            "[[1000,0,0,0],[2000,1,0,0],[5000,0,1,0],[6000,1,1,0],[70000,0,1,0]]");
  // A list that fails leaves the unregistered nodes down and says why.
  core::NodePool changed = ExecPool();
  changed.provider.command = {"/bin/false"};
  calls = rt.SetPools({changed}, none, 80000);
  ASSERT_EQ(calls.size(), 1u);
  r.call = calls[0];
  r.status = Status::FailedPrecondition("pool p: /bin/false list exited with code 1");
  r.output.clear();
  rt.CallDone(r, 81000, &event, &more);
  EXPECT_NE(event.find("taken as down"), std::string::npos) << event;
  EXPECT_FALSE(rt.Status("p").contains("listing"));
  EXPECT_TRUE(more.empty());
}

TEST(PoolRuntimeTest, APeriodicListStopsMachinesUpThatThePoolHoldsSuspended) {
  PoolRuntime rt;
  auto none = [](const std::string&) { return false; };
  std::vector<ProviderCall> calls = rt.SetPools({ExecPool()}, none, 1000);
  ProviderResult r;
  r.call = calls.at(0);
  std::string event;
  std::vector<ProviderCall> more;
  rt.CallDone(r, 2000, &event, &more);  // The first list: nothing up.
  // The autoscaler's kListNodes, 10 minutes on: one list at a time.
  calls = rt.List("p");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].verb, "list");
  EXPECT_TRUE(rt.List("p").empty());
  // p-0 is up at the provider, suspended here since the start (over the
  // 60 s bootTimeout): stopped; p-1 up too, but the pool holds it... also
  // suspended; p-2 down.
  r.call = calls[0];
  r.output = "p-0 on\np-1 running\np-2 off\n";
  rt.CallDone(r, 700000, &event, &more);
  ASSERT_EQ(more.size(), 1u);
  EXPECT_EQ(more[0].verb, "suspend");
  EXPECT_EQ(more[0].nodes, (std::vector<std::string>{"p-0", "p-1"}));
  EXPECT_NE(event.find("up at its provider but suspended here"), std::string::npos) << event;
  const json::object st = rt.Status("p");
  EXPECT_EQ(st.at("decisions").as_array().back().at("action"), json::value("stop leaked"));
  // A node resumed a moment ago and still starting is not a leak.
  ctrl::Action a;
  a.type = ctrl::Action::Type::kResumeNodes;
  a.target = "p";
  a.nodes = {"p-2"};
  ASSERT_EQ(rt.Resume(a, 701000).size(), 1u);
  more.clear();
  r.call = rt.List("p").at(0);
  r.output = "p-2 booting\n";
  rt.CallDone(r, 702000, &event, &more);
  EXPECT_TRUE(more.empty());
}

}  // namespace
}  // namespace allot::server
