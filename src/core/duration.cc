#include "core/duration.h"

namespace allot::core {

Result<int64_t> ParseDurationSeconds(std::string_view text) {
  auto bad = [&] {
    return Status::InvalidArgument("malformed duration \"" + std::string(text) +
                                   "\" (expected whole hours, minutes and seconds, "
                                   "e.g. 90s, 45m, 4h, 1h30m)");
  };
  if (text.empty()) return bad();
  int64_t total = 0;
  size_t i = 0;
  int last_unit = 4;  // Units must come in order h, m, s, each once.
  while (i < text.size()) {
    int64_t n = 0;
    size_t digits = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      if (n > 100000000000LL) return bad();
      n = n * 10 + (text[i] - '0');
      ++i;
      ++digits;
    }
    if (digits == 0 || i == text.size()) return bad();
    int unit = 0;
    int64_t mult = 0;
    switch (text[i]) {
      case 'h': unit = 3; mult = 3600; break;
      case 'm': unit = 2; mult = 60; break;
      case 's': unit = 1; mult = 1; break;
      default: return bad();
    }
    if (unit >= last_unit) return bad();
    last_unit = unit;
    ++i;
    total += n * mult;
    if (total > 100000000000LL) return bad();
  }
  return total;
}

std::string FormatDurationSeconds(int64_t seconds) {
  if (seconds == 0) return "0s";
  std::string out;
  if (seconds >= 3600) out += std::to_string(seconds / 3600) + "h";
  if (seconds % 3600 >= 60) out += std::to_string(seconds % 3600 / 60) + "m";
  if (seconds % 60 != 0) out += std::to_string(seconds % 60) + "s";
  return out;
}

}  // namespace allot::core
