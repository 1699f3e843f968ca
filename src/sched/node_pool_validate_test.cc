// Tests of NodePool: Validate, Commit/Release, AddNode and determinism.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "sched/node_pool.h"
#include "sched/node_pool_test_util.h"

namespace allot::sched {
namespace {

using namespace node_pool_testing;  // node_pool_test_util.h.

TEST(NodePoolValidate, CatchesBadPlacements) {
  // gpu-01 (flavor h100, 16 cpu): slot 7 is in use, slot 6 unhealthy;
  // slots 8.. are 1g.10gb slices. gpu-02 is an a100. The request: 2 pods
  // x 2 GPUs x 6 cpu on flavor h100.
  auto pool = MakePool(
      {NodeBuilder("gpu-01")
           .Gpus(8)
           .MigGpu({"1g.10gb"})
           .UnhealthyGpu(6)
           .Cpu("16")
           .Label("gpu", "h100")
           .Build(),
       NodeBuilder("gpu-02").Gpus(8).Label("gpu", "a100").Build(),
       NodeBuilder("gpu-03").Gpus(8).Label("gpu", "h100").Cordoned().Build()},
      {Flavor("h100", {{"gpu", "h100"}})});
  std::vector<PodSetRequest> one = Req(1).Gpus(1).Cpu("0").Memory("0");
  pool->Commit(one, {{PodAssignment{0, {7}}}});
  std::vector<PodSetRequest> req = Req(2).Gpus(2).Cpu("6").Flavor(0);
  std::vector<PodSetRequest> hungry = Req(2).Gpus(2).Cpu("10").Flavor(0);
  struct Case {
    const char* name;
    const std::vector<PodSetRequest>* req;
    Placement placement;
    const char* want;  // "" for OK.
    const char* field = "podSetAssignments[0].placements[1]";
  };
  std::vector<Case> cases = {
      {"valid", &req, {{{0, {0, 1}}, {0, {2, 3}}}}, ""},
      {"given twice",
       &req,
       {{{0, {0, 1}}, {0, {1, 2}}}},
       "GPU gpu-01-gpu1 on node gpu-01 is given twice"},
      {"missing node",
       &req,
       {{{0, {0, 1}}, {9, {0, 1}}}},
       "no node has index 9"},
      {"busy",
       &req,
       {{{0, {0, 1}}, {0, {7, 2}}}},
       "GPU gpu-01-gpu7 on node gpu-01 is already in use"},
      {"unhealthy",
       &req,
       {{{0, {0, 1}}, {0, {6, 2}}}},
       "GPU gpu-01-gpu6 on node gpu-01 is unhealthy"},
      {"too few",
       &req,
       {{{0, {0, 1}}, {0, {2}}}},
       "pod gets 1 nvidia.com/gpu on node gpu-01, it requests 2"},
      {"wrong resource",
       &req,
       {{{0, {0, 1}}, {0, {2, 8}}}},
       "MIG slice gpu-01-gpu8-mig0 on node gpu-01 is a "
       "nvidia.com/mig-1g.10gb, which the pod does not request"},
      {"no such slot",
       &req,
       {{{0, {0, 1}}, {0, {2, 42}}}},
       "node gpu-01 has no device slot 42"},
      {"flavor mismatch",
       &req,
       {{{0, {0, 1}}, {1, {0, 1}}}},
       "node gpu-02 does not match flavor h100"},
      // Validate checks placements that exist (restored admissions, a node
      // change): a cordon takes no pod away, so one there is valid.
      {"cordoned",
       &req,
       {{{0, {0, 1}}, {2, {0, 1}}}},
       ""},
      // 10 + 10 cpu on a 16-cpu node: each pod fits alone, not together.
      {"cpu adds up",
       &hungry,
       {{{0, {0, 1}}, {0, {2, 3}}}},
       "node gpu-01 has 16 free cpu, the pods placed there need 20"},
      {"pod count",
       &req,
       {{{0, {0, 1}}}},
       "pod set has 1 placements, expected 2",
       "podSetAssignments[0].placements"},
      {"pod set count",
       &req,
       {},
       "placement has 0 pod sets, the request has 1",
       ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Status s = pool->Validate(*c.req, c.placement);
    EXPECT_EQ(s.message(), c.want);
    if (!s.ok()) {
      EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
      EXPECT_EQ(s.field(), c.field);
    }
  }
}

TEST(NodePoolCommit, ThenReleaseRestoresFreeCounts) {
  // A 2x8 gang plus a 3-slice MIG pod, committed then released: every
  // device is free again and the same Find gives the same answer.
  auto pool = MakePool(
      {NodeBuilder("n0").Gpus(8).Build(), NodeBuilder("n1").Gpus(8).Build(),
       NodeBuilder("n2").MigGpu({"1g.10gb", "1g.10gb", "1g.10gb"}).Build()});
  std::vector<PodSetRequest> req = {Req(2).Gpus(8).Cpu("60").Memory("500Gi"),
                                    Req(1).Mig("1g.10gb", 3)};
  Placement before;
  std::string why;
  ASSERT_TRUE(pool->Find(req, &before, &why)) << why;
  pool->Commit(req, before);
  EXPECT_EQ(pool->FreeDevices(kGpuResource), 0);
  EXPECT_EQ(pool->FreeDevices("nvidia.com/mig-1g.10gb"), 0);
  Placement p;
  // cpu is taken too: a cpu-only pod of 8 cpu fits only on n2.
  ASSERT_TRUE(pool->Find(Req(1).Cpu("8"), &p, &why));
  EXPECT_EQ(NodesOf(*pool, p), std::vector<std::string>{"n2"});
  pool->Release(req, before);
  EXPECT_EQ(pool->FreeDevices(kGpuResource), 16);
  EXPECT_EQ(pool->FreeDevices("nvidia.com/mig-1g.10gb"), 3);
  ASSERT_TRUE(pool->Find(req, &p, &why));
  EXPECT_EQ(p, before);
}

TEST(NodePoolCommitDeathTest, DoubleCommitAndFreeReleaseAbort) {
  auto pool = MakePool({NodeBuilder("n0").Gpus(2).Build()});
  std::vector<PodSetRequest> req = Req(1).Gpus(1);
  Placement p = {{PodAssignment{0, {0}}}};
  EXPECT_DEATH(pool->Release(req, p), "CHECK failed");
  pool->Commit(req, p);
  EXPECT_DEATH(pool->Commit(req, p), "CHECK failed");
}

TEST(NodePoolAddNode, RejectsBadNodesAndChangesNothing) {
  // The pool holds n0 (GPU "n0-gpu0") and s (MIG-partitioned GPU "y" with
  // slice "x-mig0"). UUIDs are unique across GPUs and slices of the pool.
  core::Node sliced = NodeBuilder("s").Build();
  sliced.gpus.push_back(
      {"y", "A100", Q("40Gi"), true, {{"x-mig0", "1g.10gb"}}});
  core::Node slice_dup = NodeBuilder("n1").Build();
  slice_dup.gpus.push_back(
      {"z", "A100", Q("40Gi"), true, {{"x-mig0", "1g.10gb"}}});
  struct Case {
    const char* name;
    core::Node node;
    const char* want;
  };
  std::vector<Case> cases = {
      {"duplicate name", NodeBuilder("n0").Gpus(1).Build(),
       "node n0 already exists"},
      {"gpu uuid on another node",
       NodeBuilder("n1").Gpus(2).Uuid(1, "n0-gpu0").Build(),
       "GPU n0-gpu0 on node n1 is already in the pool"},
      {"gpu uuid twice on the node",
       NodeBuilder("n1").Gpus(2).Uuid(1, "n1-gpu0").Build(),
       "GPU n1-gpu0 on node n1 is already in the pool"},
      {"slice uuid on another node", slice_dup,
       "MIG slice x-mig0 on node n1 is already in the pool"},
      {"gpu uuid of a slice",
       NodeBuilder("n1").Gpus(1).Uuid(0, "x-mig0").Build(),
       "GPU x-mig0 on node n1 is already in the pool"},
      {"uuid of a partitioned gpu",
       NodeBuilder("n1").Gpus(1).Uuid(0, "y").Build(),
       "GPU y on node n1 is already in the pool"},
      {"negative cpu", NodeBuilder("n1").Cpu("-1").Build(),
       "node n1 has negative cpu or memory"},
      {"negative memory", NodeBuilder("n1").Memory("-1Gi").Build(),
       "node n1 has negative cpu or memory"},
      {"empty uuid", NodeBuilder("n1").Gpus(1).Uuid(0, "").Build(),
       "GPU on node n1 has no UUID"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto pool = MakePool({NodeBuilder("n0").Gpus(1).Build(), sliced});
    Status s = pool->AddNode(c.node);
    EXPECT_EQ(s.message(), c.want);
    EXPECT_EQ(pool->NodeCount(), 2);
    EXPECT_EQ(pool->FindNode("n1"), std::nullopt);
    EXPECT_EQ(pool->FreeDevices(kGpuResource), 1);
    // Nothing of the rejected node was kept: its UUIDs are still unused.
    Status again =
        pool->AddNode(NodeBuilder("n9").Gpus(2).Uuid(0, "n1-gpu0").Build());
    EXPECT_TRUE(again.ok()) << again.ToString();
    EXPECT_EQ(pool->FindNode("n9"), 2);
  }
}

TEST(NodePoolDeterminism, SameCallsGiveSameAnswers) {
  // Two pools fed the same calls give identical placements; Find without
  // Commit repeats itself.
  auto build = [] {
    std::vector<core::Node> nodes;
    for (int i = 0; i < 20; ++i) {
      nodes.push_back(NodeBuilder("n" + std::to_string(i))
                          .Gpus(i % 3 == 0 ? 4 : 8)
                          .Rack("r" + std::to_string(i % 4))
                          .Build());
    }
    return MakePool(nodes);
  };
  auto a = build(), b = build();
  std::mt19937 rng(7);
  for (int step = 0; step < 200; ++step) {
    std::vector<PodSetRequest> req = Req(1 + rng() % 3).Gpus(1 << (rng() % 4));
    Placement pa, pa2, pb;
    std::string wa, wb;
    bool oka = a->Find(req, &pa, &wa);
    ASSERT_EQ(a->Find(req, &pa2, &wa), oka);
    ASSERT_EQ(b->Find(req, &pb, &wb), oka);
    EXPECT_EQ(pa, pa2);
    EXPECT_EQ(pa, pb);
    if (oka) {
      a->Commit(req, pa);
      b->Commit(req, pb);
    }
  }
}

}  // namespace
}  // namespace allot::sched
