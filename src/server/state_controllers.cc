// State's side of the controllers (ctrl/controller.h): the read-only view
// they run on, and how their actions change the state. Owner thread only.
#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/parking_annotations.h"
#include "server/state.h"
#include "server/state_internal.h"

namespace allot::server {

namespace {
// A notebook's idle time before it is parked when neither it nor its
// ClusterQueue says (docs/notebooks.md).
constexpr int64_t kNotebookIdleAfterSeconds = 3600;
}  // namespace

namespace internal {

int64_t IdleAfterSeconds(const WorkloadRecord& rec, const Objects& objs) {
  if (rec.spec.idle_after_seconds >= 0) return rec.spec.idle_after_seconds;
  const int64_t cq = !rec.spec.admission ? 0 : [&] {
    auto it = objs.cluster_queues.find(rec.spec.admission->cluster_queue);
    return it == objs.cluster_queues.end() ? int64_t(0) : it->second.obj.idle_after_seconds;
  }();
  if (cq > 0) return cq;
  return rec.spec.type == "notebook" ? kNotebookIdleAfterSeconds : -1;
}

int64_t ActiveSinceMs(const WorkloadRecord& rec, int64_t started_ms) {
  if (!rec.spec.annotations.count(core::kIdleSignalKey)) return -1;
  // Reports are not stored: the server's start counts as activity. A
  // parked workload keeps its reservation, so its QuotaReserved time is
  // older than its resume: both count.
  int64_t since = std::max(rec.active_ms, started_ms);
  for (const Condition& c : rec.conditions) {
    if ((c.type == "QuotaReserved" && c.status) || (c.type == "Parked" && !c.status)) {
      since = std::max(since, c.time_unix_ms);
    }
  }
  return since;
}

int64_t IdleSinceMs(const WorkloadRecord& rec, int64_t started_ms) {
  if (rec.idle_since_ms > 0 || !rec.spec.admission) return rec.idle_since_ms;
  // No GPU to be idle (a CPU notebook): its activity signal alone decides.
  for (const core::PodSetAssignment& psa : rec.spec.admission->pod_set_assignments) {
    for (const core::PodPlacement& pl : psa.placements) {
      if (!pl.gpus.empty()) return rec.idle_since_ms;
    }
  }
  return std::max<int64_t>(0, ActiveSinceMs(rec, started_ms));
}

}  // namespace internal

using internal::SetCondition;

class State::ControllerView : public ctrl::View {
 public:
  ControllerView(const State& s, int64_t now) : s_(s), now_(now) {}

  int64_t StartedMs() const override { return s_.controllers_started_ms_; }

  void ForEachAdmitted(const std::function<void(const ctrl::AdmittedView&)>& fn) const override {
    for (const auto& [key, run] : s_.agents_.runs()) {
      const WorkloadRecord& rec = s_.workloads_.at(key);
      if (rec.finished() || !rec.spec.admission) continue;
      for (const Condition& c : rec.conditions) {
        if (c.type != "QuotaReserved" || !c.status) continue;
        // Parked time is not run time: the reservation counts as later.
        fn({key, rec.spec.admission->cluster_queue, c.time_unix_ms + rec.parked_ms,
            rec.spec.max_execution_seconds, rec.PullMsAt(now_),
            internal::IdleSinceMs(rec, s_.controllers_started_ms_),
            internal::IdleAfterSeconds(rec, s_.objs_),
            internal::ActiveSinceMs(rec, s_.controllers_started_ms_),
            rec.spec.admission->on_parked_capacity});
      }
    }
  }

  void ForEachPodFailure(
      const std::function<void(const ctrl::PodFailureView&)>& fn) const override {
    for (const auto& [key, why] : s_.pod_failures_) {
      const WorkloadRecord* rec = s_.FindWorkload(key);
      if (rec == nullptr || rec->finished() || !rec->spec.admission) continue;
      fn({key, rec->restarts, rec->spec.backoff_limit, why});
    }
  }

  void ForEachParked(const std::function<void(const ctrl::ParkedView&)>& fn) const override {
    for (const auto& [key, rec] : s_.workloads_) {
      if (rec.state != WorkloadState::kParked || !rec.spec.admission) continue;
      fn({key, rec.spec.admission->cluster_queue, rec.ParkedSinceMs(),
          s_.ResumeWaits(key)});
    }
  }

  void ForEachAgent(const std::function<void(const ctrl::AgentView&)>& fn) const override {
    for (const auto& [name, a] : s_.agents_.all()) fn({name, a.ready, a.last_seen_ms});
  }

  const core::ClusterQueue* FindClusterQueue(std::string_view name) const override {
    auto it = s_.objs_.cluster_queues.find(std::string(name));
    return it == s_.objs_.cluster_queues.end() ? nullptr : &it->second.obj;
  }

  void ForEachPool(const std::function<void(const ctrl::PoolView&)>& fn) const override {
    s_.pools_.ForEachPool(
        *s_.sched_, now_,
        [&](const std::string& node, ctrl::PoolNodeView* nv) { s_.DescribePoolNode(node, nv); },
        fn);
  }
  std::vector<sched::CapacityDemand> CapacityDemands() const override {
    if (s_.pools_.empty()) return {};
    return s_.sched_->CapacityDemands();
  }
  const core::ResourceFlavor* FindFlavor(std::string_view name) const override {
    return s_.sched_->Flavor(std::string(name));
  }

