// State: parking (docs/parking.md). A parked workload keeps its admission
// and its quota (the scheduler keeps its usage; sched::Scheduler::
// ParkWorkload) and gives its devices back: no placements, so no pods
// (Agents::DesiredPods), no GPU-hours charged (its stretch is of kind
// parked: reported as reserved, store::UsageKind),
// and no node failure can evict it. Parked in part (its annotation
// allot.dev/park-pod-sets), only those pod sets stop; the others (a head)
// keep their devices and pods, and a node failure under them evicts it as
// any running workload. A resume places it again on free
// devices of its flavors, never through the queue; one that finds none
// waits at the head of every later turn (TryResumes, before the cycles).
#include <algorithm>
#include <string>
#include <vector>

#include "core/parking_annotations.h"
#include "server/state.h"
#include "server/state_internal.h"

namespace allot::server {

using internal::SetCondition;

namespace {

// "2 GPUs on gpu-07, gpu-08": where a resumed workload runs now.
std::string WhereItRuns(const core::Admission& adm) {
  std::vector<std::string> nodes;
  size_t devices = 0;
  for (const core::PodSetAssignment& psa : adm.pod_set_assignments) {
    for (const core::PodPlacement& pl : psa.placements) {
      devices += pl.gpus.size();
      if (std::find(nodes.begin(), nodes.end(), pl.node) == nodes.end()) nodes.push_back(pl.node);
    }
  }
  std::string out = std::to_string(devices) + " device(s) on ";
  for (size_t i = 0; i < nodes.size(); ++i) out += (i ? ", " : "") + nodes[i];
  return out;
}

// Says on rec's Parked condition why its resume, asked at `asked_ms`,
// waits: once per reason, not at every turn. Whether it changed.
bool NoteResumeWaits(WorkloadRecord* rec, const Status& why, int64_t asked_ms) {
  const std::string message = "resume asked; waiting: " + why.message();
  for (const Condition& c : rec->conditions) {
    if (c.type == "Parked" && c.reason == "Resuming" && c.message == message) return false;
  }
  SetCondition(&rec->conditions, {"Parked", true, "Resuming", message, asked_ms, ""});
  return true;
}

}  // namespace

Status State::ParkWorkload(const std::string& key, const std::string& reason,
                           const std::string& message, Txn* txn) {
  auto it = workloads_.find(key);
  if (it == workloads_.end()) return Status::NotFound("Workload " + key + " does not exist");
  WorkloadRecord& rec = it->second;
  const int64_t now = txn->now_unix_ms;
  if (rec.state == WorkloadState::kParked) {
    return Status::FailedPrecondition("Workload " + key + " is parked already");
  }
  if (rec.finished() || !rec.spec.admission) {
    return Status::FailedPrecondition(
        "Workload " + key + " is " + ToString(rec.state) +
        ": only an admitted workload can be parked (it keeps its quota while its pods are "
        "stopped); hold a pending one with spec.active: false, or delete it");
  }
  // Its annotation may name the pod sets a park stops (a RayCluster's
  // workers); the others run on.
  Result<std::vector<std::string>> sets = core::ParkPodSets(rec.spec);
  if (!sets.ok()) return sets.status();
  if (sets->size() == rec.spec.pod_sets.size()) sets->clear();  // All of them.
  // The scheduler refuses a workload on parked capacity (no quota to keep).
  if (Status s = sched_->ParkWorkload(key, *sets); !s.ok()) {
    return s.code() == StatusCode::kFailedPrecondition ? s : Status::Internal(s.message());
  }
  accounting_.Close(&rec, now, objs_.flavors);  // Parked time uses no GPU.
  if (rec.pulling_since_ms > 0) {
    rec.pull_ms += now - rec.pulling_since_ms;
    rec.pulling_since_ms = 0;
  }
  const std::string cq = rec.spec.admission->cluster_queue;
  rec.spec.admission = sched_->AdmissionOf(key);
  rec.state = WorkloadState::kParked;
  if (sets->empty()) {
    SetCondition(&rec.conditions,
                 {"Parked", true, reason,
                  message + ": its pods are stopped and its devices given back; its quota in "
                            "ClusterQueue " + cq + " is kept",
                  now, ""});
    SetCondition(&rec.conditions, {"PodsReady", false, "Parked", "parked: no pods run", now, ""});
  } else {
    // Parked in part: the pods of those pod sets stop; the others run on.
    agents_.ForgetPods(key, *sets);
    std::string parked, kept;
    for (const core::PodSet& ps : rec.spec.pod_sets) {
      std::string& to = std::find(sets->begin(), sets->end(), ps.name) != sets->end() ? parked
                                                                                     : kept;
      to += (to.empty() ? "" : ", ") + ps.name;
    }
    SetCondition(&rec.conditions,
                 {"Parked", true, reason,
                  message + ": the pods of " + parked +
                      " are stopped and their devices given back, " + kept +
                      " runs on; its quota in ClusterQueue " + cq + " is kept",
                  now, ""});
    SetCondition(&rec.conditions,
                 {"PodsReady", false, "Parked", "parked in part: only " + kept + " runs", now, ""});
  }
  pod_failures_.erase(key);
  resume_wanted_.erase(key);
  ctrl_changes_ |= ctrl::kParks;  // ParkLimit counts from now.
  metrics_->Parked(cq, reason);
  MarkDirty(key);
  return Status::Ok();
}

Status State::ResumeWorkload(const Actor& a, const std::string& key, Txn* txn,
                            std::string* result) {
  *result = "resumed";
  auto it = workloads_.find(key);
  if (it == workloads_.end()) return Status::NotFound("Workload " + key + " does not exist");
  WorkloadRecord& rec = it->second;
  const int64_t now = txn->now_unix_ms;
  if (rec.state == WorkloadState::kSuspended) {
    // Back to its queue, as spec.active: true would.
    rec.spec.active = true;
    rec.spec.admission.reset();
    if (Status s = sched_->AddWorkload(rec.spec); !s.ok()) {
      rec.spec.active = false;
      return Status::Internal(s.message());
    }
    rec.state = WorkloadState::kPending;
    *result = "queued";
    SetCondition(&rec.conditions, {"QuotaReserved", false, "Pending",
                                   "resumed by " + a.name + ": back in its queue", now, ""});
    for (const Condition& c : rec.conditions) {
      if (c.type == "Parked" && c.status) {
        SetCondition(&rec.conditions,
                     {"Parked", false, "Requeued", "resumed: back in its queue", now, ""});
        break;
      }
    }
    MarkDirty(key);
    return Status::Ok();
  }
  if (rec.state != WorkloadState::kParked) {
    return Status::FailedPrecondition("Workload " + key + " is " + ToString(rec.state) +
                                      ": only a parked or suspended workload can be resumed");
  }
  if (resume_wanted_.count(key)) {
    *result = "waiting";
    return Status::Ok();
  }
  rec.spec.active = true;  // If spec.active: false parked it.
  if (Status s = sched_->ResumeWorkload(key); !s.ok()) {
    resume_wanted_[key] = now;  // TryResumes places it when it can.
    *result = "waiting";
    if (NoteResumeWaits(&rec, s, now)) MarkDirty(key);
    return Status::Ok();
  }
  Resumed(&rec, now, now);
  return Status::Ok();
}

Status State::ReportActivity(const std::string& key, int64_t now) {
  auto it = workloads_.find(key);
  if (it == workloads_.end()) return Status::NotFound("Workload " + key + " does not exist");
  // Activity only delays a park: the idle parker reads it when it next
  // wakes (at the time it planned), nothing to run now.
  it->second.active_ms = now;
  return Status::Ok();
}

void State::Resumed(WorkloadRecord* rec, int64_t asked_ms, int64_t now) {
  const std::string key = rec->spec.Key();
  accounting_.Close(rec, now, objs_.flavors);  // Its parked stretch.
  // Parked in part: the pod sets that kept their placements run on, the
  // others start again under new pod names (WorkloadRecord::PodAttempt).
  std::vector<std::string> restarted;
  bool in_part = false;
  for (const core::PodSetAssignment& psa : rec->spec.admission->pod_set_assignments) {
    if (psa.placements.empty()) {
      restarted.push_back(psa.name);
    } else {
      in_part = true;
    }
  }
  rec->spec.admission = sched_->AdmissionOf(key);
  if (in_part) {
    for (const std::string& set : restarted) ++rec->pod_set_gens[set];
    agents_.ForgetPods(key, restarted);
  } else {
    ++rec->attempt;  // New pods on the new placement.
    rec->pod_set_gens.clear();
    agents_.ForgetPods(key);
  }
  Accounting::Open(rec, now);
  rec->state = WorkloadState::kAdmitted;
  // Parked time is not run time (ctrl/deadlines.h reads parked_ms); parked
  // in part, it ran.
  if (const int64_t since = rec->ParkedSinceMs(); since > 0 && !in_part) {
    rec->parked_ms += std::max<int64_t>(0, now - since);
  }
  SetCondition(&rec->conditions,
               {"Parked", false, "Resumed",
                "resumed: placed again on " + WhereItRuns(*rec->spec.admission), now, ""});
  std::string starting = "the pods of this admission are starting";
  if (in_part) {
    starting = "the pods of";
    for (size_t i = 0; i < restarted.size(); ++i) starting += (i ? ", " : " ") + restarted[i];
    starting += " are starting again";
  }
  SetCondition(&rec->conditions, {"PodsReady", false, "PodsStarting", starting, now, ""});
  metrics_->Resumed(rec->spec.admission->cluster_queue, std::max<int64_t>(0, now - asked_ms) / 1e3);
  resume_wanted_.erase(key);
  MarkDirty(key);
}

void State::TryResumes(int64_t now) {
  for (auto it = resume_wanted_.begin(); it != resume_wanted_.end();) {
    auto w = workloads_.find(it->first);
    if (w == workloads_.end() || w->second.state != WorkloadState::kParked) {
      it = resume_wanted_.erase(it);
      continue;
    }
    WorkloadRecord& rec = w->second;
    Status s = sched_->ResumeWorkload(it->first);
    if (s.ok()) {
      const int64_t asked = it->second;
      ++it;  // Resumed erases the entry.
      Resumed(&rec, asked, now);
      continue;
    }
    if (NoteResumeWaits(&rec, s, it->second)) MarkDirty(it->first);
    ++it;
  }
}

Status State::SetActive(const Actor& a, const std::string& key, bool active, Txn* txn) {
  WorkloadRecord& rec = workloads_.at(key);
  const int64_t now = txn->now_unix_ms;
  if (active) {
    std::string result;
    return ResumeWorkload(a, key, txn, &result);
  }
  if (rec.state == WorkloadState::kParked) {
    // Its resume waited for devices: no longer wanted.
    resume_wanted_.erase(key);
    rec.spec.active = false;
    SetCondition(&rec.conditions, {"Parked", true, "Inactive",
                                   "spec.active set to false by " + a.name + ": no longer resuming",
                                   now, ""});
    MarkDirty(key);
    return Status::Ok();
  }
  if (rec.spec.admission) {
    ALLOT_RETURN_IF_ERROR(ParkWorkload(key, "Inactive", "spec.active set to false by " + a.name, txn));
    rec.spec.active = false;
    return Status::Ok();
  }
  // Pending: out of its queue, as a workload submitted inactive.
  if (Status s = sched_->RemoveWorkload(key); !s.ok()) return Status::Internal(s.message());
  ++removed_since_rebuild_;
  rec.spec.active = false;
  rec.state = WorkloadState::kSuspended;
  SetCondition(&rec.conditions, {"QuotaReserved", false, "Inactive",
                                 "spec.active is false: held out of its queue", now, ""});
  MarkDirty(key);
  return Status::Ok();
}

void State::SuspendParked(WorkloadRecord* rec, const std::string& reason,
                          const std::string& message, const std::string& detail, int64_t now) {
  const std::string key = rec->spec.Key();
  (void)sched_->RemoveWorkload(key);  // Its quota is freed; Evict queued it: out.
  ++removed_since_rebuild_;
  accounting_.Close(rec, now, objs_.flavors);  // Its parked stretch.
  rec->spec.active = false;
  rec->spec.admission.reset();
  rec->state = WorkloadState::kSuspended;
  resume_wanted_.erase(key);
  SetCondition(&rec->conditions,
               {"Parked", false, reason, message + "; resume it to queue again", now, detail});
  SetCondition(&rec->conditions, {"QuotaReserved", false, "Inactive",
                                  "its quota went while it was parked: held out of its queue "
                                  "until resumed",
                                  now, ""});
  agents_.ForgetPods(key);
  MarkDirty(key);
}

}  // namespace allot::server
