// Node readiness across a server restart: a node known from the store keeps
// its workloads for one node timeout plus the agents' longest backoff after
// the server starts (agent/heartbeat.h), and its Ready condition says where
// it stands. The real-process side (an agent backing off through a long
// outage, nothing evicted) is AgentTest.LongServerOutageEvictsNobody. The
// node-lifecycle controller's own table is ctrl/node_lifecycle_test.cc.
#include <gtest/gtest.h>

#include "agent/heartbeat.h"
#include "server/harness.h"
#include "server/state.h"

namespace allot::server {
namespace {

namespace json = boost::json;
using testing::Harness;
constexpr int64_t kT0 = Harness::kT0;
constexpr int64_t kTimeout = 6000;

AgentReport Report() {
  AgentReport r;
  r.node.name = "n1";
  r.node.cpu = Quantity::FromMilli(8000);
  r.node.memory = Quantity::FromMilli(int64_t(8) << 40);
  r.node.gpus.push_back({"GPU-1", "H100", Quantity::FromMilli(int64_t(80) << 40), true, {}});
  return r;
}

std::string Ready(const State& st) {
  json::object c = st.NodeReadyCondition("n1");
  return std::string(c.at("status").as_string()) + "/" + std::string(c.at("reason").as_string());
}

ctrl::Options Timeout() {
  ctrl::Options o;
  o.node_timeout_ms = kTimeout;
  o.agent_max_backoff_ms = agent::kMaxReconnectBackoffMs;
  return o;
}

class NodeLifecycleTest : public ::testing::Test {
 protected:
  // A state that knows node n1 from its store only, as after a restart
  // a minute later.
  void SetUp() override {
    ASSERT_TRUE(h_.Sync(Report()).ok());
    h_.Restart(kT0 + 60000);
  }
  void Check(int64_t now) { h_.At(now); }
  Harness h_{Timeout()};
};

TEST_F(NodeLifecycleTest, RestartGivesEveryNodeAGracePeriod) {
  const int64_t start = kT0 + 60000;  // The restarted server's first check.
  Check(start);
  EXPECT_EQ(Ready(h_.state()), "Unknown/AwaitingAgent");
  // Past one node timeout, an agent still backing off is not NotReady.
  Check(start + kTimeout + 500);
  EXPECT_TRUE(h_.state().NodeReady("n1"));
  EXPECT_EQ(Ready(h_.state()), "Unknown/AwaitingAgent");
  EXPECT_EQ(h_.next_wake(), start + kTimeout + agent::kMaxReconnectBackoffMs)
      << "the controller wakes when the grace period ends";
  // Past the grace period it is.
  Check(start + kTimeout + agent::kMaxReconnectBackoffMs + 1);
  EXPECT_FALSE(h_.state().NodeReady("n1"));
  json::object c = h_.state().NodeReadyCondition("n1");
  EXPECT_EQ(c.at("status").as_string(), "False");
  EXPECT_NE(c.at("message").as_string().find("not been heard from since the server started"),
            std::string::npos)
      << c.at("message").as_string();
  EXPECT_EQ(c.at("lastTransitionUnixMs").as_int64(),
            start + kTimeout + agent::kMaxReconnectBackoffMs + 1);
  EXPECT_EQ(c.if_contains("lastHeartbeatTime"), nullptr);
}

TEST_F(NodeLifecycleTest, AnAgentHeardWithinTheGraceIsReadyThenTimesOutAsUsual) {
  const int64_t start = kT0 + 60000;
  Check(start);
  const int64_t back = start + kTimeout + 1000;  // After one timeout, in the grace.
  h_.At(back);
  ASSERT_TRUE(h_.Sync(Report()).ok());
  EXPECT_EQ(Ready(h_.state()), "True/AgentReady");
  EXPECT_EQ(h_.state().NodeReadyCondition("n1").at("lastHeartbeatUnixMs").as_int64(), back);
  Check(back + kTimeout);
  EXPECT_TRUE(h_.state().NodeReady("n1"));
  Check(back + kTimeout + 1);
  EXPECT_EQ(Ready(h_.state()), "False/AgentNotHeartbeating");
  EXPECT_NE(
      h_.state().NodeReadyCondition("n1").at("message").as_string().find("stopped heartbeating"),
      std::string::npos);
  // And back.
  h_.At(back + kTimeout + 2);
  ASSERT_TRUE(h_.Sync(Report()).ok());
  EXPECT_EQ(Ready(h_.state()), "True/AgentReady");
  EXPECT_EQ(h_.state().NodeReadyCondition("n1").at("lastTransitionUnixMs").as_int64(),
            back + kTimeout + 2);
}

TEST_F(NodeLifecycleTest, OnItsOwnTheControllerWakesExactlyAtTheDeadline) {
  const int64_t start = kT0 + 60000;
  Check(start);
  h_.At(start + 100);
  ASSERT_TRUE(h_.Sync(Report()).ok());
  EXPECT_EQ(h_.next_wake(), start + 100 + kTimeout + 1);
  h_.Advance(kTimeout + 50);  // Turns only where a controller is due.
  EXPECT_EQ(Ready(h_.state()), "False/AgentNotHeartbeating");
  EXPECT_EQ(h_.state().NodeReadyCondition("n1").at("lastTransitionUnixMs").as_int64(),
            start + 100 + kTimeout + 1);
}

TEST(NodeConditionTest, ANodeWithoutAnAgentIsReady) {
  auto st = State::Load(store::Snapshot{});
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(Ready(**st), "True/NoAgent");
}

}  // namespace
}  // namespace allot::server
