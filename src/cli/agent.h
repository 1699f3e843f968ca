// `allot agent`: the node agent's command. RunAgent reads and checks the
// flags (AgentFlags), then runs the node with agent::RunNode, or
// agent::RunSimulatedNodes for --simulate-nodes (src/agent/node.h), talking
// to the server through a cli::Client. What the agent does, and on which
// threads, is in src/agent/agent.h.
#pragma once

#include <atomic>
#include <cstdint>
#include <ostream>
#include <string>

#include "cli/client.h"

namespace allot::cli {

struct AgentFlags {
  std::string name;           // Default: the host name.
  std::string labels;         // k=v,k=v
  std::string simulate_gpus;  // "8xH100-80GB,2xA100-40GB"
  // Simulated GPUs to offer when NVML finds none (`allot up`); empty: none.
  std::string simulate_gpus_if_none;
  bool simulate_exec = false;
  // N > 0: N simulated nodes NAME-00000.. in this process (load tests;
  // needs simulate_gpus and simulate_exec).
  int simulate_nodes = 0;
  // "team-a=alice,*=nobody": the unix user each tenant's pods run as ("*":
  // every other tenant; unmapped tenants run as the agent). Needs root.
  std::string run_as;
  std::string cpus;    // Given: the node's CPUs ("96"), else the host's.
  std::string memory;  // Given: its memory ("512Gi"), else the host's.
  // "auto": each pod (not simulated) runs in a cgroup with its cpu request
  // as quota and its memory request as limit, where the host allows
  // (agent::CgroupManager); "off": no cgroups.
  std::string cgroups = "auto";
  // Where the pods' cgroups go, a path inside the cgroup hierarchy
  // ("/allot"); empty: under the agent's own cgroup.
  std::string cgroup_parent;
  std::string log_dir;        // Default: $XDG_STATE_HOME/allot/pods, ...
  std::string address;        // MASTER_ADDR for pods here; default: name.
  int poll_seconds = 5;
  // GPU telemetry goes with the next sync at most this often (DCGM-style
  // metrics, usage weighted by utilization); 0: never.
  int sample_seconds = 10;
  std::string nvml_library = "libnvidia-ml.so.1";
  // "process" or "container" (OCI containers under runc, agent/container.h).
  std::string runtime = "process";
  bool ignore_images = false;       // Process nodes: run image pods' commands.
  std::string container_state;     // Default: LOG_DIR/../containers.
  bool private_network = false;    // Containers: loopback only.
  std::string network;  // Containers: host, private or tenant (wins over private_network).
  std::string pod_cidr = "10.88.0.0/16";
  std::string volume_root;  // Containers: tenants' persistent volumes.
  // Containers: the image cache's GC (agent/image_gc.h).
  std::string image_gc_age = "168h";
  int image_gc_high_percent = 85;
  int image_gc_low_percent = 80;
  uint32_t userns_base = 1u << 20;  // Containers: 0 = no user namespaces.
  std::string insecure_registries;  // host:port,...
  // Containers: the driver's files and the CDI specs (agent/gpu_devices.h).
  std::string nvidia_driver_root = "/";
  std::string cdi_spec_dirs = "/etc/cdi,/var/run/cdi";
};

// Runs until *stop. Returns the exit code.
int RunAgent(const ClientFlags& c, const AgentFlags& f,
             const std::atomic<bool>* stop, std::ostream& out);

}  // namespace allot::cli
