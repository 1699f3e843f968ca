// State: loading, configuration changes, workloads and scheduling turns.
#include "server/state.h"

#include "core/priority_policy.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "core/manifest.h"
#include "server/state_internal.h"

namespace allot::server {

using internal::ConfigObject;
using internal::KeyOf;
using internal::WithMap;
using internal::SetCondition;
namespace json = boost::json;

namespace {
constexpr const char* kStates[] = {"Pending",   "Admitted", "Running",
                                   "Succeeded", "Failed",   "Evicted",
                                   "Requeued",  "Suspended"};

std::string Join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (const std::string& x : v) out += (out.empty() ? "" : sep) + x;
  return out;
}

std::string TenantOfKey(const std::string& key) {
  size_t slash = key.find('/');
  return slash == std::string::npos ? "" : key.substr(0, slash);
}

// "a, b, c and 4 more"
std::string FewNames(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size() && i < 3; ++i) {
    if (i > 0) s += ", ";
    s += names[i];
  }
  if (names.size() > 3) s += " and " + std::to_string(names.size() - 3) + " more";
  return s;
}

}  // namespace

const char* ToString(WorkloadState s) { return kStates[int(s)]; }

Result<WorkloadState> ParseWorkloadState(const std::string& s) {
  for (int i = 0; i < 8; ++i) {
    if (s == kStates[i]) return WorkloadState(i);
  }
  return Status::InvalidArgument(
      "unknown workload state '" + s +
          "': use Pending, Admitted, Running, Succeeded, Failed, Evicted, "
          "Requeued or Suspended",
      "state");
}

namespace internal {
void SetCondition(std::vector<Condition>* conds, Condition c) {
  for (Condition& old : *conds) {
    if (old.type == c.type) {
      if (old.status == c.status && old.reason == c.reason &&
          old.message == c.message && old.detail == c.detail) {
        return;  // Unchanged: keep its transition time.
      }
      old = std::move(c);
      return;
    }
  }
  conds->push_back(std::move(c));
}

void SetResourceVersion(json::object* obj, int64_t rv) {
  json::value& md = (*obj)["metadata"];
  if (!md.is_object()) md = json::object();
  md.as_object()["resourceVersion"] = std::to_string(rv);
}
core::SourceRef StoredSource(Kind kind) {
  core::SourceRef s;
  s.kind = KindName(kind);
  return s;
}
}  // namespace internal

State::State() = default;
State::~State() = default;

const WorkloadRecord* State::FindWorkload(const std::string& key) const {
  auto it = workloads_.find(key);
  return it == workloads_.end() ? nullptr : &it->second;
}

bool State::Exists(Kind kind, const std::string& key) const {
  if (kind == Kind::kWorkload) return workloads_.count(key) > 0;
  return WithMap(objs_, kind, [&](const auto& m) { return m.count(key) > 0; });
}

int64_t State::RvOf(Kind kind, const std::string& key) const {
  if (kind == Kind::kWorkload) {
    auto it = workloads_.find(key);
    return it == workloads_.end() ? 0 : it->second.resource_version;
  }
  return WithMap(objs_, kind, [&](const auto& m) -> int64_t {
    auto it = m.find(key);
    return it == m.end() ? 0 : it->second.rv;
  });
}

// ---- Loading ----------------------------------------------------------------

