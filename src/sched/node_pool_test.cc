#include "sched/node_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace allot::sched {
namespace {

using core::kGpuResource;

Quantity Q(const char* text) { return *Quantity::Parse(text); }

// NodeBuilder("gpu-01").Gpus(8).Rack("r1").Build(): 64 cpu and 512Gi by
// default; GPU UUIDs are "<node>-gpu<i>", slices "<node>-gpu<i>-mig<j>".
class NodeBuilder {
 public:
  explicit NodeBuilder(const std::string& name) {
    node_.name = name;
    node_.cpu = Q("64");
    node_.memory = Q("512Gi");
  }
  NodeBuilder& Gpus(int n) {
    for (int i = 0; i < n; ++i) AddGpu();
    return *this;
  }
  NodeBuilder& MigGpu(const std::vector<std::string>& profiles) {
    core::Gpu& gpu = AddGpu();
    for (size_t j = 0; j < profiles.size(); ++j) {
      gpu.mig.push_back({gpu.uuid + "-mig" + std::to_string(j), profiles[j]});
    }
    return *this;
  }
  NodeBuilder& UnhealthyGpu(int i) {
    node_.gpus.at(i).healthy = false;
    return *this;
  }
  NodeBuilder& Uuid(int i, const std::string& uuid) {
    node_.gpus.at(i).uuid = uuid;
    return *this;
  }
  NodeBuilder& Label(const std::string& k, const std::string& v) {
    node_.labels[k] = v;
    return *this;
  }
  NodeBuilder& Block(const std::string& b) {
    return Label(core::kTopologyBlockLabel, b);
  }
  NodeBuilder& Rack(const std::string& r) {
    return Label(core::kTopologyRackLabel, r);
  }
  NodeBuilder& Taint(const std::string& k, const std::string& v) {
    node_.taints.push_back({k, v, core::TaintEffect::kNoSchedule});
    return *this;
  }
  NodeBuilder& Cpu(const char* q) {
    node_.cpu = Q(q);
    return *this;
  }
  NodeBuilder& Memory(const char* q) {
    node_.memory = Q(q);
    return *this;
  }
  NodeBuilder& Cordoned() {
    node_.unschedulable = true;
    return *this;
  }
  core::Node Build() const { return node_; }

 private:
  core::Gpu& AddGpu() {
    core::Gpu gpu;
    gpu.uuid = node_.name + "-gpu" + std::to_string(node_.gpus.size());
    gpu.product = "NVIDIA H100 80GB HBM3";
    gpu.memory = Q("80Gi");
    node_.gpus.push_back(gpu);
    return node_.gpus.back();
  }
  core::Node node_;
};

// Req(2).Gpus(8): 2 pods of 8 GPUs, 1 cpu and 1Gi each, no flavor.
class Req {
 public:
  explicit Req(int32_t count) {
    r_.count = count;
    r_.shape.cpu = Q("1");
    r_.shape.memory = Q("1Gi");
  }
  Req& Gpus(int32_t n) { return Device(kGpuResource, n); }
  Req& Mig(const std::string& profile, int32_t n) {
    return Device(core::MigResourceName(profile), n);
  }
  Req& Device(const std::string& resource, int32_t n) {
    r_.shape.devices.emplace_back(resource, n);
    std::sort(r_.shape.devices.begin(), r_.shape.devices.end());
    return *this;
  }
  Req& Cpu(const char* q) {
    r_.shape.cpu = Q(q);
    return *this;
  }
  Req& Memory(const char* q) {
    r_.shape.memory = Q(q);
    return *this;
  }
  Req& Flavor(int32_t f) {
    r_.flavors.push_back(f);
    return *this;
  }
  Req& Selector(const core::Labels* s) {
    r_.node_selector = s;
    return *this;
  }
  Req& Tolerations(const std::vector<core::Toleration>* t) {
    r_.tolerations = t;
    return *this;
  }
  operator PodSetRequest() const { return r_; }  // NOLINT: test sugar.
  operator std::vector<PodSetRequest>() const { return {r_}; }  // NOLINT

