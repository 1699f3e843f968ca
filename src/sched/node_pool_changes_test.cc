// Property test of NodePool's node changes (AddNode, ReplaceNode,
// RemoveNode) against a pool built from the live nodes.
//
// Nodes carry topology labels (block and rack, or none) drawn so that
// blocks and racks interleave in node order: removing the first node of a
// rack, or changing a node's rack, may or may not change the order of the
// racks' first nodes, which is what the pool's topology ids must follow
// (node_changes.cc). After every change, the pool must place as a pool
// built from the same live nodes in the same order: the same nodes and
// slots for a set of single- and multi-node requests, with the same
// reasons when they fail, on the empty pool and after a random commit.
// Knobs: ALLOT_PROP_SEEDS (default 200), ALLOT_PROP_SEED (one seed).
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "sched/node_pool.h"

namespace allot::sched {
namespace {

int32_t EnvInt(const char* name, int32_t def) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : def;
}

class Changes {
 public:
  explicit Changes(uint64_t seed) : rng_(seed) {
    const int32_t n = Uniform(4, 16);
    for (int32_t i = 0; i < n; ++i) live_.push_back(NewNode());
    for (const core::Node& node : live_) EXPECT_TRUE(pool_.AddNode(node).ok());
    for (int32_t i = 0; i < n; ++i) index_.push_back(i);
  }

  // One random change; returns a description for failures.
  std::string Step() {
    const int32_t kind = live_.size() <= 1 ? 0 : Uniform(0, 3);
    if (kind == 0) {  // Add (at the end of node order).
      core::Node node = NewNode();
      EXPECT_TRUE(pool_.AddNode(node).ok());
      index_.push_back(pool_.NodeCount() - 1);
      live_.push_back(node);
      return "add " + node.name;
    }
    const size_t i = size_t(Uniform(0, int32_t(live_.size()) - 1));
    if (kind == 1) {  // Replace: new topology (or none), GPU count.
      core::Node node = live_[i];
      Topology(&node);
      if (Coin(0.3)) Gpus(&node, Uniform(1, 8));
      EXPECT_TRUE(pool_.ReplaceNode(index_[i], node).ok());
      live_[i] = node;
      return "replace " + node.name;
    }
    const std::string name = live_[i].name;
    EXPECT_TRUE(pool_.RemoveNode(index_[i]).ok());
    live_.erase(live_.begin() + long(i));
    index_.erase(index_.begin() + long(i));
    return "remove " + name;
  }

  // What the pool and a rebuilt one answer, side by side; "" when equal.
  std::string Compare() {
    NodePool fresh({});
    for (const core::Node& node : live_) EXPECT_TRUE(fresh.AddNode(node).ok());
    std::string diff = CompareFinds(fresh);
    if (!diff.empty()) return diff;
    // Fragment both the same way, compare again, and give it back.
    std::vector<PodSetRequest> req = {Request(Uniform(1, 4), Uniform(1, 4))};
    Placement mine, theirs;
    if (pool_.Find(req, &mine, nullptr) && fresh.Find(req, &theirs, nullptr)) {
      pool_.Commit(req, mine);
      fresh.Commit(req, theirs);
      diff = CompareFinds(fresh);
      pool_.Release(req, mine);
    }
    return diff;
  }

 private:
  static PodSetRequest Request(int32_t pods, int32_t gpus) {
    PodSetRequest r;
    r.count = pods;
    r.shape.cpu = Quantity::FromUnits(1);
    r.shape.devices = {{core::kGpuResource, gpus}};
    return r;
  }

  static std::string Text(const NodePool& pool, const Placement& p) {
    std::string s;
    for (const PodSetPlacement& ps : p) {
      for (const PodAssignment& pa : ps) {
        s += pool.NodeName(pa.node) + "(";
        for (int32_t d : pa.devices) s += std::to_string(d) + ",";
        s += ") ";
      }
    }
    return s;
  }

  std::string CompareFinds(const NodePool& fresh) const {
    for (int32_t pods : {1, 2, 3, 5, 8}) {
      for (int32_t gpus : {1, 2, 4, 8}) {
        std::vector<PodSetRequest> req = {Request(pods, gpus)};
        Placement a, b;
        std::string why_a, why_b;
        const bool ok_a = pool_.Find(req, &a, &why_a);
        const bool ok_b = fresh.Find(req, &b, &why_b);
        const std::string ta = ok_a ? Text(pool_, a) : "fails: " + why_a;
        const std::string tb = ok_b ? Text(fresh, b) : "fails: " + why_b;
        if (ta != tb) {
          return std::to_string(pods) + " x " + std::to_string(gpus) +
                 " GPUs: changed pool " + ta + "| rebuilt " + tb;
        }
      }
    }
    return "";
  }

  int32_t Uniform(int32_t lo, int32_t hi) {
    return std::uniform_int_distribution<int32_t>(lo, hi)(rng_);
  }
  bool Coin(double p) { return std::bernoulli_distribution(p)(rng_); }

  void Topology(core::Node* node) {
    node->labels.erase(core::kTopologyBlockLabel);
    node->labels.erase(core::kTopologyRackLabel);
    if (Coin(0.85)) {
      node->labels[core::kTopologyBlockLabel] =
          "b" + std::to_string(Uniform(0, 2));
    }
    if (Coin(0.85)) {
      node->labels[core::kTopologyRackLabel] =
          "r" + std::to_string(Uniform(0, 3));
    }
  }

  void Gpus(core::Node* node, int32_t n) {
    node->gpus.clear();
    for (int32_t g = 0; g < n; ++g) {
      core::Gpu gpu;
      gpu.uuid = node->name + "-v" + std::to_string(next_uuid_++);
      gpu.memory = Quantity::FromUnits(80);
      node->gpus.push_back(gpu);
    }
  }

  core::Node NewNode() {
    core::Node node;
    node.name = "n" + std::to_string(next_node_++);
    node.cpu = Quantity::FromUnits(64);
    node.memory = Quantity::FromUnits(1 << 30);
    Topology(&node);
    Gpus(&node, Uniform(1, 8));
    return node;
  }

  std::mt19937_64 rng_;
  NodePool pool_{{}};
  std::vector<core::Node> live_;  // In node order.
  std::vector<NodeIdx> index_;    // Their indexes in pool_.
  int32_t next_node_ = 0;
  int32_t next_uuid_ = 0;
};

TEST(NodePoolChanges, PlaceAsARebuiltPool) {
  const int32_t seeds = EnvInt("ALLOT_PROP_SEEDS", 200);
  const int32_t only = EnvInt("ALLOT_PROP_SEED", -1);
  for (int32_t seed = 0; seed < seeds; ++seed) {
    if (only >= 0 && seed != only) continue;
    Changes run(uint64_t(seed) * 7919 + 5);
    std::string diff = run.Compare();
    for (int32_t step = 0; step < 40 && diff.empty(); ++step) {
      const std::string what = run.Step();
      diff = run.Compare();
      if (!diff.empty())
        diff = "step " + std::to_string(step) + " (" + what + "): " + diff;
    }
    EXPECT_EQ(diff, "") << "seed " << seed;
  }
}

}  // namespace
}  // namespace allot::sched
