// The idle-period model (see idle_model.h).
#include "sim/idle_model.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "core/names.h"
#include "sim/trace.h"

namespace allot::sim {
namespace {

// A job's own stream: splitmix64 of (seed, index, salt), so jobs do not
// share a generator and adding one changes no other.
uint64_t Mix(uint64_t seed, int64_t index, uint64_t salt) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ULL + uint64_t(index) * 0xBF58476D1CE4E5B9ULL + salt;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// A uniform draw in [0, 1) from 53 random bits.
double Unit(uint64_t bits) { return double(bits >> 11) * 0x1.0p-53; }

}  // namespace

int64_t ExponentialMs(std::mt19937_64& g, int64_t mean_ms) {
  return std::max<int64_t>(1, std::llround(-std::log(1 - Unit(g())) * double(mean_ms)));
}

Result<IdleModel> ParseIdleModel(const std::string& spec) {
  IdleModel m;
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("--idle-model \"" + spec + "\": " + why +
                                   " (expected busy=D,idle=D[,long=D], e.g. busy=2h,idle=6h)");
  };
  for (const std::string& item : core::SplitCommaList(spec)) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos) return bad("\"" + item + "\" is not KEY=DURATION");
    const std::string key = item.substr(0, eq);
    Result<int64_t> d = ParseDurationMs(item.substr(eq + 1));
    if (!d.ok()) return bad(key + ": " + d.status().message());
    if (key == "busy") {
      m.busy_mean_ms = *d;
    } else if (key == "idle") {
      m.idle_mean_ms = *d;
    } else if (key == "long") {
      m.long_ms = *d;
    } else {
      return bad("unknown key \"" + key + "\"");
    }
  }
  if (m.busy_mean_ms <= 0 || m.idle_mean_ms <= 0) {
    return bad("busy and idle must both be given and positive");
  }
  return m;
}

bool LongRunning(const IdleModel& m, const std::string& type, int64_t duration_ms) {
  if (!m.enabled()) return false;
  return type == "notebook" || type == "inference" ||
         (m.long_ms > 0 && duration_ms >= m.long_ms);
}

std::vector<std::pair<int64_t, int64_t>> IdlePeriods(const IdleModel& m, uint64_t seed,
                                                     int64_t index, int64_t duration_ms) {
  std::vector<std::pair<int64_t, int64_t>> out;
  if (!m.enabled()) return out;
  std::mt19937_64 g(Mix(seed, index, 1));
  int64_t t = ExponentialMs(g, m.busy_mean_ms);  // Busy first.
  while (t < duration_ms) {
    const int64_t end = std::min(duration_ms, t + ExponentialMs(g, m.idle_mean_ms));
    out.emplace_back(t, end);
    t = end + ExponentialMs(g, m.busy_mean_ms);
  }
  return out;
}

bool DrawnPreemptible(double fraction, uint64_t seed, int64_t index) {
  if (fraction <= 0) return false;
  return Unit(Mix(seed, index, 2)) < fraction;
}

}  // namespace allot::sim
