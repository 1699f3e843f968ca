// NVML GpuSource: libnvidia-ml is loaded with dlopen at run time and every
// function is looked up with dlsym (signatures in nvml_api.h), so the agent
// builds and runs on machines without the NVIDIA driver.
//
// Open: dlopen(library) (FailedPrecondition with dlerror() when it fails),
// dlsym of the required functions (init, shutdown, error string, count,
// handle by index, UUID, name, memory info; FailedPrecondition naming a
// missing one), nvmlInit_v2 (FailedPrecondition with nvmlErrorString), then
// the device list. Optional functions (temperature, power, utilization,
// MIG, ECC, events, driver version) may be missing: that reading stays 0.
//
// MIG: when nvmlDeviceGetMigMode reports current mode enabled, the slots
// 0..nvmlDeviceGetMaxMigDeviceCount-1 are probed with
// nvmlDeviceGetMigDeviceHandleByIndex (empty slots answer NOT_FOUND). The
// profile comes from the MIG device's name, which NVML gives as
// "<parent name> MIG <profile>" (e.g. "NVIDIA H100 80GB HBM3 MIG 1g.10gb");
// when the name has no " MIG " part the profile falls back to the memory
// alone, "<GiB rounded up>gb" (no slice count: 3g.20gb and 4g.20gb have the
// same memory and cannot be told apart without the GPU instance profile API).
// The MIG list is read once at Open: re-partitioning needs an agent restart.
//
// Sample: per GPU temperature, power (mW -> W), utilization (NOT_SUPPORTED
// on MIG-enabled GPUs: reads 0), memory used and volatile uncorrected
// (double-bit) ECC errors. Health, first reason wins: a critical XID seen
// since Open (sticky; the application XIDs 13, 31, 43, 45, 68, 109 are
// recorded in last_xid but do not make the GPU unhealthy, as in NVIDIA's
// device plugin), GPU_IS_LOST from any query, ECC double-bit errors > 0,
// then the temperature limit.
//
// XID: at Open an event set is created and every GPU registered for
// nvmlEventTypeXidCriticalError (GPUs that answer NOT_SUPPORTED are
// skipped). Sample drains the set without blocking (nvmlEventSetWait_v2
// with timeout 0), so XIDs are seen at the sampling rate; no extra thread.
//
// Thread-safety: Sample() is serialized by a mutex; Gpus() is immutable.
#include <dlfcn.h>

#include <mutex>

#include "agent/gpu.h"
#include "agent/gpu_internal.h"
#include "agent/nvml_api.h"

namespace allot::agent {
namespace {

struct Api {
  nvml::InitFn init = nullptr;
  nvml::ShutdownFn shutdown = nullptr;
  nvml::ErrorStringFn error_string = nullptr;
  nvml::DriverVersionFn driver_version = nullptr;
  nvml::CountFn count = nullptr;
  nvml::HandleByIndexFn handle_by_index = nullptr;
  nvml::StringFn uuid = nullptr;
  nvml::StringFn name = nullptr;
  nvml::MemoryFn memory = nullptr;
  nvml::TemperatureFn temperature = nullptr;
  nvml::PowerFn power = nullptr;
  nvml::UtilizationFn utilization = nullptr;
  nvml::MigModeFn mig_mode = nullptr;
  nvml::MaxMigCountFn max_mig_count = nullptr;
  nvml::MigHandleFn mig_handle = nullptr;
  nvml::UintFn minor_number = nullptr;
  nvml::UintFn gpu_instance_id = nullptr;
  nvml::UintFn compute_instance_id = nullptr;
  nvml::TotalEccFn total_ecc = nullptr;
  nvml::EventSetCreateFn event_set_create = nullptr;
  nvml::RegisterEventsFn register_events = nullptr;
  nvml::EventSetWaitFn event_set_wait = nullptr;
  nvml::EventSetFreeFn event_set_free = nullptr;
};

bool IsApplicationXid(unsigned long long xid) {
  switch (xid) {
    case 13:
    case 31:
    case 43:
    case 45:
    case 68:
    case 109:
      return true;
    default:
      return false;
  }
}

class NvmlSource : public GpuSource {
 public:
  NvmlSource(void* dl, Api api, HealthLimits limits)
      : dl_(dl), api_(api), limits_(limits) {}
  ~NvmlSource() override {
    if (events_ != nullptr && api_.event_set_free) api_.event_set_free(events_);
    api_.shutdown();
    dlclose(dl_);
  }
  NvmlSource(const NvmlSource&) = delete;
  NvmlSource& operator=(const NvmlSource&) = delete;

