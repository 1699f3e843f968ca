// Deterministic generator of a large synthetic cluster for the scheduler
// benchmarks (bench/scheduler_bench.cc). Builds a core::Config directly (no
// YAML). At scale 1.0:
//
//  - 4 ResourceFlavors (h100, a100, l40s, t4), selected by the node label
//    allot.dev/gpu-product;
//  - 10,000 nodes: 2,500 per flavor, 8 whole GPUs each, 32 nodes a rack
//    and 8 racks a block (topology.allot.dev/rack, topology.allot.dev/block);
//  - 50 leaf cohorts of 20 ClusterQueues each (1,000 ClusterQueues): 40 of
//    them nested under 10 parent cohorts (4 children each, the parents hold
//    no quota of their own), 10 flat (roots);
//  - every ClusterQueue covers nvidia.com/gpu with 1 or 2 flavors (a primary
//    flavor, and on 40% of them a secondary one); per flavor, the nominal
//    quotas of all ClusterQueues sum exactly to that flavor's GPU capacity
//    (a primary cell weighs U(1,3), a secondary one U(0.25,0.75));
//    30% have a borrowingLimit (= their nominal), 20% a lendingLimit
//    (= half their nominal);
//  - preemption: 60% withinClusterQueue LowerPriority, 30% reclaimWithinCohort
//    Any, 10% borrowWithinCohort LowerPriority (independently drawn);
//    10% of the ClusterQueues are StrictFIFO, the rest BestEffortFIFO;
//  - one namespace and one LocalQueue per ClusterQueue;
//  - 100,000 pending workloads, each on a uniformly drawn LocalQueue, with
//    creation times increasing by 10 ms, priorities low (0) 50%, normal
//    (100) 30%, high (1000) 20%, and sizes (total GPUs):
//      1: 40%  2: 20%  4: 15%  8: 12%  16: 7%  32: 4%  64: 2%
//    (mean 6.04 GPUs); 1-8 GPUs are one pod, 16/32/64 are 2/4/8 pods of 8.
//    Each requests only nvidia.com/gpu.
//
// `scale` multiplies node, cohort, ClusterQueue and workload counts (at
// least one of each; the cohort shape is kept: 20% flat, 80% nested 4 under
// a parent). Same scale and seed, same Config, byte for byte.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/model.h"

namespace allot::bench {

inline constexpr char kGpuProductLabel[] = "allot.dev/gpu-product";

struct ClusterSpec {
  double scale = 1.0;
  uint64_t seed = 42;
  int32_t gpus_per_node = 8;
  int32_t nodes_per_rack = 32;
  int32_t racks_per_block = 8;
  int32_t cqs_per_cohort = 20;

  int32_t Nodes() const {
    return std::max<int32_t>(4, int32_t(std::lround(10000 * scale)));
  }
  int32_t LeafCohorts() const {
    return std::max<int32_t>(1, int32_t(std::lround(50 * scale)));
  }
  int32_t ClusterQueues() const { return LeafCohorts() * cqs_per_cohort; }
  int32_t Workloads() const {
    return std::max<int32_t>(1, int32_t(std::lround(100000 * scale)));
  }
};

inline const std::vector<std::string>& FlavorNames() {
  static const std::vector<std::string> kNames = {"h100", "a100", "l40s", "t4"};
  return kNames;
}

// Size distribution (total GPUs -> weight, percent).
struct SizeBucket {
  int32_t gpus;
  int32_t pods;
  int32_t per_pod;
  double weight;
};
inline const std::vector<SizeBucket>& SizeBuckets() {
  static const std::vector<SizeBucket> kBuckets = {
      {1, 1, 1, 40}, {2, 1, 2, 20}, {4, 1, 4, 15}, {8, 1, 8, 12},
      {16, 2, 8, 7}, {32, 4, 8, 4}, {64, 8, 8, 2}};
  return kBuckets;
}

struct PriorityLevel {
  const char* name;
  int32_t value;
  double weight;
};
inline const std::vector<PriorityLevel>& PriorityLevels() {
  static const std::vector<PriorityLevel> kLevels = {
      {"low", 0, 50}, {"normal", 100, 30}, {"high", 1000, 20}};
  return kLevels;
}

// Draws workloads (same distributions as the generator) for the incremental
// benchmarks: a new workload arriving after the initial ones.
class WorkloadDrawer {
 public:
  WorkloadDrawer(const ClusterSpec& spec, uint64_t seed)
      : rng_(seed), num_queues_(spec.ClusterQueues()) {
    std::vector<double> sw, pw;
    for (const auto& b : SizeBuckets()) sw.push_back(b.weight);
    for (const auto& p : PriorityLevels()) pw.push_back(p.weight);
    size_dist_ = std::discrete_distribution<int32_t>(sw.begin(), sw.end());
    prio_dist_ = std::discrete_distribution<int32_t>(pw.begin(), pw.end());
  }

