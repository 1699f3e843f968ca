// State: loading and configuration changes (objects and their store
// records). Workloads and scheduling turns: state_workloads.cc.
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
using internal::TenantOfKey;
namespace json = boost::json;

namespace {
constexpr const char* kStates[] = {"Pending",   "Admitted", "Running",
                                   "Succeeded", "Failed",   "Evicted",
                                   "Requeued",  "Suspended", "Parked"};

// What a conflict with admitted workloads adds to its message.
constexpr char kDrainHint[] =
    " (admitted workloads use what this change removes; add ?drain=true to evict them)";

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
  for (size_t i = 0; i < std::size(kStates); ++i) {
    if (s == kStates[i]) return WorkloadState(i);
  }
  return Status::InvalidArgument(
      "unknown workload state '" + s +
          "': use Pending, Admitted, Running, Succeeded, Failed, Evicted, "
          "Requeued, Suspended or Parked",
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
  st->audit_.Load(snap.last_audit);
  if (auto it = snap.meta.find("scheduler_config"); it != snap.meta.end()) {
    core::Config c;
    Status s = core::ParseManifests(it->second, "store: scheduler_config", &c);
    if (!s.ok()) return s;
    st->objs_.scheduler = c.scheduler;
  }
  for (const store::TokenRow& t : snap.tokens) {
    st->tokens_.Load(t);
  }
  for (const store::ObjectRow& row : snap.objects) {
    if (row.kind == kSecretKind) {
      st->rv_ = std::max(st->rv_, row.resource_version);
      ALLOT_RETURN_IF_ERROR(st->secrets_.Load(row));
      continue;
    }
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
    bool on_parked_capacity = false;  // status.onParkedCapacity
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
      if (json::value* v = status.if_contains("podSetGenerations"); v && v->is_object()) {
        for (const auto& [set, g] : v->as_object()) {
          if (g.is_int64()) rec.pod_set_gens[std::string(set)] = int32_t(g.as_int64());
        }
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
      if (json::value* v = status.if_contains("pullMs"); v && v->is_int64()) {
        rec.pull_ms = v->as_int64();
      }
      if (json::value* v = status.if_contains("parkedMs"); v && v->is_int64()) {
        rec.parked_ms = v->as_int64();
      }
      if (json::value* v = status.if_contains("onParkedCapacity"); v && v->is_bool()) {
        on_parked_capacity = v->as_bool();
      }
      if (json::value* v = status.if_contains("pullingSinceMs"); v && v->is_int64()) {
        rec.pulling_since_ms = v->as_int64();
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
      ALLOT_LOAD(kTopology, topologies, topologies)
      ALLOT_LOAD(kImage, images, images)
      ALLOT_LOAD(kNodePool, node_pools, node_pools)
#undef ALLOT_LOAD
      case Kind::kWorkload:
        if (c.workloads.size() != 1) return Status::Internal(where + ": no object");
        rec.spec = std::move(c.workloads[0]);
        rec.spec.source = src;
        if (rec.spec.admission && on_parked_capacity) {
          rec.spec.admission->on_parked_capacity = true;
        }
        if (rec.state == WorkloadState::kParked && rec.spec.admission) {
          rec.spec.admission->parked = true;
          // A resume that was waiting for devices still waits.
          for (const Condition& pc : rec.conditions) {
            if (pc.type == "Parked" && pc.status && pc.reason == "Resuming") {
              st->resume_wanted_[row.key] = pc.time_unix_ms;
            }
          }
        }
        rec.resource_version = row.resource_version;
        st->seq_ = std::max(st->seq_, rec.seq);
        st->workloads_[row.key] = std::move(rec);
        break;
    }
  }
  // Kubernetes' default namespace always exists (Kueue's quick-start puts
  // its LocalQueue and Job there): built in, stored once changed.
  if (!st->objs_.tenants.count(kDefaultTenant)) {
    core::Namespace ns;
    ns.name = kDefaultTenant;
    ns.labels[core::kNamespaceNameLabel] = kDefaultTenant;
    ns.source = internal::StoredSource(Kind::kTenant);
    st->objs_.tenants[kDefaultTenant] = {std::move(ns), 0};
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
    if (e.obj.labels.count(std::string(kAgentLabel))) st->agents_.Expect(name);
  }
  for (const auto& [key, rec] : st->workloads_) st->agents_.Reindex(key, rec);
  st->agents_.TakeChangedNodes();  // Loading changed no agent's pods.
  st->SyncPools(0);
  return st;
}

// ---- Configuration ------------------------------------------------------

core::Config State::BuildConfig(const Objects& o,
                                const std::set<std::string>& evict) const {
  core::Config cfg;
  for (const auto& [k, e] : o.flavors) cfg.flavors.push_back(e.obj);
  for (const auto& [k, e] : o.topologies) cfg.topologies.push_back(e.obj);
  for (const auto& [k, e] : o.images) cfg.images.push_back(e.obj);
  for (const auto& [k, e] : o.cohorts) cfg.cohorts.push_back(e.obj);
  for (const auto& [k, e] : o.cluster_queues) cfg.cluster_queues.push_back(e.obj);
  for (const auto& [k, e] : o.local_queues) cfg.local_queues.push_back(e.obj);
  for (const auto& [k, e] : o.priority_classes)
    cfg.priority_classes.push_back(e.obj);
  for (const auto& [k, e] : o.tenants) cfg.namespaces.push_back(e.obj);
  for (const auto& [k, e] : o.nodes) cfg.nodes.push_back(SchedulerNode(e.obj));
  for (const auto& [k, e] : o.node_pools) cfg.node_pools.push_back(e.obj);
  cfg.scheduler = o.scheduler;
  std::vector<const WorkloadRecord*> recs;
  recs.reserve(workloads_.size());
  for (const auto& [k, r] : workloads_) {
    // Finished ones hold nothing; inactive ones are held out (spec.active),
    // but for the parked (their admission stays).
    if (r.scheduled()) recs.push_back(&r);
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
    case Kind::kTopology:
      for (const auto& [k, e] : o.flavors)
        if (e.obj.topology_name == key) users.push_back("ResourceFlavor " + k);
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

Status State::ChangeConfig(const Actor& a, std::vector<Change> changes,
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
        TenantOf(ch.kind, ch.key);
    std::string what = std::string(KindName(ch.kind)) + " " + ch.key;
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

  // Nodes replaced or removed, and nothing else: the scheduler changes in
  // place (ChangeNodes). Anything else rebuilds it from the candidate; so
  // does a node added here (a rebuild orders nodes by name, AddNode puts it
  // last; an agent's own node joins through AgentSync's AddNode).
  const bool nodes_only =
      !scheduler_changed && added.empty() &&
      std::all_of(touched.begin(), touched.end(),
                  [](const auto& t) { return t.first == Kind::kNode; });
  std::unique_ptr<sched::Scheduler> rebuilt;
  if (nodes_only) {
    ALLOT_RETURN_IF_ERROR(CheckNodes(cand, touched));
    if (check) ALLOT_RETURN_IF_ERROR(check(cand));
    ALLOT_RETURN_IF_ERROR(ChangeNodes(cand, touched, evict));
  } else {
    core::Config cfg = BuildConfig(cand, evict);
    Status v = core::ValidateConfig(&cfg);
    if (!v.ok()) {
      // An admission that the change invalidates (the validator names a
      // status.admission field) is a conflict that drain fixes; anything
      // else is a bad request.
      if (v.field().rfind("status.admission", 0) == 0) {
        return Status::FailedPrecondition(v.message() + kDrainHint, v.field());
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
    rebuilt = std::move(*sched);
  }
  std::set<std::pair<Kind, std::string>> deleted;
  for (const auto& [kind, key] : touched) {
    bool exists = WithMap(cand, kind, [&](auto& m) { return m.count(key) > 0; });
    if (!exists) deleted.insert({kind, key});
  }
  for (const auto& [kind, key] : deleted) {
    if (kind == Kind::kTenant) {
      tokens_.RevokeTenant(key, &txn->batch);
      secrets_.DeleteTenant(key, &txn->batch);
    }
    json::object last = ConfigJson(kind, key, false);
    txn->batch.deletes.push_back({KindName(kind), key});
    ++rv_;
    internal::SetResourceVersion(&last, rv_);
    txn->events.push_back({rv_, kind,
                           TenantOf(kind, key),
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
  if (rebuilt) {
    sched_ = std::move(rebuilt);
    removed_since_rebuild_ = 0;
  }
  ctrl_changes_ |= ctrl::kConfig;
  if (std::any_of(touched.begin(), touched.end(),
                  [](const auto& t) { return t.first == Kind::kNodePool; })) {
    SyncPools(txn->now_unix_ms);
  }
  for (const std::string& key : evict) {
    WorkloadRecord& rec = workloads_[key];
    Evicted(&rec, "Drained",
            "what it used was changed or removed with drain (by " + a.name + ")",
            txn->now_unix_ms);
    rec.spec.admission.reset();
    rec.state = WorkloadState::kRequeued;
    MarkDirty(key);
  }
  return Status::Ok();
}

core::Node State::SchedulerNode(const core::Node& n) const {
  core::Node out = n;
  // A NotReady agent's node takes no new work.
  if (!agents_.Ready(n.name)) out.unschedulable = true;
  return out;
}

Status State::CheckNodes(const Objects& cand,
                         const std::vector<std::pair<Kind, std::string>>& touched) const {
  for (const auto& [kind, key] : touched) {
    auto it = cand.nodes.find(key);
    if (it == cand.nodes.end()) continue;  // Removed.
    core::Config one;
    one.nodes.push_back(it->second.obj);
    ALLOT_RETURN_IF_ERROR(core::ValidateConfig(&one));
  }
  return Status::Ok();
}

Status State::ChangeNodes(const Objects& cand,
                          const std::vector<std::pair<Kind, std::string>>& touched,
                          const std::set<std::string>& evict) {
  Status s = Status::Ok();
  for (const std::string& key : evict) {
    if (s.ok()) s = sched_->EvictWorkload(key);
  }
  for (size_t i = 0; i < touched.size() && s.ok(); ++i) {
    const std::string& name = touched[i].second;
    auto it = cand.nodes.find(name);
    s = it == cand.nodes.end() ? sched_->RemoveNode(name)
                               : sched_->UpdateNode(SchedulerNode(it->second.obj));
  }
  if (s.ok()) return s;
  // Nothing may change on an error: the scheduler is rebuilt as it was
  // (from objs_, which has not changed yet), and the error said as a
  // rebuild's validation would: a stranded admission is a conflict that
  // drain fixes.
  Status back = Reschedule({}, {}, "", "", 0, /*rebuild=*/true);
  if (!back.ok()) return Status::Internal(back.message());
  if (s.code() == StatusCode::kFailedPrecondition) {
    return Status::FailedPrecondition(s.message() + kDrainHint, s.field());
  }
  return s;
}

void State::PutObject(Kind kind, const std::string& key, bool added,
                      Txn* txn) {
  ++rv_;
  WithMap(objs_, kind, [&](auto& m) { m[key].rv = rv_; });
  json::object obj = ConfigJson(kind, key, false);
  std::string body = json::serialize(obj);
  txn->events.push_back(
      {rv_, kind, TenantOf(kind, key),
       internal::EventLine(added ? "ADDED" : "MODIFIED", body), ""});
  txn->batch.puts.push_back({KindName(kind), key, rv_, std::move(body)});
}

}  // namespace allot::server
