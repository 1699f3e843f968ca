// Pool nodes in process (docs/autoscaling.md): two nodes of an autoscaled
// pool, registered by their agents. Consolidation: a preemptible workload
// alone on one of them, beside room on the other, is moved off it after
// the pool's scaleDownDelay, and the emptied node is suspended; a
// workload that is not preemptible keeps its node. A node whose agent
// goes silent is given up after the pool's bootTimeout.
#include <gtest/gtest.h>

#include <boost/json/serialize.hpp>

#include <map>

#include "server/harness.h"
#include "testing/builders.h"

namespace allot::server::testing {
namespace {

namespace b = allot::testing;
constexpr int64_t kMin = 60 * 1000;

std::string Job(const std::string& name, int gpus, bool preemptible) {
  return "apiVersion: allot.dev/v1\nkind: Workload\nmetadata: {name: " + name +
         ", namespace: t1" +
         (preemptible ? ", annotations: {allot.dev/preemptible: \"true\"}" : "") +
         "}\nspec:\n  queueName: q\n"
         "  podSets: [{count: 1, template: {resources: {requests: {nvidia.com/gpu: " +
         std::to_string(gpus) + "}}}}]\n";
}

class ConsolidationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ctrl::Options slow;  // The agents sync when the test says.
    slow.node_timeout_ms = node_timeout_ms_;
    h_ = std::make_unique<Harness>(slow);
    ASSERT_TRUE(h_->Apply(b::Namespace("t1") +
                          b::FlavorSpec("pool", "{nodeLabels: {allot.dev/pool: p}}") + R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: pool, resources: [{name: nvidia.com/gpu, nominalQuota: 16}]}]
---
apiVersion: allot.dev/v1
kind: NodePool
metadata: {name: p}
spec:
  maxNodes: 2
  gpus: 8
  labels: {allot.dev/pool: p}
  provider: {type: exec, command: [/bin/true]}
  scaleDownDelay: 5m
---
)" + b::LocalQueue("t1", "q", "cq"))
                    .ok());
    // The provider's `list` (not run here): nothing is up.
    h_->Turn([](State& st, Txn& txn) {
      ProviderResult r;
      r.call.pool = "p";
      r.call.verb = "list";
      r.call.nodes = {"p-0", "p-1"};
      st.PoolCallDone(r, &txn);
    });
    for (const char* name : {"p-0", "p-1"}) {
      AgentReport r;
      r.node.name = name;
      r.node.cpu = Quantity::FromUnits(64);
      r.node.memory = Quantity::FromUnits(int64_t(512) << 30);
      for (int i = 0; i < 8; ++i) {
        core::Gpu g;
        g.uuid = std::string("GPU-") + name + "-" + std::to_string(i);
        g.product = "H100-80GB";
        g.memory = Quantity::FromUnits(int64_t(80) << 30);
        r.node.gpus.push_back(g);
      }
      r.address = name;
      ASSERT_TRUE(h_->Sync(r).ok());
      reports_[name] = r;
    }
  }
  // Submits `yaml` with only `node` open (the other cordoned meanwhile).
  void SubmitOn(const std::string& node, const std::string& yaml) {
    const std::string other = node == "p-0" ? "p-1" : "p-0";
    h_->Turn([&](State& st, Txn& txn) {
      ASSERT_TRUE(st.NodeAction(Harness::kAdmin, other, "cordon", &txn).ok());
    });
    ASSERT_TRUE(h_->Apply(yaml).ok());
    h_->Turn([&](State& st, Txn& txn) {
      ASSERT_TRUE(st.NodeAction(Harness::kAdmin, other, "uncordon", &txn).ok());
    });
  }
  std::string NodeOf(const std::string& key) {
    const WorkloadRecord* r = h_->state().FindWorkload(key);
    if (r == nullptr || !r->spec.admission) return "";
    return r->spec.admission->pod_set_assignments.at(0).placements.at(0).node;
  }
  bool Audited(const std::string& verb, const std::string& object) {
    for (const store::AuditRow& row : h_->AuditLog()) {
      if (row.principal == "controller:autoscaler" && row.verb == verb && row.object == object) {
        return true;
      }
    }
    return false;
  }

  int64_t node_timeout_ms_ = 24 * 60 * kMin;
  std::unique_ptr<Harness> h_;
  std::map<std::string, AgentReport> reports_;  // Heartbeats, no pods.
};

TEST_F(ConsolidationTest, PreemptibleWorkOnAnUnderusedNodeMovesAndTheNodeIsSuspended) {
  SubmitOn("p-0", Job("busy", 4, false));
  SubmitOn("p-1", Job("spot", 2, true));
  ASSERT_EQ(NodeOf("t1/busy"), "p-0");
  ASSERT_EQ(NodeOf("t1/spot"), "p-1");
  h_->Advance(4 * kMin);
  EXPECT_EQ(NodeOf("t1/spot"), "p-1") << "underused for 4 of the 5 minutes";
  h_->Advance(2 * kMin);
  // Moved beside the busy one; p-1 cordoned, then suspended (its provider
  // asked), the decision audited with its reason.
  EXPECT_EQ(NodeOf("t1/spot"), "p-0");
  EXPECT_EQ(h_->Reason("t1/spot", "Requeued"), "Consolidation");
  EXPECT_EQ(NodeOf("t1/busy"), "p-0");
  EXPECT_TRUE(Audited("consolidate", "NodePool p p-1"));
  EXPECT_TRUE(Audited("suspend-nodes", "NodePool p p-1"));
  // Its agent heartbeats until the machine stops: still suspending.
  ASSERT_TRUE(h_->Sync(reports_["p-1"]).ok());
  h_->Advance(kMin);
  auto pool = h_->state().Get(Harness::kAdminReader, Kind::kNodePool, "p");
  ASSERT_TRUE(pool.ok());
  EXPECT_EQ(pool->at("status").at("nodes").at("suspending").as_int64(), 1)
      << boost::json::serialize(*pool);
}

TEST_F(ConsolidationTest, WorkThatIsNotPreemptibleKeepsItsNode) {
  SubmitOn("p-0", Job("busy", 4, false));
  SubmitOn("p-1", Job("steady", 2, false));
  h_->Advance(20 * kMin);
  EXPECT_EQ(NodeOf("t1/steady"), "p-1");
  EXPECT_FALSE(Audited("consolidate", "NodePool p p-1"));
}

class LostNodeTest : public ConsolidationTest {
 protected:
  LostNodeTest() { node_timeout_ms_ = kMin; }
};

TEST_F(LostNodeTest, APoolNodeWhoseAgentGoesSilentIsGivenUpAfterItsBootTimeout) {
  SubmitOn("p-0", Job("busy", 4, false));
  auto suspending = [&] {
    auto pool = h_->state().Get(Harness::kAdminReader, Kind::kNodePool, "p");
    return pool.ok() ? pool->at("status").at("nodes").at("suspending").as_int64() : -1;
  };
  // Both agents silent: NotReady after a minute, the work back in its
  // queue; the nodes are kept for the 10 minutes of bootTimeout...
  h_->Advance(6 * kMin);
  EXPECT_EQ(h_->WorkloadState("t1/busy"), "Requeued");
  EXPECT_EQ(suspending(), 0);
  // ...then given up (their provider asked to stop them), so that their
  // slots can boot again for the work that waits.
  h_->Advance(6 * kMin);
  EXPECT_EQ(suspending(), 2);
  EXPECT_TRUE(Audited("suspend-nodes", "NodePool p p-0,p-1"));
}

}  // namespace
}  // namespace allot::server::testing
