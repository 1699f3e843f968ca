// Builders and helpers shared by the NodePool tests (node_pool*_test.cc).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "sched/node_pool.h"

namespace allot::sched::node_pool_testing {

using core::kGpuResource;

inline Quantity Q(const char* text) { return *Quantity::Parse(text); }

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
  Req& Image() {
    r_.has_image = true;
    return *this;
  }
  operator PodSetRequest() const { return r_; }  // NOLINT: test sugar.
  operator std::vector<PodSetRequest>() const { return {r_}; }  // NOLINT

 private:
  PodSetRequest r_;
};

inline core::ResourceFlavor Flavor(const std::string& name,
                                   core::Labels labels) {
  core::ResourceFlavor f;
  f.name = name;
  f.node_labels = std::move(labels);
  return f;
}

inline std::unique_ptr<NodePool> MakePool(
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
inline std::vector<std::string> NodesOf(const NodePool& pool,
                                        const Placement& p) {
  std::vector<std::string> names;
  for (const PodSetPlacement& set : p) {
    for (const PodAssignment& pod : set)
      names.push_back(pool.NodeName(pod.node));
  }
  return names;
}

// Finds and commits; returns the placement (empty on failure).
inline Placement FindAndCommit(NodePool& pool,
                               const std::vector<PodSetRequest>& req) {
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
inline void Occupy(NodePool& pool, NodeIdx n, int32_t k) {
  if (k == 0) return;
  std::vector<PodSetRequest> req = Req(1).Gpus(k).Cpu("0").Memory("0");
  PodAssignment pod;
  pod.node = n;
  for (int32_t i = 0; i < k; ++i) pod.devices.push_back(i);
  pool.Commit(req, {{pod}});
}
}  // namespace allot::sched::node_pool_testing
