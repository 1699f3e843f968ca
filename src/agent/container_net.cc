#include "agent/container_net.h"

#include <stdlib.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>

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
                             {"nat", "ALLOT-NAT", "POSTROUTING"},
                             {"nat", "ALLOT-DNAT", "PREROUTING"}};

// Routes to peers carry this protocol number, so that a starting agent
// finds what an earlier one left.
constexpr char kRouteProto[] = "188";

// A host's IPv4 address ("" when it has none).
std::string ResolveIpv4(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0 || res == nullptr) return "";
  char buf[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr, buf, sizeof buf);
  freeaddrinfo(res);
  return buf;
}

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

std::string IptablesRules(const NetRules& r) {
  std::string f = "*filter\n:ALLOT-FWD - [0:0]\n:ALLOT-IN - [0:0]\n";
  auto fwd = [&f](const std::string& rule) { f += "-A ALLOT-FWD " + rule + "\n"; };
  // Pods of one tenant reach each other (bridged traffic passes FORWARD
  // where br_netfilter is loaded), and the tenant's pods on peers.
  for (const auto& [k, name] : r.bridges) {
    const std::string br = Bridge(k);
    fwd("-i " + br + " -o " + br + " -j ACCEPT");
    for (const proto::PodNetwork& p : r.peers) {
      if (auto t = p.tenants.find(name); t != p.tenants.end()) {
        fwd("-s " + t->second + " -o " + br + " -j ACCEPT");
      }
    }
  }
  if (!r.server_ip.empty() && r.server_port > 0) {
    fwd("-i allot+ -d " + r.server_ip + "/32 -p tcp --dport " + std::to_string(r.server_port) +
        " -j DROP");
  }
  // Between tenants: nothing. Out: through NAT. Into pods: only answers.
  fwd("-i allot+ -o allot+ -j DROP");
  fwd("-i allot+ -j ACCEPT");
  fwd("-o allot+ -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT");
  fwd("-o allot+ -j DROP");
  // Into the host: nothing a pod starts, here or on a peer.
  f += "-A ALLOT-IN -i allot+ -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT\n";
  f += "-A ALLOT-IN -i allot+ -j DROP\n";
  for (const proto::PodNetwork& p : r.peers) {
    f += "-A ALLOT-IN -s " + p.cidr +
         " -m conntrack ! --ctstate ESTABLISHED,RELATED -j DROP\n";
  }
  f += "COMMIT\n*nat\n:ALLOT-NAT - [0:0]\n:ALLOT-DNAT - [0:0]\n";
  // A rank 0's rendezvous port at this node's address, for its tenant's
  // pods on peers.
  for (const NetRules::Master& m : r.masters) {
    for (const proto::PodNetwork& p : r.peers) {
      auto t = p.tenants.find(m.tenant);
      if (t == p.tenants.end()) continue;
      const std::string port = std::to_string(m.port);
      f += "-A ALLOT-DNAT -s " + t->second + " -p tcp -m addrtype --dst-type LOCAL --dport " +
           port + " -j DNAT --to-destination " + m.address + ":" + port + "\n";
    }
  }
  // To peers' pods and peers themselves: the pod's own address.
  for (const proto::PodNetwork& p : r.peers) {
    f += "-A ALLOT-NAT -s " + r.cidr + " -d " + p.cidr + " -j RETURN\n";
    f += "-A ALLOT-NAT -s " + r.cidr + " -d " + p.address + "/32 -j RETURN\n";
  }
  f += "-A ALLOT-NAT -s " + r.cidr + " ! -d " + r.cidr + " -j MASQUERADE\n";
  f += "COMMIT\n";
  return f;
}

std::string PodNetnsPrefix(const std::string& node) {
  return "allot-" + Hex(std::hash<std::string>{}(node), 4) + "-";
}

