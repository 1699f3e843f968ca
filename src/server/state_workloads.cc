// State: the workload lifecycle: submission checks (the priority policy),
// submission and deletion, evictions (Reschedule: evicted workloads and
// changed nodes given to the scheduler), a workload's end (Finish), and the
// scheduling turn that records every decision and writes what changed
// (FinishTurn, Flush).
#include <algorithm>
#include <chrono>
#include <utility>

#include "core/host_paths.h"
#include "core/image_policy.h"
#include "core/manifest.h"
#include "core/priority_policy.h"
#include "server/state.h"
#include "server/state_internal.h"

namespace allot::server {

using internal::Join;
using internal::SetCondition;
using internal::TenantOfKey;
namespace json = boost::json;

// ---- Workloads --------------------------------------------------------------

Status State::CheckWorkload(const Actor& a, const core::Workload& w,
                            const Objects& o) const {
  const std::string key = w.Key();
  if (!o.tenants.count(w.ns)) {
    return Status::NotFound("tenant " + w.ns + " does not exist",
                            "metadata.namespace");
  }
  if (workloads_.count(key)) {
    return Status::AlreadyExists("Workload " + key + " already exists");
  }
  if (w.admission) {
    return Status::InvalidArgument(
        "status.admission is set by the scheduler, not by clients",
        "status.admission");
  }
  ALLOT_RETURN_IF_ERROR(secrets_.CheckRefs(w));
  for (const core::PodSet& ps : w.pod_sets) {
    if (ps.host_network) {
      ALLOT_RETURN_IF_ERROR(core::HostNetworkAllowed(o.tenants.at(w.ns).obj.annotations)
                                .WithFieldPrefix("podSets[" + ps.name + "]"));
    }
    for (const core::Volume& v : ps.volumes) {
      if (v.type != core::Volume::Type::kHostPath) continue;
      Result<bool> rw = core::HostPathAccess(o.tenants.at(w.ns).obj.annotations, v.path);
      if (!rw.ok()) {
        return rw.status().WithFieldPrefix("podSets[" + ps.name + "].volumes[" + v.name + "]");
      }
    }
  }
  if (!o.local_queues.count(w.ns + "/" + w.queue_name)) {
    return Status::InvalidArgument("LocalQueue " + w.ns + "/" + w.queue_name +
                                       " does not exist",
                                   "spec.queueName");
  }
  // Checked as it will be stored: with the policy's default class, so that
  // an apply checked here cannot fail when it submits.
  const core::PriorityPolicy policy = PriorityPolicyOf(o, w.ns, w.queue_name);
  const std::string cls = EffectiveClass(w, policy);
  if (!cls.empty() && !o.priority_classes.count(cls)) {
    return Status::InvalidArgument("WorkloadPriorityClass " + cls + " does not exist",
                                   "spec.priorityClassName");
  }
  return CheckPriority(a, w, cls, policy);
}

std::string State::EffectiveClass(const core::Workload& w, const core::PriorityPolicy& policy) {
  if (!w.priority_class_name.empty() || w.priority != 0 || !policy.default_class) {
    return w.priority_class_name;
  }
  return *policy.default_class;
}

void State::ApplyDefaultPriority(const Objects& o, core::Workload* w) {
  w->priority_class_name = EffectiveClass(*w, PriorityPolicyOf(o, w->ns, w->queue_name));
}

Status State::ResolveImages(const Objects& o, core::Workload* w) {
  // No tenant: CheckWorkload says so. Stored tenants were checked when
  // they were written, so their policy parses.
  auto t = o.tenants.find(w->ns);
  if (t == o.tenants.end()) return Status::Ok();
  Result<core::ImagePolicy> policy = core::ParseImagePolicy(t->second.obj.annotations);
  if (!policy.ok()) return policy.status();
  core::ImageCatalogue catalogue;
  for (const auto& [name, e] : o.images) catalogue[name] = e.obj.image;
  return core::ResolveImages(*policy, catalogue, w);
}

core::PriorityPolicy State::PriorityPolicyOf(const Objects& o, const std::string& ns,
                                             const std::string& queue) {
  // Stored objects were checked when they were written: a bad annotation
  // cannot be here, and counts as none if it were.
  core::PriorityPolicy tenant, lq;
  if (auto t = o.tenants.find(ns); t != o.tenants.end()) {
    auto r = core::ParsePriorityPolicy(t->second.obj.annotations, "Tenant " + ns);
    if (r.ok()) tenant = *r;
  }
  if (auto q = o.local_queues.find(ns + "/" + queue); q != o.local_queues.end()) {
    auto r = core::ParsePriorityPolicy(q->second.obj.annotations, "LocalQueue " + q->first);
    if (r.ok()) lq = *r;
  }
  return core::MergePriorityPolicy(lq, tenant);
}

Status State::CheckPriority(const Actor& a, const core::Workload& w, const std::string& cls,
                            const core::PriorityPolicy& policy) {
  if (a.bypasses_priority_policy) return Status::Ok();
  if (cls.empty() && w.priority != 0 && !policy.literal.value_or(false)) {
    std::string use = policy.classes && !policy.classes->empty()
                          ? "; use spec.priorityClassName: " + Join(*policy.classes, ", ")
                          : "; use spec.priorityClassName";
    return Status::PermissionDenied(
        "a literal spec.priority is for cluster-admins only (a cluster-admin may allow it "
        "with the annotation " + std::string(core::kAllowLiteralPriorityKey) +
            ": \"true\" on the Tenant or LocalQueue)" + use,
        "spec.priority");
  }
  if (!cls.empty() && policy.classes &&
      !std::binary_search(policy.classes->begin(), policy.classes->end(), cls)) {
    return Status::PermissionDenied(
        "WorkloadPriorityClass " + cls + " is not allowed in LocalQueue " +
            w.ns + "/" + w.queue_name + " (" + core::kPriorityClassesKey + " of " +
            policy.classes_from + "): " +
            (policy.classes->empty() ? std::string("none is") : "allowed: " + Join(*policy.classes, ", ")),
        "spec.priorityClassName");
  }
  return Status::Ok();
}

Status State::SubmitWorkload(const Actor& a, core::Workload w, Txn* txn) {
  const std::string key = w.Key();
  ApplyDefaultPriority(objs_, &w);
  ALLOT_RETURN_IF_ERROR(ResolveImages(objs_, &w));
  ALLOT_RETURN_IF_ERROR(CheckWorkload(a, w, objs_));
  if (!w.priority_class_name.empty()) {
    const core::WorkloadPriorityClass& pc = objs_.priority_classes.at(w.priority_class_name).obj;
    w.priority = pc.value;
    // Written down, so that the workload stays as it was admitted when the
    // class changes.
    if (pc.preemptible && !w.annotations.count(core::kPreemptibleKey)) {
      w.preemptible = true;
      w.annotations[core::kPreemptibleKey] = "true";
    }
  }
  // The server's clock orders the queue: a client may not jump the line.
  w.creation_unix_ms = txn->now_unix_ms;
  w.source = internal::StoredSource(Kind::kWorkload);
  // Inactive (spec.active: false): held out of the scheduler, Suspended.
  if (w.active) ALLOT_RETURN_IF_ERROR(sched_->AddWorkload(w));
  if (w.active) NoteArrival(w, txn->now_unix_ms);
  WorkloadRecord rec;
  rec.spec = std::move(w);
  rec.seq = ++seq_;
  rec.submitted_by = a.name;
  if (rec.spec.active) {
    rec.conditions.push_back({"QuotaReserved", false, "Pending",
                              "waiting for a scheduling cycle",
                              txn->now_unix_ms, ""});
  } else {
    rec.state = WorkloadState::kSuspended;
    rec.conditions.push_back({"QuotaReserved", false, "Inactive",
                              "spec.active is false: held out of its queue",
                              txn->now_unix_ms, ""});
  }
  workloads_.emplace(key, std::move(rec));
  created_.insert(key);
  MarkDirty(key);
  return Status::Ok();
}

Status State::DeleteWorkload(const std::string& key, Txn* txn) {
  auto it = workloads_.find(key);
  if (it == workloads_.end()) {
    return Status::NotFound("Workload " + key + " does not exist");
  }
  if (it->second.scheduled()) {
    Status s = sched_->RemoveWorkload(key);
    if (!s.ok()) return Status::Internal(s.message());
    accounting_.Close(&it->second, txn->now_unix_ms, objs_.flavors);
  }
  agents_.Reindex(key, it->second, /*gone=*/true);  // Its pods are stopped.
  resume_wanted_.erase(key);
  json::object last = WorkloadJson(it->second, false);
  ++rv_;
  internal::SetResourceVersion(&last, rv_);
  txn->events.push_back(WorkloadEvent(it->second, "DELETED", last));
  txn->events.back().resource_version = rv_;
  txn->batch.deletes.push_back({"Workload", key});
  // A delete after a put in the same turn: drop the put.
  dirty_.erase(key);
  created_.erase(key);
  workloads_.erase(it);
  ++removed_since_rebuild_;
  return Status::Ok();
}

metrics::QueueLabels State::QueueOf(const WorkloadRecord& rec) const {
  metrics::QueueLabels q;
  q.ns = rec.spec.ns;
  q.local_queue = rec.spec.queue_name;
  q.priority_class = rec.spec.priority_class_name;
  if (rec.spec.admission) {
    q.cluster_queue = rec.spec.admission->cluster_queue;
  } else if (auto lq = objs_.local_queues.find(rec.spec.ns + "/" + rec.spec.queue_name);
             lq != objs_.local_queues.end()) {
    q.cluster_queue = lq->second.obj.cluster_queue;
  }
  return q;
}

void State::Evicted(WorkloadRecord* rec, const std::string& reason,
                    const std::string& message, int64_t now, const std::string& detail) {
  metrics_->Evicted(QueueOf(*rec), reason);
  accounting_.Close(rec, now, objs_.flavors);
  SetCondition(&rec->conditions, {"Evicted", true, reason, message, now, detail});
  SetCondition(&rec->conditions, {"QuotaReserved", false, reason, "evicted: " + message, now,
                                  detail.empty() ? "" : "evicted: " + detail});
  SetCondition(&rec->conditions, {"Admitted", false, reason, message, now, detail});
  SetCondition(&rec->conditions, {"Requeued", true, reason, "back in its queue", now, ""});
}

Status State::Reschedule(const std::set<std::string>& evict,
                         const std::set<std::string>& nodes, const std::string& reason,
                         const std::string& message, int64_t now, bool rebuild) {
  // In place: the evicted workloads leave the scheduler, then the nodes
  // take their new state. A refusal (none is expected: they are admitted,
  // and their nodes hold nothing else that the change strands) falls back
  // to a rebuild, which decides the same.
  Status s = Status::Ok();
  if (!rebuild) {
    for (const std::string& key : evict) {
      if (s.ok()) s = sched_->EvictWorkload(key);
    }
    for (const std::string& n : nodes) {
      auto it = objs_.nodes.find(n);
      if (s.ok() && it != objs_.nodes.end()) s = sched_->UpdateNode(SchedulerNode(it->second.obj));
    }
  }
  if (rebuild || !s.ok()) {
    core::Config cfg = BuildConfig(objs_, evict);
    Status v = core::ValidateConfig(&cfg);
    if (!v.ok()) return Status::Internal(v.message());
    auto sched = sched::Scheduler::Create(cfg);
    if (!sched.ok()) return Status::Internal(sched.status().message());
    sched_ = std::move(*sched);
    removed_since_rebuild_ = 0;
  }
  for (const std::string& key : evict) {
    WorkloadRecord& rec = workloads_.at(key);
    Evicted(&rec, reason, message, now);
    rec.spec.admission.reset();
    rec.state = WorkloadState::kRequeued;
    agents_.ForgetPods(key);
    MarkDirty(key);
  }
  return Status::Ok();
}

void State::Finish(WorkloadRecord* rec, bool succeeded,
                   const std::string& reason, const std::string& message,
                   int64_t now) {
  const std::string key = rec->spec.Key();
  (void)sched_->RemoveWorkload(key);  // Frees its quota and devices.
  ++removed_since_rebuild_;
  accounting_.Close(rec, now, objs_.flavors);  // Before its state changes.
  rec->state = succeeded ? WorkloadState::kSucceeded : WorkloadState::kFailed;
  metrics_->Finished(QueueOf(*rec));
  SetCondition(&rec->conditions, {"Finished", true, reason, message, now, ""});
  SetCondition(&rec->conditions,
               {"QuotaReserved", false, "Finished", "quota released", now, ""});
  MarkDirty(key);
}

int32_t State::FinishTurn(Txn* txn) {
  agents_.NoteTurn(txn->now_unix_ms);
  // Workloads that changed may have set work aside for want of nodes or
  // left a pool node empty: the autoscaler looks again.
  if (!pools_.empty() && !dirty_.empty()) ctrl_changes_ |= ctrl::kCapacity;
  std::set<std::string> touched;
  std::map<std::string, sched::PreemptionEvent> preempted;
  int32_t cycles = 0;
  using Clock = std::chrono::steady_clock;
  const Clock::time_point turn_start = Clock::now();
  // Resumes first: devices freed in this turn go to parked workloads that
  // asked for them before any queued one.
  if (!resume_wanted_.empty()) TryResumes(txn->now_unix_ms);
  for (;;) {
    const Clock::time_point t0 = Clock::now();
    sched::CycleResult r = sched_->RunCycle();
    ++cycles;
    if (r.attempts > 0) {
      metrics_->AdmissionAttempt(
          !r.admitted.empty(),
          std::chrono::duration<double>(Clock::now() - t0).count());
    }
    touched.insert(r.admitted.begin(), r.admitted.end());
    if (!r.admitted.empty()) ctrl_changes_ |= ctrl::kAdmissions;
    for (sched::PreemptionEvent& e : r.preempted) {
      touched.insert(e.workload);
      preempted[e.workload] = std::move(e);
    }
    // A cycle that set heads aside changed nothing visible but lets the
    // workloads behind them be tried: stop only when no head was tried.
    if ((!r.Changed() && r.attempts == 0) || cycles >= 100000) break;
  }
  metrics_->SchedulingTurn(
      std::chrono::duration<double>(Clock::now() - turn_start).count(), cycles);
  const int64_t now = txn->now_unix_ms;
  for (const std::string& key : touched) {
    auto it = workloads_.find(key);
    if (it == workloads_.end()) continue;
    WorkloadRecord& rec = it->second;
    if (auto e = preempted.find(key); e != preempted.end()) {
      std::string reason = sched::ToString(e->second.reason);
      std::optional<core::Admission> by = sched_->AdmissionOf(e->second.preemptor);
      const std::string by_cq = by ? by->cluster_queue : "";
      metrics_->Preempted(by_cq, reason);
      // The preemptor is named to its own tenant; to another, it is "a
      // workload of another tenant" (the ClusterQueue is shared and
      // named); cluster-admins read its name in the condition's detail.
      // A workload on parked capacity goes when the capacity is taken back
      // (a resume), or when the parked workload's quota goes (no preemptor).
      const bool reclaim = e->second.reason == sched::PreemptionReason::kParkedCapacityReclaim;
      const std::string verb =
          reclaim ? "the parked capacity it ran on was taken back" : "preempted";
      const std::string named = e->second.preemptor.empty()
                                    ? verb
                                    : verb + " by " + e->second.preemptor;
      const bool foreign =
          !e->second.preemptor.empty() && TenantOfKey(e->second.preemptor) != rec.spec.ns;
      const std::string shown =
          foreign ? verb + " by " + (reclaim ? "a workload" : "a higher-priority workload") +
                        " of another tenant" +
                        (by_cq.empty() ? std::string() : " in ClusterQueue " + by_cq)
                  : named;
      if (reclaim && rec.spec.admission) metrics_->Reclaimed(rec.spec.admission->cluster_queue);
      if (rec.state == WorkloadState::kParked) {
        // Its quota went; nothing of it ran: held, not queued, until
        // resumed (an idle workload should not start by itself).
        metrics_->Evicted(QueueOf(rec), "Preempted");
        SetCondition(&rec.conditions, {"Evicted", true, "Preempted", shown + " (" + reason + ")",
                                       now, foreign ? named + " (" + reason + ")" : ""});
        SetCondition(&rec.conditions, {"Admitted", false, "Preempted", shown, now, ""});
        SuspendParked(&rec, "Preempted", "its quota was taken while it was parked (" + shown + ")",
                      foreign ? named : "", now);
        continue;
      }
      Evicted(&rec, "Preempted", shown + " (" + reason + ")", now,
              foreign ? named + " (" + reason + ")" : "");
      SetCondition(&rec.conditions,
                   {"Preempted", true, reason, shown, now, foreign ? named : ""});
    }
    std::optional<core::Admission> adm = sched_->AdmissionOf(key);
    if (adm) {
      std::string msg = "quota reserved in ClusterQueue " + adm->cluster_queue;
      const bool fresh = !rec.spec.admission || *rec.spec.admission != *adm ||
                         preempted.count(key);
      if (fresh) {
        accounting_.Close(&rec, now, objs_.flavors);  // No-op when nothing is open.
        ++rec.attempt;  // New pods: nothing of an earlier admission counts.
        rec.pod_set_gens.clear();
        rec.parked_ms = 0;
        // Waiting since creation or the last requeue.
        int64_t since = rec.spec.creation_unix_ms;
        for (const Condition& c : rec.conditions) {
          if (c.type == "Requeued" && c.status) since = std::max(since, c.time_unix_ms);
        }
        metrics::QueueLabels q = QueueOf(rec);
        q.cluster_queue = adm->cluster_queue;
        metrics_->Admitted(q, since > 0 ? std::max<int64_t>(0, now - since) / 1000.0 : 0);
        agents_.ForgetPods(key);
        for (const Condition& c : rec.conditions) {
          if (c.type == "PodsReady") {
            SetCondition(&rec.conditions, {"PodsReady", false, "PodsStarting",
                                           "the pods of this admission are starting", now, ""});
            break;
          }
        }
      }
      rec.spec.admission = std::move(adm);
      if (fresh) Accounting::Open(&rec, now);
      rec.state = WorkloadState::kAdmitted;
      SetCondition(&rec.conditions, {"QuotaReserved", true, "QuotaReserved", msg, now, ""});
      SetCondition(&rec.conditions, {"Admitted", true, "Admitted",
                                     "the workload is admitted", now, ""});
      for (const Condition& c : rec.conditions) {
        if (c.type == "Evicted" && c.status) {
          SetCondition(&rec.conditions,
                       {"Evicted", false, "Readmitted", "admitted again", now, ""});
          break;
        }
      }
    } else {
      rec.spec.admission.reset();
      rec.state = WorkloadState::kRequeued;
    }
    MarkDirty(key);
  }
  // Removed workloads leave tombstones in the scheduler: compact now and
  // then by rebuilding it (admitted ones keep their placements).
  if (removed_since_rebuild_ > 50000 &&
      removed_since_rebuild_ > workloads_.size()) {
    core::Config cfg = BuildConfig(objs_, {});
    if (core::ValidateConfig(&cfg).ok()) {
      auto s = sched::Scheduler::Create(cfg);
      if (s.ok()) {
        sched_ = std::move(*s);
        removed_since_rebuild_ = 0;
      }
    }
  }
  Flush(txn);
  return cycles;
}

void State::Flush(Txn* txn) {
  for (const std::string& key : dirty_) {
    auto it = workloads_.find(key);
    if (it == workloads_.end()) continue;
    WorkloadRecord& rec = it->second;
    agents_.Reindex(key, rec);
    rec.resource_version = ++rv_;
    json::object obj = WorkloadJson(rec, false);
    const char* type = created_.count(key) ? "ADDED" : "MODIFIED";
    txn->events.push_back(WorkloadEvent(rec, type, obj));
    std::string body = json::serialize(obj);
    txn->workload_puts[key] = txn->batch.puts.size();
    txn->batch.puts.push_back({"Workload", key, rv_, std::move(body)});
  }
  dirty_.clear();
  created_.clear();
  accounting_.Flush(txn->now_unix_ms, &txn->batch);
  if (!txn->batch.empty() || !txn->events.empty()) {
    txn->batch.meta["rv"] = std::to_string(rv_);
    txn->batch.meta["seq"] = std::to_string(seq_);
  }
}

}  // namespace allot::server