 private:
  PodSetRequest r_;
};

core::ResourceFlavor Flavor(const std::string& name, core::Labels labels) {
  core::ResourceFlavor f;
  f.name = name;
  f.node_labels = std::move(labels);
  return f;
}

std::unique_ptr<NodePool> MakePool(
    const std::vector<core::Node>& nodes,
    std::vector<core::ResourceFlavor> flavors = {}) {
  auto pool = std::make_unique<NodePool>(std::move(flavors));
  for (const core::Node& n : nodes) {
    Status s = pool->AddNode(n);
    EXPECT_TRUE(s.ok()) << s.ToString();
  }
  return pool;
}

// Node names of the pods of a one-pod-set placement, in pod order.
std::vector<std::string> NodesOf(const NodePool& pool, const Placement& p) {
  std::vector<std::string> names;
  for (const PodSetPlacement& set : p) {
    for (const PodAssignment& pod : set)
      names.push_back(pool.NodeName(pod.node));
  }
  return names;
}

// Finds and commits; returns the placement (empty on failure).
Placement FindAndCommit(NodePool& pool, const std::vector<PodSetRequest>& req) {
  Placement p;
  std::string why;
  if (!pool.Find(req, &p, &why)) {
    ADD_FAILURE() << why;
    return {};
  }
  EXPECT_TRUE(pool.Validate(req, p).ok());
  pool.Commit(req, p);
  return p;
}

// Takes the first `k` GPUs of node `n` with a 0-cpu pod.
void Occupy(NodePool& pool, NodeIdx n, int32_t k) {
  if (k == 0) return;
  std::vector<PodSetRequest> req = Req(1).Gpus(k).Cpu("0").Memory("0");
  PodAssignment pod;
  pod.node = n;
  for (int32_t i = 0; i < k; ++i) pod.devices.push_back(i);
  pool.Commit(req, {{pod}});
}

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

// A brute-force model of the pool for the randomized test.
struct Model {
  const NodePool* pool = nullptr;
  std::map<std::pair<NodeIdx, int32_t>, int> holder;  // Device -> step.
  std::vector<bool> cordoned;
  std::set<std::pair<NodeIdx, int32_t>> unhealthy;
  std::vector<int64_t> cpu_free;  // Milli-cpu.

