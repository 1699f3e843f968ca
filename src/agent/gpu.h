// GPU discovery and telemetry for the node agent.
//
// Two sources behind one interface:
// - NVML, loaded at run time with dlopen("libnvidia-ml.so.1"): no link-time
//   dependency, so the same binary runs where no NVIDIA driver exists
//   (OpenNvml then fails with a clear FailedPrecondition);
// - simulated devices from a spec like "8xH100-80GB,2xA100-40GB", with
//   stable fake UUIDs and synthetic telemetry that follows what runs on
//   them. Every simulated GPU says so (GpuInfo::simulated, Describe()).
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/status.h"

namespace allot::agent {

// One MIG instance of a MIG-enabled GPU.
struct MigInstance {
  std::string uuid;     // "MIG-..." as NVML gives it.
  std::string profile;  // "1g.10gb", "3g.40gb", ...: the resource is
                        // nvidia.com/mig-<profile>.
  int gpu_instance = -1;      // NVML's GPU and compute instance ids (-1:
  int compute_instance = -1;  // unknown): which /dev/nvidia-caps it needs.
  bool operator==(const MigInstance&) const = default;
};

struct GpuInfo {
  int index = 0;              // NVML index (0-based).
  int minor = -1;             // Its /dev/nvidiaN (-1: unknown, simulated).
  std::string uuid;           // "GPU-..." (simulated: "GPU-SIM-...").
  std::string product;        // "NVIDIA H100 80GB HBM3", "H100-80GB" (sim).
  int64_t memory_bytes = 0;   // Total framebuffer.
  bool simulated = false;
  bool mig_enabled = false;   // Current MIG mode.
  std::vector<MigInstance> mig;  // Instances when mig_enabled.
  bool operator==(const GpuInfo&) const = default;
};

// One reading of one GPU.
struct GpuSample {
  std::string uuid;
  int temperature_c = 0;
  double power_watts = 0;
  int utilization_pct = 0;       // 0-100.
  int64_t memory_used_bytes = 0;
  int64_t ecc_dbe_volatile = 0;  // Double-bit ECC errors since boot.
  int64_t last_xid = 0;          // Most recent XID event (0: none seen).
  bool healthy = true;
  std::string health_reason;     // Why not healthy ("XID 79", "ECC ...",
                                 // "temperature 95 C >= 90 C").
};

class GpuSource {
 public:
  virtual ~GpuSource() = default;
  // "NVML (driver 550.54.15, 8 GPUs)" or "simulated (8xH100-80GB)".
  virtual std::string Describe() const = 0;
  virtual bool simulated() const = 0;
  virtual const std::vector<GpuInfo>& Gpus() const = 0;
  // One sample per GPU in Gpus() order.
  virtual Result<std::vector<GpuSample>> Sample() = 0;
  // The GPU or MIG UUIDs that pods currently hold. Simulated sources derive
  // utilization, memory, power and temperature from it; NVML ignores it.
  virtual void SetBusy(const std::set<std::string>& uuids) { (void)uuids; }
};

// Health thresholds applied by both sources.
struct HealthLimits {
  int max_temperature_c = 90;  // At or above: unhealthy.
};

// Loads `library` with dlopen and enumerates the GPUs. FailedPrecondition
// naming the library and dlerror() when it is missing, or NVML's error
// string when nvmlInit fails.
Result<std::unique_ptr<GpuSource>> OpenNvml(
    const std::string& library = "libnvidia-ml.so.1", HealthLimits limits = {});

// Parses "COUNTxMODEL[,COUNTxMODEL...]", e.g. "8xH100-80GB,2xA100-40GB".
// MODEL is PRODUCT-MEMORY with MEMORY in GB ("80GB"); COUNT 1..64; at most
// 256 GPUs in all. UUIDs are derived from `node_name` and the index, so a
// node keeps its UUIDs across restarts. InvalidArgument names the bad part.
Result<std::unique_ptr<GpuSource>> OpenSimulated(const std::string& spec,
                                                 const std::string& node_name,
                                                 HealthLimits limits = {});

}  // namespace allot::agent
