#include "server/work_pool.h"

#include <utility>

namespace allot::server {

WorkPool::WorkPool(int threads, size_t max_queued) : max_queued_(max_queued) {
  if (threads < 1) threads = 1;
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); });
}

WorkPool::~WorkPool() { Stop(); }

bool WorkPool::Submit(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stopping_ || queue_.size() >= max_queued_) return false;
    queue_.push_back(std::move(fn));
  }
  cv_.notify_one();
  return true;
}

void WorkPool::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

void WorkPool::Loop() {
  while (true) {
    std::function<void()> fn;
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // Stopping, and nothing left to run.
      fn = std::move(queue_.front());
      queue_.pop_front();
    }
    fn();
  }
}

}  // namespace allot::server
