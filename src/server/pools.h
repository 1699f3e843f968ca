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
// Not persisted: after a restart (and when a pool is created) the pool
// asks its provider which nodes are up (`list`) and takes no decision
// until it answers; a node up but not registered is booting from then
// (it must register within bootTimeout), a node whose agent registers is
// ready, the others suspended. A program that cannot list (fails) leaves
// every unregistered node suspended.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <boost/json/object.hpp>

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
  // suspended unless their agent is known (`registered`). Returns the
  // `list` calls of new pools (and of pools whose provider changed).
  std::vector<ProviderCall> SetPools(
      std::vector<core::NodePool> pools,
      const std::function<bool(const std::string&)>& registered, int64_t now);
  bool empty() const { return pools_.empty(); }
  // The pool that node `name` belongs to, or nullptr.
  const core::NodePool* PoolOf(const std::string& name) const;
  // Puts the pool's labels and taints on a pool node's description.
  void Decorate(core::Node* n) const;
  // Node `name`'s agent registered: ready now. True when it was not (a
  // boot ended: capacity came); then `*boot_ms` is how long it booted
  // (-1: it was not booting).
  bool Registered(const std::string& name, int64_t now, int64_t* boot_ms);
  // A job asking `gpu_milli` of `flavor`s arrived (headroom by arrivals).
  void NoteArrival(const std::vector<std::string>& flavors, int64_t gpu_milli, int64_t now);

  // The autoscaler's view (ctrl::View::ForEachPool); a ready node's
  // idle-since is when it was first seen without allocated GPUs, its
  // underused-since when first seen with at most half allocated;
  // `describe` adds what the owner knows of a ready node (cordoned, its
  // workloads).
  void ForEachPool(const sched::Scheduler& sched, int64_t now,
                   const std::function<void(const std::string&, ctrl::PoolNodeView*)>& describe,
                   const std::function<void(const ctrl::PoolView&)>& fn);
  // Node `name` was cordoned and emptied to consolidate (`why`).
  void Drained(const std::string& name, const std::string& why, int64_t now);

  // What to do for an autoscaler action: provider calls to run (none for
  // a node no longer in the state the action assumed).
  std::vector<ProviderCall> Resume(const ctrl::Action& a, int64_t now);
  // Its nodes go back to suspended; returns the suspend call that stops
  // what may still be booting (a cloud instance must not bill on).
  std::vector<ProviderCall> BootFailed(const ctrl::Action& a, int64_t now);
  // For nodes the caller cordoned (they hold nothing); `why` for the
  // pool's decision log.
  std::vector<ProviderCall> Suspend(const std::vector<std::string>& nodes, const std::string& why,
                                    int64_t now);
  // A periodic `list` (kListNodes): none while one runs.
  std::vector<ProviderCall> List(const std::string& pool);
  // A provider call ended. Returns the nodes to delete (suspended now);
  // `calls` gets the suspends of machines a periodic list found up that
  // the pool holds suspended for longer than its bootTimeout (leaked).
  std::vector<std::string> CallDone(const ProviderResult& r, int64_t now, std::string* event,
                                    std::vector<ProviderCall>* calls);

  std::vector<PoolCounts> Counts() const;
  // A NodePool object's status (the API's): nodes by state, each node's
  // state and since when, median boot time, failures, last error, and
  // its history: the node counts at each change and the last decisions
  // (of the last 24 h, at most kHistoryKept and kDecisionsKept).
  boost::json::object Status(const std::string& pool) const;

 private:
  struct Node {
    ctrl::PoolNodeView::State state = ctrl::PoolNodeView::State::kSuspended;
    int64_t since_ms = 0;
    int64_t idle_since_ms = 0;
    int64_t underused_since_ms = 0;
    bool drained = false;
  };
  struct Pool {
    core::NodePool spec;
    std::vector<std::string> names;  // NAME-i, i < maxNodes.
    std::map<std::string, Node> nodes;
    int32_t failures_in_a_row = 0;
    int64_t retry_after_ms = 0;
    std::deque<int64_t> recent_boots;  // The last 20, ms.
    std::string last_error;            // Of the last failed boot.
    bool listing = false;              // A `list` call runs: no decisions.
    bool list_in_flight = false;       // A periodic one runs.
    int64_t last_list_ms = 0;          // When the last one answered.
    PoolCounts counts;
    // (time, booting, ready, suspending) at each change.
    std::deque<std::array<int64_t, 4>> history;
    struct Decision {
      int64_t at_ms;
      std::string what;  // "resume", "suspend", "boot failed", "list".
      std::vector<std::string> nodes;
      std::string why;
    };
    std::deque<Decision> decisions;
  };
  ProviderCall Call(const Pool& p, const char* verb, const std::vector<std::string>& nodes) const;
  void Failed(Pool& p, const std::vector<std::string>& nodes, const std::string& why,
              int64_t now);
  Pool* PoolFor(const std::string& node, Node** n);
  // `describe` for ready node `name`, and what the runtime adds (drained).
  void Describe(Node& n, const std::string& name,
                const std::function<void(const std::string&, ctrl::PoolNodeView*)>& describe,
                ctrl::PoolNodeView* nv);
  // After a change of p's nodes' states: a history point when the counts
  // moved; `what` (not empty): a decision too.
  void Changed(Pool& p, int64_t now, const char* what = "",
               const std::vector<std::string>& nodes = {}, const std::string& why = "");

  std::map<std::string, Pool> pools_;
  std::map<std::string, std::string> pool_of_;  // Node -> pool.
  // Arrivals (time, GPU-milli) of the last hour, per flavor.
  std::map<std::string, std::deque<std::pair<int64_t, int64_t>>> arrivals_;
};

}  // namespace allot::server
