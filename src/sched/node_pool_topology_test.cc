// NodePool's topology-aware placement (Kueue's TAS): required, preferred
// and unconstrained topology requests against a flavor's Topology.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sched/node_pool.h"
#include "sched/node_pool_test_util.h"

namespace allot::sched {
namespace {

using namespace node_pool_testing;  // NOLINT: test helpers.

constexpr char kBlock[] = "cloud.example.com/block";
constexpr char kRack[] = "cloud.example.com/rack";
constexpr char kHost[] = "kubernetes.io/hostname";

core::Topology ThreeLevels() { return {"dc", {kBlock, kRack, kHost}, {}}; }

core::ResourceFlavor TasFlavor(const std::string& topology = "dc") {
  core::ResourceFlavor f = Flavor("h100", {});
  f.topology_name = topology;
  return f;
}

// Two blocks of two racks of two 8-GPU nodes: b1/r1 = n1 n2, b1/r2 = n3 n4,
// b2/r3 = n5 n6, b2/r4 = n7 n8.
std::vector<core::Node> Cluster() {
  std::vector<core::Node> nodes;
  for (int i = 1; i <= 8; ++i) {
    nodes.push_back(NodeBuilder("n" + std::to_string(i))
                        .Gpus(8)
                        .Label(kBlock, i <= 4 ? "b1" : "b2")
                        .Label(kRack, "r" + std::to_string((i + 1) / 2))
                        .Build());
  }
  return nodes;
}

std::unique_ptr<NodePool> TasPool(std::vector<core::Node> nodes = Cluster(),
                                  core::ResourceFlavor flavor = TasFlavor()) {
  auto pool = std::make_unique<NodePool>(
      std::vector<core::ResourceFlavor>{std::move(flavor)},
      std::vector<core::Topology>{ThreeLevels()});
  for (const core::Node& n : nodes) EXPECT_TRUE(pool->AddNode(n).ok());
  return pool;
}

std::vector<PodSetRequest> Ask(int32_t pods, int32_t gpus,
                               const core::TopologyRequest* t) {
  PodSetRequest r = Req(pods).Gpus(gpus).Flavor(0);
  r.topology = t;
  return {r};
}

core::TopologyRequest Required(const char* level) { return {level, "", false}; }
core::TopologyRequest Preferred(const char* level) { return {"", level, false}; }

// Every pod of a required rack lands in one rack, and the rack chosen is
// the fullest one that still holds them (best fit): r2 has 2 GPUs taken,
// so 3 pods of 4 GPUs go there, not to the empty r1.
TEST(NodePoolTopology, RequiredRackIsTheTightestThatFits) {
  auto pool = TasPool();
  Occupy(*pool, 2, 2);  // n3
  core::TopologyRequest rack = Required(kRack);
  Placement p = FindAndCommit(*pool, Ask(3, 4, &rack));
  for (const std::string& n : NodesOf(*pool, p)) {
    EXPECT_TRUE(n == "n3" || n == "n4") << n;
  }
}

// A rack holds 16 GPUs: 3 pods of 8 cannot share one, so a required rack
// is refused with the domain that came closest, while a required block
// takes them.
TEST(NodePoolTopology, RequiredLevelThatNoDomainHoldsIsRefused) {
  auto pool = TasPool();
  core::TopologyRequest rack = Required(kRack);
  Placement p;
  std::string why;
  EXPECT_FALSE(pool->Find(Ask(3, 8, &rack), &p, &why));
  EXPECT_EQ(why, std::string("no ") + kRack +
                     " domain of topology dc has room for all 3 pods (most: 2 in r1)");
  core::TopologyRequest block = Required(kBlock);
  ASSERT_TRUE(pool->Find(Ask(3, 8, &block), &p, &why)) << why;
  for (const std::string& n : NodesOf(*pool, p)) {
    EXPECT_TRUE(n == "n1" || n == "n2" || n == "n3" || n == "n4") << n;
  }
}

// Preferred goes one level wider at a time: 3 pods of 8 prefer a host,
// then a rack, and land in one block; 7 pods of 8 fit in no block and
// spread across both.
TEST(NodePoolTopology, PreferredWidensLevelByLevel) {
  auto pool = TasPool();
  core::TopologyRequest host = Preferred(kHost);
  Placement p = FindAndCommit(*pool, Ask(3, 8, &host));
  std::vector<std::string> nodes = NodesOf(*pool, p);
  ASSERT_EQ(nodes.size(), 3u);
  for (const std::string& n : nodes) {
    EXPECT_TRUE(n == "n1" || n == "n2" || n == "n3" || n == "n4") << n;
  }
  auto fresh = TasPool();
  std::string why;
  ASSERT_TRUE(fresh->Find(Ask(7, 8, &host), &p, &why)) << why;
  EXPECT_EQ(p[0].size(), 7u);
}

// The hostname level is the node's name when the node has no such label,
// as the kubelet sets it: a required host puts both pods on one node.
TEST(NodePoolTopology, HostnameDefaultsToTheNodeName) {
  auto pool = TasPool();
  Occupy(*pool, 0, 6);  // n1 has 2 free.
  core::TopologyRequest host = Required(kHost);
  Placement p = FindAndCommit(*pool, Ask(2, 1, &host));
  EXPECT_EQ(NodesOf(*pool, p), (std::vector<std::string>{"n1", "n1"}));
}

// A node without a level's label is in no domain of it.
TEST(NodePoolTopology, NodesWithoutTheLevelLabelAreLeftOut) {
  std::vector<core::Node> nodes = Cluster();
  nodes.push_back(NodeBuilder("loose").Gpus(8).Build());
  auto pool = TasPool(nodes);
  for (NodeIdx n = 0; n < 8; ++n) Occupy(*pool, n, 8);
  core::TopologyRequest rack = Required(kRack);
  Placement p;
  std::string why;
  EXPECT_FALSE(pool->Find(Ask(1, 1, &rack), &p, &why));
  core::TopologyRequest none{"", "", true};
  EXPECT_TRUE(pool->Find(Ask(1, 1, &none), &p, &why)) << why;
}

TEST(NodePoolTopology, RequestsTheFlavorOrTopologyCannotMeetSayWhy) {
  Placement p;
  std::string why;
  core::TopologyRequest rack = Required(kRack);
  auto plain = TasPool(Cluster(), Flavor("h100", {}));
  EXPECT_FALSE(plain->Find(Ask(1, 1, &rack), &p, &why));
  EXPECT_EQ(why,
            "the pod set asks for topology-aware scheduling but flavor h100 "
            "has no topology (ResourceFlavor spec.topologyName)");
  auto missing = TasPool(Cluster(), TasFlavor("nope"));
  EXPECT_FALSE(missing->Find(Ask(1, 1, &rack), &p, &why));
  EXPECT_EQ(why, "flavor h100 names topology nope, which does not exist");
  auto pool = TasPool();
  core::TopologyRequest zone = Required("topology.kubernetes.io/zone");
  EXPECT_FALSE(pool->Find(Ask(1, 1, &zone), &p, &why));
  EXPECT_EQ(why, std::string("topology dc of flavor h100 has no level "
                             "topology.kubernetes.io/zone (levels: ") +
                     kBlock + ", " + kRack + ", " + kHost + ")");
}

// Two pod sets of one workload: the second sees what the first took in the
// same Find (both want a rack; only r1 is empty, and the first takes it).
TEST(NodePoolTopology, PodSetsOfOneFindShareTheScratch) {
  auto pool = TasPool();
  for (NodeIdx n = 2; n < 8; ++n) Occupy(*pool, n, 4);  // Only r1 is empty.
  core::TopologyRequest rack = Required(kRack);
  std::vector<PodSetRequest> both = Ask(2, 8, &rack);
  both.push_back(Ask(2, 4, &rack)[0]);
  Placement p = FindAndCommit(*pool, both);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(pool->NodeName(p[0][0].node), "n1");
  EXPECT_EQ(pool->NodeName(p[0][1].node), "n2");
  // r2, r3 and r4 each hold 2 pods of 4; the first of them wins the tie.
  EXPECT_EQ(pool->NodeName(p[1][0].node), "n3");
  EXPECT_EQ(pool->NodeName(p[1][1].node), "n4");
}

}  // namespace
}  // namespace allot::sched
