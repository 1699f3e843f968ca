// A fake libnvidia-ml for the agent's tests, built as a MODULE
// (allot_fake_nvml) and loaded by OpenNvml through dlopen, so the NVML code
// path runs on machines without a GPU. Canned data:
//   GPU 0 "NVIDIA H100 80GB HBM3", MIG enabled, instances in slots 0 and 2
//         (1g.10gb named the NVML way; 3g.40gb with a bare name, so the
//         memory fallback is used), 45 C, 120 W, no ECC errors;
//   GPU 1 "NVIDIA A100-SXM4-40GB", MIG disabled, 95 C, 350 W, 77 %
//         busy, 2 volatile double-bit ECC errors, one queued XID 79.
// FAKE_NVML_INIT_FAIL=1 in the environment makes nvmlInit_v2 fail with
// NVML_ERROR_DRIVER_NOT_LOADED. State is reset by every nvmlInit_v2.
#include <cstdlib>
#include <cstring>

#include "agent/nvml_api.h"

namespace nvml = allot::agent::nvml;

struct nvml::DeviceSt {
  const char* uuid;
  const char* name;
  unsigned long long total;
  unsigned long long used;
  unsigned int temp;
  unsigned int power_mw;
  unsigned int util;  // 1000: NOT_SUPPORTED (MIG-enabled GPU).
  unsigned long long ecc;
  unsigned int mig_mode;
  unsigned int minor;  // GPUs: /dev/nvidiaN; MIG: the GPU instance id.
  unsigned int ci;     // MIG: the compute instance id.
};

namespace {

constexpr unsigned long long kGiB = 1ull << 30;
nvml::DeviceSt gpus[2] = {
    {"GPU-00000000-1111-2222-3333-444444444444", "NVIDIA H100 80GB HBM3",
     80 * kGiB, 20 * kGiB, 45, 120000, 1000, 0, nvml::kMigEnabled, 3, 0},
    {"GPU-55555555-6666-7777-8888-999999999999", "NVIDIA A100-SXM4-40GB",
     40 * kGiB, 30 * kGiB, 95, 350000, 77, 2, 0, 7, 0},
};
nvml::DeviceSt migs[2] = {
    {"MIG-aaaaaaaa-0000-0000-0000-000000000001",
     "NVIDIA H100 80GB HBM3 MIG 1g.10gb", 9856ull << 20, 0, 0, 0, 0, 0, 0, 9, 0},
    {"MIG-aaaaaaaa-0000-0000-0000-000000000002", "fake instance",
     40192ull << 20, 0, 0, 0, 0, 0, 0, 2, 1},
};
int pending_xid_events = 0;
int event_set_token = 0;

nvml::Return CopyString(const char* s, char* buf, unsigned int len) {
  if (std::strlen(s) + 1 > len) return nvml::kErrorInsufficientSize;
  std::strcpy(buf, s);
  return nvml::kSuccess;
}

bool IsMig(nvml::Device d) { return d == &migs[0] || d == &migs[1]; }

}  // namespace

