#include "agent/container_net.h"

#include <stdlib.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <functional>

namespace allot::agent {

namespace {

// Runs argv quietly; the command line in the error when it fails.
Status Run(const std::vector<std::string>& argv) {
  int devnull = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  const int rc = RunTool(argv, devnull);
  if (devnull >= 0) ::close(devnull);
  if (rc == 0) return Status::Ok();
  std::string line;
  for (const std::string& a : argv) line += (line.empty() ? "" : " ") + a;
  return Status::FailedPrecondition("`" + line + "` " +
                                    (rc < 0 ? "could not be run" : "exited " + std::to_string(rc)));
}

// `ip [-n NETNS] -batch FILE` of `commands` (one per line, without "ip"):
// one process for several changes (each ip process costs a few ms).
Status RunIpBatch(const std::string& netns, const std::vector<std::string>& commands) {
  char path[] = "/tmp/allot-ip-batch.XXXXXX";
  const int fd = ::mkstemp(path);
  if (fd < 0) return Status::FailedPrecondition("cannot write an ip batch file in /tmp");
  std::string text;
  for (const std::string& c : commands) text += c + "\n";
  const bool written = ::write(fd, text.data(), text.size()) == ssize_t(text.size());
  ::close(fd);
  std::vector<std::string> argv = {"ip"};
  if (!netns.empty()) argv.insert(argv.end(), {"-n", netns});
  argv.insert(argv.end(), {"-batch", path});
  Status s = written ? Run(argv) : Status::FailedPrecondition("cannot write " + std::string(path));
  ::unlink(path);
  if (!s.ok()) {
    std::string all;
    for (const std::string& c : commands) all += (all.empty() ? "" : "; ") + c;
    return Status::FailedPrecondition(s.message() + " (" + all + ")");
  }
  return s;
}

std::string Bridge(size_t tenant) { return "allot" + std::to_string(tenant); }

// The chains of the isolation rules and where each is hooked in.
struct Chain {
  const char* table;
  const char* name;
  const char* hook;
};
constexpr Chain kChains[] = {{"filter", "ALLOT-FWD", "FORWARD"},
                             {"filter", "ALLOT-IN", "INPUT"},
                             {"nat", "ALLOT-NAT", "POSTROUTING"}};

std::string Hex(size_t h, size_t digits) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016zx", h);
  return std::string(buf).substr(16 - digits);
}

}  // namespace

std::string PodNetworks::Subnet(size_t tenant) const {
  // "10.88.0.0/16" -> "10.88.K"
  const size_t second = cidr_.find('.', cidr_.find('.') + 1);
  return cidr_.substr(0, second) + "." + std::to_string(tenant);
}

Status PodNetworks::Init() {
  if (cidr_.size() < 4 || cidr_.compare(cidr_.size() - 3, 3, "/16") != 0) {
    return Status::InvalidArgument("--pod-cidr must be a /16, such as 10.88.0.0/16");
  }
  std::error_code ec;
  // What an earlier run left.
  for (const auto& e : std::filesystem::directory_iterator("/var/run/netns", ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("allot-", 0) == 0) (void)Run({"ip", "netns", "del", name});
  }
  for (size_t k = 0; k < 256; ++k) {
    if (std::filesystem::exists("/sys/class/net/" + Bridge(k), ec)) {
      (void)Run({"ip", "link", "del", Bridge(k)});
    }
  }
  // The chains, emptied and hooked in once.
  for (const Chain& c : kChains) {
    (void)Run({"iptables", "-w", "-t", c.table, "-N", c.name});
    ALLOT_RETURN_IF_ERROR(Run({"iptables", "-w", "-t", c.table, "-F", c.name}));
    if (!Run({"iptables", "-w", "-t", c.table, "-C", c.hook, "-j", c.name}).ok()) {
      ALLOT_RETURN_IF_ERROR(Run({"iptables", "-w", "-t", c.table, "-I", c.hook, "1", "-j", c.name}));
    }
  }
  // Between tenants: nothing (each bridge's own traffic is accepted above
  // this rule as its bridge is made). Out: through NAT. Into the host:
  // nothing a pod starts.
  ALLOT_RETURN_IF_ERROR(Run({"iptables", "-w", "-A", "ALLOT-FWD", "-i", "allot+", "-o", "allot+",
                             "-j", "DROP"}));
  ALLOT_RETURN_IF_ERROR(Run({"iptables", "-w", "-A", "ALLOT-FWD", "-i", "allot+", "-j", "ACCEPT"}));
  ALLOT_RETURN_IF_ERROR(Run({"iptables", "-w", "-A", "ALLOT-FWD", "-o", "allot+", "-m",
                             "conntrack", "--ctstate", "ESTABLISHED,RELATED", "-j", "ACCEPT"}));
  ALLOT_RETURN_IF_ERROR(Run({"iptables", "-w", "-A", "ALLOT-IN", "-i", "allot+", "-m",
                             "conntrack", "--ctstate", "ESTABLISHED,RELATED", "-j", "ACCEPT"}));
  ALLOT_RETURN_IF_ERROR(Run({"iptables", "-w", "-A", "ALLOT-IN", "-i", "allot+", "-j", "DROP"}));
  ALLOT_RETURN_IF_ERROR(Run({"iptables", "-w", "-t", "nat", "-A", "ALLOT-NAT", "-s", cidr_, "!",
                             "-d", cidr_, "-j", "MASQUERADE"}));
  initialized_ = true;
  return Status::Ok();
}