 private:
  const State& s_;
  int64_t now_;  // For the pull time of a pull still going.
};

void State::RunControllers(ctrl::Runner* runner, Txn* txn) {
  if (controllers_started_ms_ == 0) controllers_started_ms_ = txn->now_unix_ms;
  runner->Note(std::exchange(ctrl_changes_, 0));
  std::vector<ctrl::TakenAction> actions =
      runner->Run(ControllerView(*this, txn->now_unix_ms), txn->now_unix_ms);
  if (!actions.empty()) ApplyControllerActions(actions, txn);
  // The gang-restart controller runs in the turn of a failure (it
  // triggers on kPodFailures, with no interval), so a failure it did not
  // act on belongs to a workload that left in this turn: it must not
  // stand for a later attempt, or a workload made again under the name.
  pod_failures_.clear();
}

void State::ApplyControllerActions(const std::vector<ctrl::TakenAction>& actions, Txn* txn) {
  const int64_t now = txn->now_unix_ms;
  ApplyPoolActions(actions, txn);
  std::vector<NotReadyNode> not_ready;
  for (const ctrl::TakenAction& t : actions) {
    const ctrl::Action& a = t.action;
    switch (a.type) {  // The autoscaler's: ApplyPoolActions.
      case ctrl::Action::Type::kResumeNodes:
      case ctrl::Action::Type::kSuspendNodes:
      case ctrl::Action::Type::kBootFailed:
      case ctrl::Action::Type::kConsolidate:
      case ctrl::Action::Type::kListNodes:
      case ctrl::Action::Type::kExplain:
        continue;
      default:
        break;
    }
    const std::string principal = "controller:" + t.controller;
    const char* verb = ctrl::ToString(a.type);
    if (a.type == ctrl::Action::Type::kNodeNotReady) {
      const AgentInfo* agent = agents_.Find(a.target);
      if (agent == nullptr || !agent->ready) continue;
      not_ready.push_back({a.target, a.message, a.clause});
      Audit(principal, "", verb, "Node " + a.target, "ok", txn);
      continue;
    }
    auto it = workloads_.find(a.target);
    if (it == workloads_.end()) continue;
    WorkloadRecord& rec = it->second;
    if (rec.finished() || !rec.spec.admission) continue;
    if (a.type == ctrl::Action::Type::kFail) {
      Finish(&rec, false, a.reason, a.message, now);
    } else if (a.type == ctrl::Action::Type::kPark) {
      if (rec.state == WorkloadState::kParked) continue;
      if (!ParkWorkload(a.target, a.reason, a.message, txn).ok()) continue;
      // The queue's admin chose Stop for idle work: its quota goes too.
      auto cq = objs_.cluster_queues.find(rec.spec.admission->cluster_queue);
      Result<bool> stops = cq == objs_.cluster_queues.end()
                               ? Result<bool>(false)
                               : core::IdleActionStops(cq->second.obj.annotations);
      if (a.reason == "Idle" && stops.ok() && *stops) {
        Audit(principal, rec.spec.ns, verb, "Workload " + a.target, "ok", txn);
        metrics_->Evicted(QueueOf(rec), "IdleStop");
        SuspendParked(&rec, "IdleStop",
                      a.message + "; stopped: its quota is freed (ClusterQueue " +
                          cq->first + " has " + core::kIdleActionKey + ": Stop)",
                      "", now);
        verb = ctrl::ToString(ctrl::Action::Type::kStopParked);
      }
    } else if (a.type == ctrl::Action::Type::kStopParked) {
      if (rec.state != WorkloadState::kParked || resume_wanted_.count(a.target)) continue;
      metrics_->Evicted(QueueOf(rec), a.reason);
      SuspendParked(&rec, a.reason, a.message, "", now);
    } else {
      // The whole gang again, as a new attempt on the same admission:
      // agents stop the old pods and start the new ones.
      ++rec.restarts;
      ++rec.attempt;
      rec.pod_set_gens.clear();
      agents_.ForgetPods(a.target);
      // Parked in part (its head failed): what runs starts again, the
      // rest stays parked.
      if (rec.state != WorkloadState::kParked) {
        rec.state = WorkloadState::kAdmitted;
        SetCondition(&rec.conditions, {"PodsReady", false, a.reason, a.message, now, ""});
      }
      MarkDirty(a.target);
    }
    Audit(principal, rec.spec.ns, verb, "Workload " + a.target, "ok", txn);
  }
  if (!not_ready.empty()) MarkNotReady(not_ready, now);
}

void State::MarkNotReady(const std::vector<NotReadyNode>& nodes, int64_t now) {
  std::set<std::string> evict;
  // Clause -> its nodes, in the order given.
  std::vector<std::pair<std::string, std::string>> clauses;
  for (const NotReadyNode& n : nodes) {
    agents_.MarkNotReady(n.name, now, n.message);
    if (const std::set<std::string>* on = agents_.WorkloadsOn(n.name)) {
      evict.insert(on->begin(), on->end());
    }
    auto c = std::find_if(clauses.begin(), clauses.end(),
                          [&](const auto& x) { return x.first == n.clause; });
    if (c == clauses.end()) {
      clauses.push_back({n.clause, n.name});
    } else {
      c->second += ", " + n.name;
    }
  }
  std::string message;
  for (const auto& [clause, names] : clauses) {
    message += std::string(message.empty() ? "" : "; ") + "node " + names + " " + clause;
  }
  std::set<std::string> names;
  for (const NotReadyNode& n : nodes) names.insert(n.name);
  Status s = Reschedule(evict, names, "NodeNotReady", message, now);
  (void)s;  // Cannot fail: the configuration was valid and only shrinks.
}

}  // namespace allot::server
