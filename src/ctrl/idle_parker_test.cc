#include "ctrl/idle_parker.h"

#include <gtest/gtest.h>

#include "ctrl/test_view.h"

namespace allot::ctrl {
namespace {

using testing::Admitted;
using testing::TestView;

struct Case {
  const char* why;
  std::vector<Admitted> admitted;
  int64_t now_ms;
  std::vector<std::string> parked;  // Keys, in view order.
  int64_t next_wake_ms;
};

TEST(IdleParker, Scenarios) {
  // ClusterQueue "notebooks" parks after 30 min idle; "batch" never.
  const int64_t m = 60'000;
  auto idle = [](const char* key, const char* cq, int64_t since, int64_t own = -1) {
    Admitted a;
    a.key = key;
    a.cluster_queue = cq;
    a.idle_since_ms = since;
    a.idle_after_seconds = own;
    return a;
  };
  auto quiet = [&](const char* key, int64_t since, int64_t active) {
    Admitted a = idle(key, "notebooks", since);
    a.active_ms = active;
    return a;
  };
  auto lent = [&](const char* key) {
    Admitted a = idle(key, "notebooks", 1);
    a.on_parked_capacity = true;
    return a;
  };
  const Case cases[] = {
      {"no idle-after anywhere: nothing to do, nothing to wake for",
       {idle("t/a", "batch", 1)}, 100 * m, {}, kNever},
      {"busy (not idle) under a policy: look again in a while (telemetry marks idleness)",
       {idle("t/a", "notebooks", 0)}, 100 * m, {}, 100 * m + IdleParker::kPollMs},
      {"idle, not long enough: wake when it will be (or at the poll, sooner)",
       {idle("t/a", "notebooks", 10 * m)}, 39 * m + 50'000, {}, 40 * m},
      {"idle for exactly its ClusterQueue's time: parked",
       {idle("t/a", "notebooks", 10 * m)}, 40 * m, {"t/a"}, 40 * m + IdleParker::kPollMs},
      {"its own annotation wins over the ClusterQueue's",
       {idle("t/a", "notebooks", 10 * m, 5 * 60)}, 15 * m, {"t/a"}, 15 * m + IdleParker::kPollMs},
      {"its own 0s: never, whatever the ClusterQueue says",
       {idle("t/a", "notebooks", 1, 0)}, 1000 * m, {}, kNever},
      {"its own policy in a ClusterQueue without one",
       {idle("t/a", "batch", 1, 60), idle("t/b", "batch", 1)}, 2 * m, {"t/a"},
       2 * m + IdleParker::kPollMs},
      {"an unknown ClusterQueue has no policy",
       {idle("t/a", "gone", 1)}, 1000 * m, {}, kNever},
      {"a custom signal: GPUs idle for long, activity 10 min ago: wait for 30 min of quiet",
       {quiet("t/a", 1, 90 * m)}, 100 * m, {}, 100 * m + IdleParker::kPollMs},
      {"a custom signal quiet for 30 min, GPUs idle longer: parked",
       {quiet("t/a", 1, 70 * m)}, 100 * m, {"t/a"}, 100 * m + IdleParker::kPollMs},
      {"a custom signal quiet, GPUs busy: not parked",
       {quiet("t/a", 0, 1)}, 100 * m, {}, 100 * m + IdleParker::kPollMs},
      {"on parked capacity: never parked (it holds no quota to keep)",
       {lent("t/a")}, 1000 * m, {}, kNever},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.why);
    TestView v;
    v.Queue("batch", 0);
    v.Queue("notebooks", 0);
    v.queues[1].idle_after_seconds = 30 * 60;
    v.admitted = c.admitted;
    Plan p = IdleParker().Run(v, c.now_ms);
    std::vector<std::string> parked;
    for (const Action& a : p.actions) {
      EXPECT_EQ(a.type, Action::Type::kPark);
      EXPECT_EQ(a.reason, "Idle");
      EXPECT_NE(a.message.find("idle threshold"), std::string::npos) << a.message;
      EXPECT_EQ(a.message.find("reported no activity") != std::string::npos,
                c.admitted[0].active_ms >= 0)
          << a.message;
      parked.push_back(a.target);
    }
    EXPECT_EQ(parked, c.parked);
    EXPECT_EQ(p.next_wake_ms, c.next_wake_ms);
  }
}

}  // namespace
}  // namespace allot::ctrl