  core::Workload Draw(const std::string& name, int64_t creation_ms) {
    core::Workload w;
    int32_t q =
        std::uniform_int_distribution<int32_t>(0, num_queues_ - 1)(rng_);
    w.ns = NamespaceName(q);
    w.name = name;
    w.queue_name = "lq";
    const PriorityLevel& p = PriorityLevels()[prio_dist_(rng_)];
    w.priority_class_name = p.name;
    w.priority = p.value;
    w.creation_unix_ms = creation_ms;
    const SizeBucket& b = SizeBuckets()[size_dist_(rng_)];
    core::PodSet ps;
    ps.name = "main";
    ps.count = b.pods;
    ps.requests[core::kGpuResource] = Quantity::FromUnits(b.per_pod);
    w.pod_sets.push_back(std::move(ps));
    return w;
  }

  static std::string NamespaceName(int32_t q) {
    return "team-" + std::to_string(q);
  }
  static std::string ClusterQueueName(int32_t q) {
    return "cq-" + std::to_string(q);
  }

 private:
  std::mt19937_64 rng_;
  int32_t num_queues_;
  std::discrete_distribution<int32_t> size_dist_;
  std::discrete_distribution<int32_t> prio_dist_;
};

inline constexpr int64_t kBaseCreationMs = 1'700'000'000'000;
inline constexpr int64_t kCreationStepMs = 10;

struct GeneratedCluster {
  core::Config config;
  int64_t total_gpus = 0;
  int64_t requested_gpus = 0;  // Sum over workloads.
  int32_t parent_cohorts = 0;
  int32_t leaf_cohorts = 0;
};

inline GeneratedCluster GenerateCluster(const ClusterSpec& spec) {
  GeneratedCluster out;
  core::Config& cfg = out.config;
  std::mt19937_64 rng(spec.seed);
  auto uniform = [&](double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng);
  };
  auto chance = [&](double p) { return uniform(0, 1) < p; };
  const auto& fnames = FlavorNames();
  const int32_t nf = int32_t(fnames.size());

  // Flavors.
  for (const auto& f : fnames) {
    core::ResourceFlavor rf;
    rf.name = f;
    rf.node_labels[kGpuProductLabel] = f;
    cfg.flavors.push_back(std::move(rf));
  }

  // Nodes: flavor-major, so that each flavor's nodes form whole racks.
  const int32_t num_nodes = spec.Nodes();
  std::vector<int64_t> capacity(nf, 0);
  cfg.nodes.reserve(num_nodes);
  for (int32_t i = 0; i < num_nodes; ++i) {
    int32_t f = int32_t(int64_t(i) * nf / num_nodes);
    int32_t rack = i / spec.nodes_per_rack;
    int32_t block = rack / spec.racks_per_block;
    core::Node n;
    n.name = "node-" + std::to_string(i);
    n.labels[kGpuProductLabel] = fnames[f];
    n.labels[core::kTopologyRackLabel] = "rack-" + std::to_string(rack);
    n.labels[core::kTopologyBlockLabel] = "block-" + std::to_string(block);
    n.cpu = Quantity::FromUnits(128);
    n.memory = Quantity::FromUnits(int64_t(2048) << 30);  // 2Ti.
    for (int32_t g = 0; g < spec.gpus_per_node; ++g) {
      core::Gpu gpu;
      gpu.uuid = "GPU-" + std::to_string(i) + "-" + std::to_string(g);
      gpu.product = fnames[f];
      gpu.memory = Quantity::FromUnits(int64_t(80) << 30);
      n.gpus.push_back(std::move(gpu));
    }
    capacity[f] += spec.gpus_per_node;
    out.total_gpus += spec.gpus_per_node;
    cfg.nodes.push_back(std::move(n));
  }

  // Cohorts: 20% of the leaf cohorts flat, the rest 4 under a parent.
  const int32_t leaves = spec.LeafCohorts();
  out.leaf_cohorts = leaves;
  const int32_t flat = std::max<int32_t>(leaves > 1 ? 1 : leaves, leaves / 5);
  std::vector<std::string> leaf_names;
  for (int32_t c = 0; c < leaves; ++c) {
    core::Cohort co;
    co.name = "cohort-" + std::to_string(c);
    if (c >= flat) {
      int32_t parent = (c - flat) / 4;
      co.parent = "parent-" + std::to_string(parent);
      out.parent_cohorts = std::max(out.parent_cohorts, parent + 1);
    }
    leaf_names.push_back(co.name);
    cfg.cohorts.push_back(std::move(co));
  }
  for (int32_t p = 0; p < out.parent_cohorts; ++p) {
    core::Cohort co;
    co.name = "parent-" + std::to_string(p);
    cfg.cohorts.push_back(std::move(co));
  }

  // Priority classes.
  for (const auto& p : PriorityLevels()) {
    core::WorkloadPriorityClass pc;
    pc.name = p.name;
    pc.value = p.value;
    cfg.priority_classes.push_back(std::move(pc));
  }

