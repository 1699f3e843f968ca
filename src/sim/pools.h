// Autoscaled node pools on the simulator's virtual clock: the simulated
// provider behind ctrl::Autoscaler (docs/autoscaling.md, docs/simulate.md).
//
// A pool's nodes are named NAME-i (i in 0..maxNodes-1, zero-padded as a
// static NodePool's). minNodes of them are up from the start. A resume
// boots a node for the provider's bootDelay, after which it registers
// (the simulator adds it to the scheduler); with the provider's
// failureRate, drawn from a generator of its own (seeded from the run's
// seed), it never registers, and the autoscaler's boot timeout reports it.
// A suspend is immediate. Node time is counted from the resume to the
// suspend (booting nodes cost as cloud instances do), its cost at the
// pool's price.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <queue>
#include <random>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/status.h"
#include "ctrl/controller.h"
#include "sched/scheduler.h"

namespace allot::sim {

// What one pool did over a run.
struct PoolResult {
  std::string name;
  int32_t gpus_per_node = 0;
  int64_t price_micros_per_node_hour = 0;
  int64_t node_ms = 0;  // Booting or ready, summed over nodes.
  int64_t boots = 0;    // Resumes asked.
  int64_t boot_failures = 0;
  int64_t scale_ups = 0;    // Resume actions (each some nodes).
  int64_t suspends = 0;     // Nodes suspended.
  int32_t peak_nodes = 0;   // Most booting or ready at once.
  std::vector<int64_t> boot_ms;  // Resume to registration, per boot.
};

// The config under an autoscaling mode, for comparing them on one trace
// (`allot simulate --autoscale`):
//   fixed     every autoscaled pool is maxNodes nodes, up from the start
//             and never suspended (what a cluster sized for the peak
//             costs and gives);
//   reactive  the pools without headroom: nodes come only for demand;
//   headroom  the pools as given, and a pool without headroom of its own
//             gets headroom by arrivals (one boot's worth of the measured
//             arrival rate);
//   headroom=D  every pool keeps room for the arrivals of D (e.g. 30m).
// InvalidArgument for another mode, or for a mode when the config has no
// autoscaled pool.
Result<core::Config> ApplyAutoscale(const core::Config& config, const std::string& mode);
const std::vector<std::string>& AutoscaleModes();

class PoolFleet {
 public:
  PoolFleet(const std::vector<core::NodePool>& pools, uint64_t seed);
  bool empty() const { return pools_.empty(); }

  // The nodes that are up at the start (minNodes of each pool).
  std::vector<core::Node> InitialNodes();
  // The largest pod each pool's node shape holds, by device resource.
  void LargestNodes(std::map<std::string, int64_t>* max_per_node) const;
  // GPUs of all pools at maxNodes (milli).
  int64_t MaxGpuMilli() const;

  // The autoscaler's actions at t. Suspend only nodes the caller found
  // empty and removed from the scheduler (Suspended).
  void Resume(const ctrl::Action& a, int64_t t);
  void BootFailed(const ctrl::Action& a, int64_t t);
  void Suspended(const std::string& node, int64_t t);
  // Whether `node` is a pool's node that is ready (what a suspend needs).
  bool IsReady(const std::string& node) const;

  // Boots that complete: the next time (INT64_MAX: none) and, at it, the
  // nodes that register now (ready from t).
  int64_t NextBootMs() const;
  std::vector<core::Node> Booted(int64_t t);

  // A pool node's GPUs went all unallocated (busy false) or some allocated.
  void SetBusy(const std::string& node, bool busy, int64_t t);
  // A job asked `gpu_milli` at t (headroom by arrivals: the last hour).
  void NoteArrival(int64_t t, int64_t gpu_milli);

  // Whether the autoscaler's wake-ups still matter: some node is up, or
  // work waits and the pools have not failed to boot 100 times in a row.
  bool Active(bool work_pending) const;

  // The controllers' view of the pools.
  void ForEachPool(const sched::Scheduler& sched,
                   const std::function<void(const ctrl::PoolView&)>& fn) const;

  // The latest time it was told of (an action, a boot, an arrival).
  int64_t LastMs() const { return now_ms_; }
  // Counts node time up to `t` and returns the figures.
  std::vector<PoolResult> Finish(int64_t t);

 private:
  struct Node {
    std::string name;
    ctrl::PoolNodeView::State state = ctrl::PoolNodeView::State::kSuspended;
    int64_t since_ms = 0;
    int64_t idle_since_ms = 0;
    uint32_t gen = 0;  // Bumped when a pending boot event goes stale.
  };
  struct Pool {
    const core::NodePool* spec = nullptr;
    std::vector<Node> nodes;
    int32_t failures_in_a_row = 0;
    int64_t retry_after_ms = 0;
    int32_t up = 0;  // Booting or ready.
    int64_t last_ms = 0;
    PoolResult result;
  };
  struct BootEvent {
    int64_t t;
    int32_t pool;
    int32_t node;
    uint32_t gen;
    bool operator>(const BootEvent& o) const {
      return t != o.t ? t > o.t : pool != o.pool ? pool > o.pool : node > o.node;
    }
  };
  void Count(Pool& p, int64_t t);  // Node time up to t.
  // A booting or ready node stops (a failed boot, a suspend).
  void Down(Pool& p, Node& n, int64_t t);
  // Node `name` if it is in `state` (and its pool, their indexes).
  Node* Find(const std::string& name, ctrl::PoolNodeView::State state, Pool** pool = nullptr,
             int32_t* pool_idx = nullptr, int32_t* node_idx = nullptr);

  std::vector<Pool> pools_;
  std::map<std::string, std::pair<int32_t, int32_t>> by_name_;  // -> (pool, node)
  std::priority_queue<BootEvent, std::vector<BootEvent>, std::greater<>> boots_;
  std::mt19937_64 rng_;
  int32_t failures_in_a_row_ = 0;  // Over all pools.
  mutable std::vector<std::pair<int64_t, int64_t>> arrivals_;  // (t, milli), the last hour.
  mutable size_t arrivals_from_ = 0;
  int64_t now_ms_ = 0;  // The latest time told.
};

}  // namespace allot::sim
