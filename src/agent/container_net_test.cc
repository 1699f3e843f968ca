// The isolation rules of per-tenant networks as text (IptablesRules): what
// the real runs in container_test.cc and server/agent_network_test.cc rely
// on, checked rule by rule without root.
#include "agent/container_net.h"

#include <gtest/gtest.h>

#include <string>

namespace allot::agent {
namespace {

size_t At(const std::string& text, const std::string& rule) {
  const size_t at = text.find(rule + "\n");
  EXPECT_NE(at, std::string::npos) << "missing: " << rule << "\n" << text;
  return at;
}

TEST(IptablesRulesTest, PeersOfATenantReachItsBridgeOnlyAndRankZeroAtTheNodesAddress) {
  NetRules r;
  r.cidr = "10.91.0.0/16";
  r.bridges = {{0, "team-a"}, {1, "team-b"}};
  r.masters.push_back({"team-a", "10.91.0.2", 29500});
  r.peers.push_back({"n2", "10.0.0.3", "10.92.0.0/16",
                     {{"team-a", "10.92.5.0/24"}, {"team-c", "10.92.6.0/24"}}});
  r.server_ip = "10.0.0.1";
  r.server_port = 8470;
  const std::string t = IptablesRules(r);
  // team-a's subnet on n2 into team-a's bridge; nothing of team-c's.
  const size_t peer = At(t, "-A ALLOT-FWD -s 10.92.5.0/24 -o allot0 -j ACCEPT");
  EXPECT_EQ(t.find("10.92.6.0/24"), std::string::npos) << t;
  EXPECT_EQ(t.find("-s 10.92.5.0/24 -o allot1"), std::string::npos) << t;
  // ...before everything else into pods is dropped.
  EXPECT_LT(peer, At(t, "-A ALLOT-FWD -o allot+ -j DROP"));
  EXPECT_LT(At(t, "-A ALLOT-FWD -i allot+ -d 10.0.0.1/32 -p tcp --dport 8470 -j DROP"),
            At(t, "-A ALLOT-FWD -i allot+ -j ACCEPT"));
  // n2's pods reach nothing on this host that they start.
  At(t, "-A ALLOT-IN -s 10.92.0.0/16 -m conntrack ! --ctstate ESTABLISHED,RELATED -j DROP");
  // Rank 0's port, for team-a's pods on n2 only.
  At(t, "-A ALLOT-DNAT -s 10.92.5.0/24 -p tcp -m addrtype --dst-type LOCAL --dport 29500 -j "
        "DNAT --to-destination 10.91.0.2:29500");
  // Not masqueraded to peers (the source says the tenant); elsewhere, yes.
  EXPECT_LT(At(t, "-A ALLOT-NAT -s 10.91.0.0/16 -d 10.92.0.0/16 -j RETURN"),
            At(t, "-A ALLOT-NAT -s 10.91.0.0/16 ! -d 10.91.0.0/16 -j MASQUERADE"));
  At(t, "-A ALLOT-NAT -s 10.91.0.0/16 -d 10.0.0.3/32 -j RETURN");
  // Each table's chains are declared (so rewritten whole) and committed.
  for (const char* chain : {":ALLOT-FWD - [0:0]", ":ALLOT-IN - [0:0]", ":ALLOT-NAT - [0:0]",
                            ":ALLOT-DNAT - [0:0]"}) {
    At(t, chain);
  }
}

TEST(IptablesRulesTest, WithoutPeersOnlyTheNodesOwnRules) {
  NetRules r;
  r.cidr = "10.88.0.0/16";
  r.bridges = {{3, "t"}};
  const std::string t = IptablesRules(r);
  At(t, "-A ALLOT-FWD -i allot3 -o allot3 -j ACCEPT");
  EXPECT_EQ(t.find("ALLOT-DNAT -s"), std::string::npos) << t;
  EXPECT_EQ(t.find("RETURN"), std::string::npos) << t;
  EXPECT_EQ(t.find("--dport"), std::string::npos) << t;
}

}  // namespace
}  // namespace allot::agent