extern "C" {

nvml::Return nvmlInit_v2() {
  const char* fail = std::getenv("FAKE_NVML_INIT_FAIL");
  if (fail != nullptr && std::strcmp(fail, "1") == 0) {
    return nvml::kErrorDriverNotLoaded;
  }
  pending_xid_events = 1;
  return nvml::kSuccess;
}
nvml::Return nvmlShutdown() { return nvml::kSuccess; }
const char* nvmlErrorString(nvml::Return r) {
  return r == nvml::kErrorDriverNotLoaded ? "Driver Not Loaded"
                                          : "Unknown Error";
}
nvml::Return nvmlSystemGetDriverVersion(char* buf, unsigned int len) {
  return CopyString("550.54.15-fake", buf, len);
}
nvml::Return nvmlDeviceGetCount_v2(unsigned int* n) {
  *n = 2;
  return nvml::kSuccess;
}
nvml::Return nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvml::Device* d) {
  if (i >= 2) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  *d = &gpus[i];
  return nvml::kSuccess;
}
nvml::Return nvmlDeviceGetUUID(nvml::Device d, char* buf, unsigned int len) {
  return CopyString(d->uuid, buf, len);
}
nvml::Return nvmlDeviceGetName(nvml::Device d, char* buf, unsigned int len) {
  return CopyString(d->name, buf, len);
}
nvml::Return nvmlDeviceGetMemoryInfo(nvml::Device d, nvml::Memory* m) {
  m->total = d->total;
  m->used = d->used;
  m->free = d->total - d->used;
  return nvml::kSuccess;
}
nvml::Return nvmlDeviceGetTemperature(nvml::Device d, int sensor,
                                      unsigned int* t) {
  if (sensor != nvml::kTemperatureGpu) return 2;
  *t = d->temp;
  return nvml::kSuccess;
}
nvml::Return nvmlDeviceGetPowerUsage(nvml::Device d, unsigned int* mw) {
  *mw = d->power_mw;
  return nvml::kSuccess;
}
nvml::Return nvmlDeviceGetUtilizationRates(nvml::Device d,
                                           nvml::Utilization* u) {
  if (d->util == 1000) return nvml::kErrorNotSupported;
  u->gpu = d->util;
  u->memory = d->util / 2;
  return nvml::kSuccess;
}
nvml::Return nvmlDeviceGetMigMode(nvml::Device d, unsigned int* current,
                                  unsigned int* pending) {
  *current = d->mig_mode;
  *pending = d->mig_mode;
  return nvml::kSuccess;
}
nvml::Return nvmlDeviceGetMaxMigDeviceCount(nvml::Device d, unsigned int* n) {
  *n = d->mig_mode == nvml::kMigEnabled ? 7 : 0;
  return nvml::kSuccess;
}
nvml::Return nvmlDeviceGetMigDeviceHandleByIndex(nvml::Device d, unsigned int i,
                                                 nvml::Device* m) {
  if (d != &gpus[0]) return nvml::kErrorNotSupported;
  if (i == 0)
    *m = &migs[0];
  else if (i == 2)
    *m = &migs[1];
  else
    return nvml::kErrorNotFound;
  return nvml::kSuccess;
}
nvml::Return nvmlDeviceGetMinorNumber(nvml::Device d, unsigned int* n) {
  if (IsMig(d)) return nvml::kErrorNotSupported;
  *n = d->minor;
  return nvml::kSuccess;
}
nvml::Return nvmlDeviceGetGpuInstanceId(nvml::Device d, unsigned int* n) {
  if (!IsMig(d)) return nvml::kErrorNotSupported;
  *n = d->minor;
  return nvml::kSuccess;
}
nvml::Return nvmlDeviceGetComputeInstanceId(nvml::Device d, unsigned int* n) {
  if (!IsMig(d)) return nvml::kErrorNotSupported;
  *n = d->ci;
  return nvml::kSuccess;
}
nvml::Return nvmlDeviceGetTotalEccErrors(nvml::Device d, int type, int counter,
                                         unsigned long long* n) {
  if (type != nvml::kMemoryErrorUncorrected || counter != nvml::kVolatileEcc) {
    *n = 0;
  } else {
    *n = d->ecc;
  }
  return nvml::kSuccess;
}
nvml::Return nvmlEventSetCreate(nvml::EventSet* set) {
  *set = reinterpret_cast<nvml::EventSet>(&event_set_token);
  return nvml::kSuccess;
}
nvml::Return nvmlDeviceRegisterEvents(nvml::Device, unsigned long long types,
                                      nvml::EventSet) {
  return (types & nvml::kEventXidCritical) != 0 ? nvml::kSuccess
                                                : nvml::kErrorNotSupported;
}
nvml::Return nvmlEventSetWait_v2(nvml::EventSet, nvml::EventData* e,
                                 unsigned int) {
  if (pending_xid_events == 0) return nvml::kErrorTimeout;
  --pending_xid_events;
  std::memset(e, 0, sizeof(*e));
  e->device = &gpus[1];
  e->event_type = nvml::kEventXidCritical;
  e->event_data = 79;
  return nvml::kSuccess;
}
nvml::Return nvmlEventSetFree(nvml::EventSet) { return nvml::kSuccess; }

}  // extern "C"
