// Traces for `allot simulate`: jobs to replay, read from CSV files.
//
// Three formats (docs/simulate.md has the columns and the mapping):
//   philly   Microsoft Philly (timestamp,duration,num_gpus,gpu_time,cluster):
//            tenant = the VC hash; rows are sorted by submit time here.
//   alibaba  Alibaba cluster-trace-gpu-v2023 openb_pod_list_*.csv: tenant =
//            the qos column (or one tenant, see AlibabaTenants); a
//            fractional GPU (gpu_milli < 1000) is rounded up to a whole one.
//   allot    Allot's own CSV with a header naming its columns.
// and a synthetic generator for benchmarks.
//
// A malformed row never stops a reader: it is skipped and recorded as a
// TraceIssue with its 1-based line number (the caller decides whether issues
// are fatal, `--strict`). Only an unreadable file is an error.
//
// Jobs come out sorted by (submit time, line), so a replay is deterministic.
// Thread-safety: pure functions apart from reading the file.
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

#include "core/status.h"

namespace allot::sim {

// One job of a trace.
struct TraceJob {
  int64_t submit_ms = 0;    // From the trace's origin (>= 0 after reading).
  int64_t duration_ms = 0;  // Run time once admitted, uninterrupted.
  std::string tenant;       // Namespace.
  std::string queue;        // LocalQueue name; empty: the tenant's name.
  std::string priority;     // Integer or WorkloadPriorityClass; empty: 0.
  // Pods and per-pod devices. pods == 0: "split me": `gpus` is the job's
  // total and the simulator splits it over pods that fit the nodes (see
  // simulator.h).
  int32_t pods = 1;
  int32_t gpus = 0;         // Per pod (or the total when pods == 0).
  std::string mig_profile;  // Non-empty: `gpus` counts slices of it.
  std::string type = "batch";
  bool preemptible = false;  // May run on parked capacity (docs/parking.md).
  std::string name;  // Optional; the simulator names jobs j<index> otherwise.
  int64_t line = 0;  // 1-based line in the trace file.
  int32_t TotalGpus() const { return pods == 0 ? gpus : pods * gpus; }
};

struct TraceIssue {
  int64_t line = 0;  // 1-based; 0 when not tied to a line.
  std::string message;
};

struct Trace {
  std::string format;  // "philly", "alibaba", "allot", "synthetic", ...
  std::string source;  // File name (for messages).
  std::vector<TraceJob> jobs;
  std::vector<TraceIssue> issues;  // Skipped rows, in line order.
  int64_t rows = 0;                // Data rows seen (blank lines excluded).
  // Rows that were read but changed or left out on purpose (not errors):
  // e.g. "alibaba: 3078 fractional GPUs rounded up to 1".
  std::vector<std::string> notes;
};

// How Alibaba rows map to tenants.
enum class AlibabaTenants { kQos, kSingle };

Result<Trace> ReadPhillyTrace(std::istream& in, const std::string& source);
Result<Trace> ReadAlibabaTrace(std::istream& in, const std::string& source,
                               AlibabaTenants tenants);
Result<Trace> ReadAllotTrace(std::istream& in, const std::string& source);

// "philly:PATH", "alibaba:PATH", "alibaba-single:PATH", "csv:PATH" (Allot's
// format), or "synthetic:JOBS[:SEED[:GPUS[:TENANTS]]]". A missing file is
// NotFound; an unknown prefix InvalidArgument.
Result<Trace> LoadTrace(const std::string& spec);

// A synthetic trace for benchmarks: `jobs` jobs over `tenants` tenants
// (t00, t01, ...), Poisson arrivals whose mean rate keeps a `gpus`-GPU
// cluster about 90% busy, Philly-like sizes (mostly 1 GPU, a few 8x8) and
// log-uniform durations (1 min .. 1 day). Deterministic in `seed`.
Trace SyntheticTrace(int64_t jobs, uint64_t seed, int64_t gpus,
                     int32_t tenants);

// Parses a duration: "90" (seconds), "1.5h", "30m", "45s", "2d", "100ms".
Result<int64_t> ParseDurationMs(const std::string& text);

}  // namespace allot::sim
