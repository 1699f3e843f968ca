// Autoscaled NodePools in the server (docs/autoscaling.md): what each
// pool's nodes are doing, as the autoscaler (ctrl/autoscaler.h) reads it,
// kept by the owner thread.
//
// A node's life: suspended (no Node object, or its agent gone) -> resume
// asked (a provider call runs) -> booting (the call returned 0) -> ready
// (its agent registered; the pool's labels and taints are on its Node) ->
// suspending (cordoned and empty; a suspend call runs) -> suspended (its
// Node deleted). A resume call that fails puts its nodes back to
// suspended and counts as failed boots, as a boot that times out does.
// Boot durations (resume to registration, the last 20) give the pool's
// expected boot time; the arrivals of the last hour, per flavor, its
// headroom by arrivals.
//
// Not persisted: after a restart every pool node whose agent registers
// is ready and the others are suspended (a boot under way when the server
// stopped registers anyway and is then counted ready).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/model.h"
#include "ctrl/controller.h"
#include "sched/scheduler.h"
#include "server/provider.h"

namespace allot::server {

// Per pool and state, for /metrics.
struct PoolCounts {
  std::string pool;
  int32_t suspended = 0, booting = 0, ready = 0, idle = 0, suspending = 0;
  int64_t boots = 0, boot_failures = 0, scale_ups = 0, suspends = 0;
  bool degraded = false;
};

class PoolRuntime {
 public:
  // The pools as now configured (every autoscaled NodePool object). Nodes
  // of a pool that stays keep their state; a pool's new names start
  // suspended unless their agent is known (`registered`).
  void SetPools(std::vector<core::NodePool> pools,
                const std::function<bool(const std::string&)>& registered, int64_t now);
  bool empty() const { return pools_.empty(); }
  // The pool that node `name` belongs to, or nullptr.
  const core::NodePool* PoolOf(const std::string& name) const;
  // Puts the pool's labels and taints on a pool node's description.
  void Decorate(core::Node* n) const;
  // Node `name`'s agent registered: ready now. True when it was not (a
  // boot ended: capacity came).
  bool Registered(const std::string& name, int64_t now);
  // A job asking `gpu_milli` of `flavor`s arrived (headroom by arrivals).
  void NoteArrival(const std::vector<std::string>& flavors, int64_t gpu_milli, int64_t now);

  // The autoscaler's view (ctrl::View::ForEachPool); a ready node's
  // idle-since is when it was first seen without allocated GPUs.
  void ForEachPool(const sched::Scheduler& sched, int64_t now,
                   const std::function<void(const ctrl::PoolView&)>& fn);

  // What to do for an autoscaler action: provider calls to run (none for
  // a node no longer in the state the action assumed).
  std::vector<ProviderCall> Resume(const ctrl::Action& a, int64_t now);
  void BootFailed(const ctrl::Action& a, int64_t now);
  // For nodes the caller cordoned (they hold nothing).
  std::vector<ProviderCall> Suspend(const std::vector<std::string>& nodes, int64_t now);
  // A provider call ended. Returns the nodes to delete (suspended now).
  std::vector<std::string> CallDone(const ProviderResult& r, int64_t now, std::string* event);

  std::vector<PoolCounts> Counts() const;
  // Boot durations measured so far (resume to registration), per pool.
  const std::map<std::string, std::vector<int64_t>>& BootMs() const { return boot_ms_; }

 private:
  struct Node {
    ctrl::PoolNodeView::State state = ctrl::PoolNodeView::State::kSuspended;
    int64_t since_ms = 0;
    int64_t idle_since_ms = 0;
  };
  struct Pool {
    core::NodePool spec;
    std::vector<std::string> names;  // NAME-i, i < maxNodes.
    std::map<std::string, Node> nodes;
    int32_t failures_in_a_row = 0;
    int64_t retry_after_ms = 0;
    std::deque<int64_t> recent_boots;  // The last 20, ms.
    std::string last_error;            // Of the last failed boot.
    PoolCounts counts;
  };
  ProviderCall Call(const Pool& p, const char* verb, const std::vector<std::string>& nodes) const;
  void Failed(Pool& p, const std::vector<std::string>& nodes, const std::string& why,
              int64_t now);
  Pool* PoolFor(const std::string& node, Node** n);

  std::map<std::string, Pool> pools_;
  std::map<std::string, std::string> pool_of_;  // Node -> pool.
  // Arrivals (time, GPU-milli) of the last hour, per flavor.
  std::map<std::string, std::deque<std::pair<int64_t, int64_t>>> arrivals_;
  std::map<std::string, std::vector<int64_t>> boot_ms_;
};

}  // namespace allot::server
