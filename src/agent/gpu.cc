// Simulated GPUs: OpenSimulated parses "COUNTxPRODUCT-<N>GB[,...]" and
// returns a GpuSource whose devices are plainly fake (simulated = true,
// UUIDs "GPU-SIM-...", Describe() "simulated (...)").
//
// Spec grammar: parts separated by ',' (spaces around a part are ignored);
// a part is COUNT 'x' MODEL with COUNT a decimal 1..64 and MODEL
// PRODUCT '-' N "GB", PRODUCT made of [A-Za-z0-9._-] and N 1..4096 GiB. At
// most 256 GPUs in all. Errors are InvalidArgument naming the bad part.
//
// UUIDs: "GPU-SIM-" + 32 hex digits (8-4-4-4-12 like NVML's) of two FNV-1a
// hashes of "<node_name>/<index>", so a node keeps its UUIDs across
// restarts and two nodes never share one (unless they share a name).
//
// Telemetry is synthetic and deterministic: each Sample() is a "tick"; the
// jitter of a GPU in a tick is a hash of (uuid, tick). A GPU whose UUID is
// in the SetBusy() set reads 85-100 % utilization, 60-90 % of its memory
// used, 300-700 W and 62-77 C; an idle one 0-2 %, 0 bytes, 60-74 W, 30-37
// C. Health comes from HealthLimits only (no simulated faults). The agent
// marks busy the GPUs of pods that use CPU (Agent::RefreshActivity), so
// the readings follow what runs.
#include "agent/gpu.h"

#include <cinttypes>
#include <cstdio>
#include <mutex>

#include "agent/gpu_internal.h"

namespace allot::agent {
namespace {

constexpr int kMaxPerPart = 64;
constexpr int kMaxTotal = 256;
constexpr int64_t kMaxGb = 4096;

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

bool IsDigits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// Decimal digits to a value, or -1 when longer than 9 digits (overflow).
int64_t ParseSmall(const std::string& digits) {
  if (digits.size() > 9) return -1;
  int64_t v = 0;
  for (char c : digits) v = v * 10 + (c - '0');
  return v;
}

struct Part {
  int count = 0;
  std::string model;  // "H100-80GB"
  int64_t gb = 0;
};

Result<Part> ParsePart(const std::string& raw) {
  const std::string part = Trim(raw);
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("bad GPU spec part \"" + part +
                                   "\": " + why +
                                   " (want COUNTxPRODUCT-<N>GB, e.g. "
                                   "8xH100-80GB)");
  };
  if (part.empty()) return bad("empty");
  size_t x = part.find('x');
  if (x == std::string::npos) return bad("no 'x' between count and model");
  std::string count_text = part.substr(0, x);
  if (!IsDigits(count_text)) return bad("count is not a number");
  int64_t count = ParseSmall(count_text);
  if (count < 1 || count > kMaxPerPart) {
    return bad("count must be 1.." + std::to_string(kMaxPerPart));
  }
  Part out;
  out.count = static_cast<int>(count);
  out.model = part.substr(x + 1);
  size_t dash = out.model.rfind('-');
  if (dash == std::string::npos || dash == 0) {
    return bad("model must be PRODUCT-<N>GB");
  }
  for (size_t i = 0; i < dash; ++i) {
    char c = out.model[i];
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
              (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok) return bad("product has a character outside [A-Za-z0-9._-]");
  }
  std::string mem = out.model.substr(dash + 1);
  if (mem.size() < 3 || mem.compare(mem.size() - 2, 2, "GB") != 0 ||
      !IsDigits(mem.substr(0, mem.size() - 2))) {
    return bad("memory must be <N>GB");
  }
  out.gb = ParseSmall(mem.substr(0, mem.size() - 2));
  if (out.gb < 1 || out.gb > kMaxGb) {
    return bad("memory must be 1.." + std::to_string(kMaxGb) + " GB");
  }
  return out;
}

std::string SimUuid(const std::string& node_name, int index) {
  std::string key = node_name + "/" + std::to_string(index);
  uint64_t a = internal::Fnv1a(key);
  uint64_t b = internal::Fnv1a(key, a ^ 0x9e3779b97f4a7c15ull);
  char buf[64];
  std::snprintf(buf, sizeof(buf),
                "GPU-SIM-%08" PRIx64 "-%04" PRIx64 "-%04" PRIx64 "-%04" PRIx64
                "-%012" PRIx64,
                a >> 32, (a >> 16) & 0xffff, a & 0xffff, b >> 48,
                b & uint64_t{0xffffffffffff});
  return buf;
}

class SimulatedSource : public GpuSource {
 public:
  SimulatedSource(std::string spec, std::vector<GpuInfo> gpus,
                  HealthLimits limits)
      : spec_(std::move(spec)), gpus_(std::move(gpus)), limits_(limits) {}

