#include "ctrl/deadlines.h"

#include <gtest/gtest.h>

#include "ctrl/test_view.h"

namespace allot::ctrl {
namespace {

using testing::Admitted;
using testing::TestView;

// A view that says which admitted workloads can have a limit (as the
// simulator's does): those with their own or in a
// ClusterQueue with a default. It counts full scans, which Deadlines must
// then not make; TestView itself visits every admitted workload (View's
// default).
class LimitedView : public TestView {
 public:
  mutable int32_t full_scans = 0;
  void ForEachAdmitted(
      const std::function<void(const AdmittedView&)>& fn) const override {
    ++full_scans;
    TestView::ForEachAdmitted(fn);
  }
  void ForEachAdmittedWithLimit(
      const std::function<void(const AdmittedView&)>& fn) const override {
    for (const Admitted& a : admitted) {
      const core::ClusterQueue* cq = FindClusterQueue(a.cluster_queue);
      if (a.max_execution_seconds > 0 ||
          (cq != nullptr && cq->max_run_seconds > 0)) {
        fn({a.key, a.cluster_queue, a.reserved_ms, a.max_execution_seconds, a.pull_ms});
      }
    }
  }
};

struct Case {
  const char* why;
  std::vector<Admitted> admitted;
  int64_t now_ms;
  std::vector<std::string> failed;  // Keys, in view order.
  int64_t next_wake_ms;
};

TEST(Deadlines, Scenarios) {
  // ClusterQueue "short" gives 60 s to workloads that set no limit; "free" none.
  const Case cases[] = {
      {"no limit anywhere: nothing to do, nothing to wake for",
       {{"t/a", "free", 0, 0}}, 1'000'000, {}, kNever},
      {"its own limit not reached: wake exactly when it is",
       {{"t/a", "free", 1000, 10}}, 5000, {}, 11000},
      {"its own limit reached to the millisecond: fails (Kueue counts >=)",
       {{"t/a", "free", 1000, 10}}, 11000, {"t/a"}, kNever},
      {"image pulls are not run time: the end moves by the pull time",
       {{"t/a", "free", 1000, 10, 4000}}, 11000, {}, 15000},
      {"and comes when the run time after the pull is used up",
       {{"t/a", "free", 1000, 10, 4000}}, 15000, {"t/a"}, kNever},
      {"no limit of its own: the ClusterQueue's default applies",
       {{"t/a", "short", 0, 0}}, 60000, {"t/a"}, kNever},
      {"its own limit wins over the ClusterQueue's, longer or shorter",
       {{"t/long", "short", 0, 120}, {"t/brief", "short", 0, 5}}, 60000, {"t/brief"}, 120000},
      {"a ClusterQueue the view does not know: no default",
       {{"t/a", "gone", 0, 0}}, 1'000'000, {}, kNever},
      {"the earliest of several deadlines is the wake-up",
       {{"t/a", "short", 5000, 0}, {"t/b", "short", 1000, 0}, {"t/c", "free", 0, 0}}, 2000, {},
       61000},
  };
  // Each case twice: on a view scanned in full, and on one that visits
  // only the workloads that can have a limit (the same answer, no scan).
  for (const Case& c : cases) {
    TestView full;
    LimitedView limited;
    for (TestView* v : {&full, static_cast<TestView*>(&limited)}) {
      v->Queue("short", 60).Queue("free", 0);
      v->admitted = c.admitted;
      Plan p = Deadlines().Run(*v, c.now_ms);
      std::vector<std::string> failed;
      for (const Action& a : p.actions) {
        EXPECT_EQ(a.type, Action::Type::kFail) << c.why;
        EXPECT_EQ(a.reason, "MaximumExecutionTimeExceeded") << c.why;
        failed.push_back(a.target);
      }
      EXPECT_EQ(failed, c.failed) << c.why;
      EXPECT_EQ(p.next_wake_ms, c.next_wake_ms) << c.why;
    }
    EXPECT_EQ(limited.full_scans, 0) << c.why;
  }
}

TEST(Deadlines, NoLimitsNoScan) {
  // No ClusterQueue sets a default and no workload has a limit of its own:
  // a view that knows it visits nothing, and nothing is due.
  LimitedView v;
  v.Queue("free", 0);
  for (int i = 0; i < 1000; ++i)
    v.admitted.push_back({"t/w" + std::to_string(i), "free", 0, 0});
  Plan p = Deadlines().Run(v, 1'000'000'000);
  EXPECT_TRUE(p.actions.empty());
  EXPECT_EQ(p.next_wake_ms, kNever);
  EXPECT_EQ(v.full_scans, 0);
}

TEST(Deadlines, MessageSaysWhichLimit) {
  TestView v;
  v.Queue("short", 5400);
  v.admitted = {{"t/own", "short", 0, 30}, {"t/queue", "short", 0, 0}};
  Plan p = Deadlines().Run(v, 10'000'000);
  ASSERT_EQ(p.actions.size(), 2u);
  // The same words as before the controllers, for workloads' own limits.
  EXPECT_EQ(p.actions[0].message,
            "ran longer than its maximumExecutionTimeSeconds (30 s)");
  EXPECT_EQ(
      p.actions[1].message,
      "ran longer than its ClusterQueue's allot.dev/max-run-duration (5400 s)");
}

}  // namespace
}  // namespace allot::ctrl