Result<std::unique_ptr<State>> State::Load(const store::Snapshot& snap) {
  std::unique_ptr<State> st(new State());
  auto num = [&](const char* k) -> int64_t {
    auto it = snap.meta.find(k);
    return it == snap.meta.end() ? 0 : std::atoll(it->second.c_str());
  };
  st->rv_ = num("rv");
  st->seq_ = num("seq");
  if (snap.last_audit) {
    st->audit_seq_ = snap.last_audit->seq;
    st->audit_hash_ = snap.last_audit->hash;
  }
  if (auto it = snap.meta.find("scheduler_config"); it != snap.meta.end()) {
    core::Config c;
    Status s = core::ParseManifests(it->second, "store: scheduler_config", &c);
    if (!s.ok()) return s;
    st->objs_.scheduler = c.scheduler;
  }
  for (const store::TokenRow& t : snap.tokens) {
    st->IndexToken(t);
  }
  for (const store::ObjectRow& row : snap.objects) {
    Result<Kind> kind = KindFromName(row.kind);
    std::string where = "store: " + row.kind + " " + row.key;
    if (!kind.ok()) return Status::Internal(where + ": unknown kind");
    st->rv_ = std::max(st->rv_, row.resource_version);
    json::value body;
    boost::system::error_code ec;
    body = json::parse(row.body, ec);
    if (ec || !body.is_object()) {
      return Status::Internal(where + ": body is not a JSON object");
    }
    json::object& obj = body.as_object();
    WorkloadRecord rec;
    if (*kind == Kind::kWorkload) {
      // The store keeps the API's JSON; the parser reads only the
      // admission of the status.
      json::object status;
      if (json::value* s = obj.if_contains("status"); s && s->is_object()) {
        status = s->as_object();
      }
      json::object parse_status;
      if (json::value* a = status.if_contains("admission")) {
        parse_status["admission"] = *a;
      }
      obj.erase("status");
      if (!parse_status.empty()) obj["status"] = parse_status;
      if (json::value* v = status.if_contains("state"); v && v->is_string()) {
        Result<WorkloadState> ws = ParseWorkloadState(std::string(v->as_string()));
        if (!ws.ok()) return Status::Internal(where + ": " + ws.status().message());
        rec.state = *ws;
      }
      if (json::value* v = status.if_contains("arrival"); v && v->is_int64()) {
        rec.seq = v->as_int64();
      }
      if (json::value* v = status.if_contains("attempt"); v && v->is_int64()) {
        rec.attempt = int32_t(v->as_int64());
      }
      if (json::value* v = status.if_contains("restarts"); v && v->is_int64()) {
        rec.restarts = int32_t(v->as_int64());
      }
      if (json::value* v = status.if_contains("admittedAtMs"); v && v->is_int64()) {
        rec.admitted_unix_ms = v->as_int64();
      }
      if (json::value* v = status.if_contains("utilMilliMs"); v && v->is_int64()) {
        rec.util_milli_ms = v->as_int64();
      }
      if (json::value* v = status.if_contains("submittedBy"); v && v->is_string()) {
        rec.submitted_by = std::string(v->as_string());
      }
      if (json::value* v = status.if_contains("conditions"); v && v->is_array()) {
        for (const json::value& cv : v->as_array()) {
          if (!cv.is_object()) continue;
          const json::object& co = cv.as_object();
          Condition c;
          auto str = [&](const char* k) -> std::string {
            const json::value* x = co.if_contains(k);
            return x && x->is_string() ? std::string(x->as_string()) : "";
          };
          c.type = str("type");
          c.status = str("status") == "True";
          c.reason = str("reason");
          c.message = str("message");
          c.detail = str("detail");
          if (const json::value* t = co.if_contains("lastTransitionUnixMs");
              t && t->is_int64()) {
            c.time_unix_ms = t->as_int64();
          }
          rec.conditions.push_back(std::move(c));
        }
      }
    }
    core::Config c;
    Status s = core::ParseManifests(json::serialize(obj), where, &c,
                                      core::ParseLimits::Trusted());
    if (!s.ok()) return Status::Internal(s.message());
    core::SourceRef src = internal::StoredSource(*kind);
    switch (*kind) {
#define ALLOT_LOAD(K, vec, map)                                        \
  case Kind::K:                                                        \
    if (c.vec.size() != 1) return Status::Internal(where + ": no object"); \
    c.vec[0].source = src;                                             \
    st->objs_.map[row.key] = {std::move(c.vec[0]), row.resource_version}; \
    break;
      ALLOT_LOAD(kResourceFlavor, flavors, flavors)
      ALLOT_LOAD(kCohort, cohorts, cohorts)
      ALLOT_LOAD(kClusterQueue, cluster_queues, cluster_queues)
      ALLOT_LOAD(kLocalQueue, local_queues, local_queues)
      ALLOT_LOAD(kWorkloadPriorityClass, priority_classes, priority_classes)
      ALLOT_LOAD(kTenant, namespaces, tenants)
      ALLOT_LOAD(kNode, nodes, nodes)
#undef ALLOT_LOAD
      case Kind::kWorkload:
        if (c.workloads.size() != 1) return Status::Internal(where + ": no object");
        rec.spec = std::move(c.workloads[0]);
        rec.spec.source = src;
        rec.resource_version = row.resource_version;
        st->seq_ = std::max(st->seq_, rec.seq);
        st->workloads_[row.key] = std::move(rec);
        break;
    }
  }
  core::Config cfg = st->BuildConfig(st->objs_, {});
  Status s = core::ValidateConfig(&cfg);
  if (!s.ok()) return Status::Internal("store does not validate: " + s.message());
  for (const core::Workload& w : cfg.workloads) {
    st->workloads_[w.Key()].spec.priority = w.priority;
  }
  auto sched = sched::Scheduler::Create(cfg);
  if (!sched.ok()) {
    return Status::Internal("store does not schedule: " + sched.status().message());
  }
  st->sched_ = std::move(*sched);
  for (const auto& [name, e] : st->objs_.nodes) {
    if (e.obj.labels.count(std::string(kAgentLabel))) st->agents_[name] = {};
  }
  for (auto& [key, rec] : st->workloads_) st->Reindex(key, &rec);
  st->changed_nodes_.clear();
  return st;
}