  std::string Describe() const override { return "simulated (" + spec_ + ")"; }
  bool simulated() const override { return true; }
  const std::vector<GpuInfo>& Gpus() const override { return gpus_; }

  void SetBusy(const std::set<std::string>& uuids) override {
    std::lock_guard<std::mutex> lock(mu_);
    busy_ = uuids;
  }

  Result<std::vector<GpuSample>> Sample() override {
    std::lock_guard<std::mutex> lock(mu_);
    ++tick_;
    std::vector<GpuSample> out;
    out.reserve(gpus_.size());
    for (const GpuInfo& g : gpus_) {
      uint64_t h = internal::Fnv1a(g.uuid + "#" + std::to_string(tick_));
      auto jitter = [&h](int n) {  // 0..n-1, a fresh part of the hash each call
        int v = static_cast<int>(h % static_cast<uint64_t>(n));
        h /= static_cast<uint64_t>(n);
        return v;
      };
      GpuSample s;
      s.uuid = g.uuid;
      if (busy_.count(g.uuid) > 0) {
        s.utilization_pct = 85 + jitter(16);
        s.memory_used_bytes = g.memory_bytes / 100 * (60 + jitter(31));
        s.power_watts = 300 + 24 * (s.utilization_pct - 85) + jitter(41);
        s.temperature_c = 62 + jitter(16);
      } else {
        s.utilization_pct = jitter(3);
        s.memory_used_bytes = 0;
        s.power_watts = 60 + jitter(15);
        s.temperature_c = 30 + jitter(8);
      }
      internal::ApplyLimits(limits_, &s);
      out.push_back(std::move(s));
    }
    return out;
  }

 private:
  const std::string spec_;  // Normalized ("8xH100-80GB,2xA100-40GB").
  const std::vector<GpuInfo> gpus_;
  const HealthLimits limits_;
  std::mutex mu_;
  std::set<std::string> busy_;  // Guarded by mu_.
  uint64_t tick_ = 0;           // Guarded by mu_.
};

}  // namespace

Result<std::unique_ptr<GpuSource>> OpenSimulated(const std::string& spec,
                                                 const std::string& node_name,
                                                 HealthLimits limits) {
  if (Trim(spec).empty()) {
    return Status::InvalidArgument(
        "empty GPU spec (want COUNTxPRODUCT-<N>GB[,...], e.g. 8xH100-80GB)");
  }
  std::vector<Part> parts;
  int total = 0;
  size_t start = 0;
  while (true) {
    size_t comma = spec.find(',', start);
    std::string raw = spec.substr(
        start, comma == std::string::npos ? std::string::npos : comma - start);
    Result<Part> part = ParsePart(raw);
    if (!part.ok()) return part.status();
    total += part->count;
    if (total > kMaxTotal) {
      return Status::InvalidArgument(
          "GPU spec \"" + spec + "\" has more than " +
          std::to_string(kMaxTotal) + " GPUs (at part \"" + Trim(raw) + "\")");
    }
    parts.push_back(std::move(part).value());
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::vector<GpuInfo> gpus;
  std::string normalized;
  for (const Part& p : parts) {
    if (!normalized.empty()) normalized += ",";
    normalized += std::to_string(p.count) + "x" + p.model;
    for (int i = 0; i < p.count; ++i) {
      GpuInfo g;
      g.index = static_cast<int>(gpus.size());
      g.uuid = SimUuid(node_name, g.index);
      g.product = p.model;
      g.memory_bytes = p.gb << 30;
      g.simulated = true;
      gpus.push_back(std::move(g));
    }
  }
  return std::unique_ptr<GpuSource>(
      new SimulatedSource(normalized, std::move(gpus), limits));
}

}  // namespace allot::agent
