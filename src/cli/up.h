// `allot up`: the embedded default. One process runs the control plane
// (`allot serve`, SQLite under the data directory) and an agent for this
// machine (its NVML GPUs, or simulated ones with a notice when there are
// none), and prints the API address and an admin token.
//
// `--demo` starts from a fresh demo store, applies examples/up/demo.yaml
// (compiled in), submits examples/up/demo-later.yaml 20 s later, and prints
// every workload's state changes as they happen, so a newcomer sees
// queueing, borrowing, preemption and restarts within a minute.
#pragma once

#include <atomic>
#include <ostream>
#include <string>

namespace allot::cli {

struct UpFlags {
  std::string listen = "127.0.0.1:8470";
  std::string data_dir;       // Default: store::DefaultDataDir().
  std::string simulate_gpus;  // Given: simulate these even if NVML works.
  std::string nvml_library = "libnvidia-ml.so.1";
  std::string cpus;    // Given: the node's CPUs, else the host's (AgentFlags).
  std::string memory;  // Given: the node's memory, else the host's.
  // "process" (images ignored: their commands run on this host, each pod's
  // log says so) or "container" (agent --runtime container).
  std::string runtime = "process";
  bool demo = false;
  int demo_delay_s = 20;  // When the demo's second wave is submitted.
};

// Runs until *stop. Returns the exit code.
int RunUp(const UpFlags& f, const std::atomic<bool>* stop, std::ostream& out);

}  // namespace allot::cli
