#include "server/work_pool.h"

#include <atomic>
#include <future>

#include <gtest/gtest.h>

namespace allot::server {
namespace {

// The queue is bounded: with its one thread busy and two bodies waiting, a
// third is refused (the server answers it 503) and none is lost.
TEST(WorkPool, RefusesPastTheQueueBoundAndRunsWhatItTook) {
  WorkPool pool(1, 2);
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  std::promise<void> started;
  std::atomic<int> ran{0};
  ASSERT_TRUE(pool.Submit([&, gate] {
    started.set_value();
    gate.wait();
    ++ran;
  }));
  started.get_future().wait();  // The thread is busy now.
  EXPECT_TRUE(pool.Submit([&] { ++ran; }));
  EXPECT_TRUE(pool.Submit([&] { ++ran; }));
  EXPECT_FALSE(pool.Submit([&] { ++ran; }));
  release.set_value();
  pool.Stop();  // Runs what is queued, then joins.
  EXPECT_EQ(ran.load(), 3);
  EXPECT_FALSE(pool.Submit([&] { ++ran; }));
  EXPECT_EQ(ran.load(), 3);
}

// Two slow bodies occupy two pool threads, not the caller: work submitted
// while they run still completes on the remaining thread.
TEST(WorkPool, SlowWorkDoesNotHoldTheOtherThreads) {
  WorkPool pool(3, 8);
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(pool.Submit([gate] { gate.wait(); }));
  std::promise<void> quick;
  ASSERT_TRUE(pool.Submit([&] { quick.set_value(); }));
  quick.get_future().wait();  // Would hang with one thread, or on the caller.
  release.set_value();
}

}  // namespace
}  // namespace allot::server
