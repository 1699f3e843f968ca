// Random clusters for property tests of the scheduler (header-only).
//
// RandomCluster builds a valid core::Config from a seed: 2-4 GPU
// ResourceFlavors (node labels allot.dev/gpu-product, some with node taints
// and tolerations, some also pinned to a zone), optional CPU flavors, a
// cohort forest (nested cohorts, some with quota of their own, lending and
// borrowing limits), ClusterQueues with random quotas, preemption policies,
// queueing strategies and flavor fungibility (resource groups for
// nvidia.com/gpu, sometimes nvidia.com/mig-1g.10gb in the same or its own
// group, sometimes cpu+memory), LocalQueues, and nodes (1-8 GPUs, some
// MIG-partitioned, some unhealthy, some cordoned or tainted, rack and zone
// labels). NextWorkload() then draws workloads that fit the cluster's
// shape (mostly) from the same generator.
//
// Everything is a function of the seed (std::mt19937_64 and the standard
// distributions of the library in use), so a failing seed replays exactly.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/model.h"

namespace allot::sched::proptest {

inline constexpr char kProductLabel[] = "allot.dev/gpu-product";
inline constexpr char kZoneLabel[] = "allot.dev/zone";
inline constexpr char kReservedTaint[] = "allot.dev/reserved";
inline constexpr char kMaintTaint[] = "allot.dev/maintenance";
inline constexpr char kMig1g[] = "1g.10gb";
inline constexpr char kMig2g[] = "2g.20gb";

inline Quantity Gi(int64_t n) { return Quantity::FromUnits(n << 30); }

struct RandomClusterOptions {
  // Every quota is huge (nothing binds), queues are BestEffortFIFO and never
  // stopped, namespaces always selected, no CPU resource group, and a flavor
  // that needs preemption never stops the flavor search: a workload whose
  // pods fit on a free node is admissible.
  bool quota_free = false;
  // Many whole, healthy, schedulable 8-GPU nodes: quota, not placement, is
  // what binds (more borrowing, reclaiming and preemption).
  bool ample_nodes = false;
  // Every ClusterQueue in one cohort tree.
  bool single_tree = false;
  // Preemption everywhere: policies rarely Never, priorities spread out,
  // small single-pod-set workloads.
  bool preemption_heavy = false;
  int32_t min_nodes = 3;
  int32_t max_nodes = 10;
  int32_t max_cluster_queues = 6;
  int32_t initial_workloads = 6;
};

// What NextWorkload knows of a ClusterQueue.
struct CqShape {
  std::string name;
  bool covers_gpu = false;
  bool covers_mig = false;
  bool covers_cpu = false;
};

class RandomCluster {
 public:
  explicit RandomCluster(uint64_t seed, RandomClusterOptions options = {})
      : rng_(seed), opt_(options) {
    Build();
  }

  const core::Config& config() const { return config_; }
  core::Config& mutable_config() { return config_; }
  const RandomClusterOptions& options() const { return opt_; }

  int32_t Uniform(int32_t lo, int32_t hi) {
    return std::uniform_int_distribution<int32_t>(lo, hi)(rng_);
  }
  bool Coin(double p) {
    return std::uniform_real_distribution<double>(0, 1)(rng_) < p;
  }
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[size_t(Uniform(0, int32_t(v.size()) - 1))];
  }
  std::mt19937_64& rng() { return rng_; }

