// Node readiness across a server restart: a node known from the store keeps
// its workloads for one node timeout plus the agents' longest backoff after
// the server starts (agent/heartbeat.h), and its Ready condition says where
// it stands. The real-process side (an agent backing off through a long
// outage, nothing evicted) is AgentTest.LongServerOutageEvictsNobody.
#include <gtest/gtest.h>

#include "agent/heartbeat.h"
#include "server/state.h"

namespace allot::server {
namespace {

namespace json = boost::json;
constexpr int64_t kT0 = 1764547200000;
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

class NodeLifecycleTest : public ::testing::Test {
 protected:
  // A state that knows node n1 from its store only, as after a restart.
  void SetUp() override {
    auto first = State::Load(store::Snapshot{});
    ASSERT_TRUE(first.ok());
    Txn txn;
    txn.now_unix_ms = kT0;
    ASSERT_TRUE((*first)->AgentSync(agent_, Report(), &txn).ok());
    (*first)->FinishTurn(&txn);
    store::Snapshot snap;
    snap.objects = txn.batch.puts;
    ASSERT_FALSE(snap.objects.empty());
    auto st = State::Load(snap);
    ASSERT_TRUE(st.ok()) << st.status().ToString();
    st_ = std::move(*st);
  }
  void Check(int64_t now) {
    Txn txn;
    txn.now_unix_ms = now;
    st_->CheckNodes(now, kTimeout, &txn);
  }
  Principal agent_{"agent", Role::kNode, "", "t1", ""};
  std::unique_ptr<State> st_;
};

TEST_F(NodeLifecycleTest, RestartGivesEveryNodeAGracePeriod) {
  const int64_t start = kT0 + 60000;  // The restarted server's first check.
  Check(start);
  EXPECT_EQ(Ready(*st_), "Unknown/AwaitingAgent");
  // Past one node timeout, an agent still backing off is not NotReady.
  Check(start + kTimeout + 500);
  EXPECT_TRUE(st_->NodeReady("n1"));
  EXPECT_EQ(Ready(*st_), "Unknown/AwaitingAgent");
  // Past the grace period it is.
  Check(start + kTimeout + agent::kMaxReconnectBackoffMs + 1);
  EXPECT_FALSE(st_->NodeReady("n1"));
  json::object c = st_->NodeReadyCondition("n1");
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
  Check(back);
  Txn txn;
  txn.now_unix_ms = back;
  ASSERT_TRUE(st_->AgentSync(agent_, Report(), &txn).ok());
  st_->FinishTurn(&txn);
  EXPECT_EQ(Ready(*st_), "True/AgentReady");
  EXPECT_EQ(st_->NodeReadyCondition("n1").at("lastHeartbeatUnixMs").as_int64(), back);
  Check(back + kTimeout);
  EXPECT_TRUE(st_->NodeReady("n1"));
  Check(back + kTimeout + 1);
  EXPECT_EQ(Ready(*st_), "False/AgentNotHeartbeating");
  EXPECT_NE(st_->NodeReadyCondition("n1").at("message").as_string().find("stopped heartbeating"),
            std::string::npos);
  // And back.
  Txn again;
  again.now_unix_ms = back + kTimeout + 2;
  ASSERT_TRUE(st_->AgentSync(agent_, Report(), &again).ok());
  EXPECT_EQ(Ready(*st_), "True/AgentReady");
  EXPECT_EQ(st_->NodeReadyCondition("n1").at("lastTransitionUnixMs").as_int64(),
            back + kTimeout + 2);
}

TEST(NodeConditionTest, ANodeWithoutAnAgentIsReady) {
  auto st = State::Load(store::Snapshot{});
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(Ready(**st), "True/NoAgent");
}

}  // namespace
}  // namespace allot::server