  std::string Error(nvml::Return r) const {
    const char* s = api_.error_string(r);
    return (s != nullptr ? std::string(s) : "NVML error") + " (" +
           std::to_string(r) + ")";
  }

  // Reads the device list; errors name the GPU index and the NVML error.
  Status Enumerate() {
    if (api_.driver_version) {
      char buf[nvml::kDriverVersionBuffer] = {};
      if (api_.driver_version(buf, sizeof(buf)) == nvml::kSuccess) {
        driver_ = buf;
      }
    }
    unsigned int n = 0;
    nvml::Return r = api_.count(&n);
    if (r != nvml::kSuccess) {
      return Status::FailedPrecondition("nvmlDeviceGetCount: " + Error(r));
    }
    for (unsigned int i = 0; i < n; ++i) {
      nvml::Device d = nullptr;
      r = api_.handle_by_index(i, &d);
      if (r != nvml::kSuccess) {
        return Status::FailedPrecondition("nvmlDeviceGetHandleByIndex(" +
                                          std::to_string(i) + "): " + Error(r));
      }
      GpuInfo g;
      g.index = static_cast<int>(i);
      Result<std::string> uuid = GetString(api_.uuid, d, "UUID", i);
      if (!uuid.ok()) return uuid.status();
      g.uuid = *uuid;
      Result<std::string> name = GetString(api_.name, d, "Name", i);
      if (!name.ok()) return name.status();
      g.product = *name;
      nvml::Memory mem{};
      r = api_.memory(d, &mem);
      if (r != nvml::kSuccess) {
        return Status::FailedPrecondition("nvmlDeviceGetMemoryInfo(" +
                                          std::to_string(i) + "): " + Error(r));
      }
      g.memory_bytes = static_cast<int64_t>(mem.total);
      g.minor = Uint(api_.minor_number, d);
      ReadMig(d, &g);
      devices_.push_back(d);
      gpus_.push_back(std::move(g));
    }
    RegisterXid();
    return Status::Ok();
  }

  std::string Describe() const override {
    return "NVML (driver " + (driver_.empty() ? "unknown" : driver_) + ", " +
           std::to_string(gpus_.size()) + " GPUs)";
  }
  bool simulated() const override { return false; }
  const std::vector<GpuInfo>& Gpus() const override { return gpus_; }

  Result<std::vector<GpuSample>> Sample() override {
    std::lock_guard<std::mutex> lock(mu_);
    DrainXid();
    std::vector<GpuSample> out;
    out.reserve(gpus_.size());
    for (size_t i = 0; i < gpus_.size(); ++i) {
      out.push_back(SampleOne(i));
    }
    return out;
  }

 private:
  Result<std::string> GetString(nvml::StringFn fn, nvml::Device d,
                                const char* what, unsigned int i) const {
    char buf[nvml::kDeviceUuidBuffer > nvml::kDeviceNameBuffer
                 ? nvml::kDeviceUuidBuffer
                 : nvml::kDeviceNameBuffer] = {};
    nvml::Return r = fn(d, buf, sizeof(buf));
    if (r != nvml::kSuccess) {
      return Status::FailedPrecondition(std::string("nvmlDeviceGet") + what +
                                        "(" + std::to_string(i) +
                                        "): " + Error(r));
    }
    buf[sizeof(buf) - 1] = '\0';
    return std::string(buf);
  }

  // fn(d) where the library has fn and it answers, else -1.
  static int Uint(nvml::UintFn fn, nvml::Device d) {
    unsigned int v = 0;
    if (fn == nullptr || fn(d, &v) != nvml::kSuccess) return -1;
    return static_cast<int>(v);
  }