  // A new pending workload, created around `now_ms`, in a random
  // LocalQueue (rarely a missing one).
  core::Workload NextWorkload(int64_t now_ms) {
    core::Workload w;
    char buf[16];
    std::snprintf(buf, sizeof buf, "w%03d", next_workload_++);
    w.name = buf;
    CqShape shape;
    if (Coin(0.03) && !opt_.quota_free) {
      w.ns = "team-0";
      w.queue_name = "no-such-queue";
    } else {
      const core::LocalQueue& lq = Pick(config_.local_queues);
      w.ns = lq.ns;
      w.queue_name = lq.name;
      for (const CqShape& s : cq_shapes_) {
        if (s.name == lq.cluster_queue) shape = s;
      }
    }
    w.priority = opt_.preemption_heavy
                     ? Uniform(0, 9) * 10
                     : Pick(std::vector<int32_t>{-1, 0, 0, 0, 5, 10, 10, 100});
    w.creation_unix_ms = now_ms + Uniform(-50, 50);
    int32_t nps = opt_.preemption_heavy ? (Coin(0.9) ? 1 : 2)
                  : Coin(0.7)           ? 1
                                        : (Coin(0.8) ? 2 : 3);
    for (int32_t p = 0; p < nps; ++p) {
      core::PodSet ps;
      ps.name = "ps" + std::to_string(p);
      ps.count = opt_.preemption_heavy
                     ? Uniform(1, 2)
                     : Pick(std::vector<int32_t>{1, 1, 1, 2, 2, 3, 4});
      if (ps.count > 1 && Coin(0.3)) ps.min_count = Uniform(1, ps.count - 1);
      bool mig = has_mig_ && (shape.covers_mig ? Coin(0.35) : Coin(0.05));
      bool no_device = has_cpu_ && shape.covers_cpu && Coin(0.06);
      if (mig) {
        ps.requests[core::MigResourceName(kMig1g)] =
            Quantity::FromUnits(Uniform(1, 2));
      } else if (!no_device) {
        ps.requests[core::kGpuResource] = Quantity::FromUnits(
            opt_.preemption_heavy
                ? Uniform(1, 4)
                : Pick(std::vector<int32_t>{1, 1, 1, 2, 2, 4, 8}));
      }
      if (has_cpu_ &&
          (no_device || (shape.covers_cpu ? Coin(0.7) : Coin(0.08)))) {
        ps.requests[core::kCpuResource] = Quantity::FromUnits(Uniform(1, 16));
        ps.requests[core::kMemoryResource] = Gi(Uniform(4, 128));
      }
      if (ps.requests.empty())
        ps.requests[core::kGpuResource] = Quantity::FromUnits(1);
      if (Coin(0.12)) {
        if (Coin(0.5)) {
          ps.node_selector[kZoneLabel] = Zone(Uniform(0, 1));
        } else {
          ps.node_selector[kProductLabel] =
              Product(Uniform(0, num_gpu_flavors_ - 1));
        }
      }
      if (Coin(0.25)) {
        switch (Uniform(0, 3)) {
          case 0:
            ps.tolerations.push_back(
                {kReservedTaint, core::TolerationOperator::kExists, "", {}});
            break;
          case 1:
            ps.tolerations.push_back({kMaintTaint,
                                      core::TolerationOperator::kExists, "",
                                      core::TaintEffect::kNoSchedule});
            break;
          case 2:
            ps.tolerations.push_back(
                {"", core::TolerationOperator::kExists, "", {}});
            break;
          default:
            ps.tolerations.push_back({kReservedTaint,
                                      core::TolerationOperator::kEqual,
                                      Product(Uniform(0, num_gpu_flavors_ - 1)),
                                      core::TaintEffect::kNoSchedule});
        }
      }
      w.pod_sets.push_back(std::move(ps));
    }
    return w;
  }

 private:
  static std::string Zone(int32_t i) { return "z" + std::to_string(i); }
  static std::string Product(int32_t i) { return "p" + std::to_string(i); }

