#include "core/quantity.h"

#include <cctype>
#include <limits>

namespace allot {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// Multiplies *v by m; false on overflow.
bool MulChecked(__int128* v, __int128 m) {
  __int128 r = 0;
  if (__builtin_mul_overflow(*v, m, &r)) return false;  // Before it can wrap.
  *v = r;
  return *v <= kMax && *v >= -kMax;
}

}  // namespace

Result<Quantity> Quantity::Parse(std::string_view s) {
  const std::string quoted = "\"" + std::string(s) + "\"";
  if (s.empty()) return Status::InvalidArgument("empty quantity");
  size_t i = 0;
  bool neg = false;
  if (s[i] == '+' || s[i] == '-') {
    neg = s[i] == '-';
    ++i;
  }
  // Digits with at most one decimal point: value = mantissa / 10^frac_digits.
  __int128 mantissa = 0;
  int frac_digits = 0;
  bool seen_dot = false, seen_digit = false;
  for (; i < s.size(); ++i) {
    char c = s[i];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      seen_digit = true;
      if (mantissa > (__int128)kMax * 1000) {
        return Status::InvalidArgument("quantity " + quoted + " is too large");
      }
      mantissa = mantissa * 10 + (c - '0');
      if (seen_dot) ++frac_digits;
    } else if (c == '.' && !seen_dot) {
      seen_dot = true;
    } else {
      break;
    }
  }
  if (!seen_digit) {
    return Status::InvalidArgument(
        "malformed quantity " + quoted +
        ": expected a number such as 8, 500m or 64Gi");
  }
  std::string_view suffix = s.substr(i);
  // Scale as numerator/denominator relative to milli-units.
  __int128 num = 1000, den = 1;
  if (suffix.empty()) {
  } else if (suffix == "n") {
    den = 1000000;
  } else if (suffix == "u") {
    den = 1000;
  } else if (suffix == "m") {
    num = 1;
  } else if (suffix == "k") {
    num = 1000LL * 1000;
  } else if (suffix == "M") {
    num = 1000LL * 1000 * 1000;
  } else if (suffix == "G") {
    num = (__int128)1000 * 1000 * 1000 * 1000;
  } else if (suffix == "T") {
    num = (__int128)1000 * 1000 * 1000 * 1000 * 1000;
  } else if (suffix == "P") {
    num = (__int128)1000 * 1000 * 1000 * 1000 * 1000 * 1000;
  } else if (suffix == "E") {
    num = (__int128)1000 * 1000 * 1000 * 1000 * 1000 * 1000 * 1000;
  } else if (suffix.size() == 2 && suffix[1] == 'i') {
    int shift;
    switch (suffix[0]) {
      case 'K':
        shift = 10;
        break;
      case 'M':
        shift = 20;
        break;
      case 'G':
        shift = 30;
        break;
      case 'T':
        shift = 40;
        break;
      case 'P':
        shift = 50;
        break;
      case 'E':
        shift = 60;
        break;
      default:
        return Status::InvalidArgument("malformed quantity " + quoted +
                                       ": unknown suffix \"" +
                                       std::string(suffix) + "\"");
    }
    num = (__int128)1000 << shift;
  } else if ((suffix[0] == 'e' || suffix[0] == 'E') && suffix.size() > 1) {
    size_t j = 1;
    bool eneg = false;
    if (suffix[j] == '+' || suffix[j] == '-') eneg = suffix[j++] == '-';
    if (j >= suffix.size()) {
      return Status::InvalidArgument("malformed quantity " + quoted);
    }
    int exp = 0;
    for (; j < suffix.size(); ++j) {
      if (!std::isdigit(static_cast<unsigned char>(suffix[j])) || exp > 30) {
        return Status::InvalidArgument("malformed quantity " + quoted);
      }
      exp = exp * 10 + (suffix[j] - '0');
    }
    if (exp > 30) {  // 10^-128 once wrapped the divisor to 0 (SIGFPE).
      return Status::InvalidArgument("quantity " + quoted +
                                     ": exponent out of range (at most 30)");
    }
    for (int k = 0; k < exp; ++k) {
      if (eneg) {
        den *= 10;
      } else if (!MulChecked(&num, 10)) {
        return Status::InvalidArgument("quantity " + quoted + " is too large");
      }
    }
  } else {
    return Status::InvalidArgument("malformed quantity " + quoted +
                                   ": unknown suffix \"" + std::string(suffix) +
                                   "\"");
  }
  for (int k = 0; k < frac_digits; ++k) {
    if (!MulChecked(&den, 10)) {
      return Status::InvalidArgument("quantity " + quoted +
                                     " has too many decimal places");
    }
  }
  __int128 v = mantissa;
  if (!MulChecked(&v, num)) {
    return Status::InvalidArgument("quantity " + quoted + " is too large");
  }
  v = (v + den - 1) / den;  // Round up sub-milli precision.
  if (v > kMax)
    return Status::InvalidArgument("quantity " + quoted + " is too large");
  int64_t m = static_cast<int64_t>(v);
  return Quantity::FromMilli(neg ? -m : m);
}

std::string Quantity::ToString() const {
  int64_t m = milli_;
  if (m % 1000 != 0) return std::to_string(m) + "m";
  int64_t u = m / 1000;
  static const char* kBin[] = {"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
  if (u != 0 && u % 1024 == 0) {
    int k = -1;
    while (u != 0 && u % 1024 == 0 && k < 5) {
      u /= 1024;
      ++k;
    }
    return std::to_string(u) + kBin[k];
  }
  return std::to_string(u);
}

bool Quantity::CheckedAdd(Quantity a, Quantity b, Quantity* out) {
  int64_t r;
  if (__builtin_add_overflow(a.milli_, b.milli_, &r)) return false;
  *out = Quantity(r);
  return true;
}

}  // namespace allot
