#include "ctrl/node_lifecycle.h"

#include <gtest/gtest.h>

#include "ctrl/test_view.h"

namespace allot::ctrl {
namespace {

using testing::Agent;
using testing::TestView;

// Timeout 10 s, backoff 2 s: a node silent since a start at 1000 may be
// NotReady from 13000.
TEST(NodeLifecycle, Scenarios) {
  struct Case {
    const char* why;
    std::vector<Agent> agents;
    int64_t now_ms;
    std::vector<std::string> not_ready;  // Targets, in action order.
    int64_t next_wake_ms;
  } cases[] = {
      {"heard from within the timeout: wake just past its deadline",
       {{"n1", true, 5000}}, 9000, {}, 15001},
      {"exactly at the timeout is still Ready (strictly more than it)",
       {{"n1", true, 5000}}, 15000, {}, 15001},
      {"past the timeout: NotReady", {{"n1", true, 5000}}, 15001, {"n1"}, kNever},
      {"already NotReady: nothing more, nothing to wake for",
       {{"n1", false, 5000}}, 99000, {}, kNever},
      {"silent since start, within the grace period: wake at its end",
       {{"n1", true, 0}}, 12999, {}, 13000},
      {"silent since start, grace over: NotReady", {{"n1", true, 0}}, 13000, {"n1"}, kNever},
      {"stopped ones first, then silent ones, each in name order",
       {{"a", true, 0}, {"b", true, 100}, {"c", true, 0}, {"d", true, 200}}, 20000,
       {"b", "d", "a", "c"}, kNever},
      {"the earliest deadline of several", {{"a", true, 7000}, {"b", true, 4000}}, 5000, {},
       14001},
  };
  Options o;
  o.node_timeout_ms = 10000;
  o.agent_max_backoff_ms = 2000;
  for (const auto& c : cases) {
    TestView v;
    v.started_ms = 1000;
    v.agents = c.agents;
    Plan p = NodeLifecycle(o).Run(v, c.now_ms);
    std::vector<std::string> got;
    for (const Action& a : p.actions) {
      EXPECT_EQ(a.type, Action::Type::kNodeNotReady) << c.why;
      got.push_back(a.target);
    }
    EXPECT_EQ(got, c.not_ready) << c.why;
    EXPECT_EQ(p.next_wake_ms, c.next_wake_ms) << c.why;
  }
}

TEST(NodeLifecycle, MessagesSayWhy) {
  Options o;
  o.node_timeout_ms = 15000;
  TestView v;
  v.agents = {{"lost", true, 1}, {"silent", true, 0}};
  Plan p = NodeLifecycle(o).Run(v, 100000);
  ASSERT_EQ(p.actions.size(), 2u);
  EXPECT_EQ(p.actions[0].message, "its agent stopped heartbeating (nothing for 15 s)");
  EXPECT_EQ(p.actions[0].clause, "stopped heartbeating");
  EXPECT_EQ(p.actions[1].message,
            "its agent has not been heard from since the server started (17 s grace period)");
  EXPECT_EQ(p.actions[1].clause, "not heard from since the server started");
}

}  // namespace
}  // namespace allot::ctrl
