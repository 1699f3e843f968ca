// InlineVec: scratch lists for the scheduler's hot paths.
#pragma once

#include <cstddef>
#include <vector>

namespace allot::sched {

// A short list of T kept inline (no allocation) while it has at most N
// elements: scratch for hot paths.
template <typename T, size_t N>
class InlineVec {
 public:
  InlineVec() = default;
  InlineVec(size_t n, const T& v) {
    for (size_t i = 0; i < n; ++i) push_back(v);
  }
  void push_back(const T& v) {
    if (size_ < N) {
      inline_[size_] = v;
    } else {
      if (size_ == N) heap_.assign(inline_, inline_ + N);
      heap_.push_back(v);
    }
    ++size_;
  }
  T* begin() { return size_ > N ? heap_.data() : inline_; }
  const T* begin() const { return size_ > N ? heap_.data() : inline_; }
  T* end() { return begin() + size_; }
  const T* end() const { return begin() + size_; }
  T& operator[](size_t i) { return begin()[i]; }
  const T& operator[](size_t i) const { return begin()[i]; }
  T& back() { return begin()[size_ - 1]; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  T inline_[N]{};
  size_t size_ = 0;
  std::vector<T> heap_;
};

}  // namespace allot::sched