 public:
  // A random change to `n` for node-change property tests: one or more of
  // its labels (product, zone, rack), taints, cordon, GPU health, MIG
  // layout (a GPU split into slices or made whole again, slice UUIDs new),
  // capacity (CPU, memory, GPUs added or dropped). The name stays.
  core::Node MutateNode(const core::Node& node) {
    core::Node n = node;
    const int32_t changes = Uniform(1, 2);
    for (int32_t c = 0; c < changes; ++c) {
      switch (Uniform(0, 7)) {
        case 0:
          n.labels[kProductLabel] = Product(Uniform(0, num_gpu_flavors_ - 1));
          break;
        case 1:
          if (Coin(0.5)) {
            n.labels[kZoneLabel] = Zone(Uniform(0, 1));
          } else {
            n.labels[core::kTopologyRackLabel] =
                "r" + std::to_string(Uniform(0, 3));
          }
          break;
        case 2:
          if (!n.taints.empty() && Coin(0.5)) {
            n.taints.pop_back();
          } else {
            n.taints.push_back({kMaintTaint, "true",
                                Coin(0.5) ? core::TaintEffect::kNoSchedule
                                          : core::TaintEffect::kPreferNoSchedule});
          }
          break;
        case 3:
          n.unschedulable = !n.unschedulable;
          break;
        case 4:
          if (!n.gpus.empty()) {
            core::Gpu& g = n.gpus[size_t(Uniform(0, int32_t(n.gpus.size()) - 1))];
            g.healthy = !g.healthy;
          }
          break;
        case 5:
          if (!n.gpus.empty()) {
            core::Gpu& g = n.gpus[size_t(Uniform(0, int32_t(n.gpus.size()) - 1))];
            if (!g.mig.empty()) {
              g.mig.clear();
            } else if (has_mig_) {
              int32_t k = Coin(0.5) ? 7 : 3;
              for (int32_t i = 0; i < k; ++i) {
                g.mig.push_back({"MIG-" + g.uuid + "-v" +
                                     std::to_string(next_uuid_++),
                                 k == 7 || i == 0 ? kMig1g : kMig2g});
              }
            }
          }
          break;
        case 6:
          if (Coin(0.5)) {
            n.cpu = Quantity::FromUnits(Uniform(8, 128));
          } else {
            n.memory = Gi(Uniform(32, 1024));
          }
          break;
        default:
          if (!n.gpus.empty() && Coin(0.5)) {
            n.gpus.pop_back();
          } else {
            core::Gpu g = n.gpus.empty() ? core::Gpu() : n.gpus.back();
            g.uuid = "GPU-" + n.name + "-v" + std::to_string(next_uuid_++);
            g.product = n.labels[kProductLabel];
            g.memory = Gi(80);
            g.healthy = true;
            for (size_t i = 0; i < g.mig.size(); ++i) {
              g.mig[i].uuid = "MIG-" + g.uuid + "-" + std::to_string(i);
            }
            n.gpus.push_back(std::move(g));
          }
          break;
      }
    }
    return n;
  }

  // A new node like `like` (its labels, taints and GPU shapes), named
  // `name`, with fresh UUIDs and sometimes another product.
  core::Node NewNode(const core::Node& like, const std::string& name) {
    core::Node n = like;
    n.name = name;
    if (Coin(0.3)) {
      n.labels[kProductLabel] = Product(Uniform(0, num_gpu_flavors_ - 1));
    }
    for (size_t g = 0; g < n.gpus.size(); ++g) {
      n.gpus[g].uuid = "GPU-" + name + "-" + std::to_string(g);
      n.gpus[g].healthy = true;
      for (size_t i = 0; i < n.gpus[g].mig.size(); ++i) {
        n.gpus[g].mig[i].uuid =
            "MIG-" + n.gpus[g].uuid + "-" + std::to_string(i);
      }
    }
    return n;
  }

