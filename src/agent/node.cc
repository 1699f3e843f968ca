// Putting a node agent together and running it (see node.h): the GPU
// source, the pod log directory, leftovers of an earlier run, the executor
// and its cgroups; and fleets of simulated nodes for load tests.
#include "agent/node.h"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "agent/cgroup.h"
#include "agent/exec.h"
#include "agent/gpu.h"

namespace allot::agent {
namespace {

std::string DefaultLogDir() {
  if (const char* x = std::getenv("XDG_STATE_HOME"); x && *x) {
    return std::string(x) + "/allot/pods";
  }
  const char* home = std::getenv("HOME");
  if (geteuid() != 0 && home && *home) {
    return std::string(home) + "/.local/state/allot/pods";
  }
  return "/var/log/allot/pods";
}

// Kills the process groups of pods an earlier run of this agent left
// behind (it was killed before it could stop them): every process whose
// environment carries ALLOT_AGENT_TAG=tag.
int KillLeftovers(const std::string& tag) {
  int killed = 0;
  const std::string want = "ALLOT_AGENT_TAG=" + tag;
  DIR* d = opendir("/proc");
  if (d == nullptr) return 0;
  while (dirent* e = readdir(d)) {
    if (!std::isdigit(static_cast<unsigned char>(e->d_name[0]))) continue;
    pid_t pid = pid_t(std::atoi(e->d_name));
    if (pid == getpid()) continue;
    std::ifstream env(std::string("/proc/") + e->d_name + "/environ",
                      std::ios::binary);
    std::string entry;
    while (std::getline(env, entry, '\0')) {
      if (entry == want) {
        pid_t pgid = getpgid(pid);
        if (pgid > 1 && pgid != getpgid(0)) kill(-pgid, SIGKILL);
        kill(pid, SIGKILL);
        ++killed;
        break;
      }
    }
  }
  closedir(d);
  return killed;
}

// A node without GPUs (no driver, nothing simulated).
class NoGpus : public GpuSource {
 public:
  std::string Describe() const override { return "no GPUs"; }
  bool simulated() const override { return false; }
  const std::vector<GpuInfo>& Gpus() const override { return none_; }
  Result<std::vector<GpuSample>> Sample() override {
    return std::vector<GpuSample>{};
  }

 private:
  std::vector<GpuInfo> none_;
};

// The node's GPUs as the model has them.
void AddGpus(const GpuSource& gpus, core::Node* node) {
  for (const GpuInfo& g : gpus.Gpus()) {
    core::Gpu cg;
    cg.uuid = g.uuid;
    cg.product = g.product;
    cg.memory = Quantity::FromUnits(g.memory_bytes);
    for (const MigInstance& m : g.mig) cg.mig.push_back({m.uuid, m.profile});
    node->gpus.push_back(std::move(cg));
  }
}

// Discards what is written to it: the per-node lines of --simulate-nodes.
class NullStream : public std::ostream {
 public:
  NullStream() : std::ostream(nullptr) {}
};

}  // namespace

std::string HostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "localhost";
  std::string s(buf);
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

int64_t MemTotalBytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  int64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit) {
    if (key == "MemTotal:") return kb * 1024;
  }
  return 0;
}

