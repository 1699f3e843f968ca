#include "ctrl/runner.h"

#include <gtest/gtest.h>

#include "ctrl/test_view.h"

namespace allot::ctrl {
namespace {

// A controller that records when it ran and asks to wake at `wake`.
class Probe : public Controller {
 public:
  Probe(uint32_t triggers, int64_t min_interval, int64_t wake, std::vector<int64_t>* runs)
      : triggers_(triggers), min_interval_(min_interval), wake_(wake), runs_(runs) {}
  std::string_view Name() const override { return "probe"; }
  uint32_t Triggers() const override { return triggers_; }
  int64_t MinIntervalMs() const override { return min_interval_; }
  Plan Run(const View&, int64_t now) const override {
    runs_->push_back(now);
    Plan p;
    p.next_wake_ms = wake_;
    p.actions.push_back({Action::Type::kFail, "t/x", "R", "M", ""});
    return p;
  }

 private:
  uint32_t triggers_;
  int64_t min_interval_, wake_;
  std::vector<int64_t>* runs_;
};

Runner One(uint32_t triggers, int64_t min_interval, int64_t wake, std::vector<int64_t>* runs) {
  std::vector<std::unique_ptr<Controller>> c;
  c.push_back(std::make_unique<Probe>(triggers, min_interval, wake, runs));
  return Runner(std::move(c));
}

TEST(Runner, RunsAtStartThenAtItsWakeTime) {
  std::vector<int64_t> runs;
  Runner r = One(0, 0, 5000, &runs);
  testing::TestView v;
  EXPECT_EQ(r.NextWakeMs(), 0) << "every controller runs on the first turn";
  std::vector<TakenAction> a = r.Run(v, 100);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].controller, "probe");
  EXPECT_EQ(r.NextWakeMs(), 5000);
  EXPECT_TRUE(r.Run(v, 4999).empty()) << "not due before its wake time";
  r.Note(kAdmissions);
  EXPECT_EQ(r.NextWakeMs(), 5000) << "a change it does not trigger on wakes nothing";
  EXPECT_EQ(r.Run(v, 5000).size(), 1u);
  EXPECT_EQ(runs, (std::vector<int64_t>{100, 5000}));
}

TEST(Runner, AChangeItTriggersOnMakesItDueAfterItsMinInterval) {
  std::vector<int64_t> runs;
  Runner r = One(kAdmissions, 1000, kNever, &runs);
  testing::TestView v;
  r.Run(v, 100);
  EXPECT_EQ(r.NextWakeMs(), kNever) << "nothing to wake for until something changes";
  r.Note(kAdmissions | kAgents);
  EXPECT_EQ(r.NextWakeMs(), 1100) << "rate-limited to once per MinIntervalMs";
  EXPECT_TRUE(r.Run(v, 1099).empty());
  EXPECT_EQ(r.Run(v, 1100).size(), 1u);
  EXPECT_EQ(r.NextWakeMs(), kNever) << "the change was seen";
  EXPECT_EQ(runs, (std::vector<int64_t>{100, 1100}));
}

TEST(Runner, AWakeInThePastDoesNotSpin) {
  std::vector<int64_t> runs;
  Runner r = One(0, 0, 0, &runs);
  testing::TestView v;
  r.Run(v, 100);
  EXPECT_EQ(r.NextWakeMs(), 101);
  EXPECT_TRUE(r.Run(v, 100).empty()) << "at most once per millisecond";
}

}  // namespace
}  // namespace allot::ctrl