 private:
  void Build() {
    core::Config& c = config_;
    num_gpu_flavors_ = Uniform(2, 4);
    has_mig_ = Coin(0.5);
    has_cpu_ = !opt_.quota_free && Coin(0.5);
    std::vector<bool> tainted;
    for (int32_t i = 0; i < num_gpu_flavors_; ++i) {
      core::ResourceFlavor f;
      f.name = "f" + std::to_string(i);
      f.node_labels[kProductLabel] = Product(i);
      if (i > 0 && Coin(0.2)) f.node_labels[kZoneLabel] = Zone(i % 2);
      tainted.push_back(Coin(0.3));
      if (tainted.back()) {
        f.node_taints.push_back(
            {kReservedTaint, Product(i), core::TaintEffect::kNoSchedule});
        if (Coin(0.5)) {
          f.tolerations.push_back({kReservedTaint,
                                   core::TolerationOperator::kEqual, Product(i),
                                   core::TaintEffect::kNoSchedule});
        }
      }
      if (Coin(0.1)) {
        f.tolerations.push_back(
            {kMaintTaint, core::TolerationOperator::kExists, "", {}});
      }
      c.flavors.push_back(std::move(f));
    }
    if (has_cpu_) {
      core::ResourceFlavor any;
      any.name = "cpu-any";
      c.flavors.push_back(any);
      core::ResourceFlavor z0;
      z0.name = "cpu-z0";
      z0.node_labels[kZoneLabel] = Zone(0);
      c.flavors.push_back(z0);
    }

    // Nodes.
    const int32_t nn = opt_.ample_nodes
                           ? Uniform(10, 16)
                           : Uniform(opt_.min_nodes, opt_.max_nodes);
    for (int32_t k = 0; k < nn; ++k) {
      core::Node n;
      char buf[16];
      std::snprintf(buf, sizeof buf, "n%02d", k);
      n.name = buf;
      int32_t fi = Uniform(0, num_gpu_flavors_ - 1);
      n.labels[kProductLabel] = Product(fi);
      n.labels[kZoneLabel] = Zone(Uniform(0, 1));
      n.labels[core::kTopologyRackLabel] = "r" + std::to_string(Uniform(0, 2));
      if (tainted[size_t(fi)] && Coin(0.9)) {
        n.taints.push_back(
            {kReservedTaint, Product(fi), core::TaintEffect::kNoSchedule});
      }
      if (Coin(0.15)) {
        core::TaintEffect e = Pick(std::vector<core::TaintEffect>{
            core::TaintEffect::kNoSchedule, core::TaintEffect::kNoExecute,
            core::TaintEffect::kPreferNoSchedule});
        n.taints.push_back({kMaintTaint, "true", e});
      }
      n.unschedulable = !opt_.ample_nodes && Coin(0.1);
      n.cpu = Quantity::FromUnits(Uniform(16, 128));
      n.memory = Gi(Uniform(64, 1024));
      bool mig_node = has_mig_ && Coin(0.35);
      int32_t ng = opt_.ample_nodes ? 8 : Uniform(1, 8);
      for (int32_t g = 0; g < ng; ++g) {
        core::Gpu gpu;
        gpu.uuid = "GPU-" + n.name + "-" + std::to_string(g);
        gpu.product = Product(fi);
        gpu.memory = Gi(80);
        gpu.healthy = opt_.ample_nodes || !Coin(0.08);
        if (mig_node && Coin(0.7)) {
          std::vector<std::string> profiles;
          if (Coin(0.7)) {
            profiles.assign(7, kMig1g);
          } else {
            profiles = {kMig1g, kMig1g, kMig1g, kMig2g, kMig2g};
          }
          for (size_t s = 0; s < profiles.size(); ++s) {
            gpu.mig.push_back(
                {"MIG-" + gpu.uuid + "-" + std::to_string(s), profiles[s]});
          }
        }
        n.gpus.push_back(std::move(gpu));
      }
      c.nodes.push_back(std::move(n));
    }

    // Cohort forest: 1-2 roots, 0-2 children each, sometimes a grandchild.
    std::vector<std::string> cohort_names;
    const int32_t nroots = opt_.single_tree ? 1 : Uniform(1, 2);
    for (int32_t r = 0; r < nroots; ++r) {
      std::string root = "co" + std::to_string(r);
      cohort_names.push_back(root);
      AddCohort(root, "");
      int32_t nchildren = Uniform(0, 2);
      for (int32_t j = 0; j < nchildren; ++j) {
        std::string child = root + "-" + std::to_string(j);
        cohort_names.push_back(child);
        AddCohort(child, root);
        if (Coin(0.3)) {
          std::string grandchild = child + "-0";
          cohort_names.push_back(grandchild);
          AddCohort(grandchild, child);
        }
      }
    }

    // ClusterQueues and LocalQueues.
    const int32_t ncq = Uniform(2, std::max(2, opt_.max_cluster_queues));
    for (int32_t i = 0; i < ncq; ++i) {
      core::ClusterQueue q;
      q.name = "cq" + std::to_string(i);
      q.cohort = !opt_.single_tree && Coin(0.1) ? "" : Pick(cohort_names);
      const bool in_cohort = !q.cohort.empty();
      q.namespace_selector = core::LabelSelector{};
      if (!opt_.quota_free && Coin(0.04))
        q.namespace_selector->match_labels["team"] = "nobody";
      CqShape shape;
      shape.name = q.name;
      shape.covers_gpu = true;

      std::vector<int32_t> fl;
      for (int32_t f = 0; f < num_gpu_flavors_; ++f) fl.push_back(f);
      std::shuffle(fl.begin(), fl.end(), rng_);
      const int32_t take = Uniform(1, num_gpu_flavors_);
      std::vector<int32_t> gpu_fl(fl.begin(), fl.begin() + take);
      std::vector<int32_t> rest(fl.begin() + take, fl.end());
      bool mig = has_mig_ && Coin(0.7);
      bool mig_separate = mig && !rest.empty() && Coin(0.5);
      shape.covers_mig = mig;
      {
        core::ResourceGroup g;
        g.covered_resources.push_back(core::kGpuResource);
        if (mig && !mig_separate)
          g.covered_resources.push_back(core::MigResourceName(kMig1g));
        for (int32_t f : gpu_fl)
          g.flavors.push_back(Quotas(c.flavors[size_t(f)].name, g, in_cohort));
        q.resource_groups.push_back(std::move(g));
      }
      if (mig_separate) {
        core::ResourceGroup g;
        g.covered_resources.push_back(core::MigResourceName(kMig1g));
        int32_t n = Uniform(1, int32_t(rest.size()));
        for (int32_t k = 0; k < n; ++k) {
          g.flavors.push_back(
              Quotas(c.flavors[size_t(rest[size_t(k)])].name, g, in_cohort));
        }
        q.resource_groups.push_back(std::move(g));
      }
      if (has_cpu_ && Coin(0.8)) {
        shape.covers_cpu = true;
        core::ResourceGroup g;
        g.covered_resources = {core::kCpuResource, core::kMemoryResource};
        if (Coin(0.3)) g.flavors.push_back(Quotas("cpu-z0", g, in_cohort));
        g.flavors.push_back(Quotas("cpu-any", g, in_cohort));
        // Groups are listed in random order: the CPU group may come first.
        q.resource_groups.insert(
            q.resource_groups.begin() +
                Uniform(0, int32_t(q.resource_groups.size())),
            std::move(g));
      }
      q.queueing_strategy = !opt_.quota_free && Coin(0.3)
                                ? core::QueueingStrategy::kStrictFIFO
                                : core::QueueingStrategy::kBestEffortFIFO;
      const bool heavy = opt_.preemption_heavy && Coin(0.85);
      q.preemption.within_cluster_queue =
          Pick(std::vector<core::WithinClusterQueue>{
              heavy ? core::WithinClusterQueue::kLowerPriority
                    : core::WithinClusterQueue::kNever,
              core::WithinClusterQueue::kLowerPriority,
              core::WithinClusterQueue::kLowerOrNewerEqualPriority});
      q.preemption.reclaim_within_cohort =
          Pick(std::vector<core::ReclaimWithinCohort>{
              heavy ? core::ReclaimWithinCohort::kAny
                    : core::ReclaimWithinCohort::kNever,
              core::ReclaimWithinCohort::kLowerPriority,
              core::ReclaimWithinCohort::kAny});
      q.preemption.borrow_within_cohort =
          Coin(heavy ? 0.6 : 0.4)
              ? core::BorrowWithinCohortPolicy::kLowerPriority
              : core::BorrowWithinCohortPolicy::kNever;
      if (Coin(0.3)) {
        q.preemption.max_priority_threshold =
            opt_.preemption_heavy ? Uniform(0, 9) * 10
                                  : Pick(std::vector<int32_t>{0, 5, 10});
      }
      q.flavor_fungibility.when_can_borrow =
          Coin(0.5) ? core::FungibilityPolicy::kMayStopSearch
                    : core::FungibilityPolicy::kTryNextFlavor;
      q.flavor_fungibility.when_can_preempt =
          !opt_.quota_free && Coin(0.5)
              ? core::FungibilityPolicy::kMayStopSearch
              : core::FungibilityPolicy::kTryNextFlavor;
      q.fair_weight_milli =
          Coin(0.03) ? 0 : Pick(std::vector<int64_t>{1000, 1000, 500, 2000});
      if (!opt_.quota_free && Coin(0.04))
        q.stop_policy = core::StopPolicy::kHold;
      cq_shapes_.push_back(shape);

      core::LocalQueue lq;
      lq.ns = "team-" + std::to_string(i % 3);
      lq.name = "lq-" + q.name;
      lq.cluster_queue = q.name;
      c.local_queues.push_back(lq);
      if (Coin(0.3)) {
        lq.ns = "team-" + std::to_string((i + 1) % 3);
        lq.name = "lq2-" + q.name;
        c.local_queues.push_back(lq);
      }
      c.cluster_queues.push_back(std::move(q));
    }

    c.scheduler.fair_sharing = Coin(0.35);
    switch (Uniform(0, 3)) {
      case 0:
        c.scheduler.preemption_strategies = {
            core::FairSharingStrategy::kLessThanOrEqualToFinalShare};
        break;
      case 1:
        c.scheduler.preemption_strategies = {
            core::FairSharingStrategy::kLessThanInitialShare};
        break;
      default:
        break;  // Both, Kueue's default.
    }

    for (int32_t i = 0; i < opt_.initial_workloads; ++i)
      c.workloads.push_back(NextWorkload(0));
  }