PodNetworks::~PodNetworks() {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [name, g] : groups_) (void)Run({"ip", "netns", "del", g.netns});
  for (size_t k : bridges_) (void)Run({"ip", "link", "del", Bridge(k)});
  if (!initialized_) return;
  for (const Chain& c : kChains) {
    (void)Run({"iptables", "-w", "-t", c.table, "-D", c.hook, "-j", c.name});
    (void)Run({"iptables", "-w", "-t", c.table, "-F", c.name});
    (void)Run({"iptables", "-w", "-t", c.table, "-X", c.name});
  }
}

Status PodNetworks::EnsureBridge(size_t tenant) {
  if (bridges_.count(tenant)) return Status::Ok();
  const std::string br = Bridge(tenant);
  ALLOT_RETURN_IF_ERROR(Run({"ip", "link", "add", br, "type", "bridge"}));
  ALLOT_RETURN_IF_ERROR(Run({"ip", "addr", "add", Subnet(tenant) + ".1/24", "dev", br}));
  ALLOT_RETURN_IF_ERROR(Run({"ip", "link", "set", br, "up"}));
  // Pods of one tenant reach each other (bridged traffic passes FORWARD
  // where br_netfilter is loaded).
  ALLOT_RETURN_IF_ERROR(Run({"iptables", "-w", "-I", "ALLOT-FWD", "1", "-i", br, "-o", br,
                             "-j", "ACCEPT"}));
  bridges_.insert(tenant);
  return Status::Ok();
}

Result<std::string> PodNetworks::Join(size_t tenant, const std::string& group,
                                      const std::string& pod) {
  if (tenant > 255) {
    return Status::FailedPrecondition("more than 256 tenants on this node: --network tenant "
                                      "numbers them in one /16");
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto it = groups_.find(group);
  if (it == groups_.end()) {
    ALLOT_RETURN_IF_ERROR(EnsureBridge(tenant));
    std::set<std::string> used;
    for (const auto& [name, g] : groups_) used.insert(g.address);
    std::string address;
    for (int host = 2; host < 255 && address.empty(); ++host) {
      const std::string a = Subnet(tenant) + "." + std::to_string(host);
      if (!used.count(a)) address = a;
    }
    if (address.empty()) {
      return Status::FailedPrecondition("the tenant's subnet " + Subnet(tenant) + ".0/24 is full");
    }
    const std::string id = Hex(std::hash<std::string>{}(group), 10);
    const std::string ns = "allot-" + id, host_end = "alh" + id, pod_end = "alp" + id;
    // Two ip processes: the host's side, then the namespace's.
    Status s = Run({"ip", "netns", "add", ns});
    if (s.ok()) {
      s = RunIpBatch("", {"link add " + host_end + " type veth peer name " + pod_end,
                          "link set " + pod_end + " netns " + ns,
                          "link set " + host_end + " master " + Bridge(tenant) + " up"});
    }
    if (s.ok()) {
      s = RunIpBatch(ns, {"link set " + pod_end + " name eth0",
                          "addr add " + address + "/24 dev eth0", "link set eth0 up",
                          "link set lo up", "route add default via " + Subnet(tenant) + ".1"});
    }
    if (!s.ok()) {
      (void)Run({"ip", "netns", "del", ns});
      (void)Run({"ip", "link", "del", host_end});
      return s;
    }
    it = groups_.emplace(group, Group{ns, address, tenant, {}}).first;
  }
  it->second.pods.insert(pod);
  pod_group_[pod] = group;
  return "/var/run/netns/" + it->second.netns;
}

void PodNetworks::Leave(const std::string& pod) {
  std::lock_guard<std::mutex> lock(mu_);
  auto pg = pod_group_.find(pod);
  if (pg == pod_group_.end()) return;
  auto it = groups_.find(pg->second);
  pod_group_.erase(pg);
  if (it == groups_.end()) return;
  it->second.pods.erase(pod);
  if (!it->second.pods.empty()) return;
  // The veth pair goes with the namespace.
  (void)Run({"ip", "netns", "del", it->second.netns});
  groups_.erase(it);
}

std::string PodNetworks::AddressOf(const std::string& group) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = groups_.find(group);
  return it == groups_.end() ? "" : it->second.address;
}

}  // namespace allot::agent
