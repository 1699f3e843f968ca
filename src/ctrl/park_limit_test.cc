#include "ctrl/park_limit.h"

#include <gtest/gtest.h>

#include "ctrl/test_view.h"

namespace allot::ctrl {
namespace {

using testing::Parked;
using testing::TestView;

struct Case {
  const char* why;
  std::vector<Parked> parked;
  int64_t now_ms;
  std::vector<std::string> stopped;  // Keys, in view order.
  int64_t next_wake_ms;
};

TEST(ParkLimit, Scenarios) {
  // ClusterQueue "notebooks" keeps a parked workload's quota 8 hours;
  // "batch" forever.
  const int64_t h = 3'600'000;
  auto parked = [](const char* key, const char* cq, int64_t since, bool resuming = false) {
    return Parked{key, cq, since, resuming};
  };
  const Case cases[] = {
      {"no limit: nothing to do, nothing to wake for", {parked("t/a", "batch", 1)}, 100 * h, {},
       kNever},
      {"parked, not long enough: wake when it will be", {parked("t/a", "notebooks", 2 * h)},
       9 * h, {}, 10 * h},
      {"parked exactly its limit: stopped", {parked("t/a", "notebooks", 2 * h)}, 10 * h, {"t/a"},
       kNever},
      {"the earliest of several decides the wake",
       {parked("t/a", "notebooks", 3 * h), parked("t/b", "notebooks", 1 * h),
        parked("t/c", "batch", 0)},
       5 * h, {}, 9 * h},
      {"one over, one not", {parked("t/a", "notebooks", 0), parked("t/b", "notebooks", 4 * h)},
       8 * h, {"t/a"}, 12 * h},
      {"a resume that waits for devices is left alone", {parked("t/a", "notebooks", 0, true)},
       100 * h, {}, kNever},
      {"an unknown ClusterQueue has no limit", {parked("t/a", "gone", 0)}, 100 * h, {}, kNever},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.why);
    TestView v;
    v.Queue("batch", 0);
    v.Queue("notebooks", 0);
    v.queues[1].max_parked_seconds = 8 * 3600;
    v.parked = c.parked;
    Plan p = ParkLimit().Run(v, c.now_ms);
    std::vector<std::string> stopped;
    for (const Action& a : p.actions) {
      EXPECT_EQ(a.type, Action::Type::kStopParked);
      EXPECT_EQ(a.reason, "MaxParked");
      EXPECT_NE(a.message.find("ClusterQueue notebooks's allot.dev/max-parked (8h)"),
                std::string::npos)
          << a.message;
      stopped.push_back(a.target);
    }
    EXPECT_EQ(stopped, c.stopped);
    EXPECT_EQ(p.next_wake_ms, c.next_wake_ms);
  }
}

}  // namespace
}  // namespace allot::ctrl
