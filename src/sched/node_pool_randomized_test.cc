// NodePool against a brute-force model on random calls, and at scale.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "sched/node_pool.h"
#include "sched/node_pool_test_util.h"

namespace allot::sched {
namespace {

using namespace node_pool_testing;  // node_pool_test_util.h.

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