// `--simulate-nodes N`: N nodes with simulated GPUs and simulated
// execution in this process, for load tests. Each node keeps its own long
// poll (a thread and a connection, as N real agents would); one reporter
// thread serves them all.
int RunSimulatedNodes(const NodeConfig& config, const Connect& connect,
                      const std::atomic<bool>* stop, std::ostream& out) {
  static NullStream quiet;
  std::vector<std::unique_ptr<Agent>> agents;
  const std::string prefix = config.node.name;
  for (int i = 0; i < config.simulate_nodes; ++i) {
    core::Node node = config.node;
    char suffix[16];
    std::snprintf(suffix, sizeof suffix, "-%05d", i);
    node.name = prefix + suffix;
    auto g = OpenSimulated(config.simulate_gpus, node.name);
    if (!g.ok()) {
      out << "allot agent: --simulate-gpus: " << g.status().message() << "\n";
      return 2;
    }
    AddGpus(**g, &node);
    const std::string name = node.name;
    const std::string log_dir =
        (config.log_dir.empty() ? DefaultLogDir() : config.log_dir) + "/" +
        name;
    agents.push_back(std::make_unique<Agent>(
        connect, config.agent, std::move(*g), NewSimulatedExecutor(),
        std::move(node), log_dir, name, quiet));
  }
  out << "allot agent: " << config.simulate_nodes << " SIMULATED nodes "
      << prefix << "-00000.. (" << config.simulate_gpus
      << " each, simulated execution: no processes run)\n";
  out.flush();
  std::vector<std::thread> polls;
  polls.reserve(agents.size());
  for (auto& a : agents) polls.emplace_back([&a, stop] { a->PollLoop(stop); });
  std::thread reporter([&] {
    while (!*stop) {
      const auto round = std::chrono::steady_clock::now();
      for (auto& a : agents) a->ReportStep();
      std::this_thread::sleep_until(round + std::chrono::milliseconds(100));
    }
  });
  int last = -1;
  auto next = std::chrono::steady_clock::now();
  while (!*stop) {
    if (std::chrono::steady_clock::now() >= next) {
      int n = 0;
      for (auto& a : agents) n += a->synced() ? 1 : 0;
      if (n != last) {
        out << "allot agent: " << n << " of " << agents.size()
            << " simulated nodes synced\n";
        out.flush();
        last = n;
      }
      next += std::chrono::seconds(5);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  for (std::thread& t : polls) t.join();
  reporter.join();
  return 0;
}

int RunNode(const NodeConfig& config, const Connect& connect,
            const std::atomic<bool>* stop, std::ostream& out) {
  core::Node node = config.node;
  std::unique_ptr<GpuSource> gpus;
  std::string simulate = config.simulate_gpus;
  if (simulate.empty() && !config.simulate_gpus_if_none.empty()) {
    auto g = OpenNvml(config.nvml_library);
    if (g.ok() && !(*g)->Gpus().empty()) {
      gpus = std::move(*g);
    } else {
      out << "allot agent: NOTICE: no NVIDIA GPUs here ("
          << (g.ok() ? std::string("NVML lists none") : g.status().message())
          << "); offering SIMULATED ones instead\n";
      simulate = config.simulate_gpus_if_none;
    }
  }
  if (gpus) {
    out << "allot agent: GPUs from NVML: " << gpus->Describe() << "\n";
  } else if (!simulate.empty()) {
    auto g = OpenSimulated(simulate, node.name);
    if (!g.ok()) {
      out << "allot agent: --simulate-gpus: " << g.status().message() << "\n";
      return 2;
    }
    gpus = std::move(*g);
    out << "allot agent: SIMULATED GPUs: " << gpus->Describe() << "\n";
  } else {
    auto g = OpenNvml(config.nvml_library);
    if (g.ok()) {
      gpus = std::move(*g);
      out << "allot agent: GPUs from NVML: " << gpus->Describe() << "\n";
    } else {
      out << "allot agent: no NVIDIA GPUs (" << g.status().message()
          << "); this node offers none. --simulate-gpus 8xH100-80GB simulates "
             "some.\n";
      gpus = std::make_unique<NoGpus>();
    }
  }
  AddGpus(*gpus, &node);
  // What runs pods here, for `allot get nodes` and nodeSelectors.
  node.labels[kRuntimeLabel] = config.agent.simulate_exec ? "simulated" : config.runtime;
  if (config.agent.ignore_images && !config.agent.simulate_exec) {
    node.labels[core::kIgnoreImagesLabel] = "true";
  }
  const std::string log_dir =
      config.log_dir.empty() ? DefaultLogDir() : config.log_dir;
  std::error_code ec;
  std::filesystem::create_directories(log_dir, ec);
  if (ec) {
    out << "allot agent: cannot create the log directory " << log_dir << ": "
        << ec.message() << "\n";
    return 1;
  }
  const std::string tag = node.name + "@" + log_dir;
  if (int n = KillLeftovers(tag); n > 0) {
    out << "allot agent: stopped " << n
        << " process(es) left by an earlier run of this agent\n";
  }
  std::unique_ptr<Executor> exec;
  TenantUsers tenant_users;
  if (config.agent.simulate_exec) {
    exec = NewSimulatedExecutor();
  } else {
    // One cgroup directory per agent: the node name and a hash of the tag,
    // stable across restarts (leftovers are found) and apart from other
    // agents on this machine.
    uint32_t h = 2166136261u;
    for (char ch : tag) h = (h ^ uint8_t(ch)) * 16777619u;
    char hash[9];
    std::snprintf(hash, sizeof hash, "%08x", h);
    CgroupOptions co;
    co.enabled = config.cgroups;
    co.parent = config.cgroup_parent;
    co.name = "allot-" + node.name + "-" + hash;
    std::unique_ptr<CgroupManager> cg = CgroupManager::Detect(co);
    out << "allot agent: " << cg->description() << "\n";
    if (cg->leftovers_removed() > 0) {
      out << "allot agent: removed " << cg->leftovers_removed()
          << " pod cgroup(s) left by an earlier run of this agent\n";
    }
    exec = NewProcessExecutor(std::move(cg));
    if (config.runtime == "container") {
      ContainerOptions o = config.container;
      if (o.state_dir.empty()) o.state_dir = log_dir + "/../containers";
      o.node_name = node.name;
      o.gpus = gpus->Gpus();
      o.gpus_simulated = gpus->simulated();
      out << "allot agent: pods run in containers (" << o.runtime << "; images and bundles in "
          << o.state_dir << "; "
          << (o.userns_base > 0 ? "user namespaces from host id " + std::to_string(o.userns_base)
                                : std::string("no user namespaces: containers run as host root"))
          << "; "
          << (o.tenant_network  ? "a network per tenant in " + o.pod_cidr
              : o.private_network ? std::string("private network")
                                  : std::string("host network"))
          << ")\n";
      exec = NewContainerExecutor(std::move(o), std::move(exec));
    } else {
      out << "allot agent: pods run as processes on this host; "
          << (config.agent.ignore_images
                  ? "a pod's image is ignored and its command runs here (--ignore-images)"
                  : "a pod that names an image fails (run --runtime container)")
          << "\n";
      // Never as root unless --run-as says so for the tenant.
      if (geteuid() == 0 && config.container.userns_base > 0) {
        const std::string state = config.container.state_dir.empty()
                                      ? log_dir + "/../containers"
                                      : config.container.state_dir;
        std::error_code ec_homes;
        tenant_users = TenantUsers{
            config.container.userns_base, state + "/tenants",
            std::filesystem::absolute(log_dir + "/../homes").lexically_normal().string()};
        out << "allot agent: each tenant's pods run as its own host ids (from "
            << config.container.userns_base << ", 65536 apart; homes in "
            << tenant_users.home_root << ")"
            << (config.run_as.empty() ? "" : ", except the tenants --run-as maps") << "\n";
        // A home they cannot reach (the agent's directory under a 0700
        // one, such as /root): pods that use $HOME (notebooks) fail.
        std::filesystem::create_directories(tenant_users.home_root, ec_homes);
        if (const std::string closed = FirstClosedDir(tenant_users.home_root); !closed.empty()) {
          out << "allot agent: WARNING: the tenants' ids cannot reach their homes in "
              << tenant_users.home_root << ": " << closed
              << " lacks o+x; pods that use $HOME (notebooks) will fail there (chmod o+x it, "
                 "or give the agent a --log-dir under a directory others may pass)\n";
        }
      } else {
        out << "allot agent: pods run as "
            << (geteuid() == 0 ? "root (--userns-base 0)" : "the agent's user (it is not root)")
            << (config.run_as.empty() ? "" : ", except the tenants --run-as maps") << "\n";
      }
    }
  }
  out << "allot agent: node " << node.name << ", pod logs in " << log_dir
      << (config.agent.simulate_exec
              ? " (simulated execution: no processes run)"
              : "")
      << "\n";
  out.flush();
  Agent a(connect, config.agent, std::move(gpus), std::move(exec),
          std::move(node), log_dir, tag, out);
  a.set_run_as(config.run_as);
  if (tenant_users.base > 0) a.set_tenant_users(tenant_users);
  a.Run(stop);
  return 0;
}

}  // namespace allot::agent
