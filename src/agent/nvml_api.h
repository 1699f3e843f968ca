// The subset of NVML's C API that the agent uses, declared from NVML's
// public documentation (NVML API Reference, nvml.h of driver R470+), so
// that no NVML header is needed to build. Only types, constants and the
// function pointer types: the functions are looked up with dlsym.
//
// Shared by gpu_nvml.cc and the fake library the tests load
// (testdata/fake_nvml.cc), so both sides agree on the ABI.
#pragma once

namespace allot::agent::nvml {

using Return = int;  // nvmlReturn_t
constexpr Return kSuccess = 0;
constexpr Return kErrorNotSupported = 3;
constexpr Return kErrorNotFound = 6;
constexpr Return kErrorInsufficientSize = 7;
constexpr Return kErrorDriverNotLoaded = 9;
constexpr Return kErrorTimeout = 10;
constexpr Return kErrorGpuIsLost = 15;
constexpr Return kErrorUnknown = 999;

struct DeviceSt;
using Device = DeviceSt*;  // nvmlDevice_t
struct EventSetSt;
using EventSet = EventSetSt*;  // nvmlEventSet_t

struct Memory {  // nvmlMemory_t (v1)
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

struct Utilization {  // nvmlUtilization_t
  unsigned int gpu;
  unsigned int memory;
};

struct EventData {  // nvmlEventData_t (with the _v2 wait's MIG ids)
  Device device;
  unsigned long long event_type;
  unsigned long long event_data;  // The XID for XID events.
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};

constexpr int kTemperatureGpu = 0;  // NVML_TEMPERATURE_GPU
constexpr int kMemoryErrorUncorrected =
    1;                                   // NVML_MEMORY_ERROR_TYPE_UNCORRECTED
constexpr int kVolatileEcc = 0;          // NVML_VOLATILE_ECC
constexpr unsigned int kMigEnabled = 1;  // NVML_DEVICE_MIG_ENABLE
constexpr unsigned long long kEventXidCritical =
    0x8;  // nvmlEventTypeXidCriticalError
constexpr unsigned int kDeviceUuidBuffer =
    96;  // NVML_DEVICE_UUID_V2_BUFFER_SIZE
constexpr unsigned int kDeviceNameBuffer =
    96;  // NVML_DEVICE_NAME_V2_BUFFER_SIZE
constexpr unsigned int kDriverVersionBuffer =
    80;  // NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE

extern "C" {
using InitFn = Return (*)();                    // nvmlInit_v2
using ShutdownFn = Return (*)();                // nvmlShutdown
using ErrorStringFn = const char* (*)(Return);  // nvmlErrorString
using DriverVersionFn = Return (*)(char*,
                                   unsigned int);  // nvmlSystemGetDriverVersion
using CountFn = Return (*)(unsigned int*);         // nvmlDeviceGetCount_v2
using HandleByIndexFn = Return (*)(unsigned int, Device*);  // ..._v2
using StringFn = Return (*)(Device, char*, unsigned int);   // GetUUID, GetName
using MemoryFn = Return (*)(Device, Memory*);  // nvmlDeviceGetMemoryInfo
using TemperatureFn = Return (*)(Device, int, unsigned int*);
using PowerFn = Return (*)(Device, unsigned int*);  // milliwatts
using UtilizationFn = Return (*)(Device, Utilization*);
using MigModeFn = Return (*)(Device, unsigned int*,
                             unsigned int*);  // current, pending
using MaxMigCountFn = Return (*)(Device, unsigned int*);
using MigHandleFn = Return (*)(Device, unsigned int, Device*);
using TotalEccFn = Return (*)(Device, int, int, unsigned long long*);
using EventSetCreateFn = Return (*)(EventSet*);
using RegisterEventsFn = Return (*)(Device, unsigned long long, EventSet);
using EventSetWaitFn = Return (*)(EventSet, EventData*,
                                  unsigned int);  // _v2, ms
using EventSetFreeFn = Return (*)(EventSet);
// nvmlDeviceGetMinorNumber, nvmlDeviceGetGpuInstanceId,
// nvmlDeviceGetComputeInstanceId.
using UintFn = Return (*)(Device, unsigned int*);
}

}  // namespace allot::agent::nvml
