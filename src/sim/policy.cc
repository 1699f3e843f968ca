// Policy transformations (see policy.h).
#include "sim/policy.h"

#include <map>
#include <set>

#include "core/manifest.h"

namespace allot::sim {
namespace {

constexpr char kGlobalCq[] = "allot-sim-global";
constexpr char kSimCohort[] = "allot-sim";

// One unlimited ClusterQueue covering every (flavor, resource) any
// ClusterQueue lists. Resources that share a group anywhere share one here.
core::ClusterQueue GlobalQueue(const core::Config& c) {
  std::map<std::string, std::string> parent;  // Union-find on resources.
  auto find = [&](std::string r) {
    while (parent[r] != r) r = parent[r];
    return r;
  };
  std::vector<std::string> flavor_order;
  std::map<std::string, std::set<std::string>> flavor_res;
  for (const auto& cq : c.cluster_queues) {
    for (const auto& g : cq.resource_groups) {
      for (const auto& r : g.covered_resources)
        if (!parent.count(r)) parent[r] = r;
      for (size_t i = 1; i < g.covered_resources.size(); ++i)
        parent[find(g.covered_resources[i])] = find(g.covered_resources[0]);
      for (const auto& f : g.flavors) {
        if (!flavor_res.count(f.name)) flavor_order.push_back(f.name);
        flavor_res[f.name].insert(g.covered_resources.begin(),
                                  g.covered_resources.end());
      }
    }
  }
  // Groups by root resource; a flavor goes to the group of its resources
  // (a flavor spanning two groups joins them).
  for (auto& [f, res] : flavor_res) {
    for (const auto& r : res) parent[find(r)] = find(*res.begin());
  }
  std::map<std::string, core::ResourceGroup> groups;
  std::vector<std::string> group_order;
  for (const auto& [r, p] : parent) {
    std::string root = find(r);
    if (!groups.count(root)) group_order.push_back(root);
    groups[root].covered_resources.push_back(r);
  }
  const Quantity kUnlimited = Quantity::FromUnits(1000000000);
  for (const auto& f : flavor_order) {
    std::string root = find(*flavor_res[f].begin());
    core::FlavorQuotas fq{f, {}};
    for (const auto& r : groups[root].covered_resources)
      fq.resources.push_back({r, kUnlimited, {}, {}});
    groups[root].flavors.push_back(std::move(fq));
  }
  core::ClusterQueue cq;
  cq.name = kGlobalCq;
  cq.namespace_selector = core::LabelSelector{};
  cq.queueing_strategy = core::QueueingStrategy::kStrictFIFO;
  for (const auto& root : group_order) cq.resource_groups.push_back(groups[root]);
  return cq;
}

}  // namespace

const std::vector<std::string>& PolicyNames() {
  static const std::vector<std::string> kNames = {"fifo", "strict", "kueue",
                                                  "fair", "allot"};
  return kNames;
}

std::string PolicyDescription(const std::string& name) {
  if (name == "as-given") return "the config as given";
  if (name == "fifo") return "no quotas, one global StrictFIFO queue";
  if (name == "strict") return "StrictFIFO quotas, no borrowing";
  if (name == "kueue")
    return "Kueue default: BestEffortFIFO, cohort borrowing, reclaim (Any)";
  if (name == "fair") return "kueue + fair sharing (preemption by share)";
  if (name == "allot")
    return "BestEffortFIFO, cohort borrowing, fair sharing, no preemption";
  if (name == "park")
    return "allot + parking: idle long-running jobs park, their GPUs lent to preemptible jobs";
  return "";
}

bool PolicyParks(const std::string& name) { return name == "park"; }

Result<core::Config> ApplyPolicy(const core::Config& config,
                                 const std::string& policy) {
  core::Config c = config;
  using core::QueueingStrategy;
  if (policy == "as-given") {
    // Unchanged.
  } else if (policy == "fifo") {
    core::ClusterQueue global = GlobalQueue(c);
    c.cluster_queues.clear();
    c.cohorts.clear();
    c.cluster_queues.push_back(std::move(global));
    for (auto& lq : c.local_queues) lq.cluster_queue = kGlobalCq;
    c.scheduler.fair_sharing = false;
  } else if (policy == "strict") {
    c.cohorts.clear();
    for (auto& cq : c.cluster_queues) {
      cq.cohort.clear();
      cq.queueing_strategy = QueueingStrategy::kStrictFIFO;
      cq.preemption.reclaim_within_cohort = core::ReclaimWithinCohort::kNever;
      cq.preemption.borrow_within_cohort = core::BorrowWithinCohortPolicy::kNever;
    }
    c.scheduler.fair_sharing = false;
  } else if (policy == "kueue" || policy == "fair" || policy == "allot" || policy == "park") {
    for (auto& cq : c.cluster_queues) {
      if (cq.cohort.empty()) cq.cohort = kSimCohort;
      cq.queueing_strategy = QueueingStrategy::kBestEffortFIFO;
      if (policy == "allot" || policy == "park") {
        cq.preemption = core::PreemptionPolicy{};
      } else {
        cq.preemption.within_cluster_queue =
            core::WithinClusterQueue::kLowerPriority;
        cq.preemption.reclaim_within_cohort = core::ReclaimWithinCohort::kAny;
        cq.preemption.borrow_within_cohort =
            core::BorrowWithinCohortPolicy::kNever;
      }
    }
    c.scheduler = core::SchedulerConfig{};
    c.scheduler.fair_sharing = policy != "kueue";
  } else {
    std::string list = "as-given";
    for (const auto& n : PolicyNames()) list += ", " + n;
    list += ", park";
    return Status::InvalidArgument("unknown policy \"" + policy +
                                   "\" (expected one of: " + list + ")");
  }
  Status s = core::ValidateConfig(&c);
  if (!s.ok()) {
    return Status::InvalidArgument("policy " + policy +
                                   " makes an invalid config: " + s.message());
  }
  return c;
}

}  // namespace allot::sim
