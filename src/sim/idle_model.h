// The idle-period model of `allot simulate` (docs/simulate.md, "Parking"):
// which jobs are long-running services that go idle, when they are idle,
// and which jobs say they are preemptible.
//
// Public GPU traces record when a job ran, not how busy it was, so idleness
// is a model, never read from a trace: a long-running job (type notebook or
// inference, or one running at least `long_ms`) alternates busy and idle
// periods whose lengths are exponentially distributed with the given means,
// starting busy, over its life (the time it is admitted, parked or not).
// Every job's periods and its preemptible mark come from its own generator
// seeded by (seed, job index), so they are the same under every policy and
// a comparison sees the same idleness.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace allot::sim {

struct IdleModel {
  int64_t busy_mean_ms = 0;  // 0: no job is ever idle (the model is off).
  int64_t idle_mean_ms = 0;
  // Jobs of any type running at least this long are long-running too;
  // 0: only notebooks and inference services.
  int64_t long_ms = 0;
  bool enabled() const { return busy_mean_ms > 0; }
};

// "busy=2h,idle=6h[,long=12h]" (durations as --window takes them).
Result<IdleModel> ParseIdleModel(const std::string& spec);

// Whether a job of `type` that runs `duration_ms` goes idle at times.
bool LongRunning(const IdleModel& m, const std::string& type, int64_t duration_ms);

// Offsets into the job's life [0, duration_ms) when it is idle: sorted,
// disjoint, non-empty [start, end) ranges; empty when the model is off.
// Deterministic in (m, seed, index, duration_ms).
std::vector<std::pair<int64_t, int64_t>> IdlePeriods(const IdleModel& m, uint64_t seed,
                                                     int64_t index, int64_t duration_ms);

// An exponentially distributed duration of mean `mean_ms` (at least 1 ms)
// from `g`; the simulator's failures and repairs draw the same way.
int64_t ExponentialMs(std::mt19937_64& g, int64_t mean_ms);

// Whether job `index` is one of the `fraction` (0..1) of jobs marked
// preemptible; deterministic in (seed, index).
bool DrawnPreemptible(double fraction, uint64_t seed, int64_t index);

}  // namespace allot::sim
