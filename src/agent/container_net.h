// Per-tenant pod networks on a node (allot agent --network tenant): each
// tenant gets a bridge of its own (allotK, 10.88.K.1/24 of --pod-cidr
// 10.88.0.0/16, K its number on the node), and the pods of one workload
// on the node share one network namespace on it (so they reach each
// other on 127.0.0.1, as the containers of a Kubernetes pod do) with an
// address of the tenant's subnet. iptables rules (chains ALLOT-FWD,
// ALLOT-IN, ALLOT-NAT) keep tenants apart: traffic between tenants'
// subnets is dropped, pods reach nothing on the host itself (not the
// server's or the agent's ports), and reach the outside through NAT.
//
// Thread-safe. Internal to src/agent (container.h uses it).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "core/status.h"

namespace allot::agent {

// Runs argv (PATH searched) with stdout and stderr as given (-1: ours) and
// waits: its exit status (128 + signal), or -1 when it could not start.
int RunTool(const std::vector<std::string>& argv, int out_fd = -1);

class PodNetworks {
 public:
  // `cidr`: a /16 ("10.88.0.0/16"); tenants number 0 to 255 in it.
  explicit PodNetworks(std::string cidr) : cidr_(std::move(cidr)) {}
  // Removes the namespaces and bridges it made and its rules (the agent
  // stops its pods first).
  ~PodNetworks();
  // Removes what an earlier agent left (namespaces allot-*, bridges
  // allot*) and installs the isolation rules. FailedPrecondition naming the
  // command that failed (ip or iptables missing, no CAP_NET_ADMIN).
  Status Init();
  // The network namespace of `group` (a workload's attempt) for tenant
  // number `tenant`: made with its address on first use, shared after.
  // Returns its path (/var/run/netns/NAME).
  Result<std::string> Join(size_t tenant, const std::string& group, const std::string& pod);
  // `pod` leaves its group; the namespace goes with the group's last pod.
  void Leave(const std::string& pod);
  // The address of `group`'s namespace ("" when it has none).
  std::string AddressOf(const std::string& group) const;

 private:
  struct Group {
    std::string netns;
    std::string address;
    size_t tenant = 0;
    std::set<std::string> pods;
  };
  std::string Subnet(size_t tenant) const;  // "10.88.K"
  Status EnsureBridge(size_t tenant);

  const std::string cidr_;
  bool initialized_ = false;  // The rules are in.
  mutable std::mutex mu_;
  std::set<size_t> bridges_;                 // Guarded by mu_.
  std::map<std::string, Group> groups_;      // Guarded by mu_.
  std::map<std::string, std::string> pod_group_;  // pod -> group. Guarded by mu_.
};

}  // namespace allot::agent
