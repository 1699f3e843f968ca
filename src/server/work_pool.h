// WorkPool: a few threads that run the CPU-heavy part of requests (reading
// manifest bodies) off the network threads, so that a slow or hostile body
// cannot hold every I/O thread while heartbeats, lists and watches wait.
//
// The queue is bounded: Submit returns false when it is full, and the
// caller answers 503 (the bodies in the queue are memory the server holds).
// Stop() runs what is queued, then joins; Submit after Stop returns false.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace allot::server {

class WorkPool {
 public:
  WorkPool(int threads, size_t max_queued);
  ~WorkPool();
  WorkPool(const WorkPool&) = delete;
  WorkPool& operator=(const WorkPool&) = delete;

  bool Submit(std::function<void()> fn);
  void Stop();

 private:
  void Loop();

  const size_t max_queued_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace allot::server
