// A View built by hand, for controllers' scenario tables.
#pragma once

#include <string>
#include <vector>

#include "ctrl/controller.h"

namespace allot::ctrl::testing {

struct Admitted {
  std::string key;
  std::string cluster_queue = "cq";
  int64_t reserved_ms = 0;
  int64_t max_execution_seconds = 0;
  int64_t pull_ms = 0;
  int64_t idle_since_ms = 0;
  int64_t idle_after_seconds = -1;
  int64_t active_ms = -1;
  bool on_parked_capacity = false;
};
struct PodFailure {
  std::string key;
  int32_t restarts = 0;
  int32_t backoff_limit = 0;
  std::string why;
};
struct Parked {
  std::string key;
  std::string cluster_queue = "cq";
  int64_t parked_ms = 0;
  bool resuming = false;
};
struct Agent {
  std::string name;
  bool ready = true;
  int64_t last_seen_ms = 0;
};

class TestView : public View {
 public:
  int64_t started_ms = 0;
  std::vector<Admitted> admitted;
  std::vector<PodFailure> failures;
  std::vector<Agent> agents;
  std::vector<Parked> parked;
  std::vector<core::ClusterQueue> queues;
  // Autoscaling: pools (their specs must outlive the view's use), the
  // capacity-blocked demand and the flavors.
  std::vector<PoolView> pools;
  std::vector<sched::CapacityDemand> demand;
  std::vector<core::ResourceFlavor> flavors;

  // A ClusterQueue "name" whose workloads may run `max_run_s` by default.
  TestView& Queue(const std::string& name, int64_t max_run_s) {
    core::ClusterQueue cq;
    cq.name = name;
    cq.max_run_seconds = max_run_s;
    queues.push_back(cq);
    return *this;
  }

  int64_t StartedMs() const override { return started_ms; }
  void ForEachAdmitted(const std::function<void(const AdmittedView&)>& fn) const override {
    for (const Admitted& a : admitted) {
      fn({a.key, a.cluster_queue, a.reserved_ms, a.max_execution_seconds, a.pull_ms,
          a.idle_since_ms, a.idle_after_seconds, a.active_ms, a.on_parked_capacity});
    }
  }
  void ForEachParked(const std::function<void(const ParkedView&)>& fn) const override {
    for (const Parked& p : parked) fn({p.key, p.cluster_queue, p.parked_ms, p.resuming});
  }
  void ForEachPodFailure(const std::function<void(const PodFailureView&)>& fn) const override {
    for (const PodFailure& f : failures) fn({f.key, f.restarts, f.backoff_limit, f.why});
  }
  void ForEachAgent(const std::function<void(const AgentView&)>& fn) const override {
    for (const Agent& a : agents) fn({a.name, a.ready, a.last_seen_ms});
  }
  const core::ClusterQueue* FindClusterQueue(std::string_view name) const override {
    for (const core::ClusterQueue& q : queues) {
      if (q.name == name) return &q;
    }
    return nullptr;
  }
  void ForEachPool(const std::function<void(const PoolView&)>& fn) const override {
    for (const PoolView& p : pools) fn(p);
  }
  std::vector<sched::CapacityDemand> CapacityDemands() const override { return demand; }
  const core::ResourceFlavor* FindFlavor(std::string_view name) const override {
    for (const core::ResourceFlavor& f : flavors) {
      if (f.name == name) return &f;
    }
    return nullptr;
  }
};

}  // namespace allot::ctrl::testing