// ---- Configuration ------------------------------------------------------

core::Config State::BuildConfig(const Objects& o,
                                const std::set<std::string>& evict) const {
  core::Config cfg;
  for (const auto& [k, e] : o.flavors) cfg.flavors.push_back(e.obj);
  for (const auto& [k, e] : o.cohorts) cfg.cohorts.push_back(e.obj);
  for (const auto& [k, e] : o.cluster_queues) cfg.cluster_queues.push_back(e.obj);
  for (const auto& [k, e] : o.local_queues) cfg.local_queues.push_back(e.obj);
  for (const auto& [k, e] : o.priority_classes)
    cfg.priority_classes.push_back(e.obj);
  for (const auto& [k, e] : o.tenants) cfg.namespaces.push_back(e.obj);
  for (const auto& [k, e] : o.nodes) {
    cfg.nodes.push_back(e.obj);
    // A NotReady agent's node takes no new work.
    if (!NodeReady(k)) cfg.nodes.back().unschedulable = true;
  }
  cfg.scheduler = o.scheduler;
  std::vector<const WorkloadRecord*> recs;
  recs.reserve(workloads_.size());
  for (const auto& [k, r] : workloads_) {
    if (!r.finished()) recs.push_back(&r);  // Finished ones hold nothing.
  }
  std::sort(recs.begin(), recs.end(),
            [](const WorkloadRecord* a, const WorkloadRecord* b) {
              return a->seq < b->seq;
            });
  cfg.workloads.reserve(recs.size());
  for (const WorkloadRecord* r : recs) {
    if (r->spec.admission && !evict.count(r->spec.Key()))
      cfg.workloads.push_back(r->spec);
  }
  for (const WorkloadRecord* r : recs) {
    if (!r->spec.admission || evict.count(r->spec.Key())) {
      cfg.workloads.push_back(r->spec);
      cfg.workloads.back().admission.reset();
    }
  }
  return cfg;
}

namespace internal {
std::vector<std::string> AdmittedUsing(
    const std::map<std::string, WorkloadRecord>& wls, Kind kind,
    const std::string& key) {
  std::vector<std::string> out;
  for (const auto& [k, r] : wls) {
    if (!r.spec.admission || r.finished()) continue;
    const core::Admission& a = *r.spec.admission;
    bool uses = false;
    if (kind == Kind::kClusterQueue) uses = a.cluster_queue == key;
    for (const auto& psa : a.pod_set_assignments) {
      if (kind == Kind::kResourceFlavor) {
        for (const auto& [res, f] : psa.flavors) uses = uses || f == key;
      }
      if (kind == Kind::kNode) {
        for (const auto& pp : psa.placements) uses = uses || pp.node == key;
      }
    }
    if (uses) out.push_back(k);
  }
  return out;
}
}  // namespace internal
using internal::AdmittedUsing;