  void AddCohort(const std::string& name, const std::string& parent) {
    // A root cohort is sometimes only named by its ClusterQueues and
    // children (implicit, no quota); a child must be declared for its parent.
    if (parent.empty() && Coin(0.4)) return;
    core::Cohort co;
    co.name = name;
    co.parent = parent;
    co.fair_weight_milli = 1000;
    if (!opt_.quota_free && Coin(0.4)) {
      core::ResourceGroup g;
      g.covered_resources.push_back(core::kGpuResource);
      if (has_mig_)
        g.covered_resources.push_back(core::MigResourceName(kMig1g));
      std::vector<int32_t> fl;
      for (int32_t f = 0; f < num_gpu_flavors_; ++f) fl.push_back(f);
      std::shuffle(fl.begin(), fl.end(), rng_);
      int32_t take = Uniform(1, num_gpu_flavors_);
      for (int32_t k = 0; k < take; ++k) {
        core::FlavorQuotas fq;
        fq.name = "f" + std::to_string(fl[size_t(k)]);
        for (const auto& r : g.covered_resources) {
          core::ResourceQuota rq;
          rq.name = r;
          int32_t nominal = Uniform(0, 8);
          rq.nominal_quota = Quantity::FromUnits(nominal);
          if (!parent.empty() && Coin(0.3))
            rq.lending_limit = Quantity::FromUnits(Uniform(0, nominal));
          if (!parent.empty() && Coin(0.25))
            rq.borrowing_limit = Quantity::FromUnits(Uniform(0, 6));
          fq.resources.push_back(rq);
        }
        g.flavors.push_back(std::move(fq));
      }
      co.resource_groups.push_back(std::move(g));
    }
    config_.cohorts.push_back(std::move(co));
  }

