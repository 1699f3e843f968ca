// `allot_bench autoscaler`: the decision time of one autoscaler run
// (ctrl/autoscaler.h) at 10,000 nodes and 100,000 pending workloads
// (scaled by --scale), on a real scheduler.
//
// The cluster: one flavor and one autoscaled pool of 8-GPU nodes, 10,000
// of them up (maxNodes 12,000), each full with one 8-GPU workload;
// 100,000 more wait for nodes (quota is ample: 1,000,000 GPUs): 60% of
// one GPU, 25% of four, 10% of eight, 5% gangs of 4x8. Per trial the
// three parts of a run, timed apart: the scheduler's demand list
// (Scheduler::CapacityDemands, what the owner reads), the pools' view
// (a NodeFree per node), and Autoscaler::Run (packing the demand on free,
// booting and new nodes, then scale-down). Medians and p99 over the
// trials, and what the run decided.
//
// Then consolidation's worst case: the same nodes, every one running 2 of
// its 8 GPUs with preemptible work for long enough, no demand, a budget of
// every node: Autoscaler::Run alone (it tries a bounded number of nodes a
// run).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "ctrl/autoscaler.h"
#include "sched/scheduler.h"

namespace allot::bench {

namespace {

using AsClock = std::chrono::steady_clock;

double AsMs(AsClock::time_point a, AsClock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

double AsPct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(p * double(v.size())))];
}

class BenchView : public ctrl::View {
 public:
  const sched::Scheduler* s = nullptr;
  std::vector<ctrl::PoolView> pools;
  std::vector<sched::CapacityDemand> demand;
  int64_t StartedMs() const override { return 0; }
  void ForEachAdmitted(const std::function<void(const ctrl::AdmittedView&)>&) const override {}
  void ForEachPodFailure(const std::function<void(const ctrl::PodFailureView&)>&) const override {}
  void ForEachAgent(const std::function<void(const ctrl::AgentView&)>&) const override {}
  const core::ClusterQueue* FindClusterQueue(std::string_view) const override { return nullptr; }
  void ForEachPool(const std::function<void(const ctrl::PoolView&)>& fn) const override {
    for (const ctrl::PoolView& p : pools) fn(p);
  }
  std::vector<sched::CapacityDemand> CapacityDemands() const override { return demand; }
  const core::ResourceFlavor* FindFlavor(std::string_view name) const override {
    return s->Flavor(std::string(name));
  }
};

}  // namespace