Status State::InUse(const Objects& o, Kind kind, const std::string& key,
                    bool drain, std::set<std::string>* evict) const {
  std::string what = std::string(KindName(kind)) + " " + key;
  std::vector<std::string> users;
  switch (kind) {
    case Kind::kResourceFlavor:
      for (const auto& [k, e] : o.cluster_queues)
        for (const auto& g : e.obj.resource_groups)
          for (const auto& f : g.flavors)
            if (f.name == key) users.push_back("ClusterQueue " + k);
      for (const auto& [k, e] : o.cohorts)
        for (const auto& g : e.obj.resource_groups)
          for (const auto& f : g.flavors)
            if (f.name == key) users.push_back("Cohort " + k);
      break;
    case Kind::kClusterQueue:
      for (const auto& [k, e] : o.local_queues)
        if (e.obj.cluster_queue == key) users.push_back("LocalQueue " + k);
      break;
    case Kind::kWorkloadPriorityClass:
      for (const auto& [k, r] : workloads_)
        if (r.spec.priority_class_name == key) users.push_back("Workload " + k);
      break;
    case Kind::kTenant:
      for (auto it = o.local_queues.lower_bound(key + "/");
           it != o.local_queues.end() && TenantOfKey(it->first) == key; ++it)
        users.push_back("LocalQueue " + it->first);
      for (auto it = workloads_.lower_bound(key + "/");
           it != workloads_.end() && TenantOfKey(it->first) == key; ++it)
        users.push_back("Workload " + it->first);
      break;
    default:
      break;
  }
  if (!users.empty()) {
    return Status::FailedPrecondition(what + " is in use by " +
                                      FewNames(users) + "; remove those first");
  }
  std::vector<std::string> admitted = AdmittedUsing(workloads_, kind, key);
  if (!admitted.empty()) {
    if (!drain) {
      return Status::FailedPrecondition(
          what + " is used by " + std::to_string(admitted.size()) +
          " admitted workload(s) (" + FewNames(admitted) +
          "); add ?drain=true to evict them first");
    }
    evict->insert(admitted.begin(), admitted.end());
  }
  return Status::Ok();
}

