// Durations in the syntax of Kubernetes and Go (time.ParseDuration's
// whole-unit subset): "90s", "45m", "4h", "1h30m", "2h0m0s". Used by
// annotations that take a duration (allot.dev/max-run-duration).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace allot::core {

// Whole seconds; 0 is "0s". Errors say what was expected.
Result<int64_t> ParseDurationSeconds(std::string_view text);
// The shortest text that parses back to `seconds`: "4h", "1h30m", "90s" -> "1m30s".
std::string FormatDurationSeconds(int64_t seconds);

}  // namespace allot::core