  // Offered devices of `resource` on node `n`.
  int64_t Usable(NodeIdx n, const std::string& resource) const {
    int64_t usable = 0;
    for (int32_t slot = 0; slot < pool->DeviceCount(n); ++slot) {
      usable += !cordoned[n] && pool->DeviceResource(n, slot) == resource &&
                !holder.count({n, slot}) && !unhealthy.count({n, slot});
    }
    return usable;
  }
  // How many pods of a one-resource pod set node `n` holds.
  int64_t Room(NodeIdx n, const PodSetRequest& r) const {
    const auto& [resource, need] = r.shape.devices.at(0);
    return std::min(Usable(n, resource) / need,
                    cpu_free[n] / r.shape.cpu.milli());
  }
  void Apply(const std::vector<PodSetRequest>& req, const Placement& p,
             int step, bool take) {
    for (size_t i = 0; i < p.size(); ++i) {
      for (const PodAssignment& pod : p[i]) {
        cpu_free[pod.node] += req[i].shape.cpu.milli() * (take ? -1 : 1);
        for (int32_t slot : pod.devices) {
          if (!take) {
            holder.erase({pod.node, slot});
          } else if (!holder.emplace(std::pair(pod.node, slot), step).second) {
            ADD_FAILURE() << "device held twice at step " << step;
          }
        }
      }
    }
  }
};

TEST(NodePoolRandomized, CommitsAndReleasesKeepInvariants) {
  // Random gangs, MIG pods and cpu-only pods (1 or 2 pod sets) are found,
  // validated and committed; random ones are released; nodes are cordoned
  // and GPUs fail. A brute-force model checks after every step: no device
  // is held twice, DeviceFree matches the live placements, FreeDevices
  // equals a recount. For one-resource single pod set requests it also
  // checks the policy: one node when one node can hold the set, and then
  // the fewest free devices of all such nodes; and on refusal, that the
  // nodes together have room for fewer pods than asked.
  std::mt19937 rng(20240607);
  std::vector<core::Node> nodes;
  for (int i = 0; i < 24; ++i) {
    NodeBuilder b("n" + std::to_string(i));
    b.Rack("r" + std::to_string(i % 3)).Cpu("32").Memory("256Gi");
    if (i % 5 == 4) {
      b.Gpus(2).MigGpu({"1g.10gb", "1g.10gb", "2g.20gb"});
    } else {
      b.Gpus(i % 2 ? 8 : 4);
    }
    nodes.push_back(b.Build());
  }
  auto pool = MakePool(nodes);
  Model model;
  model.pool = pool.get();
  model.cordoned.assign(nodes.size(), false);
  model.cpu_free.assign(nodes.size(), 32000);
  struct Live {
    std::vector<PodSetRequest> req;
    Placement placement;
  };
  std::vector<Live> live;
  const std::vector<std::string> resources = {
      "nvidia.com/gpu", "nvidia.com/mig-1g.10gb", "nvidia.com/mig-2g.20gb"};
  int found = 0, refused = 0, checked = 0;
  for (int step = 0; step < 3000; ++step) {
    int op = rng() % 10;
    if (op < 6) {
      std::vector<PodSetRequest> req;
      int sets = 1 + rng() % 2;
      for (int s = 0; s < sets; ++s) {
        Req r(1 + rng() % 4);
        r.Cpu(rng() % 2 ? "2" : "12");
        int kind = rng() % 6;
        if (kind < 4) r.Gpus(1 << (rng() % 4));
        if (kind == 4) r.Mig(rng() % 2 ? "1g.10gb" : "2g.20gb", 1 + rng() % 2);
        req.push_back(r);
      }
      Placement p;
      std::string why;
      bool ok = pool->Find(req, &p, &why);
      if (req.size() == 1 && req[0].shape.devices.size() == 1) {
        ++checked;
        std::set<NodeIdx> used;
        for (const PodAssignment& pod : ok ? p[0] : PodSetPlacement{}) {
          used.insert(pod.node);
        }
        int64_t total = 0, tightest = 1 << 30;
        const std::string& resource = req[0].shape.devices[0].first;
        for (NodeIdx n = 0; n < pool->NodeCount(); ++n) {
          int64_t room = model.Room(n, req[0]);
          total += room;
          if (room >= req[0].count) {
            tightest = std::min(tightest, model.Usable(n, resource));
          }
        }
        if (!ok) {
          ASSERT_LT(total, req[0].count) << "step " << step << ": " << why;
        } else if (used.size() > 1) {
          ASSERT_EQ(tightest, 1 << 30) << "one node holds it, step " << step;
        } else {
          ASSERT_EQ(model.Usable(*used.begin(), resource), tightest)
              << "not the best fit, step " << step;
        }
      }
      if (ok) {
        ++found;
        Status s = pool->Validate(req, p);
        ASSERT_TRUE(s.ok()) << s.ToString();
        pool->Commit(req, p);
        model.Apply(req, p, step, /*take=*/true);
        live.push_back({req, p});
      } else {
        ++refused;
        ASSERT_FALSE(why.empty());
        ASSERT_TRUE(p.empty());
      }
    } else if (op < 9 && !live.empty()) {
      size_t i = rng() % live.size();
      pool->Release(live[i].req, live[i].placement);
      model.Apply(live[i].req, live[i].placement, step, /*take=*/false);
      live.erase(live.begin() + i);
    } else {
      NodeIdx n = rng() % nodes.size();
      if (rng() % 2) {
        model.cordoned[n] = !model.cordoned[n];
        pool->SetUnschedulable(n, model.cordoned[n]);
      } else {
        int32_t slot = rng() % pool->DeviceCount(n);
        bool healthy = model.unhealthy.erase({n, slot}) > 0;
        if (!healthy) model.unhealthy.insert({n, slot});
        pool->SetDeviceHealthy(n, slot, healthy);
      }
    }
    std::map<std::string, int64_t> free;
    for (NodeIdx n = 0; n < pool->NodeCount(); ++n) {
      for (const std::string& r : resources) free[r] += model.Usable(n, r);
      for (int32_t slot = 0; slot < pool->DeviceCount(n); ++slot) {
        ASSERT_EQ(pool->DeviceFree(n, slot), !model.holder.count({n, slot}))
            << "step " << step;
      }
    }
    for (const std::string& r : resources) {
      ASSERT_EQ(pool->FreeDevices(r), free[r]) << r << " at step " << step;
    }
  }
  // The mix should exercise both outcomes and the policy checks.
  EXPECT_GT(found, 300);
  EXPECT_GT(refused, 100);
  EXPECT_GT(checked, 500);
}

TEST(NodePoolScale, TenThousandNodesFiftyThousandPods) {
  // 10,000 nodes x 8 GPUs in 20 blocks of 25 racks; 50,000 single pods of
  // 1, 2, 4 or 8 GPUs are found and committed, the oldest released when
  // the pool is full. Prints the time; asserts only correctness.
  std::vector<core::Node> nodes;
  auto pool = std::make_unique<NodePool>(std::vector<core::ResourceFlavor>{});
  for (int i = 0; i < 10000; ++i) {
    ASSERT_TRUE(pool->AddNode(NodeBuilder("gpu-" + std::to_string(i))
                                  .Gpus(8)
                                  .Block("b" + std::to_string(i / 500))
                                  .Rack("r" + std::to_string(i / 20))
                                  .Build())
                    .ok());
  }
  std::mt19937 rng(1);
  const int sizes[] = {1, 1, 1, 1, 2, 2, 4, 8};
  std::vector<std::pair<std::vector<PodSetRequest>, Placement>> live;
  size_t oldest = 0;
  int finds = 0;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 50000; ++i) {
    std::vector<PodSetRequest> req = Req(1).Gpus(sizes[rng() % 8]);
    Placement p;
    ++finds;
    // No reason wanted: explaining a refusal scans every node.
    while (!pool->Find(req, &p, /*why=*/nullptr)) {
      ASSERT_LT(oldest, live.size());
      pool->Release(live[oldest].first, live[oldest].second);
      ++oldest;
      ++finds;
    }
    pool->Commit(req, p);
    live.emplace_back(std::move(req), std::move(p));
  }
  double ms = std::chrono::duration<double, std::milli>(
                  std::chrono::steady_clock::now() - start)
                  .count();
  std::printf(
      "[ timing   ] %d Finds + 50000 Commits + %zu Releases on 10000x8 "
      "GPUs: %.1f ms (%.2f us per Find+Commit)\n",
      finds, oldest, ms, 1000 * ms / finds);
  int64_t held = 0;
  for (size_t i = oldest; i < live.size(); ++i) {
    held += live[i].first[0].shape.devices[0].second;
  }
  EXPECT_EQ(pool->FreeDevices(kGpuResource), 80000 - held);

  // Gangs that need several nodes scan every candidate node: time 1,000
  // Finds of a 4x8 gang on half-empty racks (without committing).
  for (size_t i = oldest; i < live.size(); ++i) {
    pool->Release(live[i].first, live[i].second);
  }
  for (int n = 0; n < 10000; n += 2) Occupy(*pool, n, 3);
  std::vector<PodSetRequest> gang = Req(4).Gpus(8);
  start = std::chrono::steady_clock::now();
  for (int i = 0; i < 1000; ++i) {
    Placement p;
    ASSERT_TRUE(pool->Find(gang, &p, nullptr));
  }
  ms = std::chrono::duration<double, std::milli>(
           std::chrono::steady_clock::now() - start)
           .count();
  std::printf("[ timing   ] 1000 Finds of a 4x8 gang on 10000 nodes: %.1f ms\n",
              ms);
}

}  // namespace
}  // namespace allot::sched