Status State::ChangeConfig(const Principal& p, std::vector<Change> changes,
                           bool drain, Txn* txn,
                           std::vector<ApplyResult>* results,
                           const std::function<Status(const Objects&)>& check) {
  Objects cand = objs_;
  std::set<std::string> evict;
  std::vector<std::pair<Kind, std::string>> touched;  // Changed objects.
  std::set<std::pair<Kind, std::string>> added;       // ... that are new.
  bool scheduler_changed = false;
  for (Change& ch : changes) {
    if (ch.scheduler) {
      if (p.role != Role::kClusterAdmin) {
        return Status::PermissionDenied(
            "only a cluster-admin may change the SchedulerConfig");
      }
      std::string before = json::serialize(core::EncodeSchedulerConfig(cand.scheduler));
      std::string after = json::serialize(core::EncodeSchedulerConfig(*ch.scheduler));
      if (results) {
        results->push_back({Kind::kResourceFlavor, "SchedulerConfig",
                            before == after ? "unchanged" : "configured"});
      }
      if (before != after) {
        cand.scheduler = *ch.scheduler;
        scheduler_changed = true;
      }
      continue;
    }
    std::string tenant =
        ch.kind == Kind::kTenant ? ch.key : TenantOfKey(ch.key);
    std::string what = std::string(KindName(ch.kind)) + " " + ch.key;
    if (!CanWrite(p, ch.kind, tenant)) {
      // Another tenant's objects do not exist for this principal.
      if (!CanSee(p, ch.kind, tenant)) {
        return ch.kind == Kind::kLocalQueue
                   ? Status::NotFound("tenant " + tenant + " does not exist",
                                      "metadata.namespace")
                   : Status::NotFound(what + " does not exist");
      }
      return Status::PermissionDenied(std::string("role ") + ToString(p.role) +
                                      " may not change " + what);
    }
    if (ch.kind == Kind::kLocalQueue && p.role != Role::kClusterAdmin && ch.obj) {
      // The priority policy is the cluster-admin's (a tenant-admin writes
      // its LocalQueues, not what priorities they allow).
      auto old = cand.local_queues.find(ch.key);
      const core::Labels none;
      const core::Labels& before = old == cand.local_queues.end() ? none : old->second.obj.annotations;
      const auto* q = std::get_if<core::LocalQueue>(&*ch.obj);
      if (q && core::PriorityPolicyChanged(before, q->annotations)) {
        return Status::PermissionDenied(
            "only a cluster-admin may set the priority policy of " + what + " (annotations " +
                core::kPriorityClassesKey + ", " + core::kDefaultPriorityClassKey + ", " +
                core::kAllowLiteralPriorityKey + ")",
            "metadata.annotations");
      }
    }
    if (ch.kind == Kind::kLocalQueue && !cand.tenants.count(tenant)) {
      return Status::NotFound("tenant " + tenant + " does not exist",
                              "metadata.namespace");
    }
    Status st = WithMap(cand, ch.kind, [&](auto& m) -> Status {
      using T = typename std::decay_t<decltype(m)>::mapped_type;
      auto it = m.find(ch.key);
      if (ch.expected_rv && it != m.end() && it->second.rv != *ch.expected_rv) {
        return Status::FailedPrecondition(
            what + " has resourceVersion " + std::to_string(it->second.rv) +
                ", not " + std::to_string(*ch.expected_rv) +
                ": it changed since you read it; read it again",
            "metadata.resourceVersion");
      }
      if (!ch.obj) {
        if (it == m.end()) return Status::NotFound(what + " does not exist");
        ALLOT_RETURN_IF_ERROR(InUse(cand, ch.kind, ch.key, drain, &evict));
        m.erase(it);
        touched.push_back({ch.kind, ch.key});
        if (results) results->push_back({ch.kind, ch.key, "deleted"});
        return Status::Ok();
      }
      if (ch.mode == Change::Mode::kCreate && it != m.end()) {
        return Status::AlreadyExists(what + " already exists");
      }
      if (ch.mode == Change::Mode::kReplace && it == m.end()) {
        return Status::NotFound(what + " does not exist");
      }
      auto& obj = std::get<decltype(T::obj)>(*ch.obj);
      obj.source = internal::StoredSource(ch.kind);
      if (it != m.end() && json::serialize(internal::Encode(obj)) ==
                               json::serialize(internal::Encode(it->second.obj))) {
        if (results) results->push_back({ch.kind, ch.key, "unchanged"});
        return Status::Ok();
      }
      if (results) {
        results->push_back(
            {ch.kind, ch.key, it == m.end() ? "created" : "configured"});
      }
      if (it != m.end() && drain) {
        std::vector<std::string> a = AdmittedUsing(workloads_, ch.kind, ch.key);
        evict.insert(a.begin(), a.end());
      }
      if (it == m.end()) added.insert({ch.kind, ch.key});
      m[ch.key] = T{std::move(obj), it == m.end() ? 0 : it->second.rv};
      touched.push_back({ch.kind, ch.key});
      return Status::Ok();
    });
    ALLOT_RETURN_IF_ERROR(st);
  }
  if (touched.empty() && !scheduler_changed) {
    return check ? check(cand) : Status::Ok();
  }

  core::Config cfg = BuildConfig(cand, evict);
  Status v = core::ValidateConfig(&cfg);
  if (!v.ok()) {
    // An admission that the change invalidates (the validator names a
    // status.admission field) is a conflict that drain fixes; anything
    // else is a bad request.
    if (v.field().rfind("status.admission", 0) == 0) {
      return Status::FailedPrecondition(
          v.message() + " (admitted workloads use what this change removes; "
                        "add ?drain=true to evict them)",
          v.field());
    }
    return v;
  }
  auto sched = sched::Scheduler::Create(cfg);
  if (!sched.ok()) {
    return Status::FailedPrecondition(sched.status().message(),
                                      sched.status().field());
  }
  if (check) ALLOT_RETURN_IF_ERROR(check(cand));
  // Commit to memory; nothing below fails.
  for (const core::Workload& w : cfg.workloads) {
    auto it = workloads_.find(w.Key());
    if (it != workloads_.end()) it->second.spec.priority = w.priority;
  }
  std::set<std::pair<Kind, std::string>> deleted;
  for (const auto& [kind, key] : touched) {
    bool exists = WithMap(cand, kind, [&](auto& m) { return m.count(key) > 0; });
    if (!exists) deleted.insert({kind, key});
  }
  for (const auto& [kind, key] : deleted) {
    if (kind == Kind::kTenant) RevokeTenantTokens(key, txn);
    json::object last = ConfigJson(kind, key, false);
    txn->batch.deletes.push_back({KindName(kind), key});
    ++rv_;
    internal::SetResourceVersion(&last, rv_);
    txn->events.push_back({rv_, kind,
                           kind == Kind::kTenant ? key : TenantOfKey(key),
                           internal::EventLine("DELETED", json::serialize(last)), ""});
  }
  objs_ = std::move(cand);
  for (const auto& [kind, key] : touched) {
    if (!deleted.count({kind, key}))
      PutObject(kind, key, added.count({kind, key}) > 0, txn);
  }
  if (scheduler_changed) {
    objs_.scheduler_rv = ++rv_;
    txn->batch.meta["scheduler_config"] =
        json::serialize(core::EncodeSchedulerConfig(objs_.scheduler));
  }
  sched_ = std::move(*sched);
  removed_since_rebuild_ = 0;
  ctrl_changes_ |= ctrl::kConfig;
  for (const std::string& key : evict) {
    WorkloadRecord& rec = workloads_[key];
    Evicted(&rec, "Drained",
            "what it used was changed or removed with drain (by " + p.user + ")",
            txn->now_unix_ms);
    rec.spec.admission.reset();
    rec.state = WorkloadState::kRequeued;
    MarkDirty(key);
  }
  return Status::Ok();
}