  void ReadMig(nvml::Device d, GpuInfo* g) {
    if (!api_.mig_mode || !api_.max_mig_count || !api_.mig_handle) return;
    unsigned int current = 0, pending = 0;
    if (api_.mig_mode(d, &current, &pending) != nvml::kSuccess ||
        current != nvml::kMigEnabled) {
      return;
    }
    g->mig_enabled = true;
    unsigned int slots = 0;
    if (api_.max_mig_count(d, &slots) != nvml::kSuccess) return;
    for (unsigned int s = 0; s < slots; ++s) {
      nvml::Device m = nullptr;
      if (api_.mig_handle(d, s, &m) != nvml::kSuccess) continue;  // empty slot
      Result<std::string> uuid = GetString(api_.uuid, m, "UUID", s);
      if (!uuid.ok()) continue;
      MigInstance mi;
      mi.uuid = *uuid;
      mi.gpu_instance = Uint(api_.gpu_instance_id, m);
      mi.compute_instance = Uint(api_.compute_instance_id, m);
      Result<std::string> name = GetString(api_.name, m, "Name", s);
      size_t at = name.ok() ? name->rfind(" MIG ") : std::string::npos;
      if (at != std::string::npos) {
        mi.profile = name->substr(at + 5);
      } else {
        nvml::Memory mem{};
        if (api_.memory(m, &mem) == nvml::kSuccess) {
          // Ceil of GiB matches NVIDIA's names (9856 MiB -> 10gb,
          // 40192 MiB -> 40gb, 4864 MiB -> 5gb).
          mi.profile =
              std::to_string((mem.total + (1ull << 30) - 1) >> 30) + "gb";
        }
      }
      g->mig.push_back(std::move(mi));
    }
  }

  void RegisterXid() {
    if (!api_.event_set_create || !api_.register_events ||
        !api_.event_set_wait || !api_.event_set_free) {
      return;
    }
    if (api_.event_set_create(&events_) != nvml::kSuccess) {
      events_ = nullptr;
      return;
    }
    for (nvml::Device d : devices_) {
      // NOT_SUPPORTED (e.g. older or consumer GPUs): no XIDs for that GPU.
      (void)api_.register_events(d, nvml::kEventXidCritical, events_);
    }
    xid_.assign(devices_.size(), 0);
    xid_fatal_.assign(devices_.size(), 0);
  }

  void DrainXid() {
    if (events_ == nullptr) return;
    for (int n = 0; n < 1000; ++n) {  // Bounded: a storm cannot stall Sample.
      nvml::EventData e{};
      if (api_.event_set_wait(events_, &e, 0) != nvml::kSuccess) return;
      if ((e.event_type & nvml::kEventXidCritical) == 0) continue;
      for (size_t i = 0; i < devices_.size(); ++i) {
        if (devices_[i] != e.device) continue;
        xid_[i] = static_cast<int64_t>(e.event_data);
        if (!IsApplicationXid(e.event_data) && xid_fatal_[i] == 0) {
          xid_fatal_[i] = static_cast<int64_t>(e.event_data);
        }
      }
    }
  }

  GpuSample SampleOne(size_t i) {
    nvml::Device d = devices_[i];
    GpuSample s;
    s.uuid = gpus_[i].uuid;
    bool lost = false;
    auto check = [&](nvml::Return r) {
      if (r == nvml::kErrorGpuIsLost) lost = true;
      return r == nvml::kSuccess;
    };
    if (!xid_.empty()) {
      s.last_xid = xid_[i];
      if (xid_fatal_[i] != 0) {
        internal::MarkUnhealthy(&s, "XID " + std::to_string(xid_fatal_[i]));
      }
    }
    unsigned int v = 0;
    if (api_.temperature &&
        check(api_.temperature(d, nvml::kTemperatureGpu, &v))) {
      s.temperature_c = static_cast<int>(v);
    }
    if (api_.power && check(api_.power(d, &v))) s.power_watts = v / 1000.0;
    nvml::Utilization u{};
    if (api_.utilization && check(api_.utilization(d, &u))) {
      s.utilization_pct = static_cast<int>(u.gpu);
    }
    nvml::Memory mem{};
    if (check(api_.memory(d, &mem))) {
      s.memory_used_bytes = static_cast<int64_t>(mem.used);
    }
    unsigned long long ecc = 0;
    if (api_.total_ecc && check(api_.total_ecc(d, nvml::kMemoryErrorUncorrected,
                                               nvml::kVolatileEcc, &ecc))) {
      s.ecc_dbe_volatile = static_cast<int64_t>(ecc);
    }
    if (lost) internal::MarkUnhealthy(&s, "GPU is lost (NVML)");
    if (s.ecc_dbe_volatile > 0) {
      internal::MarkUnhealthy(
          &s, "ECC " + std::to_string(s.ecc_dbe_volatile) +
                  " uncorrected (double-bit) errors since driver load");
    }
    internal::ApplyLimits(limits_, &s);
    return s;
  }

