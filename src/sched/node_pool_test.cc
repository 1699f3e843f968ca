// Tests of NodePool::Find: best fit, gangs, MIG, health, flavors, resources.
#include "sched/node_pool.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sched/node_pool_test_util.h"

namespace allot::sched {
namespace {

using namespace node_pool_testing;  // node_pool_test_util.h.

TEST(NodePoolBestFit, PicksFewestFreeThatFitTiesByInsertionOrder) {
  struct Case {
    const char* name;
    std::vector<int32_t> free;  // Free GPUs per node (8 each in total).
    int32_t gpus;
    const char* want;
  };
  std::vector<Case> cases = {
      // The 3-free node fits 2 and has the fewest free: both 8-GPU nodes
      // stay whole for 8-GPU jobs.
      {"keeps whole nodes free", {8, 8, 3}, 2, "n2"},
      // 3 free is too few for 4; the two 8s tie, the first added wins.
      {"skips too small", {8, 8, 3}, 4, "n0"},
      // Both 2s fit exactly; insertion order breaks the tie.
      {"tie", {1, 2, 2}, 2, "n1"},
      // 6 is the tightest fit for 5.
      {"tightest", {8, 4, 6}, 5, "n2"},
      {"whole node", {8, 8, 8}, 8, "n0"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<core::Node> nodes;
    for (size_t i = 0; i < c.free.size(); ++i) {
      nodes.push_back(NodeBuilder("n" + std::to_string(i)).Gpus(8).Build());
    }
    auto pool = MakePool(nodes);
    for (size_t i = 0; i < c.free.size(); ++i) {
      Occupy(*pool, static_cast<NodeIdx>(i), 8 - c.free[i]);
    }
    Placement p;
    std::string why;
    ASSERT_TRUE(pool->Find(Req(1).Gpus(c.gpus), &p, &why)) << why;
    EXPECT_EQ(NodesOf(*pool, p), std::vector<std::string>{c.want});
  }
}

TEST(NodePoolBestFit, TakesLowestFreeSlots) {
  // Slots 0-2 are busy, so a 2-GPU pod gets 3 and 4; after releasing slot
  // 1, the next 1-GPU pod gets 1 (lowest free), not 5.
  auto pool = MakePool({NodeBuilder("n0").Gpus(8).Build()});
  Occupy(*pool, 0, 3);
  Placement p = FindAndCommit(*pool, Req(1).Gpus(2));
  EXPECT_EQ(p[0][0].devices, (std::vector<int32_t>{3, 4}));
  std::vector<PodSetRequest> one = Req(1).Gpus(1).Cpu("0").Memory("0");
  pool->Release(one, {{PodAssignment{0, {1}}}});
  p = FindAndCommit(*pool, Req(1).Gpus(1));
  EXPECT_EQ(p[0][0].devices, (std::vector<int32_t>{1}));
}

TEST(NodePoolBestFit, TiesFollowTopologyOrder) {
  // Blocks and racks are numbered in first-seen order (a rack within its
  // block): b1=0, b2=1; b1/rA=0, b2/rB=1, b1/rC=2; unlabelled nodes last.
  // Ranks: n0 (0,0), n1 (1,1), n2 (0,2), n3 (unset), n4 (0,0). So 8-GPU
  // pods, which tie on fit, fill n0, n4, n2, n1, n3.
  auto pool =
      MakePool({NodeBuilder("n0").Gpus(8).Block("b1").Rack("rA").Build(),
                NodeBuilder("n1").Gpus(8).Block("b2").Rack("rB").Build(),
                NodeBuilder("n2").Gpus(8).Block("b1").Rack("rC").Build(),
                NodeBuilder("n3").Gpus(8).Build(),
                NodeBuilder("n4").Gpus(8).Block("b1").Rack("rA").Build()});
  std::vector<std::string> order;
  for (int i = 0; i < 5; ++i) {
    Placement p = FindAndCommit(*pool, Req(1).Gpus(8));
    order.push_back(NodesOf(*pool, p).at(0));
  }
  EXPECT_EQ(order, (std::vector<std::string>{"n0", "n4", "n2", "n1", "n3"}));
}

TEST(NodePoolGang, FourFullNodesComeFromOneRack) {
  // Racks alternate in insertion order (a0 r1, a1 r2, a2 r1, ...). A 4x8
  // gang needs 4 empty nodes; r1 has exactly 4, so the gang takes r1's
  // nodes rather than the first 4 added.
  std::vector<core::Node> nodes;
  for (int i = 0; i < 8; ++i) {
    nodes.push_back(NodeBuilder("a" + std::to_string(i))
                        .Gpus(8)
                        .Rack(i % 2 ? "r2" : "r1")
                        .Build());
  }
  auto pool = MakePool(nodes);
  Placement p = FindAndCommit(*pool, Req(4).Gpus(8));
  EXPECT_EQ(NodesOf(*pool, p),
            (std::vector<std::string>{"a0", "a2", "a4", "a6"}));
  for (const PodAssignment& pod : p[0]) EXPECT_EQ(pod.devices.size(), 8u);
}

TEST(NodePoolGang, PrefersTheRackThatHoldsItAll) {
  // r1 (added first) has 3 empty nodes, r2 has 4: only r2 holds the whole
  // 4x8 gang, so it goes there, not to r1's 3 nodes plus one of r2.
  // Then r2 is full, so a 2x8 gang goes to r1.
  std::vector<core::Node> nodes;
  for (int i = 0; i < 3; ++i) {
    nodes.push_back(
        NodeBuilder("r1-" + std::to_string(i)).Gpus(8).Rack("r1").Build());
  }
  for (int i = 0; i < 4; ++i) {
    nodes.push_back(
        NodeBuilder("r2-" + std::to_string(i)).Gpus(8).Rack("r2").Build());
  }
  auto pool = MakePool(nodes);
  Placement p = FindAndCommit(*pool, Req(4).Gpus(8));
  EXPECT_EQ(NodesOf(*pool, p),
            (std::vector<std::string>{"r2-0", "r2-1", "r2-2", "r2-3"}));
  p = FindAndCommit(*pool, Req(2).Gpus(8));
  EXPECT_EQ(NodesOf(*pool, p), (std::vector<std::string>{"r1-0", "r1-1"}));
}

TEST(NodePoolGang, FallsBackToTheFirstBlockThatHoldsIt) {
  // No rack holds a 3x8 gang (every rack has 1 or 2 empty nodes). Block b0
  // (first in rank order) has room for 2 pods, b1 for 4: the gang goes to
  // b1, in rank order (rack z: b1-0, b1-2; then rack w: b1-1), rather than
  // to the first 3 empty nodes (b0-0, b0-1, b1-0).
  auto pool = MakePool({
      NodeBuilder("b0-0").Gpus(8).Block("b0").Rack("x").Build(),
      NodeBuilder("b0-1").Gpus(8).Block("b0").Rack("y").Build(),
      NodeBuilder("b1-0").Gpus(8).Block("b1").Rack("z").Build(),
      NodeBuilder("b1-1").Gpus(8).Block("b1").Rack("w").Build(),
      NodeBuilder("b1-2").Gpus(8).Block("b1").Rack("z").Build(),
      NodeBuilder("b1-3").Gpus(8).Block("b1").Rack("w").Build(),
  });
  Placement p = FindAndCommit(*pool, Req(3).Gpus(8));
  EXPECT_EQ(NodesOf(*pool, p),
            (std::vector<std::string>{"b1-0", "b1-2", "b1-1"}));
  // No block holds 3 more (b0: 2, b1: 1): the whole pool is used, fullest
  // first in rank order.
  p = FindAndCommit(*pool, Req(3).Gpus(8));
  EXPECT_EQ(NodesOf(*pool, p),
            (std::vector<std::string>{"b0-0", "b0-1", "b1-3"}));
}

TEST(NodePoolGang, FillsRoomiestNodesThenBestFitsTheRest) {
  // 3 pods x 4 GPUs with free 8, 8, 2, 5: no node holds 3 pods. n0 takes
  // 2 (its room), then 1 pod is left: n1 (8 free) and n3 (5 free) both
  // hold it; n3 is the tighter fit. 2 nodes is the minimum.
  auto pool = MakePool(
      {NodeBuilder("n0").Gpus(8).Build(), NodeBuilder("n1").Gpus(8).Build(),
       NodeBuilder("n2").Gpus(8).Build(), NodeBuilder("n3").Gpus(8).Build()});
  Occupy(*pool, 2, 6);
  Occupy(*pool, 3, 3);
  Placement p = FindAndCommit(*pool, Req(3).Gpus(4));
  EXPECT_EQ(NodesOf(*pool, p), (std::vector<std::string>{"n0", "n0", "n3"}));
  EXPECT_EQ(p[0][0].devices, (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(p[0][1].devices, (std::vector<int32_t>{4, 5, 6, 7}));
  EXPECT_EQ(p[0][2].devices, (std::vector<int32_t>{3, 4, 5, 6}));
}

TEST(NodePoolGang, ThatCannotFullyFitChangesNothing) {
  // 3 empty nodes hold 3 of the 4 pods: all or nothing, so Find fails and
  // the pool is as before.
  auto pool = MakePool({NodeBuilder("n0").Gpus(8).Build(),
                        NodeBuilder("n1").Gpus(8).Build(),
                        NodeBuilder("n2").Gpus(8).Build()});
  Placement p = {{PodAssignment{0, {0}}}};
  std::string why;
  EXPECT_FALSE(pool->Find(Req(4).Gpus(8), &p, &why));
  EXPECT_TRUE(p.empty());
  EXPECT_EQ(why,
            "3 of 4 pods fit; no schedulable node has 8 more free "
            "nvidia.com/gpu (none left)");
  EXPECT_EQ(pool->FreeDevices(kGpuResource), 24);
  for (NodeIdx n = 0; n < 3; ++n) {
    for (int32_t s = 0; s < 8; ++s) EXPECT_TRUE(pool->DeviceFree(n, s));
  }
  // A 3x8 gang still fits everywhere.
  EXPECT_TRUE(pool->Find(Req(3).Gpus(8), &p, &why)) << why;
}

TEST(NodePoolGang, PodSetsOfOneRequestShareScratchState) {
  // Two pod sets of 1x4 GPUs on one 8-GPU node: the second set sees the
  // first set's GPUs as taken and gets slots 4-7.
  auto pool = MakePool({NodeBuilder("n0").Gpus(8).Build()});
  std::vector<PodSetRequest> req = {Req(1).Gpus(4), Req(1).Gpus(4)};
  Placement p = FindAndCommit(*pool, req);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0][0].devices, (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(p[1][0].devices, (std::vector<int32_t>{4, 5, 6, 7}));
  // Set 0 takes all 8 GPUs, set 1 needs none, set 2 finds none left: all
  // or nothing across sets, so nothing is placed.
  pool->Release(req, p);
  std::vector<PodSetRequest> three = {Req(1).Gpus(8), Req(1).Cpu("1"),
                                      Req(1).Gpus(1)};
  std::string why;
  EXPECT_FALSE(pool->Find(three, &p, &why));
  EXPECT_EQ(why,
            "pod set 2: no schedulable node has 1 more free nvidia.com/gpu "
            "(none left)");
  EXPECT_EQ(pool->FreeDevices(kGpuResource), 8);
}

TEST(NodePoolMig, SlicesAreConsumedByProfileAndNotAsWholeGpus) {
  // n0: GPU 0 whole (slot 0), GPU 1 in slices 1g,1g,1g,3g (slots 1-4).
  // nvidia.com/gpu counts only GPU 0; a 2-GPU pod cannot use GPU 1.
  auto pool =
      MakePool({NodeBuilder("n0")
                    .Gpus(1)
                    .MigGpu({"1g.10gb", "1g.10gb", "1g.10gb", "3g.40gb"})
                    .Build()});
  EXPECT_EQ(pool->DeviceCount(0), 5);
  EXPECT_EQ(pool->DeviceResource(0, 0), "nvidia.com/gpu");
  EXPECT_EQ(pool->DeviceResource(0, 1), "nvidia.com/mig-1g.10gb");
  EXPECT_EQ(pool->DeviceUuid(0, 4), "n0-gpu1-mig3");
  EXPECT_EQ(pool->FindDevice(0, "n0-gpu1-mig2"), 3);
  EXPECT_EQ(pool->FindDevice(0, "n0-gpu1"), std::nullopt);
  EXPECT_EQ(pool->FreeDevices("nvidia.com/gpu"), 1);
  EXPECT_EQ(pool->FreeDevices("nvidia.com/mig-1g.10gb"), 3);

  Placement p = FindAndCommit(*pool, Req(1).Mig("1g.10gb", 2));
  EXPECT_EQ(p[0][0].devices, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(pool->FreeDevices("nvidia.com/mig-1g.10gb"), 1);
  p = FindAndCommit(*pool, Req(1).Mig("3g.40gb", 1).Gpus(1));
  EXPECT_EQ(p[0][0].devices, (std::vector<int32_t>{0, 4}));

  std::string why;
  EXPECT_FALSE(pool->Find(Req(1).Gpus(2), &p, &why));
  EXPECT_EQ(why,
            "no schedulable node has 2 free nvidia.com/gpu (all are in use "
            "or unhealthy)");
  EXPECT_FALSE(pool->Find(Req(1).Mig("7g.80gb", 1), &p, &why));
  EXPECT_EQ(why,
            "no schedulable node has 1 free nvidia.com/mig-7g.80gb (no node "
            "has any)");
}

TEST(NodePoolHealth, UnhealthyGpusAndCordonedNodesAreNotOffered) {
  // n0 has 8 GPUs, GPU 1 unhealthy from the start: an 8-GPU pod must go to
  // n1. Once n1 is cordoned, nothing holds 8.
  auto pool = MakePool({NodeBuilder("n0").Gpus(8).UnhealthyGpu(1).Build(),
                        NodeBuilder("n1").Gpus(8).Build()});
  EXPECT_EQ(pool->FreeDevices(kGpuResource), 15);
  Placement p;
  std::string why;
  ASSERT_TRUE(pool->Find(Req(1).Gpus(8), &p, &why));
  EXPECT_EQ(NodesOf(*pool, p), std::vector<std::string>{"n1"});
  // The 7-GPU pod fits n0 exactly, skipping slot 1.
  ASSERT_TRUE(pool->Find(Req(1).Gpus(7), &p, &why));
  EXPECT_EQ(p[0][0], (PodAssignment{0, {0, 2, 3, 4, 5, 6, 7}}));

  pool->SetUnschedulable(1, true);
  EXPECT_EQ(pool->FreeDevices(kGpuResource), 7);
  EXPECT_FALSE(pool->Find(Req(1).Gpus(8), &p, &why));
  EXPECT_EQ(why,
            "no schedulable node has 8 free nvidia.com/gpu (largest free "
            "block: 7 on node n0)");
  pool->SetDeviceHealthy(0, 1, true);
  EXPECT_TRUE(pool->Find(Req(1).Gpus(8), &p, &why)) << why;
  EXPECT_EQ(NodesOf(*pool, p), std::vector<std::string>{"n0"});
  pool->SetUnschedulable(0, true);
  EXPECT_FALSE(pool->Find(Req(1).Gpus(1), &p, &why));
  EXPECT_EQ(why, "all 2 nodes are cordoned");
  pool->SetUnschedulable(1, false);
  EXPECT_EQ(pool->FreeDevices(kGpuResource), 8);
}

TEST(NodePoolHealth, HeldDeviceThatTurnsUnhealthyIsKeptThenNotOffered) {
  // A pod holds GPU 0 when it fails: the pod keeps it (still not free);
  // after release it is free but not offered until healthy again.
  auto pool = MakePool({NodeBuilder("n0").Gpus(2).Build()});
  std::vector<PodSetRequest> req = Req(1).Gpus(1);
  Placement p = FindAndCommit(*pool, req);
  pool->SetDeviceHealthy(0, 0, false);
  EXPECT_FALSE(pool->DeviceFree(0, 0));
  EXPECT_EQ(pool->FreeDevices(kGpuResource), 1);
  pool->Release(req, p);
  EXPECT_TRUE(pool->DeviceFree(0, 0));
  EXPECT_EQ(pool->FreeDevices(kGpuResource), 1);
  EXPECT_EQ(pool->Validate(req, p).message(),
            "GPU n0-gpu0 on node n0 is unhealthy");
  pool->SetDeviceHealthy(0, 0, true);
  EXPECT_EQ(pool->FreeDevices(kGpuResource), 2);
}

TEST(NodePoolFlavors, LabelsTaintsTolerationsAndSelectorsAreHonored) {
  // Flavors: 0 h100 (gpu=h100), 1 a100 (gpu=a100), 2 h100-dedicated
  // (gpu=h100, tolerates dedicated=ml), 3 spot (no labels, nodeTaint
  // spot=true that pods must tolerate).
  // Nodes, in rank order: h2 (h100, zone b, tainted dedicated=ml),
  // h1 (h100, zone a), a1 (a100, zone a).
  std::vector<core::ResourceFlavor> flavors = {
      Flavor("h100", {{"gpu", "h100"}}), Flavor("a100", {{"gpu", "a100"}}),
      Flavor("h100-dedicated", {{"gpu", "h100"}}), Flavor("spot", {})};
  flavors[2].tolerations.push_back(
      {"dedicated", core::TolerationOperator::kEqual, "ml", std::nullopt});
  flavors[3].node_taints.push_back(
      {"spot", "true", core::TaintEffect::kNoSchedule});
  auto pool = MakePool({NodeBuilder("h2")
                            .Gpus(8)
                            .Label("gpu", "h100")
                            .Label("zone", "b")
                            .Taint("dedicated", "ml")
                            .Build(),
                        NodeBuilder("h1")
                            .Gpus(8)
                            .Label("gpu", "h100")
                            .Label("zone", "a")
                            .Build(),
                        NodeBuilder("a1")
                            .Gpus(8)
                            .Label("gpu", "a100")
                            .Label("zone", "a")
                            .Build()},
                       flavors);
  const core::Labels zone_a = {{"zone", "a"}}, zone_b = {{"zone", "b"}},
                     zone_c = {{"zone", "c"}};
  const std::vector<core::Toleration> ml = {
      {"dedicated", core::TolerationOperator::kExists, "", std::nullopt}};
  const std::vector<core::Toleration> spot = {
      {"spot", core::TolerationOperator::kEqual, "true", std::nullopt}};
  struct Case {
    const char* name;
    PodSetRequest req;
    const char* want;  // A node name, or the failure reason.
  };
  std::vector<Case> cases = {
      // h2 comes first but its taint is not tolerated.
      {"taint skips node", Req(1).Gpus(1).Flavor(0), "h1"},
      // The pod tolerates the taint: h2 is first in rank order.
      {"pod toleration", Req(1).Gpus(1).Flavor(0).Tolerations(&ml), "h2"},
      // The flavor's tolerations count too.
      {"flavor toleration", Req(1).Gpus(1).Flavor(2), "h2"},
      {"other flavor", Req(1).Gpus(1).Flavor(1), "a1"},
      {"selector", Req(1).Gpus(1).Selector(&zone_a), "h1"},
      {"flavor and selector", Req(1).Gpus(1).Flavor(1).Selector(&zone_a), "a1"},
      {"selector matches nothing", Req(1).Gpus(1).Flavor(0).Selector(&zone_c),
       "no node matches flavor h100 and node selector {zone: c}"},
      {"only a tainted node matches",
       Req(1).Gpus(1).Flavor(0).Selector(&zone_b),
       "no schedulable node matching flavor h100 and node selector {zone: b} "
       "tolerates its taints (node h2 has taint dedicated=ml:NoSchedule)"},
      // h2 (tainted) does not count towards the largest block.
      {"too many gpus", Req(1).Gpus(9).Flavor(0),
       "no schedulable node has 9 free nvidia.com/gpu for flavor h100 "
       "(largest free block: 8 on node h1)"},
      {"two flavors must both match", Req(1).Gpus(1).Flavor(0).Flavor(1),
       "no node matches flavors h100, a100"},
      {"flavor node taint not tolerated", Req(1).Gpus(1).Flavor(3),
       "the pod set does not tolerate taint spot=true:NoSchedule of flavor "
       "spot"},
      // Flavor 3 has no labels: every node matches; h2 is still tainted.
      {"flavor node taint tolerated",
       Req(1).Gpus(1).Flavor(3).Tolerations(&spot), "h1"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Placement p;
    std::string why;
    if (pool->Find({c.req}, &p, &why)) {
      EXPECT_EQ(NodesOf(*pool, p).at(0), c.want);
      EXPECT_TRUE(pool->Validate({c.req}, p).ok());
    } else {
      EXPECT_EQ(why, c.want);
    }
  }
}

TEST(NodePoolResources, CpuAndMemoryLimitPlacement) {
  // small: 8 GPUs, 16 cpu, 64Gi; big: 8 GPUs, 128 cpu, 1Ti; cpu-0: no GPUs,
  // 32 cpu. GPUs tie between small and big, so small (first) wins unless
  // its cpu/memory is short.
  auto pool =
      MakePool({NodeBuilder("small").Gpus(8).Cpu("16").Memory("64Gi").Build(),
                NodeBuilder("big").Gpus(8).Cpu("128").Memory("1Ti").Build(),
                NodeBuilder("cpu-0").Cpu("32").Memory("128Gi").Build()});
  struct Case {
    const char* name;
    PodSetRequest req;
    std::vector<std::string> want;  // Node per pod; empty: fails with why.
    const char* why = "";
  };
  std::vector<Case> cases = {
      {"fits small", Req(1).Gpus(1).Cpu("16"), {"small"}},
      {"cpu too big for small", Req(1).Gpus(1).Cpu("32"), {"big"}},
      {"memory too big for small", Req(1).Gpus(1).Memory("100Gi"), {"big"}},
      // small has room for 1 pod of 10 cpu, big for 2: big holds both.
      {"gang by cpu", Req(2).Gpus(4).Cpu("10"), {"big", "big"}},
      // 3 pods of 3 GPUs: big has room for 2 (GPUs), small for 1 (cpu).
      // Nobody holds 3: big takes 2, small the last one.
      {"gang spread by cpu", Req(3).Gpus(3).Cpu("10"), {"big", "big", "small"}},
      {"cpu nowhere",
       Req(1).Gpus(1).Cpu("200"),
       {},
       "no node with 1 free nvidia.com/gpu has 200 free cpu (most: 128 on "
       "node big)"},
      {"memory nowhere",
       Req(1).Gpus(1).Memory("2Ti"),
       {},
       "no node with 1 free nvidia.com/gpu has 2Ti free memory (most: 1Ti "
       "on node big)"},
      {"big for cpu and memory",
       Req(1).Gpus(1).Cpu("100").Memory("1Ti"),
       {"big"}},
      // A CPU-only pod goes to the node with the fewest free devices.
      {"cpu only prefers gpu-less node", Req(1).Cpu("8"), {"cpu-0"}},
      {"cpu only too big",
       Req(1).Cpu("500"),
       {},
       "no schedulable node has 500 free cpu (most: 128 on node big)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Placement p;
    std::string why;
    bool ok = pool->Find({c.req}, &p, &why);
    EXPECT_EQ(ok, !c.want.empty()) << why;
    if (ok) {
      EXPECT_EQ(NodesOf(*pool, p), c.want);
    } else {
      EXPECT_EQ(why, c.why);
    }
  }
}

TEST(NodePoolResources, CpuExhaustionNamesTheShortResource) {
  // Both GPUs are free but the 4 cpu are taken by a cpu-only pod: the
  // reason names cpu, not GPUs.
  auto pool =
      MakePool({NodeBuilder("n0").Gpus(2).Cpu("4").Memory("8Gi").Build()});
  FindAndCommit(*pool, Req(1).Cpu("3").Memory("1Gi"));
  Placement p;
  std::string why;
  EXPECT_FALSE(pool->Find(Req(1).Gpus(1).Cpu("2"), &p, &why));
  EXPECT_EQ(why,
            "no node with 1 free nvidia.com/gpu has 2 free cpu (most: 1 "
            "on node n0)");
  EXPECT_FALSE(pool->Find(Req(1).Gpus(1).Cpu("1").Memory("8Gi"), &p, &why));
  EXPECT_EQ(why,
            "no node with 1 free nvidia.com/gpu has 8Gi free memory "
            "(most: 7Gi on node n0)");
}

// A pod set with an image goes to a node that runs images: a container
// node, a process node that ignores images (--ignore-images), or a node
// no agent labelled; never to a plain process node, and the reason says so.
TEST(NodePoolImages, PodSetsWithAnImageSkipProcessNodes) {
  auto process = [](const std::string& name) {
    return NodeBuilder(name).Gpus(8).Label(core::kRuntimeLabel, "process");
  };
  auto pool = MakePool({process("p0").Build(),
                        NodeBuilder("c0").Gpus(8).Label(core::kRuntimeLabel, "container").Build(),
                        process("i0").Label(core::kIgnoreImagesLabel, "true").Build()});
  Occupy(*pool, 1, 4);  // Best fit would pick c0 for 4 GPUs.
  Placement p;
  std::string why;
  ASSERT_TRUE(pool->Find(Req(1).Gpus(4).Image(), &p, &why)) << why;
  EXPECT_EQ(NodesOf(*pool, p), std::vector<std::string>{"c0"});
  ASSERT_TRUE(pool->Find(Req(1).Gpus(8).Image(), &p, &why)) << why;
  EXPECT_EQ(NodesOf(*pool, p), std::vector<std::string>{"i0"});
  ASSERT_TRUE(pool->Find(Req(2).Gpus(8), &p, &why)) << why;  // No image: anywhere.

  auto only_process = MakePool({process("p0").Build(), process("p1").Build()});
  EXPECT_FALSE(only_process->Find(Req(1).Gpus(1).Image(), &p, &why));
  EXPECT_NE(why.find("the pod set runs an image, and the 2 schedulable node(s)"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("--runtime container"), std::string::npos) << why;
  auto unlabelled = MakePool({NodeBuilder("n0").Gpus(8).Build()});
  EXPECT_TRUE(unlabelled->Find(Req(1).Gpus(1).Image(), &p, &why)) << why;
}

}  // namespace
}  // namespace allot::sched
