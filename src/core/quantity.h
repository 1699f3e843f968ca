// Quantity: an exact resource amount in Kubernetes syntax.
//
// Stored as a signed 64-bit count of milli-units, so "500m" CPU is 500,
// "8" GPUs is 8000 and "64Gi" of memory is 64 * 2^30 * 1000. The range is
// about +-9.2e15 units (8 PiB of memory); parsing anything larger fails
// instead of wrapping. Arithmetic is exact integer arithmetic; callers that
// can overflow (sums of user input) use CheckedAdd.
#pragma once

#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace allot {

class Quantity {
 public:
  constexpr Quantity() = default;
  static constexpr Quantity FromMilli(int64_t milli) { return Quantity(milli); }
  static constexpr Quantity FromUnits(int64_t units) {
    return Quantity(units * 1000);
  }

  // Parses "8", "500m", "1.5", "64Gi", "2e3", "1k", "-1". Sub-milli values
  // ("1u") round up to the next milli-unit, as Kubernetes does.
  static Result<Quantity> Parse(std::string_view text);

  constexpr int64_t milli() const { return milli_; }
  // Whole units, rounded up (1500m -> 2).
  constexpr int64_t UnitsCeil() const {
    return milli_ >= 0 ? (milli_ + 999) / 1000 : -((-milli_) / 1000);
  }
  constexpr bool IsZero() const { return milli_ == 0; }
  constexpr bool IsNegative() const { return milli_ < 0; }

  // Canonical text: "500m", "8", "64Gi" (binary suffix when exact).
  std::string ToString() const;

  constexpr Quantity operator+(Quantity o) const {
    return Quantity(milli_ + o.milli_);
  }
  constexpr Quantity operator-(Quantity o) const {
    return Quantity(milli_ - o.milli_);
  }
  constexpr Quantity operator*(int64_t k) const { return Quantity(milli_ * k); }
  constexpr Quantity& operator+=(Quantity o) {
    milli_ += o.milli_;
    return *this;
  }
  constexpr Quantity& operator-=(Quantity o) {
    milli_ -= o.milli_;
    return *this;
  }
  constexpr auto operator<=>(const Quantity&) const = default;

  // False on signed overflow (the result is then unspecified).
  static bool CheckedAdd(Quantity a, Quantity b, Quantity* out);

 private:
  constexpr explicit Quantity(int64_t milli) : milli_(milli) {}
  int64_t milli_ = 0;
};

}  // namespace allot
