// The discrete-event simulator behind `allot simulate`.
//
// Simulate replays a trace against a cluster config by driving the real
// scheduling core (sched::Scheduler, unchanged) on a virtual clock:
//  - events are job arrivals, job completions, node failures and repairs;
//    all events at one timestamp are applied, then scheduling cycles run
//    until one tries no head (so every decision the scheduler would make at
//    that instant is made), then the clock jumps to the next event;
//  - an admitted job runs for its remaining duration; a job preempted by the
//    scheduler, or killed by a node failure, returns to its queue (keeping
//    its creation time, so its place) and loses the progress made since its
//    last checkpoint (checkpoints every `checkpoint_interval_ms` of run
//    time of that attempt; 0 = never, all progress is lost);
//  - the server's controllers (ctrl/registry.h) run on the virtual clock
//    after each scheduling step: a job past its ClusterQueue's
//    allot.dev/max-run-duration is stopped and does not finish (the
//    deadlines controller); nodes here have no agents and pods do not
//    fail, so the node-lifecycle and gang-restart controllers find nothing;
//  - with an idle model (sim/idle_model.h), long-running jobs alternate
//    busy and idle periods over their life (admitted time, parked or not:
//    a service lives as long as the trace says whatever it does). With
//    parking on (`park_after_ms` > 0, the policy "park"), one idle that
//    long parks through the scheduler (sched::Scheduler::ParkWorkload: its
//    devices go, its quota stays) and asks to resume when its idle period
//    ends; a resume that finds no devices is retried at every later
//    instant before the cycles, as the server's TryResumes. Preemptible
//    jobs may run on parked capacity and are evicted for resumes (reason
//    ParkedCapacityReclaim, counted as preemptions too). The figures are
//    in SimResult::park;
//  - with `mtbf_ms` > 0 every node fails after an exponentially distributed
//    up time (mean mtbf_ms) and comes back after an exponentially
//    distributed repair (mean mttr_ms), from a seeded generator. A down
//    node's GPUs are held by a placeholder workload of a hidden ClusterQueue
//    outside every cohort (quota is not reduced, as in Kueue; placement is).
//
// Jobs become Workloads "TENANT/j<index>" with one pod set "main" in the
// LocalQueue TENANT/QUEUE (QUEUE defaults to the tenant name). A job whose
// `pods` is 0 gives its total GPU count, split here over the nodes: n GPUs
// fit one pod when the largest node has at least n, else pods of d GPUs
// where d is the largest divisor of n not above the largest node (24 GPUs on
// 8-GPU nodes: 3 pods of 8; 12: 2 pods of 6).
//
// A job is not submitted, and is reported as an issue with its trace line,
// when: its LocalQueue does not exist; a pod needs more GPUs (or MIG slices
// of its profile) than any node has; its priority class is unknown; or its
// total request exceeds what its ClusterQueue could ever hold (nominal
// quota plus what its borrowing limit and cohort allow, per flavor), which
// under StrictFIFO would block its queue forever ("infeasible").
//
// Deterministic: the same config, trace and options give the same result,
// bit for bit. Not thread-safe; independent Simulate calls may run in
// parallel.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/status.h"
#include "sim/idle_model.h"
#include "sim/pools.h"
#include "sim/trace.h"

