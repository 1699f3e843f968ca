// The event loop of Simulate (see simulator.h).
#include "sim/simulator.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <memory>
#include <queue>
#include <random>
#include <set>

#include "ctrl/deadlines.h"
#include "ctrl/registry.h"
#include "ctrl/runner.h"
#include "sched/scheduler.h"
#include "sim/idle_model.h"

namespace allot::sim {
namespace {

constexpr char kRepairNs[] = "allot-sim-repair";
constexpr char kRepairCq[] = "allot-sim-repair";

// Piecewise-constant level integrated into fixed windows.
class Integrator {
 public:
  Integrator(std::vector<int64_t>* out, int64_t window_ms)
      : out_(out), window_(window_ms) {}
  void Set(int64_t t, int64_t level) {
    Advance(t);
    level_ = level;
  }
  void Add(int64_t t, int64_t delta) { Set(t, level_ + delta); }
  int64_t level() const { return level_; }
  void Advance(int64_t t) {
    if (level_ != 0 && t > last_) {
      int64_t a = last_;
      while (a < t) {
        size_t w = size_t(a / window_);
        int64_t b = std::min(t, int64_t(w + 1) * window_);
        if (out_->size() <= w) out_->resize(w + 1, 0);
        (*out_)[w] += level_ * (b - a);
        a = b;
      }
    }
    last_ = std::max(last_, t);
  }

 private:
  std::vector<int64_t>* out_;
  int64_t window_;
  int64_t level_ = 0;
  int64_t last_ = 0;
};

// A job, compact (a million of them must fit): its Workload is built when
// it is submitted (Sim::MakeWorkload).
struct Job {
  int32_t queue = 0;     // Index into Sim::names_ (LocalQueue name).
  int32_t cq = 0;        // Index into Sim::names_ (its ClusterQueue).
  int32_t pclass = -1;   // Index into Sim::names_, or -1.
  int32_t resource = 0;  // Index into Sim::names_.
  int32_t type = 0;      // Index into Sim::names_.
  int32_t pods = 1;
  int32_t per_pod = 0;
  int32_t priority = 0;
  int64_t remaining_ms = 0;
  int64_t run_start_ms = -1;  // Current attempt; -1 when not running.
  int64_t pending_since_ms = 0;
  uint32_t attempt = 0;  // Bumped on every start: stale completions skip.
  std::vector<int32_t> nodes;  // While running, with failures on.
  // Parking (SimOptions::idle, park_after_ms): its idle periods (index
  // into Sim::idle_; -1: never idle), and its state while admitted.
  int32_t idle = -1;
  bool preemptible = false;
  bool on_parked = false;  // This attempt runs on parked capacity.
  bool parked = false;
  bool waiting = false;      // Parked, its resume asked, no devices yet.
  uint32_t park_gen = 0;     // Bumped when its park and wake events go stale.
  int64_t held_from_ms = 0;  // When it last took its devices.
  int64_t parked_at_ms = 0;
  int64_t asked_ms = 0;  // When its resume was asked.
};

struct Completion {
  int64_t t;
  int32_t job;
  uint32_t attempt;
  bool operator>(const Completion& o) const {
    return t != o.t ? t > o.t : job > o.job;
  }
};

// A long-running job parks (wake = false) or its idle period ends and it
// asks to resume (wake = true).
struct ParkEvent {
  int64_t t;
  int32_t job;
  uint32_t gen;
  bool wake;
  bool operator>(const ParkEvent& o) const {
    return t != o.t ? t > o.t : job > o.job;
  }
};

struct NodeEvent {
  int64_t t;
  int32_t node;
  bool fail;  // false: repair.
  bool operator>(const NodeEvent& o) const {
    return t != o.t ? t > o.t : node > o.node;
  }
};

// The devices of a node that can be taken down, by resource.
struct NodeInfo {
  std::string name;
  std::string flavor;  // "" when no flavor selects it (never fails).
  std::map<std::string, std::vector<std::string>> devices;  // resource -> uuids
  int64_t gpu_milli = 0;
  bool down = false;
  int32_t downs = 0;
  std::vector<int32_t> running;  // Jobs placed here (failures or pools on).
  bool pooled = false;  // A node of an autoscaled pool (never fails).
};

// The first of a job's idle periods (sorted, disjoint [start, end) life
// offsets) that ends after `at`.
using IdlePeriodList = std::vector<std::pair<int64_t, int64_t>>;
IdlePeriodList::const_iterator IdleFrom(const IdlePeriodList& periods, int64_t at) {
  return std::lower_bound(periods.begin(), periods.end(), at,
                          [](const std::pair<int64_t, int64_t>& p, int64_t t) { return p.second <= t; });
}

int64_t ParseJobIndex(const std::string& key) {
  size_t p = key.rfind("/j");
  if (p == std::string::npos) return -1;
  int64_t v = -1;
  auto [end, ec] = std::from_chars(key.data() + p + 2, key.data() + key.size(), v);
  if (ec != std::errc() || end != key.data() + key.size()) return -1;
  return v;
}

// Sum of nominal quota of GPU resources (milli-GPU units) of a ClusterQueue.
int64_t NominalGpuMilli(const core::ClusterQueue& cq) {
  int64_t total = 0;
  for (const auto& g : cq.resource_groups)
    for (const auto& f : g.flavors)
      for (const auto& r : f.resources)
        total += r.nominal_quota.milli() * GpuMilli(r.name) / 1000;
  return total;
}

class Sim {
 public:
  Sim(const core::Config& config, const core::Config& ent,
      const Trace& trace, const SimOptions& opt, SimResult* out)
      : config_(config), ent_(ent), trace_(trace), opt_(opt), r_(*out),
        rng_(opt.seed) {}

  Status Run();

