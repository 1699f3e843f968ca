// Controllers: the control plane's reactions to time and change, as pure
// functions.
//
// A controller is like the scheduler: no I/O, no clock, no threads, no
// state of its own between runs. It reads a View of the state (read-only)
// and the time, and returns a Plan: the actions to take now and when it
// next wants to run. A Runner (ctrl/runner.h) decides which controllers
// are due; whoever owns the state applies their actions: the server's
// owner thread through server::State, as the controller's own principal
// ("controller:NAME", audited as such), and the simulator on its virtual
// clock. So every controller is also a what-if in `allot simulate`.
//
// Adding one: a .cc with the class and its test file (scenario tables over
// ctrl/test_view.h), and one line in ctrl/registry.cc.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "core/model.h"
#include "sched/scheduler.h"

namespace allot::ctrl {

inline constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

// What changed in the state since controllers last looked, as bits: a
// controller names those that should wake it (Controller::Triggers).
enum Change : uint32_t {
  kAdmissions = 1u << 0,   // A workload was admitted (its reservation began).
  kConfig = 1u << 1,       // Flavors, queues, cohorts or classes changed.
  kPodFailures = 1u << 2,  // A pod of a current attempt exited non-zero.
  kAgents = 1u << 3,       // An agent was heard from for the first time or came back.
  kParks = 1u << 4,        // A workload was parked.
  kIdle = 1u << 5,         // A workload's GPUs went idle (its idle_since began).
  // A workload was set aside for want of nodes, or a node of an autoscaled
  // pool came, went or freed its last GPU.
  kCapacity = 1u << 6,
};

// An admitted, unfinished workload, as controllers see it.
struct AdmittedView {
  std::string_view key;            // "tenant/name".
  std::string_view cluster_queue;  // Of its admission.
  int64_t reserved_ms = 0;         // When its quota reservation began.
  int64_t max_execution_seconds = 0;  // Its own limit; 0: none.
  // Time its pods spent getting their images so far (not run time).
  int64_t pull_ms = 0;
  // Since when all its GPUs have been under the idle threshold (0: not
  // idle, or no telemetry), and its own idle-after (core::Workload::
  // idle_after_seconds: -1 none, 0 never).
  int64_t idle_since_ms = 0;
  int64_t idle_after_seconds = -1;
  // With a custom activity signal (its allot.dev/idle-signal: activity),
  // when activity was last reported (at least since its admission or the
  // server's start); -1: no such signal, its GPUs alone decide.
  int64_t active_ms = -1;
  // It runs on capacity parked workloads lent: it holds no quota to keep.
  bool on_parked_capacity = false;
};

// A parked workload (docs/parking.md).
struct ParkedView {
  std::string_view key;
  std::string_view cluster_queue;
  int64_t parked_ms = 0;  // When it was parked.
  bool resuming = false;  // A resume was asked and waits for devices.
};

// A workload whose current attempt has a failed pod.
struct PodFailureView {
  std::string_view key;
  int32_t restarts = 0;       // Gang restarts so far.
  int32_t backoff_limit = 0;  // How many it may have.
  std::string_view why;       // "pod X exited with code N; ...".
};

// A node whose agent the server knows.
struct AgentView {
  std::string_view name;
  bool ready = true;
  int64_t last_seen_ms = 0;  // 0: not heard from since start.
};

// A node of an autoscaled pool (core::NodePool), as its owner tracks it.
// A workload on a pool's ready node, for consolidation.
struct PoolNodeWorkload {
  std::string key;
  int32_t gpus = 0;      // Its GPUs on this node,
  int64_t cpu_milli = 0;     // and what its pods there request.
  int64_t memory_milli = 0;
  bool movable = false;  // Preemptible (allot.dev/preemptible), all its pods here.
};

struct PoolNodeView {
  enum class State {
    kSuspended,   // Off (or not created): the provider may resume it.
    kBooting,     // Resume asked at since_ms; its agent has not registered.
    kReady,       // Registered: the scheduler places on it.
    kSuspending,  // Suspend asked at since_ms (cordoned, empty).
  };
  std::string_view name;
  State state = State::kSuspended;
  int64_t since_ms = 0;
  // kReady: what is free on it now (the scheduler's NodeFree) and since
  // when none of its GPUs has been allocated (0: some is).
  int32_t gpus_free = 0;
  Quantity cpu_free;
  Quantity memory_free;
  int64_t idle_since_ms = 0;
  bool cordoned = false;
  // kReady: since when at most half its GPUs have been allocated (0: more
  // are, or none), and what runs on it (the owner may leave it empty when
  // it does not consolidate).
  int64_t underused_since_ms = 0;
  std::vector<PoolNodeWorkload> workloads{};
  // Cordoned by the autoscaler to consolidate (kConsolidate): suspended as
  // soon as it is empty.
  bool drained = false;
  // kReady but its agent NotReady (the machine died or lost its network)
  // since then (0: reachable): suspended after the pool's bootTimeout, so
  // that its slot can boot again and a dead cloud instance stops billing.
  int64_t lost_since_ms = 0;
};

// An autoscaled pool and its nodes: every name it may use (NAME-i, i in
// 0..maxNodes-1), in that order.
struct PoolView {
  const core::NodePool* spec = nullptr;
  std::vector<PoolNodeView> nodes;
  // Boot failures since a node last registered, and no resume before
  // retry_after_ms (the owner's backoff, BootRetryDelayMs).
  int32_t failures_in_a_row = 0;
  int64_t retry_after_ms = 0;
  // How long a boot takes (the owner's measure; 0: unknown), for the
  // pending reasons' "ready in about" and headroom by arrivals.
  int64_t expected_boot_ms = 0;
  // GPUs asked per hour by workloads arriving for its flavors, measured
  // by the owner (headroom by arrivals).
  double arrival_gpus_per_hour = 0;
  // Why its last boot failed (the provider's words, or a timeout), for
  // the pending reasons while it backs off; "" when none.
  std::string_view last_error;
  // When its provider should be asked again which nodes are up (kListNodes:
  // machines up that the pool holds suspended are stopped); 0: not now.
  int64_t next_list_ms = 0;
};

// The read-only state controllers read. Implementations: server::State's
// (server/state_controllers.cc), the simulator's, and tests' (test_view.h).
class View {
 public:
  virtual ~View() = default;
  // When the state's owner started: the first turn that ran controllers.
  virtual int64_t StartedMs() const = 0;
  virtual void ForEachAdmitted(const std::function<void(const AdmittedView&)>& fn) const = 0;
  // Every admitted workload that can have a run-time limit: one of its
  // own, or its ClusterQueue's default (core::ClusterQueue::max_run_seconds),
  // in the order ForEachAdmitted visits them; it may visit others too. The
  // deadlines controller reads this instead of every admitted workload. By
  // default every admitted workload (the server's: Deadlines reads each
  // one's limit anyway); a view that knows which can have a limit without
  // a scan visits only those (the simulator's).
  virtual void ForEachAdmittedWithLimit(
      const std::function<void(const AdmittedView&)>& fn) const {
    ForEachAdmitted(fn);
  }
  // Every admitted workload that can have an idle-after time (its own or
  // its ClusterQueue's) and idle telemetry, for the idle parker; it may
  // visit others too. By default every admitted workload; the simulator's
  // jobs have no telemetry, so its view visits none.
  virtual void ForEachAdmittedWithIdlePolicy(
      const std::function<void(const AdmittedView&)>& fn) const {
    ForEachAdmitted(fn);
  }
  // Every parked workload. None by default (the simulator parks nothing).
  virtual void ForEachParked(const std::function<void(const ParkedView&)>& fn) const {
    (void)fn;
  }
  virtual void ForEachPodFailure(const std::function<void(const PodFailureView&)>& fn) const = 0;
  virtual void ForEachAgent(const std::function<void(const AgentView&)>& fn) const = 0;
  // nullptr when there is none of that name.
  virtual const core::ClusterQueue* FindClusterQueue(std::string_view name) const = 0;
  // Autoscaled pools (none by default), the capacity-blocked demand in
  // queue order (sched::Scheduler::CapacityDemands; read only when some
  // pool exists), and flavors by name.
  virtual void ForEachPool(const std::function<void(const PoolView&)>& fn) const {
    (void)fn;
  }
  virtual std::vector<sched::CapacityDemand> CapacityDemands() const { return {}; }
  virtual const core::ResourceFlavor* FindFlavor(std::string_view name) const {
    (void)name;
    return nullptr;
  }
};

// One thing a controller wants done. The applier checks that it still
// holds (the workload is still admitted, the node still Ready) and skips
// it otherwise.
struct Action {
  enum class Type {
    kFail,          // Finish workload `target` as Failed (reason, message).
    kRestartGang,   // Start workload `target`'s pods again, a new attempt.
    kNodeNotReady,  // Mark node `target` NotReady and evict what runs there.
    kPark,          // Park workload `target` (docs/parking.md; reason, message).
    kStopParked,    // Free parked workload `target`'s quota, hold it (reason, message).
    // Autoscaled pool `target` (ctrl/autoscaler.h), nodes `nodes`:
    kResumeNodes,   // Ask its provider to start them (they become kBooting).
    kSuspendNodes,  // Cordon them and ask its provider to stop them.
    kBootFailed,    // They did not register in time: suspend, back off.
    // Cordon them and evict their workloads (preemptible) to free them
    // (consolidation); they are suspended once empty.
    kConsolidate,
    // Ask its provider which nodes are up, and stop those up that it holds
    // suspended (leaked: a suspend that did not take, a boot given up).
    kListNodes,
    // Not an action: why pending workload `target` waits (message), for
    // its pending reason; not audited.
    kExplain,
  };
  Type type = Type::kFail;
  std::string target;
  std::string reason;
  std::string message;
  // kNodeNotReady: the clause of the evicted workloads' message this node
  // belongs to ("stopped heartbeating", "not heard from since the server
  // started"); nodes of one run share one message.
  std::string clause;
  std::vector<std::string> nodes{};  // Pool actions: the nodes.

  bool operator==(const Action&) const = default;
};
const char* ToString(Action::Type t);

struct Plan {
  std::vector<Action> actions;
  int64_t next_wake_ms = kNever;  // When it next wants to run, if nothing changes.
};

// Settings the controllers share, from the server's flags (or the
// simulator's defaults).
struct Options {
  int64_t node_timeout_ms = 10000;
  // The agents' longest reconnect backoff (agent/heartbeat.h): a node not
  // heard from since start gets one timeout plus this.
  int64_t agent_max_backoff_ms = 2000;
};

class Controller {
 public:
  virtual ~Controller() = default;
  // Its principal is "controller:" + Name(); its actions are audited so.
  virtual std::string_view Name() const = 0;
  // The changes (Change bits) that make it due before its wake time.
  virtual uint32_t Triggers() const { return 0; }
  // The least time between two runs caused by changes (a scan over every
  // admitted workload should not run on every turn of a busy server).
  virtual int64_t MinIntervalMs() const { return 0; }
  virtual Plan Run(const View& view, int64_t now_ms) const = 0;
};

}  // namespace allot::ctrl
