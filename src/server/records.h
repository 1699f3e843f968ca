// The records State keeps (server/state.h): workloads with their lifecycle
// state and conditions, and the configuration objects with their resource
// versions. Plain values; the parts of the state read and change them on
// the owner thread only.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/status.h"

namespace allot::server {

enum class WorkloadState {
  kPending,
  kAdmitted,
  kRunning,
  kSucceeded,
  kFailed,
  kEvicted,
  kRequeued,
  kSuspended,
  // Admitted, quota kept, devices given back, no pods (docs/parking.md).
  kParked,
};
const char* ToString(WorkloadState s);
Result<WorkloadState> ParseWorkloadState(const std::string& s);

struct Condition {
  std::string type;  // Kueue's: QuotaReserved, Admitted, Evicted, ...
  bool status = true;
  std::string reason;
  std::string message;  // What every reader of the workload may see.
  int64_t time_unix_ms = 0;
  // The message naming another tenant's workload (its preemptor): shown
  // to cluster-admins only, as "detail"; empty when `message` names
  // nothing of another tenant.
  std::string detail;
};

struct WorkloadRecord {
  core::Workload spec;  // spec.admission is the current admission.
  WorkloadState state = WorkloadState::kPending;
  std::vector<Condition> conditions;  // One per type, newest values.
  int64_t seq = 0;                    // Arrival order.
  int64_t resource_version = 0;
  std::string submitted_by;
  // Admissions so far; the pods of admission N are named ".../aN/...", so
  // a pod of an earlier admission is never taken for a current one.
  int32_t attempt = 0;
  // Pod sets started again by resumes of a park in part (docs/parking.md),
  // by name: how often in this attempt. Their pods are ".../aNrG/...", so
  // the agents run them afresh while the other pod sets' pods run on.
  std::map<std::string, int32_t> pod_set_gens;
  // "aN", or "aNrG" for a pod set started again G times in attempt N.
  std::string PodAttempt(const std::string& pod_set) const {
    auto g = pod_set_gens.find(pod_set);
    return "a" + std::to_string(attempt) +
           (g == pod_set_gens.end() ? std::string() : "r" + std::to_string(g->second));
  }
  int32_t restarts = 0;  // Gang restarts after a failed pod (backoffLimit).
  // Accounting of the current admission (server/accounting.h): since
  // when it holds its quota (0: not admitted), its devices' utilization so
  // far (device-ms x utilization, milli-units), and since when all its GPUs
  // have been under the idle threshold (0: not idle).
  int64_t admitted_unix_ms = 0;
  int64_t util_milli_ms = 0;
  int64_t idle_since_ms = 0;
  // When activity was last reported for it (POST .../activity: its custom
  // idle signal, docs/parking.md); 0: never since the server started (kept
  // in memory only: after a restart it counts as active from the start).
  int64_t active_ms = 0;
  // Image pulls of the current admission: how long its pods have waited
  // for their images so far (pull_ms, closed stretches), and since when
  // one is pulling now (0: none). Not run time: the run-time limits
  // (ctrl/deadlines.h) start after them.
  int64_t pull_ms = 0;
  int64_t pulling_since_ms = 0;
  // How long the current admission has been parked (closed stretches,
  // docs/parking.md): neither run time nor GPU-hours.
  int64_t parked_ms = 0;
  // The pull time so far at `now`.
  int64_t PullMsAt(int64_t now) const {
    return pull_ms + (pulling_since_ms > 0 ? now - pulling_since_ms : 0);
  }
  // When its pods were last stopped by a park (its PodsReady condition's
  // time, reason Parked; a waiting resume changes the Parked condition, not
  // this one); 0 when never.
  int64_t ParkedSinceMs() const {
    for (const Condition& c : conditions) {
      if (c.type == "PodsReady" && c.reason == "Parked") return c.time_unix_ms;
    }
    return 0;
  }
  // Pods of the current attempt are in Agents (server/agents.h; admitted
  // workloads only, so that a queue of pending ones does not pay for them).

  bool finished() const {
    return state == WorkloadState::kSucceeded || state == WorkloadState::kFailed;
  }
  // Whether the scheduler holds it: unfinished and active, or parked
  // (spec.active: false on an admitted workload parks it, docs/parking.md).
  bool scheduled() const {
    return !finished() && (spec.active || state == WorkloadState::kParked);
  }
};

template <typename T>
struct Entry {
  T obj;
  int64_t rv = 0;
};
// The cluster's configuration: everything but workloads.
struct Objects {
  std::map<std::string, Entry<core::ResourceFlavor>> flavors;
  std::map<std::string, Entry<core::Cohort>> cohorts;
  std::map<std::string, Entry<core::ClusterQueue>> cluster_queues;
  std::map<std::string, Entry<core::LocalQueue>> local_queues;  // ns/name
  std::map<std::string, Entry<core::WorkloadPriorityClass>> priority_classes;
  std::map<std::string, Entry<core::Namespace>> tenants;
  std::map<std::string, Entry<core::Node>> nodes;
  std::map<std::string, Entry<core::Topology>> topologies;
  std::map<std::string, Entry<core::Image>> images;
  std::map<std::string, Entry<core::NodePool>> node_pools;
  core::SchedulerConfig scheduler;
  int64_t scheduler_rv = 0;
};

}  // namespace allot::server
