#include "ctrl/gang_restart.h"

#include <gtest/gtest.h>

#include "ctrl/test_view.h"

namespace allot::ctrl {
namespace {

using testing::TestView;

TEST(GangRestart, Scenarios) {
  struct Case {
    const char* why;
    int32_t restarts, backoff_limit;
    Action::Type want;
    std::string message;
  } cases[] = {
      {"no backoffLimit: the first failure fails it, with the pod's words", 0, 0,
       Action::Type::kFail, "pod X exited with code 3"},
      {"restarts left: the gang starts again, counted from 1", 0, 2, Action::Type::kRestartGang,
       "restart 1 of 2: pod X exited with code 3"},
      {"the last restart allowed", 1, 2, Action::Type::kRestartGang,
       "restart 2 of 2: pod X exited with code 3"},
      {"restarts used up: fails", 2, 2, Action::Type::kFail, "pod X exited with code 3"},
  };
  for (const auto& c : cases) {
    TestView v;
    v.failures = {{"t/a", c.restarts, c.backoff_limit, "pod X exited with code 3"}};
    Plan p = GangRestart().Run(v, 0);
    ASSERT_EQ(p.actions.size(), 1u) << c.why;
    EXPECT_EQ(p.actions[0].type, c.want) << c.why;
    EXPECT_EQ(p.actions[0].target, "t/a") << c.why;
    EXPECT_EQ(p.actions[0].reason, "PodFailed") << c.why;
    EXPECT_EQ(p.actions[0].message, c.message) << c.why;
    EXPECT_EQ(p.next_wake_ms, kNever) << c.why << ": it waits for the next failure";
  }
}

}  // namespace
}  // namespace allot::ctrl
