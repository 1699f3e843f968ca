// What a container needs to use its GPUs, and only them (container.h).
// Internal to src/agent.
//
// Two ways, tried in this order for a pod's GPUs together:
// - CDI, the Container Device Interface: where a spec file in the CDI
//   directories (/etc/cdi, /var/run/cdi; YAML or JSON, as `nvidia-ctk cdi
//   generate` writes them) of kind nvidia.com/gpu names every GPU of the pod
//   (by its UUID, as `--device-name-strategy=uuid` names them, or a whole
//   GPU by its index), the container gets what those devices' and the
//   spec's containerEdits say: device nodes, mounts, hooks, env. A spec
//   file that cannot be read fails the pod when it mentions nvidia.com/gpu
//   (else it is another vendor's, and skipped).
// - Otherwise the driver's files directly: /dev/nvidiaN of each GPU (N its
//   minor number, from NVML), the MIG capability nodes of each MIG slice
//   (/dev/nvidia-caps/nvidia-capM, M from /proc/driver/nvidia-caps/
//   mig-minors), the control nodes (nvidiactl, nvidia-uvm,
//   nvidia-uvm-tools, nvidia-modeset, where present), and the driver's
//   user-space libraries and tools mounted read-only under
//   /usr/local/nvidia/lib64 and /usr/local/nvidia/bin (the paths NVIDIA's
//   CUDA images put on LD_LIBRARY_PATH and PATH).
// Another GPU's /dev/nvidiaN is never in the container. Simulated GPUs get
// none of this (only the environment).
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace allot::agent {

// One GPU (or MIG slice) of a pod, as the agent knows it from NVML.
struct PodGpu {
  std::string uuid;      // "GPU-..." or "MIG-...".
  int index = -1;        // NVML index of the GPU (of its parent for MIG).
  int minor = -1;        // Its /dev/nvidiaN (its parent's for MIG).
  int gpu_instance = -1;      // MIG only: the GPU instance id,
  int compute_instance = -1;  // and the compute instance id.
  bool operator==(const PodGpu&) const = default;
};

// Where the driver is: `root` holds the device nodes (ROOT/dev; the
// host's /dev when ROOT has none), the
// libraries and tools (ROOT/usr/lib/..., ROOT/usr/bin) and, where it has
// one, ROOT/proc/driver (else the host's /proc/driver is read). "/" on a
// host with the driver installed; /run/nvidia/driver where the GPU
// operator's driver container provides it.
struct GpuHost {
  std::string root = "/";
  std::vector<std::string> cdi_dirs = {"/etc/cdi", "/var/run/cdi"};
};

// A device node for the container: bound from host_path to path (a bind,
// not mknod, so it works in a user namespace) and allowed in the device
// cgroup by its major and minor.
struct GpuDeviceNode {
  std::string path;       // In the container.
  std::string host_path;  // On the host.
  char type = 'c';
  int64_t major = 0, minor = 0;
  bool operator==(const GpuDeviceNode&) const = default;
};

struct GpuMount {
  std::string host_path, container_path;
  std::vector<std::string> options;  // "ro", "nosuid", "nodev", "bind"...
  bool operator==(const GpuMount&) const = default;
};

struct GpuHook {
  std::string stage;  // OCI: prestart, createRuntime, createContainer,
                      // startContainer, poststart, poststop.
  std::string path;
  std::vector<std::string> args, env;
  int timeout_s = 0;  // 0: none.
};

struct GpuEdits {
  std::string how;  // "CDI nvidia.com/gpu=..." or "the driver's files (...)".
  std::vector<GpuDeviceNode> devices;
  std::vector<GpuMount> mounts;
  std::vector<GpuHook> hooks;
  std::vector<std::string> env;  // "K=V", set over the pod's.
  // "K=V": V is appended to K's value (':' between), for PATH-like
  // variables.
  std::vector<std::string> append_env;
};

// The edits for `gpus` on `host`: CDI where it names them all, else the
// driver's files. FailedPrecondition naming the GPU and the missing file
// when a GPU's device node (or a MIG slice's capability) is not there: a
// pod never starts without a GPU it was given.
Result<GpuEdits> ResolveGpuEdits(const std::vector<PodGpu>& gpus, const GpuHost& host);

// CDI alone: NotFound when no spec names every GPU; InvalidArgument naming
// the file when a spec of kind nvidia.com/gpu cannot be read.
Result<GpuEdits> CdiGpuEdits(const std::vector<PodGpu>& gpus,
                             const std::vector<std::string>& cdi_dirs);

// The driver's files alone.
Result<GpuEdits> DriverGpuEdits(const std::vector<PodGpu>& gpus, const std::string& root);

}  // namespace allot::agent