 private:
  Status Setup();
  Status BuildJob(const TraceJob& tj);
  void ComputeCaps();
  bool Feasible(const std::string& cq, const std::string& resource,
                int64_t total_milli) const;
  void Start(int32_t j, int64_t t);
  // Records where an admitted job's devices are (failures on) and whether
  // it runs on parked capacity (parking on).
  void Placed(int32_t j);
  // An admitted job gives its devices up (it ends, is stopped or parks):
  // the tenant's allocation and the parking figures.
  void Release(int32_t j, int64_t t);
  // Stops a running job (preempted or killed); returns the GPU-ms lost.
  int64_t Stop(int32_t j, int64_t t);
  void Finish(int32_t j, int64_t t);
  // Whether it admitted anything.
  bool Schedule(int64_t t);
  // Runs the controllers due at `t` and applies their actions; whether
  // any was applied.
  bool RunControllers(int64_t t);
  void FailNode(int32_t n, int64_t t);
  // Parking: the next park of a running long-running job, if its life has
  // an idle period long enough; a park; a resume asked, tried and done.
  void PlanPark(int32_t j, int64_t t);
  void Park(int32_t j, int64_t t);
  void AskResume(int32_t j, int64_t t);
  void TryResumes(int64_t t);
  bool TryResume(int32_t j, int64_t t);
  // Time into the job's life (admitted time over its attempts) at `t`.
  int64_t LifeAt(int32_t j, int64_t t) const {
    const Job& job = jobs_[size_t(j)];
    return r_.jobs[size_t(j)].duration_ms - job.remaining_ms + (t - job.run_start_ms);
  }
  // The part of [from, to) of job j's life that its idle periods cover.
  int64_t IdleWithin(int32_t j, int64_t from, int64_t to) const;
  void RepairNode(int32_t n, int64_t t);
  int64_t Exp(int64_t mean_ms) { return ExponentialMs(rng_, mean_ms); }
  int32_t Name(const std::string& s) {
    auto [it, added] = name_idx_.emplace(s, int32_t(names_.size()));
    if (added) names_.push_back(s);
    return it->second;
  }
  std::string Key(int32_t j) const {
    return r_.tenants[size_t(r_.jobs[size_t(j)].tenant)] + "/j" + std::to_string(j);
  }
  core::Workload MakeWorkload(int32_t j) const;
  void Forget(int32_t j, int64_t t) {
    for (int32_t n : jobs_[size_t(j)].nodes) {
      auto& v = nodes_[size_t(n)].running;
      v.erase(std::find(v.begin(), v.end(), j));
      if (v.empty() && nodes_[size_t(n)].pooled) {
        fleet_->SetBusy(nodes_[size_t(n)].name, false, t);
        controllers_->Note(ctrl::kCapacity);
      }
    }
    jobs_[size_t(j)].nodes.clear();
  }
  // Whether running jobs' nodes are tracked (NodeInfo::running).
  bool TrackNodes() const { return opt_.mtbf_ms > 0 || !fleet_->empty(); }
  // Adds a node's devices to the inventory (nodes_), or finds it again.
  int32_t AddNodeInfo(const core::Node& n);
  // Autoscaling: nodes that registered at t, and the autoscaler's actions.
  void Register(int64_t t);
  void ApplyPoolAction(const ctrl::Action& a, int64_t t);

  const core::Config& config_;
  const core::Config& ent_;
  const Trace& trace_;
  const SimOptions& opt_;
  SimResult& r_;
  std::mt19937_64 rng_;
  std::unique_ptr<sched::Scheduler> sched_;
  std::vector<Job> jobs_;
  std::vector<std::string> names_;
  std::map<std::string, int32_t> name_idx_;
  std::map<std::string, int32_t> tenant_idx_;
  std::vector<Integrator> alloc_, demand_, pending_, parked_;
  std::unique_ptr<Integrator> capacity_;
  std::priority_queue<Completion, std::vector<Completion>, std::greater<>>
      completions_;
  std::priority_queue<NodeEvent, std::vector<NodeEvent>, std::greater<>>
      node_events_;
  std::priority_queue<ParkEvent, std::vector<ParkEvent>, std::greater<>> park_events_;
  // Idle periods of long-running jobs (Job::idle), resumes waiting for
  // devices by (asked, job), and whether parking is on.
  std::vector<std::vector<std::pair<int64_t, int64_t>>> idle_;
  std::set<std::pair<int64_t, int32_t>> waiting_;
  bool parking_ = false;
  std::vector<NodeInfo> nodes_;
  std::map<std::string, int32_t> node_idx_;
  // (cq, resource) -> the most of it one workload could ever get, per flavor
  // (the max over its flavors).
  std::map<std::pair<std::string, std::string>, int64_t> caps_;
  std::map<std::string, int64_t> max_per_node_;  // resource -> devices
  std::map<std::pair<std::string, std::string>, std::string> lq_cq_;
  std::map<std::string, int32_t> priority_classes_;
  std::set<std::string> preemptible_classes_;
  int64_t pending_jobs_ = 0, down_nodes_ = 0;
  // Running jobs and their keys (built once per start: the controllers'
  // view reads them at every run), and ClusterQueues by name.
  std::map<int32_t, std::string> running_jobs_;
  std::map<std::string, const core::ClusterQueue*, std::less<>> cq_by_name_;
  // Per name (names_): a ClusterQueue that sets a default run-time limit
  // (allot.dev/max-run-duration); whether any does.
  std::vector<uint8_t> cq_limited_;
  bool any_limited_ = false;
  std::unique_ptr<ctrl::Runner> controllers_;
  std::unique_ptr<PoolFleet> fleet_;
  friend class SimView;
};

// The controllers' view of the simulation (ctrl/controller.h). Jobs set
// no run-time limit of their own, so only those of ClusterQueues with a
// default can have one (ForEachAdmittedWithLimit): on traces where no
// ClusterQueue sets one, the deadlines controller reads nothing.
class SimView : public ctrl::View {
 public:
  explicit SimView(const Sim& s) : s_(s) {}
  int64_t StartedMs() const override { return 0; }
  void ForEachAdmitted(const std::function<void(const ctrl::AdmittedView&)>& fn) const override {
    for (const auto& [j, key] : s_.running_jobs_) {
      const Job& job = s_.jobs_[size_t(j)];
      fn({key, s_.names_[size_t(job.cq)], job.run_start_ms, 0});
    }
  }
  void ForEachAdmittedWithLimit(
      const std::function<void(const ctrl::AdmittedView&)>& fn) const override {
    if (!s_.any_limited_) return;
    for (const auto& [j, key] : s_.running_jobs_) {
      const Job& job = s_.jobs_[size_t(j)];
      if (!s_.cq_limited_[size_t(job.cq)]) continue;
      fn({key, s_.names_[size_t(job.cq)], job.run_start_ms, 0});
    }
  }
  // No telemetry: nothing is ever idle (the idle parker reads nothing).
  void ForEachAdmittedWithIdlePolicy(
      const std::function<void(const ctrl::AdmittedView&)>&) const override {}
  void ForEachPodFailure(const std::function<void(const ctrl::PodFailureView&)>&) const override {}
  void ForEachAgent(const std::function<void(const ctrl::AgentView&)>&) const override {}
  const core::ClusterQueue* FindClusterQueue(std::string_view name) const override {
    auto it = s_.cq_by_name_.find(name);
    return it == s_.cq_by_name_.end() ? nullptr : it->second;
  }
  void ForEachPool(const std::function<void(const ctrl::PoolView&)>& fn) const override {
    s_.fleet_->ForEachPool(*s_.sched_, fn);
  }
  std::vector<sched::CapacityDemand> CapacityDemands() const override {
    return s_.sched_->CapacityDemands();
  }
  const core::ResourceFlavor* FindFlavor(std::string_view name) const override {
    return s_.sched_->Flavor(std::string(name));
  }

