// Helpers shared by the GPU sources (gpu.cc, gpu_nvml.cc); not an API.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "agent/gpu.h"

namespace allot::agent::internal {

// 64-bit FNV-1a: stable across builds and platforms (std::hash is not), so
// simulated UUIDs and jitter stay the same after a restart or an upgrade.
inline uint64_t Fnv1a(std::string_view s, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// Marks `s` unhealthy when its temperature reaches the limit (keeps an
// earlier reason, e.g. an XID, since that one is the more serious).
inline void ApplyLimits(const HealthLimits& limits, GpuSample* s) {
  if (s->temperature_c < limits.max_temperature_c) return;
  if (s->healthy) {
    s->healthy = false;
    s->health_reason = "temperature " + std::to_string(s->temperature_c) +
                       " C >= " + std::to_string(limits.max_temperature_c) +
                       " C";
  }
}

// Sets `s` unhealthy with `reason` unless it already is (first reason wins).
inline void MarkUnhealthy(GpuSample* s, std::string reason) {
  if (!s->healthy) return;
  s->healthy = false;
  s->health_reason = std::move(reason);
}

}  // namespace allot::agent::internal