int AutoscalerMode(double scale, int trials, uint64_t seed) {
  const int32_t up = std::max<int32_t>(10, int32_t(10000 * scale));
  const int32_t pending = std::max<int32_t>(10, int32_t(100000 * scale));
  core::Config config;
  core::ResourceFlavor f;
  f.name = "gpu";
  f.node_labels = {{"pool", "p"}};
  config.flavors.push_back(f);
  core::ClusterQueue cq;
  cq.name = "cq";
  cq.namespace_selector = core::LabelSelector{};
  core::ResourceGroup g;
  g.covered_resources = {core::kGpuResource};
  g.flavors.push_back({"gpu", {{core::kGpuResource, Quantity::FromUnits(1000000), {}, {}}}});
  cq.resource_groups.push_back(g);
  config.cluster_queues.push_back(cq);
  core::LocalQueue lq;
  lq.ns = "t";
  lq.name = "q";
  lq.cluster_queue = "cq";
  config.local_queues.push_back(lq);
  core::NodePool pool;
  pool.name = "p";
  pool.node.labels = {{"pool", "p"}};
  pool.node.gpus.resize(8);
  pool.max_nodes = up + up / 5;
  for (int32_t i = 0; i < up; ++i) {
    core::Node n = pool.node;
    n.name = "p-" + std::to_string(i);
    for (int32_t k = 0; k < 8; ++k) n.gpus[size_t(k)].uuid = n.name + "-" + std::to_string(k);
    config.nodes.push_back(std::move(n));
  }
  std::mt19937_64 rng(seed);
  auto workload = [&](const std::string& name, int64_t created, int32_t pods, int32_t gpus) {
    core::Workload w;
    w.ns = "t";
    w.name = name;
    w.queue_name = "q";
    w.creation_unix_ms = created;
    core::PodSet ps;
    ps.name = "main";
    ps.count = pods;
    ps.requests[core::kGpuResource] = Quantity::FromUnits(gpus);
    w.pod_sets.push_back(ps);
    return w;
  };
  for (int32_t i = 0; i < up; ++i) config.workloads.push_back(workload("run" + std::to_string(i), i, 1, 8));
  for (int32_t i = 0; i < pending; ++i) {
    const int32_t r = int32_t(rng() % 100);
    const int32_t pods = r < 95 ? 1 : 4;
    const int32_t gpus = r < 60 ? 1 : r < 85 ? 4 : 8;
    config.workloads.push_back(workload("w" + std::to_string(i), up + i, pods, gpus));
  }

  std::vector<double> demand_ms, view_ms, run_ms;
  size_t demanded = 0, resumed = 0, explained = 0;
  for (int t = 0; t < trials; ++t) {
    auto created = sched::Scheduler::Create(config);
    if (!created.ok()) {
      std::fprintf(stderr, "Create failed: %s\n", created.status().message().c_str());
      return 1;
    }
    std::unique_ptr<sched::Scheduler> s = std::move(created).value();
    s->RunUntilQuiescent();
    s->TEST_SettleAll();
    BenchView v;
    v.s = s.get();
    auto t0 = AsClock::now();
    v.demand = s->CapacityDemands();
    auto t1 = AsClock::now();
    std::deque<std::string> names;
    ctrl::PoolView& pv = v.pools.emplace_back();
    pv.spec = &pool;
    pv.nodes.reserve(size_t(pool.max_nodes));
    for (int32_t i = 0; i < pool.max_nodes; ++i) {
      names.push_back("p-" + std::to_string(i));
      ctrl::PoolNodeView& n = pv.nodes.emplace_back();
      n.name = names.back();
      if (i >= up) continue;
      n.state = ctrl::PoolNodeView::State::kReady;
      if (auto fr = s->NodeFree(names.back())) n.gpus_free = fr->gpus_free;
    }
    auto t2 = AsClock::now();
    ctrl::Plan plan = ctrl::Autoscaler().Run(v, 1000);
    auto t3 = AsClock::now();
    demand_ms.push_back(AsMs(t0, t1));
    view_ms.push_back(AsMs(t1, t2));
    run_ms.push_back(AsMs(t2, t3));
    demanded = v.demand.size();
    resumed = explained = 0;
    for (const ctrl::Action& a : plan.actions) {
      if (a.type == ctrl::Action::Type::kResumeNodes) resumed += a.nodes.size();
      explained += a.type == ctrl::Action::Type::kExplain;
    }
  }
  std::printf("autoscaler: %d nodes up (maxNodes %d), %d pending, %d trials\n", up,
              pool.max_nodes, pending, trials);
  std::printf("  demand list (Scheduler::CapacityDemands): %.1f ms median, p99 %.1f ms; %zu "
              "workloads\n",
              AsPct(demand_ms, 0.5), AsPct(demand_ms, 0.99), demanded);
  std::printf("  pools' view (NodeFree per node): %.1f ms median, p99 %.1f ms\n", AsPct(view_ms, 0.5),
              AsPct(view_ms, 0.99));
  std::printf("  Autoscaler::Run: %.1f ms median, p99 %.1f ms; %zu nodes asked for, %zu workloads "
              "told what they wait for\n",
              AsPct(run_ms, 0.5), AsPct(run_ms, 0.99), resumed, explained);

  core::NodePool spare = pool;
  spare.max_disrupted = pool.max_nodes;
  BenchView cv;
  ctrl::PoolView& pv = cv.pools.emplace_back();
  pv.spec = &spare;
  std::deque<std::string> names;
  for (int32_t i = 0; i < pool.max_nodes; ++i) {
    names.push_back("p-" + std::to_string(i));
    ctrl::PoolNodeView& n = pv.nodes.emplace_back();
    n.name = names.back();
    if (i >= up) continue;
    n.state = ctrl::PoolNodeView::State::kReady;
    n.gpus_free = 6;
    n.underused_since_ms = 1;
    ctrl::PoolNodeWorkload w;
    w.key = "t/spot" + std::to_string(i);
    w.gpus = 2;
    w.movable = true;
    n.workloads.push_back(w);
  }
  std::vector<double> cons_ms;
  size_t drained = 0;
  for (int t = 0; t < trials; ++t) {
    auto t0 = AsClock::now();
    ctrl::Plan plan = ctrl::Autoscaler().Run(cv, 1000LL * 86400 * 1000);
    cons_ms.push_back(AsMs(t0, AsClock::now()));
    drained = 0;
    for (const ctrl::Action& a : plan.actions) {
      drained += a.type == ctrl::Action::Type::kConsolidate ? a.nodes.size() : 0;
    }
  }
  std::printf("  consolidation, every node 2 of 8 GPUs preemptible: Autoscaler::Run %.1f ms median, "
              "p99 %.1f ms; %zu nodes drained\n",
              AsPct(cons_ms, 0.5), AsPct(cons_ms, 0.99), drained);
  return 0;
}

}  // namespace allot::bench