 private:
  const Sim& s_;
};

void Sim::ComputeCaps() {
  // Per cohort root: the tree's total nominal per (flavor, resource).
  std::map<std::string, std::string> parent;
  for (const auto& c : config_.cohorts) parent[c.name] = c.parent;
  auto root = [&](std::string c) {
    for (int i = 0; i < 1000 && parent.count(c) && !parent[c].empty(); ++i)
      c = parent[c];
    return c;
  };
  using FR = std::pair<std::string, std::string>;
  std::map<std::string, std::map<FR, int64_t>> tree_total;
  auto add_groups = [&](const std::string& r,
                        const std::vector<core::ResourceGroup>& groups) {
    for (const auto& g : groups)
      for (const auto& f : g.flavors)
        for (const auto& q : f.resources)
          tree_total[r][{f.name, q.name}] += q.nominal_quota.milli();
  };
  for (const auto& c : config_.cohorts) add_groups(root(c.name), c.resource_groups);
  for (const auto& cq : config_.cluster_queues) {
    if (!cq.cohort.empty()) add_groups(root(cq.cohort), cq.resource_groups);
  }
  for (const auto& cq : config_.cluster_queues) {
    for (const auto& g : cq.resource_groups) {
      for (const auto& f : g.flavors) {
        for (const auto& q : f.resources) {
          int64_t cap = q.nominal_quota.milli();
          if (!cq.cohort.empty()) {
            int64_t total = tree_total[root(cq.cohort)][{f.name, q.name}];
            int64_t borrow = total - cap;
            if (q.borrowing_limit) borrow = std::min(borrow, q.borrowing_limit->milli());
            cap += std::max<int64_t>(0, borrow);
          }
          int64_t& best = caps_[{cq.name, q.name}];
          best = std::max(best, cap);
        }
      }
    }
  }
}

bool Sim::Feasible(const std::string& cq, const std::string& resource,
                   int64_t total_milli) const {
  auto it = caps_.find({cq, resource});
  return it != caps_.end() && it->second >= total_milli;
}

int32_t Sim::AddNodeInfo(const core::Node& n) {
  if (auto it = node_idx_.find(n.name); it != node_idx_.end()) return it->second;
  NodeInfo info;
  info.name = n.name;
  for (const core::ResourceFlavor& f : config_.flavors) {
    if (core::LabelsMatch(f.node_labels, n.labels)) {
      info.flavor = f.name;
      break;
    }
  }
  for (const core::Gpu& g : n.gpus) {
    if (!g.healthy) continue;
    if (g.mig.empty()) {
      info.devices[core::kGpuResource].push_back(g.uuid);
    } else {
      for (const auto& sl : g.mig) info.devices[core::MigResourceName(sl.profile)].push_back(sl.uuid);
    }
  }
  for (const auto& [res, uuids] : info.devices) {
    info.gpu_milli += GpuMilli(res) * int64_t(uuids.size());
    int64_t& m = max_per_node_[res];
    m = std::max(m, int64_t(uuids.size()));
  }
  node_idx_[n.name] = int32_t(nodes_.size());
  nodes_.push_back(std::move(info));
  return int32_t(nodes_.size()) - 1;
}

Status Sim::Setup() {
  r_.window_ms = opt_.window_ms;
  for (const auto& lq : config_.local_queues)
    lq_cq_[{lq.ns, lq.name}] = lq.cluster_queue;
  for (const auto& pc : config_.priority_classes) {
    priority_classes_[pc.name] = pc.value;
    if (pc.preemptible) preemptible_classes_.insert(pc.name);
  }
  parking_ = opt_.idle.enabled() && opt_.park_after_ms > 0;
  r_.idle_model = opt_.idle.enabled();
  r_.parking = parking_;
  ComputeCaps();

  // Nodes: capacity, the largest node per resource, failure inventory;
  // autoscaled pools' nodes up from the start join them.
  fleet_ = std::make_unique<PoolFleet>(config_.node_pools, opt_.seed);
  std::vector<core::Node> pool_nodes = fleet_->InitialNodes();
  fleet_->LargestNodes(&max_per_node_);
  for (const core::Node& n : config_.nodes) AddNodeInfo(n);
  for (const core::Node& n : pool_nodes) nodes_[size_t(AddNodeInfo(n))].pooled = true;
  // Up at the start: every node; the cluster's size: pools at maxNodes.
  int64_t capacity_at_start = 0;
  for (const NodeInfo& info : nodes_) {
    capacity_at_start += info.gpu_milli;
    if (!info.pooled) r_.capacity_milli += info.gpu_milli;
  }
  r_.capacity_milli += fleet_->MaxGpuMilli();

  // With failures: a hidden ClusterQueue, outside every cohort, holds the
  // devices of down nodes.
  core::Config cfg = config_;
  cfg.nodes.insert(cfg.nodes.end(), pool_nodes.begin(), pool_nodes.end());
  cfg.node_pools.clear();
  if (opt_.mtbf_ms > 0) {
    std::set<std::string> resources;
    for (const auto& n : nodes_)
      for (const auto& [res, u] : n.devices) resources.insert(res);
    core::ClusterQueue cq;
    cq.name = kRepairCq;
    cq.namespace_selector = core::LabelSelector{};
    core::ResourceGroup g;
    g.covered_resources.assign(resources.begin(), resources.end());
    for (const auto& f : config_.flavors) {
      core::FlavorQuotas fq{f.name, {}};
      for (const auto& res : resources) fq.resources.push_back({res, {}, {}, {}});
      g.flavors.push_back(std::move(fq));
    }
    if (!resources.empty() && !g.flavors.empty())
      cq.resource_groups.push_back(std::move(g));
    for (const auto& existing : cfg.cluster_queues) {
      if (existing.name == kRepairCq) {
        return Status::InvalidArgument(std::string("ClusterQueue ") +
                                       kRepairCq + " is reserved by the simulator");
      }
    }
    cfg.cluster_queues.push_back(std::move(cq));
  }
  cfg.workloads.clear();
  auto created = sched::Scheduler::Create(cfg);
  if (!created.ok()) return created.status();
  sched_ = std::move(*created);

  // Tenants: every tenant of the trace, sorted.
  std::set<std::string> tenants;
  for (const TraceJob& j : trace_.jobs) tenants.insert(j.tenant);
  for (const std::string& t : tenants) {
    tenant_idx_[t] = int32_t(r_.tenants.size());
    r_.tenants.push_back(t);
  }
  // Entitlement: the nominal GPU quota of the tenant's ClusterQueue in the
  // entitlement config, shared equally by the tenants whose queues use it.
  std::map<std::pair<std::string, std::string>, std::string> ent_lq;
  for (const auto& lq : ent_.local_queues) ent_lq[{lq.ns, lq.name}] = lq.cluster_queue;
  std::map<std::string, std::set<std::string>> cq_tenants;
  std::vector<std::set<std::string>> tenant_cqs(r_.tenants.size());
  for (const TraceJob& j : trace_.jobs) {
    auto it = ent_lq.find({j.tenant, j.queue.empty() ? j.tenant : j.queue});
    if (it == ent_lq.end()) continue;
    cq_tenants[it->second].insert(j.tenant);
    tenant_cqs[size_t(tenant_idx_[j.tenant])].insert(it->second);
  }
  r_.entitlement_milli.assign(r_.tenants.size(), 0);
  for (size_t t = 0; t < r_.tenants.size(); ++t) {
    for (const std::string& c : tenant_cqs[t]) {
      for (const auto& cq : ent_.cluster_queues) {
        if (cq.name == c) {
          r_.entitlement_milli[t] +=
              NominalGpuMilli(cq) / int64_t(cq_tenants[c].size());
        }
      }
    }
  }
  r_.series.assign(r_.tenants.size(), {});
  for (size_t t = 0; t < r_.tenants.size(); ++t) {
    alloc_.emplace_back(&r_.series[t].alloc, opt_.window_ms);
    demand_.emplace_back(&r_.series[t].demand, opt_.window_ms);
    pending_.emplace_back(&r_.series[t].pending, opt_.window_ms);
    parked_.emplace_back(&r_.series[t].parked, opt_.window_ms);
  }
  capacity_ = std::make_unique<Integrator>(&r_.capacity_series, opt_.window_ms);
  capacity_->Set(0, capacity_at_start);

  jobs_.reserve(trace_.jobs.size());
  r_.jobs.reserve(trace_.jobs.size());
  for (size_t i = 0; i < trace_.jobs.size(); ++i) {
    ALLOT_RETURN_IF_ERROR(BuildJob(trace_.jobs[i]));
  }
  return Status::Ok();
}

Status Sim::BuildJob(const TraceJob& tj) {
  auto issue = [&](std::string msg) {
    r_.issues.push_back({tj.line, std::move(msg)});
    return Status::Ok();
  };
  const std::string queue = tj.queue.empty() ? tj.tenant : tj.queue;
  auto lq = lq_cq_.find({tj.tenant, queue});
  if (lq == lq_cq_.end()) {
    return issue("no LocalQueue " + tj.tenant + "/" + queue +
                 " in the config for tenant " + tj.tenant);
  }
  std::string resource = tj.mig_profile.empty()
                             ? std::string(core::kGpuResource)
                             : core::MigResourceName(tj.mig_profile);
  int64_t largest = max_per_node_.count(resource) ? max_per_node_[resource] : 0;
  int32_t pods = tj.pods, per_pod = tj.gpus;
  if (pods == 0) {  // Split a total over pods that fit the nodes.
    pods = 1;
    if (per_pod > largest && largest > 0) {
      for (int64_t d = largest; d >= 1; --d) {
        if (per_pod % d == 0) {
          pods = int32_t(per_pod / d);
          per_pod = int32_t(d);
          break;
        }
      }
    }
  }
  if (per_pod > largest) {
    return issue("a pod needs " + std::to_string(per_pod) + " " + resource +
                 "; the largest node has " + std::to_string(largest));
  }
  int32_t priority = 0;
  std::string pclass;
  if (!tj.priority.empty()) {
    int64_t v = 0;
    auto [end, ec] = std::from_chars(tj.priority.data(),
                                     tj.priority.data() + tj.priority.size(), v);
    if (ec == std::errc() && end == tj.priority.data() + tj.priority.size() &&
        v >= INT32_MIN && v <= INT32_MAX) {
      priority = int32_t(v);
    } else if (auto it = priority_classes_.find(tj.priority);
               it != priority_classes_.end()) {
      priority = it->second;
      pclass = tj.priority;
    } else {
      return issue("unknown WorkloadPriorityClass " + tj.priority);
    }
  }
  int64_t total = int64_t(pods) * per_pod * 1000;
  if (per_pod > 0 && !Feasible(lq->second, resource, total)) {
    r_.infeasible.push_back({tj.line, "needs " + std::to_string(pods * per_pod) + " " + resource +
                 " in total, more than ClusterQueue " + lq->second +
                 " can ever hold (nominal quota plus borrowing)"});
    return Status::Ok();
  }
  Job j;
  j.queue = Name(queue);
  j.cq = Name(lq->second);
  j.pclass = pclass.empty() ? -1 : Name(pclass);
  j.resource = Name(resource);
  j.type = Name(tj.type);
  j.pods = pods;
  j.per_pod = per_pod;
  j.priority = priority;
  j.remaining_ms = tj.duration_ms;
  // Idleness and the preemptible mark, drawn by the job's place in the
  // trace (the same under every policy).
  const int64_t index = &tj - trace_.jobs.data();
  if (LongRunning(opt_.idle, tj.type, tj.duration_ms)) {
    j.idle = int32_t(idle_.size());
    idle_.push_back(IdlePeriods(opt_.idle, opt_.seed, index, tj.duration_ms));
    ++r_.park.long_running_jobs;
  }
  j.preemptible = tj.preemptible || (!pclass.empty() && preemptible_classes_.count(pclass)) ||
                  (j.idle < 0 && DrawnPreemptible(opt_.preemptible_fraction, opt_.seed, index));
  r_.park.preemptible_jobs += j.preemptible;
  JobOutcome o;
  o.tenant = tenant_idx_[tj.tenant];
  o.line = tj.line;
  o.submit_ms = tj.submit_ms;
  o.duration_ms = tj.duration_ms;
  o.gpu_milli = int64_t(pods) * per_pod * GpuMilli(resource);
  r_.jobs.push_back(o);
  jobs_.push_back(std::move(j));
  return Status::Ok();
}

core::Workload Sim::MakeWorkload(int32_t j) const {
  const Job& job = jobs_[size_t(j)];
  const JobOutcome& o = r_.jobs[size_t(j)];
  core::Workload w;
  w.ns = r_.tenants[size_t(o.tenant)];
  w.name = "j" + std::to_string(j);
  w.queue_name = names_[size_t(job.queue)];
  w.type = names_[size_t(job.type)];
  w.priority = job.priority;
  if (job.pclass >= 0) w.priority_class_name = names_[size_t(job.pclass)];
  w.preemptible = job.preemptible;
  w.creation_unix_ms = o.submit_ms;
  core::PodSet ps;
  ps.name = "main";
  ps.count = job.pods;
  if (job.per_pod > 0) {
    ps.requests[names_[size_t(job.resource)]] = Quantity::FromUnits(job.per_pod);
  }
  w.pod_sets.push_back(std::move(ps));
  return w;
}

void Sim::Start(int32_t j, int64_t t) {
  Job& job = jobs_[size_t(j)];
  JobOutcome& o = r_.jobs[size_t(j)];
  job.run_start_ms = t;
  ++job.attempt;
  running_jobs_.emplace(j, Key(j));
  o.waited_ms += t - job.pending_since_ms;
  if (o.first_admit_ms < 0) o.first_admit_ms = t;
  alloc_[size_t(o.tenant)].Add(t, o.gpu_milli);
  pending_[size_t(o.tenant)].Add(t, -1000);
  --pending_jobs_;
  completions_.push({t + job.remaining_ms, j, job.attempt});
  job.held_from_ms = t;
  Placed(j);
  PlanPark(j, t);
}

void Sim::Placed(int32_t j) {
  Job& job = jobs_[size_t(j)];
  if (!TrackNodes() && !parking_) return;
  auto adm = sched_->AdmissionOf(Key(j));
  if (!adm) return;
  job.on_parked = adm->on_parked_capacity;
  if (!TrackNodes()) return;
  std::set<int32_t> on;
  for (const auto& psa : adm->pod_set_assignments)
    for (const auto& p : psa.placements) on.insert(node_idx_[p.node]);
  for (int32_t n : on) {
    job.nodes.push_back(n);
    NodeInfo& node = nodes_[size_t(n)];
    if (node.running.empty() && node.pooled) fleet_->SetBusy(node.name, true, 0);
    node.running.push_back(j);
  }
}

void Sim::Release(int32_t j, int64_t t) {
  Job& job = jobs_[size_t(j)];
  JobOutcome& o = r_.jobs[size_t(j)];
  ++job.park_gen;  // Its park and wake events are stale.
  if (job.parked) {
    r_.park.parked_gpu_ms += (t - job.parked_at_ms) * o.gpu_milli;
    if (job.waiting) {
      waiting_.erase({job.asked_ms, j});
      ++r_.park.resumes_unserved;  // It ended (or was stopped) still waiting.
    }
    parked_[size_t(o.tenant)].Add(t, -o.gpu_milli);
    job.parked = job.waiting = false;
    return;
  }
  alloc_[size_t(o.tenant)].Add(t, -o.gpu_milli);
  if (job.on_parked) r_.park.lent_gpu_ms += (t - job.held_from_ms) * o.gpu_milli;
  job.on_parked = false;
  if (job.idle >= 0) {
    r_.park.idle_held_gpu_ms +=
        IdleWithin(j, LifeAt(j, job.held_from_ms), LifeAt(j, t)) * o.gpu_milli;
  }
  Forget(j, t);
}

int64_t Sim::IdleWithin(int32_t j, int64_t from, int64_t to) const {
  const auto& periods = idle_[size_t(jobs_[size_t(j)].idle)];
  int64_t sum = 0;
  for (auto it = IdleFrom(periods, from); it != periods.end() && it->first < to; ++it) {
    sum += std::max<int64_t>(0, std::min(to, it->second) - std::max(from, it->first));
  }
  return sum;
}

void Sim::PlanPark(int32_t j, int64_t t) {
  Job& job = jobs_[size_t(j)];
  if (!parking_ || job.idle < 0) return;
  const auto& periods = idle_[size_t(job.idle)];
  const int64_t now = LifeAt(j, t);
  for (auto it = IdleFrom(periods, now); it != periods.end(); ++it) {
    // Idle for park_after (counted from the period's start, or from now
    // when it started before this attempt held its devices).
    const int64_t at = std::max(it->first, now) + opt_.park_after_ms;
    if (at >= it->second) continue;  // Busy again before then.
    park_events_.push({t + (at - now), j, job.park_gen, false});
    return;
  }
}

void Sim::Park(int32_t j, int64_t t) {
  Job& job = jobs_[size_t(j)];
  if (!sched_->ParkWorkload(Key(j)).ok()) {
    ++r_.park.park_refusals;  // E.g. it runs on parked capacity itself.
    return;
  }
  Release(j, t);  // As a stop: its devices go (idle time held until now).
  ++r_.park.parks;
  job.parked = true;
  job.parked_at_ms = t;
  parked_[size_t(r_.jobs[size_t(j)].tenant)].Add(t, r_.jobs[size_t(j)].gpu_milli);
  // It asks to resume when its idle period ends (its life goes on while
  // parked).
  const auto& periods = idle_[size_t(job.idle)];
  const int64_t now = LifeAt(j, t);
  auto it = IdleFrom(periods, now);
  if (it != periods.end()) park_events_.push({t + (it->second - now), j, job.park_gen, true});
}

void Sim::AskResume(int32_t j, int64_t t) {
  Job& job = jobs_[size_t(j)];
  job.asked_ms = t;
  if (TryResume(j, t)) return;
  ++r_.park.resumes_waited;
  job.waiting = true;
  waiting_.insert({t, j});
}

bool Sim::TryResume(int32_t j, int64_t t) {
  Job& job = jobs_[size_t(j)];
  JobOutcome& o = r_.jobs[size_t(j)];
  if (!sched_->ResumeWorkload(Key(j)).ok()) return false;
  r_.park.parked_gpu_ms += (t - job.parked_at_ms) * o.gpu_milli;
  ++r_.park.resumes;
  r_.park.resume_latency_ms.push_back(t - job.asked_ms);
  job.parked = false;
  job.held_from_ms = t;
  parked_[size_t(o.tenant)].Add(t, -o.gpu_milli);
  alloc_[size_t(o.tenant)].Add(t, o.gpu_milli);
  Placed(j);
  PlanPark(j, t);
  return true;
}

void Sim::TryResumes(int64_t t) {
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    const int32_t j = it->second;
    if (!TryResume(j, t)) {
      ++it;
      continue;
    }
    jobs_[size_t(j)].waiting = false;
    it = waiting_.erase(it);
  }
}

int64_t Sim::Stop(int32_t j, int64_t t) {
  Job& job = jobs_[size_t(j)];
  JobOutcome& o = r_.jobs[size_t(j)];
  int64_t ran = t - job.run_start_ms;
  int64_t kept = opt_.checkpoint_interval_ms > 0
                     ? ran / opt_.checkpoint_interval_ms * opt_.checkpoint_interval_ms
                     : 0;
  Release(j, t);
  job.remaining_ms -= kept;
  int64_t lost = ran - kept;
  o.lost_ms += lost;
  job.run_start_ms = -1;
  running_jobs_.erase(j);
  job.pending_since_ms = t;
  ++job.attempt;  // Its completion is stale now.
  pending_[size_t(o.tenant)].Add(t, 1000);
  ++pending_jobs_;
  return lost * o.gpu_milli;
}

void Sim::Finish(int32_t j, int64_t t) {
  Job& job = jobs_[size_t(j)];
  JobOutcome& o = r_.jobs[size_t(j)];
  (void)sched_->RemoveWorkload(Key(j));
  Release(j, t);
  o.finish_ms = t;
  job.run_start_ms = -1;
  running_jobs_.erase(j);
  demand_[size_t(o.tenant)].Add(t, -o.gpu_milli);
  r_.end_ms = std::max(r_.end_ms, t);
}

bool Sim::Schedule(int64_t t) {
  bool admitted = false;
  while (true) {
    sched::CycleResult c = sched_->RunCycle();
    ++r_.cycles;
    admitted |= !c.admitted.empty();
    // Evictions first: one made outside the cycle (a resume took its
    // devices back) is reported by it even when it tried no head.
    for (const sched::PreemptionEvent& e : c.preempted) {
      int64_t j = ParseJobIndex(e.workload);
      if (j < 0) continue;
      ++r_.preemption_events;
      ++r_.jobs[size_t(j)].preemptions;
      const int64_t lost = Stop(int32_t(j), t);
      r_.lost_preemption_gpu_ms += lost;
      if (e.reason == sched::PreemptionReason::kParkedCapacityReclaim) {
        ++r_.park.reclaims;
        r_.park.reclaim_lost_gpu_ms += lost;
      }
    }
    for (const std::string& key : c.admitted) {
      int64_t j = ParseJobIndex(key);
      if (j >= 0) Start(int32_t(j), t);
    }
    if (c.attempts == 0) break;
  }
  return admitted;
}

bool Sim::RunControllers(int64_t t) {
  if (controllers_->NextWakeMs() > t) return false;
  std::vector<ctrl::TakenAction> actions = controllers_->Run(SimView(*this), t);
  bool applied = false;
  for (const ctrl::TakenAction& a : actions) {
    ApplyPoolAction(a.action, t);
    if (a.action.type != ctrl::Action::Type::kFail) continue;
    int64_t j = ParseJobIndex(a.action.target);
    if (j < 0 || !running_jobs_.count(int32_t(j))) continue;
    Job& job = jobs_[size_t(j)];
    JobOutcome& o = r_.jobs[size_t(j)];
    (void)sched_->RemoveWorkload(a.action.target);
    ++r_.deadline_kills;
    r_.deadline_gpu_ms += (t - job.run_start_ms) * o.gpu_milli;
    Release(int32_t(j), t);
    o.killed_ms = t;
    ++job.attempt;  // Its completion is stale now.
    job.run_start_ms = -1;
    running_jobs_.erase(int32_t(j));
    demand_[size_t(o.tenant)].Add(t, -o.gpu_milli);
    applied = true;
  }
  return applied;
}

void Sim::ApplyPoolAction(const ctrl::Action& a, int64_t t) {
  switch (a.type) {
    case ctrl::Action::Type::kResumeNodes:
      fleet_->Resume(a, t);
      break;
    case ctrl::Action::Type::kBootFailed:
      fleet_->BootFailed(a, t);
      break;
    case ctrl::Action::Type::kSuspendNodes:
      // Only an empty ready node goes; its GPUs leave the capacity.
      for (const std::string& name : a.nodes) {
        auto it = node_idx_.find(name);
        if (it == node_idx_.end() || !fleet_->IsReady(name)) continue;
        NodeInfo& node = nodes_[size_t(it->second)];
        if (!node.running.empty() || !sched_->RemoveNode(name).ok()) continue;
        fleet_->Suspended(name, t);
        capacity_->Add(t, -node.gpu_milli);
        // Done at once here: the budget has room again.
        controllers_->Note(ctrl::kCapacity);
      }
      break;
    default:
      break;
  }
}

void Sim::Register(int64_t t) {
  for (const core::Node& n : fleet_->Booted(t)) {
    ++r_.events;
    Status s = sched_->AddNode(n);
    ALLOT_CHECK(s.ok());
    NodeInfo& node = nodes_[size_t(AddNodeInfo(n))];
    node.pooled = true;
    capacity_->Add(t, node.gpu_milli);
    controllers_->Note(ctrl::kCapacity);
  }
}

void Sim::FailNode(int32_t n, int64_t t) {
  NodeInfo& node = nodes_[size_t(n)];
  ++r_.failure_events;
  // Kill what runs there, in job order, and put it back in its queue.
  std::vector<int32_t> victims = node.running;
  std::sort(victims.begin(), victims.end());
  for (int32_t j : victims) {
    (void)sched_->RemoveWorkload(Key(j));
    ++r_.failure_kills;
    ++r_.jobs[size_t(j)].failures;
    r_.lost_failure_gpu_ms += Stop(j, t);
    Status s = sched_->AddWorkload(MakeWorkload(j));
    ALLOT_CHECK(s.ok());
  }
  // Hold its devices with a placeholder admitted to the repair queue.
  core::Workload hold;
  hold.ns = kRepairNs;
  hold.name = node.name + "-" + std::to_string(node.downs++);
  core::PodSet ps;
  ps.name = "down";
  core::PodSetAssignment psa;
  psa.name = "down";
  psa.count = 1;
  core::PodPlacement place;
  place.node = node.name;
  for (const auto& [res, uuids] : node.devices) {
    ps.requests[res] = Quantity::FromUnits(int64_t(uuids.size()));
    psa.flavors[res] = node.flavor;
    place.gpus.insert(place.gpus.end(), uuids.begin(), uuids.end());
  }
  psa.placements.push_back(std::move(place));
  hold.pod_sets.push_back(std::move(ps));
  hold.admission = core::Admission{kRepairCq, {std::move(psa)}};
  Status s = sched_->AddWorkload(hold);
  ALLOT_CHECK(s.ok());
  node.down = true;
  ++down_nodes_;
  capacity_->Add(t, -node.gpu_milli);
  node_events_.push({t + Exp(opt_.mttr_ms), n, false});
}

void Sim::RepairNode(int32_t n, int64_t t) {
  NodeInfo& node = nodes_[size_t(n)];
  Status s = sched_->RemoveWorkload(std::string(kRepairNs) + "/" + node.name +
                                    "-" + std::to_string(node.downs - 1));
  ALLOT_CHECK(s.ok());
  node.down = false;
  --down_nodes_;
  capacity_->Add(t, node.gpu_milli);
  node_events_.push({t + Exp(opt_.mtbf_ms), n, true});
}

Status Sim::Run() {
  ALLOT_RETURN_IF_ERROR(Setup());
  controllers_ = std::make_unique<ctrl::Runner>(ctrl::DefaultControllers(ctrl::Options{}));
  for (const core::ClusterQueue& cq : config_.cluster_queues) cq_by_name_[cq.name] = &cq;
  cq_limited_.assign(names_.size(), 0);
  for (size_t i = 0; i < names_.size(); ++i) {
    auto it = cq_by_name_.find(names_[i]);
    if (it != cq_by_name_.end() && it->second->max_run_seconds > 0) {
      cq_limited_[i] = 1;
      any_limited_ = true;
    }
  }
  if (opt_.mtbf_ms > 0) {
    for (size_t n = 0; n < nodes_.size(); ++n) {
      if (nodes_[n].flavor.empty() || nodes_[n].devices.empty() || nodes_[n].pooled) continue;
      node_events_.push({Exp(opt_.mtbf_ms), int32_t(n), true});
    }
  }
  size_t next = 0;  // Next arrival.
  const int64_t kNever = INT64_MAX;
  while (true) {
    int64_t t = kNever;
    if (next < jobs_.size()) t = r_.jobs[next].submit_ms;
    if (!completions_.empty()) t = std::min(t, completions_.top().t);
    while (!park_events_.empty() &&
           jobs_[size_t(park_events_.top().job)].park_gen != park_events_.top().gen) {
      park_events_.pop();  // Stale: the job ended, stopped or parked since.
    }
    if (!park_events_.empty()) t = std::min(t, park_events_.top().t);
    t = std::min(t, fleet_->NextBootMs());
    // Failures matter only while work remains; repairs while work waits.
    bool work_left = next < jobs_.size() || !running_jobs_.empty();
    if (!node_events_.empty() && (work_left || (pending_jobs_ > 0 && down_nodes_ > 0))) {
      t = std::min(t, node_events_.top().t);
    }
    // The controllers' wake-ups matter while jobs run; an instant with
    // only those is not an event (nothing is scheduled unless they act).
    // With autoscaled pools, also while nodes are up (to scale them down)
    // or work waits for them.
    const bool watch = !running_jobs_.empty() || (!fleet_->empty() && fleet_->Active(pending_jobs_ > 0));
    const int64_t wake = watch ? controllers_->NextWakeMs() : kNever;
    if (wake < t) {
      if (RunControllers(wake)) {
        TryResumes(wake);
        if (Schedule(wake)) controllers_->Note(ctrl::kAdmissions);
      }
      continue;
    }
    if (t == kNever) break;
    // 1. Completions.
    while (!completions_.empty() && completions_.top().t == t) {
      Completion c = completions_.top();
      completions_.pop();
      if (jobs_[size_t(c.job)].attempt != c.attempt) continue;  // Stale.
      ++r_.events;
      Finish(c.job, t);
    }
    // 2. Node failures and repairs.
    while (!node_events_.empty() && node_events_.top().t == t) {
      NodeEvent e = node_events_.top();
      node_events_.pop();
      ++r_.events;
      if (e.fail) {
        FailNode(e.node, t);
      } else {
        RepairNode(e.node, t);
      }
    }
    // 2a. Nodes of autoscaled pools that finished booting.
    if (fleet_->NextBootMs() == t) Register(t);
    // 2b. Parks, and resumes asked (idle periods that end).
    while (!park_events_.empty() && park_events_.top().t == t) {
      ParkEvent e = park_events_.top();
      park_events_.pop();
      if (jobs_[size_t(e.job)].park_gen != e.gen) continue;  // Stale.
      ++r_.events;
      if (e.wake) {
        AskResume(e.job, t);
      } else {
        Park(e.job, t);
      }
    }
    // 3. Arrivals.
    while (next < jobs_.size() && r_.jobs[next].submit_ms == t) {
      ++r_.events;
      Job& job = jobs_[next];
      JobOutcome& o = r_.jobs[next];
      job.pending_since_ms = t;
      demand_[size_t(o.tenant)].Add(t, o.gpu_milli);
      pending_[size_t(o.tenant)].Add(t, 1000);
      ++pending_jobs_;
      Status s = sched_->AddWorkload(MakeWorkload(int32_t(next)));
      if (!s.ok()) return s;
      if (!fleet_->empty()) {
        fleet_->NoteArrival(t, o.gpu_milli);
        controllers_->Note(ctrl::kCapacity);
      }
      ++next;
    }
    // 4. Resumes that wait go first (as the server's, before its cycles);
    // then decide, and let the controllers act on the decisions.
    TryResumes(t);
    if (Schedule(t)) controllers_->Note(ctrl::kAdmissions);
    if (RunControllers(t)) {
      TryResumes(t);
      if (Schedule(t)) controllers_->Note(ctrl::kAdmissions);
    }
    r_.end_ms = std::max(r_.end_ms, t);
  }
  for (auto& i : alloc_) i.Advance(r_.end_ms);
  for (auto& i : demand_) i.Advance(r_.end_ms);
  for (auto& i : pending_) i.Advance(r_.end_ms);
  for (auto& i : parked_) i.Advance(r_.end_ms);
  capacity_->Advance(r_.end_ms);
  // Node time runs on to the last scale-down after the last job.
  r_.pools = fleet_->Finish(std::max(r_.end_ms, fleet_->LastMs()));
  return Status::Ok();
}

}  // namespace

int64_t GpuMilli(const std::string& resource) {
  if (resource == core::kGpuResource) return 1000;
  const std::string prefix = core::kMigResourcePrefix;
  if (resource.compare(0, prefix.size(), prefix) != 0) return 0;
  // "3g.40gb": 3 of a GPU's 7 compute slices.
  int64_t g = 0;
  const char* b = resource.data() + prefix.size();
  auto [end, ec] = std::from_chars(b, resource.data() + resource.size(), g);
  if (ec != std::errc() || end == b || *end != 'g' || g < 1) return 1000 / 7;
  return std::min<int64_t>(1000, g * 1000 / 7);
}

Result<SimResult> Simulate(const core::Config& config,
                           const core::Config& entitlement_from,
                           const Trace& trace, const SimOptions& options,
                           const std::string& policy_name) {
  if (options.window_ms <= 0) {
    return Status::InvalidArgument("--window must be positive");
  }
  SimResult r;
  r.policy = policy_name;
  Sim sim(config, entitlement_from, trace, options, &r);
  ALLOT_RETURN_IF_ERROR(sim.Run());
  return r;
}

}  // namespace allot::sim