namespace allot::sim {

struct SimOptions {
  int64_t checkpoint_interval_ms = 0;  // 0: preemption loses all progress.
  int64_t mtbf_ms = 0;                 // Per node; 0: no failures.
  int64_t mttr_ms = 3600 * 1000;       // Mean repair time.
  uint64_t seed = 1;
  int64_t window_ms = 3600 * 1000;  // Time-series resolution.
  // Idle periods of long-running jobs (sim/idle_model.h); off by default.
  IdleModel idle;
  // > 0: parking on (docs/parking.md): a long-running job idle for this
  // long parks (its devices go back, its quota stays) and resumes when its
  // idle period ends; a resume that finds no devices waits at the head of
  // every later instant, as the server's does.
  int64_t park_after_ms = 0;
  // The share of the other jobs (not long-running) that are preemptible
  // and may run on parked capacity; a job whose trace row or priority
  // class says preemptible is so whatever this is.
  double preemptible_fraction = 0;
};

// Parking on the virtual clock (with an idle model). GPU-milli x ms.
struct ParkingResult {
  int64_t long_running_jobs = 0;
  int64_t preemptible_jobs = 0;
  int64_t idle_held_gpu_ms = 0;  // Held by long-running jobs while idle, not parked.
  int64_t parked_gpu_ms = 0;     // Given back: devices of parked jobs.
  int64_t lent_gpu_ms = 0;       // Used by preemptible jobs on parked capacity.
  int64_t parks = 0;
  int64_t park_refusals = 0;  // The scheduler refused to park (it said why).
  int64_t resumes = 0;
  int64_t resumes_waited = 0;    // Found no devices at once.
  int64_t resumes_unserved = 0;  // Ended, stopped or never placed while waiting.
  // From the end of an idle period (the demand) to running again, per
  // resume; borrowers' stop grace excluded (they are evicted at once here).
  std::vector<int64_t> resume_latency_ms;
  int64_t reclaims = 0;  // Borrowers evicted for a resume or a placement.
  int64_t reclaim_lost_gpu_ms = 0;
};

// What happened to one submitted job.
struct JobOutcome {
  int32_t tenant = 0;  // Index into SimResult::tenants.
  int64_t line = 0;
  int64_t submit_ms = 0;
  int64_t duration_ms = 0;
  int64_t gpu_milli = 0;  // Whole GPUs x1000; a MIG slice by its compute share.
  int64_t first_admit_ms = -1;  // -1: never admitted.
  int64_t finish_ms = -1;       // -1: not finished when the run ended.
  int64_t waited_ms = 0;        // Total time pending (every attempt).
  int32_t preemptions = 0;      // By the scheduler.
  int32_t failures = 0;         // Killed by a node failure.
  int64_t lost_ms = 0;          // Run time thrown away (both causes).
  // When the deadlines controller stopped it (its ClusterQueue's
  // allot.dev/max-run-duration); -1: never. Such a job does not finish.
  int64_t killed_ms = -1;
};

// Per-window integrals (milli-units x ms, exact) of one tenant.
struct TenantSeries {
  std::vector<int64_t> alloc;    // GPUs running.
  std::vector<int64_t> parked;   // GPUs of parked jobs (quota kept, no device).
  std::vector<int64_t> demand;   // GPUs of jobs submitted and not finished.
  std::vector<int64_t> pending;  // Pending jobs (x1000).
};

struct SimResult {
  std::string policy;
  std::vector<std::string> tenants;        // Sorted.
  std::vector<int64_t> entitlement_milli;  // Per tenant (see metrics.h).
  int64_t capacity_milli = 0;  // GPUs of all nodes (autoscaled pools at maxNodes).
  std::vector<JobOutcome> jobs;            // Submitted jobs, in trace order.
  // Jobs not submitted: malformed against the config (no LocalQueue, a pod
  // larger than any node, an unknown priority class), and infeasible ones
  // (more than their ClusterQueue can ever hold under this policy).
  std::vector<TraceIssue> issues;
  std::vector<TraceIssue> infeasible;
  int64_t preemption_events = 0;
  int64_t lost_preemption_gpu_ms = 0;  // GPU-milli x ms.
  int64_t failure_events = 0;          // Node failures.
  int64_t failure_kills = 0;           // Jobs killed by them.
  int64_t lost_failure_gpu_ms = 0;
  // Jobs the controllers (ctrl/registry.h) stopped: past their
  // ClusterQueue's maximum run time, and the GPU time they had used.
  int64_t deadline_kills = 0;
  int64_t deadline_gpu_ms = 0;  // GPU-milli x ms.
  int64_t start_ms = 0;  // First submission (0).
  int64_t end_ms = 0;    // Last completion (or the last event).
  int64_t window_ms = 0;
  std::vector<TenantSeries> series;       // Per tenant.
  std::vector<int64_t> capacity_series;   // Up GPUs, per window.
  // Work done, for the events/s figure: events handled and cycles run.
  int64_t events = 0;
  int64_t cycles = 0;
  bool idle_model = false;  // An idle model was given.
  bool parking = false;     // And parking was on.
  ParkingResult park;
  // Autoscaled pools (core::NodePool with a provider; sim/pools.h), and
  // the mode they ran under (ApplyAutoscale; "" when not given).
  std::vector<PoolResult> pools;
  std::string autoscale;
};

// `config` must be validated (core::ValidateConfig). `entitlement_from` is
// the config whose ClusterQueue quotas define each tenant's entitlement (the
// config before a policy transformed it; may be `config` itself).
Result<SimResult> Simulate(const core::Config& config,
                           const core::Config& entitlement_from,
                           const Trace& trace, const SimOptions& options,
                           const std::string& policy_name);

// GPU-milli of one device of `resource` ("nvidia.com/gpu" = 1000;
// "nvidia.com/mig-3g.40gb" = 3000/7), 0 for other resources.
int64_t GpuMilli(const std::string& resource);

}  // namespace allot::sim
