// A node's per-tenant pod network (`allot agent --network tenant`), as its
// agent reports it and as the server relays it to the other agents, which
// route to it (agent/container_net.h, docs/containers.md "Across nodes").
// Plain data, no I/O: the agent's executor interface uses it too.
#pragma once

#include <map>
#include <string>

namespace allot::proto {

struct PodNetwork {
  std::string node;     // Set by the server in a SyncAnswer's peers.
  std::string address;  // Likewise: the node's address (the agent's --address).
  std::string cidr;     // The node's pods' range, "10.91.0.0/16"; empty: none.
  // The tenants with pods on the node now, and each one's subnet there
  // ("team-a" -> "10.91.3.0/24"): a tenant's number differs between nodes.
  std::map<std::string, std::string> tenants;

  bool operator==(const PodNetwork&) const = default;
};

// Whether `cidr` is an IPv4 range "A.B.C.D/N", N from 8 to 30, with no host
// bits set. *base and *bits get its parts.
bool ParseIpv4Cidr(const std::string& cidr, unsigned* base = nullptr, int* bits = nullptr);
// Whether two valid ranges share an address.
bool CidrsOverlap(const std::string& a, const std::string& b);

}  // namespace allot::proto