  void* const dl_;
  const Api api_;
  const HealthLimits limits_;
  std::string driver_;
  std::vector<GpuInfo> gpus_;
  std::vector<nvml::Device> devices_;  // Parallel to gpus_.
  nvml::EventSet events_ = nullptr;
  std::mutex mu_;
  std::vector<int64_t> xid_;  // Last XID per GPU. Guarded by mu_.
  std::vector<int64_t>
      xid_fatal_;  // First non-application XID. Guarded by mu_.
};

template <typename Fn>
void Lookup(void* dl, const char* name, Fn* fn) {
  *fn = reinterpret_cast<Fn>(dlsym(dl, name));
}

}  // namespace

Result<std::unique_ptr<GpuSource>> OpenNvml(const std::string& library,
                                            HealthLimits limits) {
  void* dl = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (dl == nullptr) {
    const char* err = dlerror();
    return Status::FailedPrecondition(
        "cannot load NVML library " + library + ": " +
        (err != nullptr ? err : "unknown dlopen error") +
        " (no NVIDIA driver on this machine? use simulated GPUs)");
  }
  Api api;
  Lookup(dl, "nvmlInit_v2", &api.init);
  Lookup(dl, "nvmlShutdown", &api.shutdown);
  Lookup(dl, "nvmlErrorString", &api.error_string);
  Lookup(dl, "nvmlDeviceGetCount_v2", &api.count);
  Lookup(dl, "nvmlDeviceGetHandleByIndex_v2", &api.handle_by_index);
  Lookup(dl, "nvmlDeviceGetUUID", &api.uuid);
  Lookup(dl, "nvmlDeviceGetName", &api.name);
  Lookup(dl, "nvmlDeviceGetMemoryInfo", &api.memory);
  const std::pair<const char*, bool> required[] = {
      {"nvmlInit_v2", api.init != nullptr},
      {"nvmlShutdown", api.shutdown != nullptr},
      {"nvmlErrorString", api.error_string != nullptr},
      {"nvmlDeviceGetCount_v2", api.count != nullptr},
      {"nvmlDeviceGetHandleByIndex_v2", api.handle_by_index != nullptr},
      {"nvmlDeviceGetUUID", api.uuid != nullptr},
      {"nvmlDeviceGetName", api.name != nullptr},
      {"nvmlDeviceGetMemoryInfo", api.memory != nullptr},
  };
  for (const auto& [name, found] : required) {
    if (!found) {
      dlclose(dl);
      return Status::FailedPrecondition("NVML library " + library +
                                        " lacks the function " + name +
                                        " (driver too old?)");
    }
  }
  Lookup(dl, "nvmlSystemGetDriverVersion", &api.driver_version);
  Lookup(dl, "nvmlDeviceGetTemperature", &api.temperature);
  Lookup(dl, "nvmlDeviceGetPowerUsage", &api.power);
  Lookup(dl, "nvmlDeviceGetUtilizationRates", &api.utilization);
  Lookup(dl, "nvmlDeviceGetMigMode", &api.mig_mode);
  Lookup(dl, "nvmlDeviceGetMaxMigDeviceCount", &api.max_mig_count);
  Lookup(dl, "nvmlDeviceGetMigDeviceHandleByIndex", &api.mig_handle);
  Lookup(dl, "nvmlDeviceGetTotalEccErrors", &api.total_ecc);
  Lookup(dl, "nvmlDeviceGetMinorNumber", &api.minor_number);
  Lookup(dl, "nvmlDeviceGetGpuInstanceId", &api.gpu_instance_id);
  Lookup(dl, "nvmlDeviceGetComputeInstanceId", &api.compute_instance_id);
  Lookup(dl, "nvmlEventSetCreate", &api.event_set_create);
  Lookup(dl, "nvmlDeviceRegisterEvents", &api.register_events);
  Lookup(dl, "nvmlEventSetWait_v2", &api.event_set_wait);
  Lookup(dl, "nvmlEventSetFree", &api.event_set_free);

  nvml::Return r = api.init();
  if (r != nvml::kSuccess) {
    const char* s = api.error_string(r);
    std::string msg = "nvmlInit_v2 in " + library +
                      " failed: " + (s != nullptr ? s : "unknown error") +
                      " (" + std::to_string(r) + ")";
    dlclose(dl);
    return Status::FailedPrecondition(msg);
  }
  // From here the source owns dl and the NVML reference (its destructor
  // shuts NVML down and closes the library).
  auto source = std::make_unique<NvmlSource>(dl, api, limits);
  Status st = source->Enumerate();
  if (!st.ok()) return st;
  return std::unique_ptr<GpuSource>(std::move(source));
}

}  // namespace allot::agent
