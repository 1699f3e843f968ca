// A node agent put together and run: what `allot agent` does once its
// flags are read (src/cli/agent.cc reads and checks them).
//
// RunNode picks the GPU source (NVML, simulated, or none), creates the pod
// log directory, kills what an earlier run of the same agent left behind,
// makes the executor (processes, in cgroups where the host allows, or
// simulated) and runs one Agent (agent.h) until *stop. RunSimulatedNodes
// runs many simulated nodes in this process instead, for load tests.
//
// Threads: both run on the caller's thread until *stop, and start the
// agents' threads (agent.h), joined before they return. They write
// progress and errors to `out`, from the calling thread only.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <ostream>
#include <string>

#include "agent/agent.h"
#include "agent/container.h"
#include "core/model.h"

namespace allot::agent {

// The node label saying how its pods run: process, container or simulated.
using core::kRuntimeLabel;

// A node agent's configuration, its flags read and checked.
struct NodeConfig {
  // The node's name, labels, CPUs and memory; its GPUs are added from the
  // GPU source.
  core::Node node;
  AgentOptions agent;
  // Tenant -> the unix user its pods run as ("*": every other tenant);
  // empty: pods run as the agent. Not used with simulated execution.
  std::map<std::string, RunAsUser> run_as;
  std::string simulate_gpus;  // "8xH100-80GB,2xA100-40GB"; empty: NVML.
  // Simulated GPUs to offer when NVML finds none (`allot up`); empty: none.
  std::string simulate_gpus_if_none;
  std::string nvml_library = "libnvidia-ml.so.1";
  std::string log_dir;  // Empty: $XDG_STATE_HOME/allot/pods, ...
  // Each pod (not simulated) in a cgroup with its requests as limits, where
  // the host allows (CgroupManager); false: no cgroups.
  bool cgroups = true;
  // Where the pods' cgroups go ("/allot"); empty: under the agent's own.
  std::string cgroup_parent;
  // "process" (pods are host processes) or "container" (OCI containers
  // from their images, container.h); shown as the node's label
  // allot.dev/runtime.
  std::string runtime = "process";
  ContainerOptions container;  // With runtime "container".
  // N > 0: RunSimulatedNodes runs N nodes NAME-00000.. (needs
  // simulate_gpus and simulated execution).
  int simulate_nodes = 0;
};

// Runs the node until *stop; returns the exit code (2: bad simulated GPUs,
// 1: no log directory).
int RunNode(const NodeConfig& config, const Connect& connect,
            const std::atomic<bool>* stop, std::ostream& out);

// `config.simulate_nodes` nodes with simulated GPUs and simulated execution
// in this process, for load tests. Each node keeps its own long poll (a
// thread and a connection, as that many real agents would); one reporter
// thread serves them all. Returns the exit code.
int RunSimulatedNodes(const NodeConfig& config, const Connect& connect,
                      const std::atomic<bool>* stop, std::ostream& out);

// This host's name in lower case ("localhost" if it has none).
std::string HostName();
// This host's memory (MemTotal of /proc/meminfo), 0 if unknown.
int64_t MemTotalBytes();

}  // namespace allot::agent