  core::FlavorQuotas Quotas(const std::string& flavor,
                            const core::ResourceGroup& g, bool in_cohort) {
    core::FlavorQuotas fq;
    fq.name = flavor;
    for (const auto& r : g.covered_resources) {
      core::ResourceQuota rq;
      rq.name = r;
      if (opt_.quota_free) {
        rq.nominal_quota = r == core::kMemoryResource
                               ? Gi(100000)
                               : Quantity::FromUnits(100000);
        fq.resources.push_back(rq);
        continue;
      }
      // Quantities in units (Gi for memory).
      int32_t max_nominal = r == core::kCpuResource      ? 96
                            : r == core::kMemoryResource ? 512
                                                         : 12;
      int32_t nominal = Coin(0.15) ? 0 : Uniform(0, max_nominal);
      auto q = [&](int32_t v) {
        return r == core::kMemoryResource ? Gi(v) : Quantity::FromUnits(v);
      };
      rq.nominal_quota = q(nominal);
      if (in_cohort && Coin(0.3))
        rq.borrowing_limit = q(Uniform(0, max_nominal * 2 / 3));
      if (in_cohort && Coin(0.3)) rq.lending_limit = q(Uniform(0, nominal));
      fq.resources.push_back(rq);
    }
    return fq;
  }

  std::mt19937_64 rng_;
  RandomClusterOptions opt_;
  core::Config config_;
  std::vector<CqShape> cq_shapes_;
  int32_t num_gpu_flavors_ = 2;
  bool has_mig_ = false;
  bool has_cpu_ = false;
  int32_t next_workload_ = 0;
  int32_t next_uuid_ = 0;  // For UUIDs MutateNode makes.
};

}  // namespace allot::sched::proptest
