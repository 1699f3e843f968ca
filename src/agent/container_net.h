// Per-tenant pod networks on a node (allot agent --network tenant): each
// tenant gets a bridge of its own (allotK, 10.88.K.1/24 of --pod-cidr
// 10.88.0.0/16, K its number on the node), and the pods of one workload
// on the node share one network namespace on it (so they reach each
// other on 127.0.0.1, as the containers of a Kubernetes pod do) with an
// address of the tenant's subnet. iptables rules (chains ALLOT-FWD,
// ALLOT-IN, ALLOT-NAT) keep tenants apart: traffic between tenants'
// subnets is dropped, pods reach nothing on the host itself (not the
// server's or the agent's ports), and reach the outside through NAT
// (forwarding is switched on, as Docker and Kubernetes need it).
//
// Across nodes: each node has a range of its own (--pod-cidr), and learns
// the others' (their ranges, addresses and tenants' subnets) from the
// server (SetPeers). It routes each peer's range through the peer's address
// (nodes on one network, as flannel's host-gw backend), lets a peer's
// subnet of tenant T into its own bridge of T only, and keeps a peer's pods
// off the host itself; traffic to peers is not masqueraded, so the source
// says the tenant. Torchrun's rendezvous: the node of a multi-node
// workload's rank 0 sends MASTER_ADDR:MASTER_PORT (its own address), when
// it comes from the tenant's subnets on peers, on to the workload's
// namespace (DNAT); the data connections (NCCL) go pod to pod.
//
// All the rules are rewritten at once (iptables-restore) whenever bridges,
// rank-0 namespaces or peers change. Thread-safe. Internal to src/agent
// (container.h uses it).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "core/status.h"
#include "proto/pod_network.h"

namespace allot::agent {

// Runs argv (PATH searched) with stdout and stderr as given (-1: ours) and
// waits: its exit status (128 + signal), or -1 when it could not start.
int RunTool(const std::vector<std::string>& argv, int out_fd = -1);

// The start of the names of node `node`'s pod namespaces ("allot-HHHH-"):
// an agent removes only its own at start.
std::string PodNetnsPrefix(const std::string& node);

// What the isolation rules are made of (PodNetworks's state).
struct NetRules {
  std::string cidr;                       // This node's, a /16.
  std::map<size_t, std::string> bridges;  // Tenant number -> name.
  struct Master {                         // A multi-node workload's rank 0.
    std::string tenant, address;
    int port = 0;
  };
  std::vector<Master> masters;
  std::vector<proto::PodNetwork> peers;   // Address: an IPv4 address.
  std::string server_ip;                  // Pods may not reach it...
  int server_port = 0;                    // ...on this port.
};
// The iptables-restore input (--noflush) that rewrites the chains ALLOT-FWD,
// ALLOT-IN (filter), ALLOT-NAT and ALLOT-DNAT (nat) for `r`.
std::string IptablesRules(const NetRules& r);

class PodNetworks {
 public:
  // `cidr`: a /16 ("10.88.0.0/16"); tenants number 0 to 255 in it. `node`:
  // this node's name (its namespaces' names say it). `server`: HOST:PORT of
  // the server, which pods may not reach (empty: not known).
  PodNetworks(std::string cidr, std::string node, std::string server = "")
      : cidr_(std::move(cidr)), node_(std::move(node)), server_(std::move(server)) {}
  // Removes the namespaces and bridges it made and its rules (the agent
  // stops its pods first).
  ~PodNetworks();
  // Removes what an earlier agent of this node left (its namespaces,
  // bridges allot*, routes to peers) and installs the isolation rules.
  // FailedPrecondition naming the command that failed (ip or iptables
  // missing, no CAP_NET_ADMIN).
  Status Init();
  // The network namespace of `group` (a workload's attempt) for tenant
  // `name`, number `tenant`: made with its address on first use, shared
  // after. `master_port` > 0: the group is a multi-node workload's rank 0
  // and its peers' pods reach it at this node's address on that port.
  // Returns its path (/var/run/netns/NAME).
  Result<std::string> Join(size_t tenant, const std::string& name, const std::string& group,
                           const std::string& pod, int master_port = 0);
  // `pod` leaves its group; the namespace goes with the group's last pod.
  void Leave(const std::string& pod);
  // The address of `group`'s namespace ("" when it has none).
  std::string AddressOf(const std::string& group) const;
  // This node's range and its tenants' subnets now (node and address
  // empty: the agent's report says them).
  proto::PodNetwork Network() const;
  // The other nodes' networks: routes to them and the rules letting each
  // tenant's peers in. A peer whose address does not resolve, whose range
  // overlaps this node's or an earlier peer's, or that is not on a network
  // this node shares is left out, and said so on stderr once.
  void SetPeers(const std::vector<proto::PodNetwork>& peers);

 private:
  struct Group {
    std::string netns;
    std::string address;
    size_t tenant = 0;
    std::set<std::string> pods;
    int master_port = 0;
  };
  std::string Subnet(size_t tenant) const;  // "10.88.K"
  Status EnsureBridge(size_t tenant, const std::string& name);  // mu_ held.
  Status WriteRules();  // mu_ held.

  const std::string cidr_;
  const std::string node_;
  const std::string server_;
  std::string server_ip_;  // server_'s, resolved at Init ("" if not).
  int server_port_ = 0;
  bool initialized_ = false;  // The rules are in.
  mutable std::mutex mu_;
  std::map<size_t, std::string> bridges_;    // Tenant number -> name. Guarded by mu_.
  std::vector<proto::PodNetwork> peers_;     // Routed to. Guarded by mu_.
  std::set<std::string> peer_problems_;      // Said once. Guarded by mu_.
  std::map<std::string, Group> groups_;      // Guarded by mu_.
  std::map<std::string, std::string> pod_group_;  // pod -> group. Guarded by mu_.
};

}  // namespace allot::agent
