// Node changes as the server makes them: in place in the scheduler
// (Scheduler::UpdateNode, RemoveNode, EvictWorkload) for a cordon, an
// uncordon, a drain, a replaced or removed node, and a restart (which
// rebuilds the scheduler from the store) decides the same. In process
// (server/harness.h): no forking, no sleeps.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "server/harness.h"
#include "testing/builders.h"

namespace allot::server {
namespace {

using allot::testing::Flavor;
using allot::testing::GpuCq;
using allot::testing::GpuNodes;
using allot::testing::Namespace;
using allot::testing::Wl;
using testing::Harness;

// The node a workload's first pod is placed on; "" when not admitted.
std::string NodeOf(const Harness& h, const std::string& key) {
  const WorkloadRecord* r = h.state().FindWorkload(key);
  if (r == nullptr || !r->spec.admission || r->finished()) return "";
  return r->spec.admission->pod_set_assignments.at(0).placements.at(0).node;
}

// Every workload's node, as one comparable map.
std::map<std::string, std::string> Placements(
    const Harness& h, const std::vector<std::string>& keys) {
  std::map<std::string, std::string> out;
  for (const std::string& k : keys) out[k] = NodeOf(h, k);
  return out;
}

Status NodeAction(Harness& h, const std::string& node,
                  const std::string& action) {
  Status s;
  h.Turn([&](State& st, Txn& txn) {
    s = st.NodeAction(Harness::kAdmin, node, action, &txn);
  });
  return s;
}

Status DeleteNode(Harness& h, const std::string& node, bool drain) {
  Status s;
  h.Turn([&](State& st, Txn& txn) {
    s = st.Delete(Harness::kAdmin, Kind::kNode, node, drain, &txn);
  });
  return s;
}

// Tenant t1 with queue q, and nodes n-0 and n-1 of 4 GPUs each.
std::string TwoNodes() {
  return Namespace("t1", "{}") + Flavor("f", "") +
         GpuCq("t1-cq", "", "f", "nominalQuota: 64") +
         GpuNodes("n", 2, "h100", 4);
}

TEST(NodeChangesInPlace, CordonDrainAndReplaceDecideAsARestartWould) {
  Harness h;
  ASSERT_TRUE(h.Apply(TwoNodes()).ok());
  std::vector<std::string> keys;
  for (const char* name : {"w1", "w2", "w3"}) {
    keys.push_back(std::string("t1/") + name);
    ASSERT_TRUE(h.Apply(Wl(keys.back()).Queue("q").Gpus(2)).ok());
  }
  // Six of eight GPUs held: one node has two free.
  std::map<std::string, int> used;
  for (const std::string& k : keys) {
    ASSERT_NE(NodeOf(h, k), "") << k;
    used[NodeOf(h, k)] += 2;
  }
  const std::string free_node = used["n-0"] == 4 ? "n-1" : "n-0";
  const std::string full_node = free_node == "n-0" ? "n-1" : "n-0";
  ASSERT_EQ(used[full_node], 4);

  // Cordoned, it keeps what runs there and takes nothing new.
  Status cordon = NodeAction(h, free_node, "cordon");
  ASSERT_TRUE(cordon.ok()) << cordon.ToString();
  keys.push_back("t1/w4");
  ASSERT_TRUE(h.Apply(Wl("t1/w4").Queue("q").Gpus(2)).ok());
  EXPECT_EQ(NodeOf(h, "t1/w4"), "");
  for (size_t i = 0; i < 3; ++i) EXPECT_NE(NodeOf(h, keys[i]), "") << keys[i];
  // Uncordoned, the waiting workload lands there.
  ASSERT_TRUE(NodeAction(h, free_node, "uncordon").ok());
  EXPECT_EQ(NodeOf(h, "t1/w4"), free_node);

  // A replacement that strands an admission is refused, with the drain
  // hint, and changes nothing.
  const auto before = Placements(h, keys);
  // n-0 with one GPU of its four (both nodes hold 4 GPUs of work now).
  Status s = h.Apply(GpuNodes("n", 1, "h100", 1));
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find("add ?drain=true"), std::string::npos)
      << s.ToString();
  EXPECT_EQ(Placements(h, keys), before);

  // Drained, its workloads go back to the queue; the other node is full.
  ASSERT_TRUE(NodeAction(h, free_node, "drain").ok());
  int waiting = 0;
  for (const std::string& k : keys) {
    if (NodeOf(h, k).empty()) {
      ++waiting;
      EXPECT_EQ(h.Reason(k, "Evicted"), "Drained") << k;
    } else {
      EXPECT_EQ(NodeOf(h, k), full_node) << k;
    }
  }
  EXPECT_EQ(waiting, 2);

  // A restart rebuilds the scheduler from the store: the same decisions.
  const auto in_place = Placements(h, keys);
  h.Restart(h.now() + 1000);
  h.Turn();
  EXPECT_EQ(Placements(h, keys), in_place);
  // And in place again after it: uncordoned, the drained node takes them.
  ASSERT_TRUE(NodeAction(h, free_node, "uncordon").ok());
  for (const std::string& k : keys) EXPECT_NE(NodeOf(h, k), "") << k;
}

TEST(NodeChangesInPlace, RemovingANodeNeedsDrainAndThenRequeuesItsWorkloads) {
  Harness h;
  ASSERT_TRUE(h.Apply(TwoNodes()).ok());
  ASSERT_TRUE(h.Apply(Wl("t1/big").Queue("q").Gpus(4)).ok());
  const std::string node = NodeOf(h, "t1/big");
  ASSERT_NE(node, "");
  Status s = DeleteNode(h, node, /*drain=*/false);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_EQ(NodeOf(h, "t1/big"), node);
  s = DeleteNode(h, node, /*drain=*/true);
  ASSERT_TRUE(s.ok()) << s.ToString();
  // Back in its queue, it runs on the node that is left.
  const std::string other = node == "n-0" ? "n-1" : "n-0";
  EXPECT_EQ(NodeOf(h, "t1/big"), other);
  h.Restart(h.now() + 1000);
  h.Turn();
  EXPECT_EQ(NodeOf(h, "t1/big"), other);
  EXPECT_FALSE(h.state().Exists(Kind::kNode, node));
}

}  // namespace
}  // namespace allot::server