Status PodNetworks::Init() {
  if (cidr_.size() < 4 || cidr_.compare(cidr_.size() - 3, 3, "/16") != 0 ||
      !proto::ParseIpv4Cidr(cidr_)) {
    return Status::InvalidArgument("--pod-cidr must be a /16, such as 10.88.0.0/16");
  }
  if (const size_t colon = server_.rfind(':'); colon != std::string::npos) {
    server_ip_ = ResolveIpv4(server_.substr(0, colon));
    server_port_ = std::atoi(server_.c_str() + colon + 1);
  }
  std::error_code ec;
  // What an earlier run left.
  for (const auto& e : std::filesystem::directory_iterator("/var/run/netns", ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(PodNetnsPrefix(node_), 0) == 0) (void)Run({"ip", "netns", "del", name});
  }
  for (size_t k = 0; k < 256; ++k) {
    if (std::filesystem::exists("/sys/class/net/" + Bridge(k), ec)) {
      (void)Run({"ip", "link", "del", Bridge(k)});
    }
  }
  (void)Run({"ip", "route", "flush", "proto", kRouteProto});
  // Pods reach the outside and peers through this host.
  {
    std::ifstream in("/proc/sys/net/ipv4/ip_forward");
    char on = '0';
    in >> on;
    if (on != '1') {
      std::ofstream out("/proc/sys/net/ipv4/ip_forward");
      out << "1\n";
      if (!out.flush()) {
        return Status::FailedPrecondition("cannot switch on IPv4 forwarding "
                                          "(/proc/sys/net/ipv4/ip_forward)");
      }
      std::cerr << "allot agent: switched on IPv4 forwarding for the pods' networks\n";
    }
  }
  // The chains, hooked in once, then filled.
  for (const Chain& c : kChains) {
    (void)Run({"iptables", "-w", "-t", c.table, "-N", c.name});
    if (!Run({"iptables", "-w", "-t", c.table, "-C", c.hook, "-j", c.name}).ok()) {
      ALLOT_RETURN_IF_ERROR(Run({"iptables", "-w", "-t", c.table, "-I", c.hook, "1", "-j", c.name}));
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  ALLOT_RETURN_IF_ERROR(WriteRules());
  initialized_ = true;
  return Status::Ok();
}

Status PodNetworks::WriteRules() {
  NetRules r;
  r.cidr = cidr_;
  r.bridges = bridges_;
  for (const auto& [key, g] : groups_) {
    if (g.master_port > 0) {
      auto b = bridges_.find(g.tenant);
      r.masters.push_back({b == bridges_.end() ? "" : b->second, g.address, g.master_port});
    }
  }
  r.peers = peers_;
  r.server_ip = server_ip_;
  r.server_port = server_port_;
  char path[] = "/tmp/allot-iptables.XXXXXX";
  const int fd = ::mkstemp(path);
  if (fd < 0) return Status::FailedPrecondition("cannot write an iptables file in /tmp");
  const std::string text = IptablesRules(r);
  const bool written = ::write(fd, text.data(), text.size()) == ssize_t(text.size());
  ::close(fd);
  Status s = written ? Run({"iptables-restore", "-w", "--noflush", path})
                     : Status::FailedPrecondition("cannot write " + std::string(path));
  ::unlink(path);
  return s;
}

PodNetworks::~PodNetworks() {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [name, g] : groups_) (void)Run({"ip", "netns", "del", g.netns});
  for (const auto& [k, tenant] : bridges_) (void)Run({"ip", "link", "del", Bridge(k)});
  (void)Run({"ip", "route", "flush", "proto", kRouteProto});
  if (!initialized_) return;
  for (const Chain& c : kChains) {
    (void)Run({"iptables", "-w", "-t", c.table, "-D", c.hook, "-j", c.name});
    (void)Run({"iptables", "-w", "-t", c.table, "-F", c.name});
    (void)Run({"iptables", "-w", "-t", c.table, "-X", c.name});
  }
}

Status PodNetworks::EnsureBridge(size_t tenant, const std::string& name) {
  if (bridges_.count(tenant)) return Status::Ok();
  const std::string br = Bridge(tenant);
  ALLOT_RETURN_IF_ERROR(RunIpBatch("", {"link add " + br + " type bridge",
                                        "addr add " + Subnet(tenant) + ".1/24 dev " + br,
                                        "link set " + br + " up"}));
  bridges_[tenant] = name;
  Status s = WriteRules();
  if (!s.ok()) {
    bridges_.erase(tenant);
    (void)Run({"ip", "link", "del", br});
  }
  return s;
}

Result<std::string> PodNetworks::Join(size_t tenant, const std::string& name,
                                      const std::string& group, const std::string& pod,
                                      int master_port) {
  if (tenant > 255) {
    return Status::FailedPrecondition("more than 256 tenants on this node: --network tenant "
                                      "numbers them in one /16");
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto it = groups_.find(group);
  if (it == groups_.end()) {
    ALLOT_RETURN_IF_ERROR(EnsureBridge(tenant, name));
    std::set<std::string> used;
    for (const auto& [key, g] : groups_) used.insert(g.address);
    std::string address;
    for (int host = 2; host < 255 && address.empty(); ++host) {
      const std::string a = Subnet(tenant) + "." + std::to_string(host);
      if (!used.count(a)) address = a;
    }
    if (address.empty()) {
      return Status::FailedPrecondition("the tenant's subnet " + Subnet(tenant) + ".0/24 is full");
    }
    const std::string id = Hex(std::hash<std::string>{}(group), 10);
    const std::string ns = PodNetnsPrefix(node_) + id, host_end = "alh" + id, pod_end = "alp" + id;
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
    it = groups_.emplace(group, Group{ns, address, tenant, {}, master_port}).first;
    if (master_port > 0) {
      if (Status r = WriteRules(); !r.ok()) {
        (void)Run({"ip", "netns", "del", ns});
        groups_.erase(it);
        return r;
      }
    }
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
  const bool master = it->second.master_port > 0;
  groups_.erase(it);
  if (master) (void)WriteRules();
}

std::string PodNetworks::AddressOf(const std::string& group) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = groups_.find(group);
  return it == groups_.end() ? "" : it->second.address;
}

proto::PodNetwork PodNetworks::Network() const {
  std::lock_guard<std::mutex> lock(mu_);
  proto::PodNetwork n;
  n.cidr = cidr_;
  for (const auto& [k, name] : bridges_) n.tenants[name] = Subnet(k) + ".0/24";
  return n;
}

void PodNetworks::SetPeers(const std::vector<proto::PodNetwork>& peers) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<proto::PodNetwork> usable;
  std::set<std::string> problems;
  for (proto::PodNetwork p : peers) {
    const std::string ip = ResolveIpv4(p.address);
    std::string why;
    if (ip.empty()) {
      why = "its address " + p.address + " does not resolve to an IPv4 address";
    } else if (proto::CidrsOverlap(p.cidr, cidr_)) {
      why = "its pod range " + p.cidr + " overlaps this node's " + cidr_ +
            " (give each node its own --pod-cidr)";
    }
    for (const proto::PodNetwork& u : usable) {
      if (why.empty() && proto::CidrsOverlap(p.cidr, u.cidr)) {
        why = "its pod range " + p.cidr + " overlaps node " + u.node + "'s";
      }
    }
    if (why.empty()) {
      p.address = ip;
      // The route first: a peer this host cannot reach directly is left out.
      if (Status s = RunIpBatch("", {"route replace " + p.cidr + " via " + ip + " proto " +
                                     kRouteProto});
          !s.ok()) {
        why = "no route to its pods through " + ip +
              " (nodes with tenant networks must share a network): " + s.message();
      }
    }
    if (!why.empty()) {
      problems.insert("allot agent: pods on node " + p.node + " are not reachable from this "
                      "node's tenant networks: " + why);
      continue;
    }
    usable.push_back(std::move(p));
  }
  // Routes to peers that went.
  std::vector<std::string> gone;
  for (const proto::PodNetwork& old : peers_) {
    if (std::none_of(usable.begin(), usable.end(),
                     [&](const proto::PodNetwork& u) { return u.cidr == old.cidr; })) {
      gone.push_back("route del " + old.cidr + " proto " + kRouteProto);
    }
  }
  for (const std::string& g : gone) (void)RunIpBatch("", {g});
  for (const std::string& p : problems) {
    if (!peer_problems_.count(p)) std::cerr << p << "\n";
  }
  peer_problems_ = std::move(problems);
  peers_ = std::move(usable);
  if (Status s = WriteRules(); !s.ok()) {
    std::cerr << "allot agent: the rules for peer nodes could not be written: " << s.message()
              << "\n";
  }
}

}  // namespace allot::agent
