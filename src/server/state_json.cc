// State: the JSON the API shows of workloads (status, conditions, why a
// pending one waits) and of the configuration objects (with what is
// computed now: a ClusterQueue's usage, a LocalQueue's counts, a Node's
// Ready condition), and the watch event of a workload's change.
#include <algorithm>
#include <utility>

#include "server/state.h"
#include "server/state_internal.h"

namespace allot::server {

using internal::PutPending;
using internal::WithMap;
namespace json = boost::json;

namespace {

std::string Quantity(int64_t milli) {
  return Quantity::FromMilli(milli).ToString();
}

json::object ConditionJson(const Condition& c, bool details) {
  json::object o;
  o["type"] = c.type;
  o["status"] = c.status ? "True" : "False";
  o["reason"] = c.reason;
  o["message"] = c.message;
  if (details && !c.detail.empty()) o["detail"] = c.detail;
  o["lastTransitionTime"] = core::FormatRfc3339Ms(c.time_unix_ms);
  o["lastTransitionUnixMs"] = c.time_unix_ms;
  return o;
}


}  // namespace

// ---- JSON -------------------------------------------------------------------

Event State::WorkloadEvent(const WorkloadRecord& rec, const char* type,
                           const json::object& obj) const {
  Event e{rec.resource_version, Kind::kWorkload, rec.spec.ns,
          internal::EventLine(type, json::serialize(obj)), ""};
  bool any = false;
  for (const Condition& c : rec.conditions) any = any || !c.detail.empty();
  if (any) {
    json::object o = obj;
    if (json::value* st = o.if_contains("status"); st && st->is_object()) {
      if (json::value* cs = st->as_object().if_contains("conditions"); cs && cs->is_array()) {
        for (json::value& c : cs->as_array()) {
          if (c.is_object()) c.as_object().erase("detail");
        }
      }
    }
    e.tenant_line = internal::EventLine(type, json::serialize(o));
  }
  return e;
}

json::object State::WorkloadJson(const WorkloadRecord& rec, bool explain,
                                 bool details) const {
  json::object obj = core::EncodeWorkload(rec.spec);
  internal::SetResourceVersion(&obj, rec.resource_version);
  json::value& sv = obj["status"];
  if (!sv.is_object()) sv = json::object();
  json::object& status = sv.as_object();
  status["state"] = ToString(rec.state);
  status["arrival"] = rec.seq;
  status["submittedBy"] = rec.submitted_by;
  status["priority"] = rec.spec.priority;
  if (rec.attempt > 0) status["attempt"] = rec.attempt;
  if (!rec.pod_set_gens.empty()) {
    json::object gens;
    for (const auto& [set, g] : rec.pod_set_gens) gens[set] = g;
    status["podSetGenerations"] = std::move(gens);  // Resumes of a park in part.
  }
  if (rec.restarts > 0) status["restarts"] = rec.restarts;
  if (rec.admitted_unix_ms > 0) {
    status["admittedAtMs"] = rec.admitted_unix_ms;  // Accounting: since when it holds.
    status["utilMilliMs"] = rec.util_milli_ms;
  }
  if (rec.pull_ms > 0) status["pullMs"] = rec.pull_ms;
  if (rec.parked_ms > 0) status["parkedMs"] = rec.parked_ms;
  // Its custom idle signal's last report (not stored: not read back).
  if (rec.active_ms > 0) status["lastActivityUnixMs"] = rec.active_ms;
  // Running with an idle policy: how long it may stay idle and, while it
  // is, when the idle parker parks it (the dashboard's time left).
  if (rec.state == WorkloadState::kRunning || rec.state == WorkloadState::kAdmitted) {
    const int64_t after = internal::IdleAfterSeconds(rec, objs_);
    const int64_t idle = internal::IdleSinceMs(rec, controllers_started_ms_);
    if (after > 0 && !(rec.spec.admission && rec.spec.admission->on_parked_capacity)) {
      status["idleAfterSeconds"] = after;
      if (idle > 0) {
        status["parkAtUnixMs"] =
            std::max(idle, internal::ActiveSinceMs(rec, controllers_started_ms_)) + after * 1000;
      }
    }
  }
  // On capacity parked workloads lent it (docs/parking.md): the first to go.
  if (rec.spec.admission && rec.spec.admission->on_parked_capacity) {
    status["onParkedCapacity"] = true;
  }
  if (rec.pulling_since_ms > 0) status["pullingSinceMs"] = rec.pulling_since_ms;
  // The pull's progress, as the agents last said (not read back from the
  // store): its pods' furthest, as the pods of a node that pull one image
  // each report that one pull.
  if (const Run* run = agents_.RunOf(rec.spec.Key()); run && rec.pulling_since_ms > 0) {
    int64_t bytes = 0, total = 0;
    for (const auto& [id, ps] : run->pods) {
      if (!ps.pulling || ps.exited) continue;
      bytes = std::max(bytes, ps.pulled_bytes);
      total = std::max(total, ps.pull_total_bytes);
    }
    if (bytes > 0) status["pullBytes"] = bytes;
    if (total > 0) status["pullTotalBytes"] = total;
  }
  if (const Run* run = agents_.RunOf(rec.spec.Key()); run && !run->pods.empty()) {
    int64_t running = 0, exited = 0;
    for (const auto& [id, ps] : run->pods) {
      running += ps.running && !ps.exited;
      exited += ps.exited;
    }
    status["podsRunning"] = running;
    status["podsExited"] = exited;
  }
  json::array conds;
  for (const Condition& c : rec.conditions) conds.push_back(ConditionJson(c, details));
  status["conditions"] = std::move(conds);
  if (explain) {
    if (std::optional<sched::PendingWorkload> p = sched_->Explain(rec.spec.Key())) {
      PutPending(*p, &status, CapacityNote(rec.spec.Key()));
    }
  }
  return obj;
}

json::object State::ConfigJson(Kind kind, const std::string& key,
                                bool with_status) const {
  json::object obj = WithMap(objs_, kind, [&](const auto& m) {
    const auto& e = m.at(key);
    json::object o = internal::Encode(e.obj);
    internal::SetResourceVersion(&o, e.rv);
    return o;
  });
  if (!with_status) return obj;
  if (kind == Kind::kClusterQueue) {
    std::optional<sched::ClusterQueueStatus> st =
        sched_->GetClusterQueueStatus(key);
    if (!st) return obj;
    // Kueue's ClusterQueue status shape.
    json::array flavors;
    std::map<std::string, json::array> by_flavor;
    std::vector<std::string> order;
    for (const sched::QuotaUsage& u : st->quota) {
      if (!by_flavor.count(u.flavor)) order.push_back(u.flavor);
      json::object r;
      r["name"] = u.resource;
      r["total"] = Quantity(u.usage_milli);
      r["borrowed"] = Quantity(u.borrowed_milli);
      r["lent"] = Quantity(u.lent_milli);  // Allot's: see sched::QuotaUsage.
      // Allot's, for parking (docs/parking.md): the part of `total` its
      // parked workloads hold, and what its workloads use on capacity that
      // parked workloads of its cohort lent (not in `total`).
      if (u.parked_milli > 0) r["parked"] = Quantity(u.parked_milli);
      if (u.on_parked_milli > 0) r["onParkedCapacity"] = Quantity(u.on_parked_milli);
      r["nominalQuota"] = Quantity(u.nominal_milli);
      by_flavor[u.flavor].push_back(std::move(r));
    }
    for (const std::string& f : order) {
      json::object fo;
      fo["name"] = f;
      fo["resources"] = std::move(by_flavor[f]);
      flavors.push_back(std::move(fo));
    }
    json::object status;
    status["flavorsReservation"] = flavors;
    status["flavorsUsage"] = std::move(flavors);
    status["pendingWorkloads"] = st->pending;
    status["reservingWorkloads"] = st->admitted;
    status["admittedWorkloads"] = st->admitted;
    json::object fair;
    fair["weightedShare"] = st->weighted_share;
    status["fairSharing"] = std::move(fair);
    obj["status"] = std::move(status);
  } else if (kind == Kind::kLocalQueue) {
    const core::LocalQueue& lq = objs_.local_queues.at(key).obj;
    int64_t pending = 0, admitted = 0;
    for (auto it = workloads_.lower_bound(lq.ns + "/");
         it != workloads_.end() && it->second.spec.ns == lq.ns; ++it) {
      if (it->second.spec.queue_name != lq.name) continue;
      if (it->second.spec.admission) {
        ++admitted;
      } else {
        ++pending;
      }
    }
    json::object status;
    status["pendingWorkloads"] = pending;
    status["reservingWorkloads"] = admitted;
    status["admittedWorkloads"] = admitted;
    obj["status"] = std::move(status);
  } else if (kind == Kind::kNodePool) {
    obj["status"] = pools_.Status(key);
  } else if (kind == Kind::kNode) {
    // How many of its GPUs admitted workloads hold (a GPU with a held MIG
    // slice counts once), without naming them: nodes are shared.
    std::set<std::string> held;
    for (const auto& [gpu, rec] : HeldGpus(key)) held.insert(gpu);
    json::value& st = obj["status"];
    if (!st.is_object()) st = json::object();
    st.as_object()["allocatedGpus"] = int64_t(held.size());
    st.as_object()["conditions"] = json::array{NodeReadyCondition(key)};
  }
  return obj;
}

}  // namespace allot::server
