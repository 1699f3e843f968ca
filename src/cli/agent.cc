// `allot agent`: its flags read and checked into an agent::NodeConfig,
// then agent::RunNode (or agent::RunSimulatedNodes) runs the node
// (src/agent/node.h), talking to the server through a cli::Client.
#include "cli/agent.h"

#include "core/duration.h"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "agent/agent.h"
#include "agent/node.h"
#include "core/model.h"
#include "core/quantity.h"

namespace allot::cli {
namespace {

// The agent's connection to the server: a Client.
class ClientLink : public agent::ServerLink {
 public:
  explicit ClientLink(std::unique_ptr<Client> client)
      : client_(std::move(client)) {}
  Result<boost::json::value> Post(const std::string& target,
                                  const std::string& body) override {
    return client_->Call("POST", target, body);
  }
  const std::string& server() const override { return client_->server(); }

 private:
  std::unique_ptr<Client> client_;
};

// Connections with the CLI's flags (Client::Connect is thread-safe).
agent::Connect ConnectWith(const ClientFlags& c) {
  return [c]() -> Result<std::unique_ptr<agent::ServerLink>> {
    Result<std::unique_ptr<Client>> client = Client::Connect(c);
    if (!client.ok()) return client.status();
    return std::unique_ptr<agent::ServerLink>(
        std::make_unique<ClientLink>(std::move(*client)));
  };
}

}  // namespace

int RunAgent(const ClientFlags& c, const AgentFlags& f,
             const std::atomic<bool>* stop, std::ostream& out) {
  core::Node node;
  node.name = f.name.empty() ? agent::HostName() : f.name;
  std::stringstream labels(f.labels);
  for (std::string kv; std::getline(labels, kv, ',');) {
    if (kv.empty()) continue;
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      out << "allot agent: --labels wants k=v[,k=v...], got '" << kv << "'\n";
      return 2;
    }
    node.labels[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  if (!node.labels.count("allot.dev/location")) {
    node.labels["allot.dev/location"] = "onprem";
  }
  node.cpu = Quantity::FromUnits(
      std::max<int64_t>(1, std::thread::hardware_concurrency()));
  node.memory = Quantity::FromUnits(agent::MemTotalBytes());
  // Overrides, for simulated nodes that stand in for bigger machines.
  for (const auto& [flag, text, field] :
       {std::tuple{"--cpus", &f.cpus, &node.cpu},
        std::tuple{"--memory", &f.memory, &node.memory}}) {
    if (text->empty()) continue;
    Result<Quantity> q = Quantity::Parse(*text);
    if (!q.ok() || q->milli() <= 0) {
      out << "allot agent: " << flag
          << " wants a positive quantity like 64 or 512Gi, got '" << *text
          << "'\n";
      return 2;
    }
    *field = *q;
  }

  std::map<std::string, agent::RunAsUser> run_as;
  std::stringstream ras(f.run_as);
  for (std::string kv; std::getline(ras, kv, ',');) {
    if (kv.empty()) continue;
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == kv.size()) {
      out << "allot agent: --run-as wants TENANT=USER[,...] (TENANT * for the "
             "rest), got '"
          << kv << "'\n";
      return 2;
    }
    const std::string user = kv.substr(eq + 1);
    struct passwd pw;
    struct passwd* found = nullptr;
    std::vector<char> buf(16384);
    if (getpwnam_r(user.c_str(), &pw, buf.data(), buf.size(), &found) != 0 ||
        !found) {
      out << "allot agent: --run-as: no unix user '" << user << "'\n";
      return 2;
    }
    run_as[kv.substr(0, eq)] =
        agent::RunAsUser{user, pw.pw_uid, pw.pw_gid, pw.pw_dir};
  }
  if (f.cgroups != "auto" && f.cgroups != "off") {
    out << "allot agent: --cgroups wants auto or off, got '" << f.cgroups
        << "'\n";
    return 2;
  }
  if (!f.cgroup_parent.empty() &&
      (f.cgroup_parent[0] != '/' ||
       f.cgroup_parent.find("..") != std::string::npos)) {
    out << "allot agent: --cgroup-parent wants an absolute path inside the "
           "cgroup "
           "hierarchy, like /allot, got '"
        << f.cgroup_parent << "'\n";
    return 2;
  }
  if (!run_as.empty() && geteuid() != 0) {
    out << "allot agent: --run-as needs the agent to run as root (to switch "
           "users)\n";
    return 2;
  }
  if (f.simulate_nodes > 0) {
    if (f.simulate_gpus.empty() || !f.simulate_exec) {
      out << "allot agent: --simulate-nodes needs --simulate-gpus and "
             "--simulate-exec "
             "(simulated nodes run no processes)\n";
      return 2;
    }
  }
  agent::NodeConfig config;
  config.node = std::move(node);
  config.agent.address = f.address;
  config.agent.poll_seconds = f.poll_seconds;
  config.agent.sample_seconds = f.sample_seconds;
  config.agent.simulate_exec = f.simulate_exec;
  config.run_as = std::move(run_as);
  config.simulate_gpus = f.simulate_gpus;
  config.simulate_gpus_if_none = f.simulate_gpus_if_none;
  config.nvml_library = f.nvml_library;
  config.log_dir = f.log_dir;
  config.cgroups = f.cgroups != "off";
  config.cgroup_parent = f.cgroup_parent;
  config.simulate_nodes = f.simulate_nodes;
  config.runtime = f.runtime;
  config.agent.ignore_images = f.ignore_images && f.runtime == "process";
  config.container.state_dir = f.container_state;
  config.container.private_network = f.private_network || f.network == "private";
  config.container.tenant_network = f.network == "tenant";
  config.container.pod_cidr = f.pod_cidr;
  if (config.container.tenant_network) {
    // The server's HOST:PORT, kept from the pods.
    if (Result<std::unique_ptr<Client>> cl = Client::Connect(c); cl.ok()) {
      std::string url = (*cl)->server();
      const bool tls = url.rfind("https://", 0) == 0;
      if (const size_t scheme = url.find("://"); scheme != std::string::npos) {
        url = url.substr(scheme + 3);
      }
      url = url.substr(0, url.find('/'));
      if (url.find(':') == std::string::npos) url += tls ? ":443" : ":80";
      config.container.server = url;
    }
  }
  if (!f.network.empty() && f.network != "host" && f.network != "private" &&
      f.network != "tenant") {
    out << "allot agent: --network must be host, private or tenant, not " << f.network << "\n";
    return 2;
  }
  config.container.userns_base = f.userns_base;
  config.container.insecure_registries = f.insecure_registries;
  config.container.volume_root = f.volume_root;
  config.container.gpu_host.root = f.nvidia_driver_root;
  config.container.gpu_host.cdi_dirs.clear();
  std::stringstream cdi(f.cdi_spec_dirs);
  for (std::string d; std::getline(cdi, d, ',');) {
    if (!d.empty()) config.container.gpu_host.cdi_dirs.push_back(d);
  }
  {
    Result<int64_t> age = core::ParseDurationSeconds(f.image_gc_age);
    if (!age.ok()) {
      out << "allot agent: --image-gc-age: " << age.status().message() << "\n";
      return 2;
    }
    if (f.image_gc_low_percent < 1 || f.image_gc_low_percent > f.image_gc_high_percent ||
        f.image_gc_high_percent > 100) {
      out << "allot agent: --image-gc-low-percent must be from 1 to --image-gc-high-percent, "
             "and that at most 100 (100: no removal by disk use)\n";
      return 2;
    }
    config.container.image_gc = {*age * 1000, f.image_gc_high_percent, f.image_gc_low_percent};
  }
  if (f.runtime == "container" && geteuid() != 0) {
    out << "allot agent: --runtime container needs the agent to run as root (runc, user "
           "namespaces)\n";
    return 2;
  }
  const agent::Connect connect = ConnectWith(c);
  if (f.simulate_nodes > 0) {
    return agent::RunSimulatedNodes(config, connect, stop, out);
  }
  return agent::RunNode(config, connect, stop, out);
}

}  // namespace allot::cli
