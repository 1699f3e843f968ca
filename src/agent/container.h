// The container runtime of the node agent: each pod runs as an OCI
// container from its image, under runc (docs/decisions/0005-container-
// runtime.md says why runc with skopeo and umoci, not podman).
//
// NewContainerExecutor wraps a process executor (exec.h). Start() writes
// what the pod needs to STATE/pods/POD/pod.json and has the process
// executor run `allot container-run STATE/pods/POD/pod.json` as the pod's
// process: in the pod's cgroup, with its log, its SIGTERM, grace and
// SIGKILL, and its exit code, exactly as a process pod. container-run
// (RunContainer below) makes sure the image is here (pulling it with
// skopeo into an OCI layout and unpacking it once with umoci), writes the
// pod's OCI runtime config and execs `runc run`, which stays the pod's
// process: it forwards SIGTERM to the container, and exits with the
// container's status (128 + signal when killed). Pull progress and errors
// go to the pod's log.
//
// What a container gets: its image's root file system, read-only (shared
// by every pod of the image), a private /tmp (tmpfs) and its working
// directory; its own pid, mount, ipc and uts namespaces; a user namespace
// that maps its root to an unprivileged range of host ids, one range per
// tenant (so it is root only inside); no new privileges and three
// capabilities (runc's defaults: AUDIT_WRITE, KILL, NET_BIND_SERVICE); the
// host's network, or with private networking only a loopback interface;
// its own GPUs, and no other, by CDI or the driver's device nodes and
// libraries (gpu_devices.h; simulated GPUs: only the environment, as for
// processes). Its processes stay in the pod's cgroup
// (runc is told the cgroup it was started in), so the cpu and memory
// limits, OOM reporting and the final SIGKILL of the process runtime apply
// unchanged.
//
// Poll() removes what runc and the pod left behind once a pod has ended
// (`runc delete --force`, the pod's directory).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <string>

#include "agent/exec.h"
#include "agent/gpu.h"
#include "agent/gpu_devices.h"
#include "agent/image_gc.h"
#include "core/status.h"

namespace allot::agent {

struct ContainerOptions {
  // Where images (STATE/images), pods' bundles (STATE/pods) and runc's
  // state (STATE/runc) live. Created if missing.
  std::string state_dir;
  std::string runtime = "runc";  // The OCI runtime binary (PATH is searched).
  // This program (container-run is one of its subcommands).
  std::string self_exe = "/proc/self/exe";
  // false: the host's network; true: a network namespace of the pod's own
  // with only loopback (nothing outside the pod is reachable).
  bool private_network = false;
  // true: per-tenant networks (container_net.h): a bridge per tenant in
  // `pod_cidr` (a /16), the pods of one workload sharing a namespace on
  // it, tenants kept apart and off the host by iptables rules. Wins over
  // private_network.
  bool tenant_network = false;
  std::string pod_cidr = "10.88.0.0/16";
  // This node's name (its pod namespaces say it), and the server's
  // HOST:PORT, which tenant-network pods may not reach.
  std::string node_name;
  std::string server;
  // User namespaces: tenant number k (in the order this agent first sees
  // them, kept in STATE/tenants) maps container ids 0..65535 to host ids
  // userns_base + k * 65536 ...; 0: no user namespace (containers run as
  // root of the host; only for hosts without user namespaces).
  uint32_t userns_base = 0;
  // Where tenants' persistent volumes (persistentVolumeClaim) live:
  // VOLUME_ROOT/TENANT/CLAIM. Empty: STATE/volumes.
  std::string volume_root;
  // When unused images are removed (image_gc.h).
  ImageGcPolicy image_gc;
  // Registries reached without TLS verification (host:port, comma
  // separated); 127.0.0.1 and localhost always are.
  std::string insecure_registries;
  // The node's GPUs (NVML's index, minor number and MIG ids of each, for
  // the pods' device nodes), whether they are simulated (then a pod gets
  // none), and where the driver and the CDI specs are.
  std::vector<GpuInfo> gpus;
  bool gpus_simulated = false;
  GpuHost gpu_host;
};

// Container pods, run through `processes` (which owns their cgroups).
// A pod without an image is refused (FailedPrecondition): this node runs
// containers.
std::unique_ptr<Executor> NewContainerExecutor(
    ContainerOptions options, std::unique_ptr<Executor> processes);

// `allot container-run POD_JSON`: the pod's process (see above). Returns
// only on failure (the exit code: 125 when the image cannot be had, 126
// when the container cannot be set up), after writing why to `err`.
int RunContainer(const std::string& pod_json, std::ostream& err);

// The image reference as skopeo reads it: "oci:/dir[:tag]" and
// "docker://..." unchanged; "NAME[:TAG]" is docker://docker.io/library/...,
// "HOST/NAME[:TAG]" docker://HOST/NAME[:TAG]. InvalidArgument names what is
// wrong.
Result<std::string> ImageSource(const std::string& image);

// The pull policy in effect: `policy`, or Kubernetes' default (Always for
// an untagged or :latest registry image, else IfNotPresent).
std::string EffectivePullPolicy(const std::string& image, const std::string& policy);

// From an image manifest's raw JSON (Docker v2 schema 2 or OCI): the bytes
// a pull fetches, its config and its layers; 0 when it lists none. For a
// manifest list or OCI index: ManifestForPlatform gives the digest of the
// linux/`arch` (amd64, arm64) manifest, "" when it has none.
int64_t ManifestBytes(const std::string& raw);

// Why skopeo could not pull, from what it said: "not found (...)", "the
// registry refused the credentials (...)", "no space left on this node
// for the image", "the registry's TLS certificate was not trusted (...)",
// "the registry is unreachable", else its last line.
std::string PullFailure(const std::string& said);
std::string ManifestForPlatform(const std::string& raw, const std::string& arch);

}  // namespace allot::agent