void State::PutObject(Kind kind, const std::string& key, bool added,
                      Txn* txn) {
  ++rv_;
  WithMap(objs_, kind, [&](auto& m) { m[key].rv = rv_; });
  json::object obj = ConfigJson(kind, key, false);
  std::string body = json::serialize(obj);
  txn->events.push_back(
      {rv_, kind, kind == Kind::kTenant ? key : TenantOfKey(key),
       internal::EventLine(added ? "ADDED" : "MODIFIED", body), ""});
  txn->batch.puts.push_back({KindName(kind), key, rv_, std::move(body)});
}

// ---- Workloads --------------------------------------------------------------

Status State::CheckWorkload(const Principal& p, const core::Workload& w,
                            const Objects& o) const {
  const std::string key = w.Key();
  if (!o.tenants.count(w.ns) || !CanSee(p, Kind::kWorkload, w.ns)) {
    return Status::NotFound("tenant " + w.ns + " does not exist",
                            "metadata.namespace");
  }
  if (!CanWrite(p, Kind::kWorkload, w.ns)) {
    return Status::PermissionDenied(std::string("role ") + ToString(p.role) +
                                    " may not submit workloads");
  }
  if (workloads_.count(key)) {
    return Status::AlreadyExists("Workload " + key + " already exists");
  }
  if (w.admission) {
    return Status::InvalidArgument(
        "status.admission is set by the scheduler, not by clients",
        "status.admission");
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
  return CheckPriority(p, w, cls, policy);
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

Status State::CheckPriority(const Principal& p, const core::Workload& w, const std::string& cls,
                            const core::PriorityPolicy& policy) {
  if (p.role == Role::kClusterAdmin) return Status::Ok();
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

Status State::SubmitWorkload(const Principal& p, core::Workload w, Txn* txn) {
  const std::string key = w.Key();
  ApplyDefaultPriority(objs_, &w);
  ALLOT_RETURN_IF_ERROR(CheckWorkload(p, w, objs_));
  if (!w.priority_class_name.empty()) {
    w.priority = objs_.priority_classes.at(w.priority_class_name).obj.value;
  }
  // The server's clock orders the queue: a client may not jump the line.
  w.creation_unix_ms = txn->now_unix_ms;
  w.source = internal::StoredSource(Kind::kWorkload);
  ALLOT_RETURN_IF_ERROR(sched_->AddWorkload(w));
  WorkloadRecord rec;
  rec.spec = std::move(w);
  rec.seq = ++seq_;
  rec.submitted_by = p.user;
  rec.conditions.push_back({"QuotaReserved", false, "Pending",
                            "waiting for a scheduling cycle",
                            txn->now_unix_ms, ""});
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
  if (!it->second.finished()) {
    Status s = sched_->RemoveWorkload(key);
    if (!s.ok()) return Status::Internal(s.message());
    CloseAccount(&it->second, txn->now_unix_ms);
  }
  Reindex(key, &it->second, /*gone=*/true);  // Its pods are stopped.
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
  CloseAccount(rec, now);
  SetCondition(&rec->conditions, {"Evicted", true, reason, message, now, detail});
  SetCondition(&rec->conditions, {"QuotaReserved", false, reason, "evicted: " + message, now,
                                  detail.empty() ? "" : "evicted: " + detail});
  SetCondition(&rec->conditions, {"Admitted", false, reason, message, now, detail});
  SetCondition(&rec->conditions, {"Requeued", true, reason, "back in its queue", now, ""});
}

int32_t State::FinishTurn(Txn* txn) {
  if (first_turn_ms_ == 0) first_turn_ms_ = txn->now_unix_ms;
  std::set<std::string> touched;
  std::map<std::string, sched::PreemptionEvent> preempted;
  int32_t cycles = 0;
  using Clock = std::chrono::steady_clock;
  const Clock::time_point turn_start = Clock::now();
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
      const std::string named = "preempted by " + e->second.preemptor;
      const bool foreign = TenantOfKey(e->second.preemptor) != rec.spec.ns;
      const std::string shown =
          foreign ? "preempted by a higher-priority workload of another tenant" +
                        (by_cq.empty() ? std::string() : " in ClusterQueue " + by_cq)
                  : named;
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
        if (rec.admitted_unix_ms != 0) CloseAccount(&rec, now);
        ++rec.attempt;  // New pods: nothing of an earlier admission counts.
        // Waiting since creation or the last requeue.
        int64_t since = rec.spec.creation_unix_ms;
        for (const Condition& c : rec.conditions) {
          if (c.type == "Requeued" && c.status) since = std::max(since, c.time_unix_ms);
        }
        metrics::QueueLabels q = QueueOf(rec);
        q.cluster_queue = adm->cluster_queue;
        metrics_->Admitted(q, since > 0 ? std::max<int64_t>(0, now - since) / 1000.0 : 0);
        if (auto r = runs_.find(key); r != runs_.end()) r->second.pods.clear();
        for (const Condition& c : rec.conditions) {
          if (c.type == "PodsReady") {
            SetCondition(&rec.conditions, {"PodsReady", false, "PodsStarting",
                                           "the pods of this admission are starting", now, ""});
            break;
          }
        }
      }
      rec.spec.admission = std::move(adm);
      if (fresh) OpenAccount(&rec, now);
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
    Reindex(key, &rec);
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
  for (store::UsageRow& u : closed_usage_) txn->batch.usage.push_back(std::move(u));
  closed_usage_.clear();
  for (store::RollupRow& r : closed_rollups_) txn->batch.rollups.push_back(std::move(r));
  closed_rollups_.clear();
  // Once an hour: telemetry older than the retention goes.
  const int64_t hour = txn->now_unix_ms / 3600000 * 3600000;
  if (hour != pruned_hour_ms_ && txn->now_unix_ms > telemetry_retention_ms_) {
    pruned_hour_ms_ = hour;
    txn->batch.prune_rollups_before_ms = txn->now_unix_ms - telemetry_retention_ms_;
  }
  if (!txn->batch.empty() || !txn->events.empty()) {
    txn->batch.meta["rv"] = std::to_string(rv_);
    txn->batch.meta["seq"] = std::to_string(seq_);
  }
}

}  // namespace allot::server