  // ClusterQueues: flavors and weights first, quotas once weights are known.
  const int32_t num_cqs = spec.ClusterQueues();
  struct Cell {
    int32_t cq;
    int32_t flavor;
    double weight;
    int64_t nominal = 0;
  };
  std::vector<std::vector<int32_t>> cq_flavors(num_cqs);
  std::vector<Cell> cells;
  std::vector<double> flavor_weight(nf, 0);
  for (int32_t q = 0; q < num_cqs; ++q) {
    int32_t cohort = q / spec.cqs_per_cohort;
    int32_t primary = (cohort + q) % nf;
    cq_flavors[q].push_back(primary);
    cells.push_back({q, primary, uniform(1, 3)});
    if (chance(0.4)) {
      int32_t secondary = (primary + 1) % nf;
      cq_flavors[q].push_back(secondary);
      cells.push_back({q, secondary, uniform(0.25, 0.75)});
    }
  }
  for (const Cell& c : cells) flavor_weight[c.flavor] += c.weight;
  // Largest-remainder rounding so that every flavor's quotas sum to its
  // capacity exactly.
  for (int32_t f = 0; f < nf; ++f) {
    std::vector<std::pair<double, size_t>> rem;
    int64_t given = 0;
    for (size_t i = 0; i < cells.size(); ++i) {
      if (cells[i].flavor != f || flavor_weight[f] <= 0) continue;
      double exact = double(capacity[f]) * cells[i].weight / flavor_weight[f];
      cells[i].nominal = int64_t(std::floor(exact));
      given += cells[i].nominal;
      rem.emplace_back(exact - std::floor(exact), i);
    }
    std::sort(rem.begin(), rem.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    for (size_t k = 0; given < capacity[f] && !rem.empty(); ++k, ++given) {
      ++cells[rem[k % rem.size()].second].nominal;
    }
  }
  std::vector<std::vector<const Cell*>> cq_cells(num_cqs);
  for (const Cell& c : cells) cq_cells[c.cq].push_back(&c);

  for (int32_t q = 0; q < num_cqs; ++q) {
    core::ClusterQueue cq;
    cq.name = WorkloadDrawer::ClusterQueueName(q);
    cq.cohort = leaf_names[q / spec.cqs_per_cohort];
    cq.namespace_selector = core::LabelSelector{};
    bool has_borrowing_limit = chance(0.3);
    bool has_lending_limit = chance(0.2);
    core::ResourceGroup g;
    g.covered_resources.push_back(core::kGpuResource);
    for (const Cell* c : cq_cells[q]) {
      core::FlavorQuotas fq;
      fq.name = fnames[c->flavor];
      core::ResourceQuota rq;
      rq.name = core::kGpuResource;
      rq.nominal_quota = Quantity::FromUnits(c->nominal);
      if (has_borrowing_limit)
        rq.borrowing_limit = Quantity::FromUnits(c->nominal);
      if (has_lending_limit)
        rq.lending_limit = Quantity::FromUnits(c->nominal / 2);
      fq.resources.push_back(std::move(rq));
      g.flavors.push_back(std::move(fq));
    }
    cq.resource_groups.push_back(std::move(g));
    if (chance(0.6))
      cq.preemption.within_cluster_queue =
          core::WithinClusterQueue::kLowerPriority;
    if (chance(0.3))
      cq.preemption.reclaim_within_cohort = core::ReclaimWithinCohort::kAny;
    if (chance(0.1)) {
      cq.preemption.borrow_within_cohort =
          core::BorrowWithinCohortPolicy::kLowerPriority;
    }
    if (chance(0.1)) cq.queueing_strategy = core::QueueingStrategy::kStrictFIFO;
    cfg.cluster_queues.push_back(std::move(cq));

    core::Namespace ns;
    ns.name = WorkloadDrawer::NamespaceName(q);
    cfg.namespaces.push_back(std::move(ns));
    core::LocalQueue lq;
    lq.ns = WorkloadDrawer::NamespaceName(q);
    lq.name = "lq";
    lq.cluster_queue = WorkloadDrawer::ClusterQueueName(q);
    cfg.local_queues.push_back(std::move(lq));
  }

  // Workloads.
  WorkloadDrawer drawer(spec, rng());
  const int32_t num_wls = spec.Workloads();
  cfg.workloads.reserve(num_wls);
  for (int32_t i = 0; i < num_wls; ++i) {
    core::Workload w =
        drawer.Draw("wl-" + std::to_string(i),
                    kBaseCreationMs + int64_t(i) * kCreationStepMs);
    out.requested_gpus +=
        int64_t(w.pod_sets[0].count) *
        w.pod_sets[0].requests[core::kGpuResource].UnitsCeil();
    cfg.workloads.push_back(std::move(w));
  }
  return out;
}

}  // namespace allot::bench
