// State: the request-facing verbs (create, replace, delete, apply, get,
// list), the JSON the API shows, tokens and the audit log.
#include <algorithm>
#include <cstdio>
#include <set>
#include <utility>

#include "core/manifest.h"
#include "server/audit.h"
#include "server/crypto.h"
#include "server/state.h"
#include "server/state_internal.h"

namespace allot::server {

using internal::ConfigObject;
using internal::KeyOf;
using internal::WithMap;
namespace json = boost::json;

namespace {

std::string TenantOf(Kind kind, const std::string& key) {
  if (kind == Kind::kTenant) return key;
  if (!IsNamespaced(kind)) return "";
  size_t slash = key.find('/');
  return slash == std::string::npos ? "" : key.substr(0, slash);
}

std::string Quantity(int64_t milli) {
  return Quantity::FromMilli(milli).ToString();
}

// The documents of `doc` in document order.
struct Docs {
  std::vector<std::pair<int, ConfigObject>> objects;
  std::vector<std::pair<int, core::Workload>> workloads;
  bool has_scheduler = false;
};

template <typename T>
void Take(std::vector<T>& from, Docs* d) {
  for (T& x : from) {
    int at = x.source.doc_index;
    d->objects.push_back({at, ConfigObject(std::move(x))});
  }
}

Docs Split(core::Config&& c, bool has_scheduler) {
  Docs d;
  Take(c.flavors, &d);
  Take(c.cohorts, &d);
  Take(c.cluster_queues, &d);
  Take(c.local_queues, &d);
  Take(c.priority_classes, &d);
  Take(c.namespaces, &d);
  Take(c.nodes, &d);
  for (core::Workload& w : c.workloads) {
    int at = w.source.doc_index;
    d.workloads.push_back({at, std::move(w)});
  }
  auto by_doc = [](const auto& a, const auto& b) { return a.first < b.first; };
  std::stable_sort(d.objects.begin(), d.objects.end(), by_doc);
  std::stable_sort(d.workloads.begin(), d.workloads.end(), by_doc);
  d.has_scheduler = has_scheduler;
  return d;
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

// Why a pending workload waits and its place in line, in its status.
void PutPending(const sched::PendingWorkload& p, json::object* status) {
  (*status)["clusterQueue"] = p.cluster_queue;
  (*status)["pendingReason"] = p.reason;
  (*status)["position"] = p.position;
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
  if (rec.restarts > 0) status["restarts"] = rec.restarts;
  if (rec.admitted_unix_ms > 0) {
    status["admittedAtMs"] = rec.admitted_unix_ms;  // Accounting: since when it holds.
    status["utilMilliMs"] = rec.util_milli_ms;
  }
  if (const Run* run = RunOf(rec.spec.Key()); run && !run->pods.empty()) {
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
      PutPending(*p, &status);
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

json::object State::NodeReadyCondition(const std::string& node) const {
  json::object c;
  c["type"] = "Ready";
  auto transition = [&c, this](int64_t ms) {
    if (ms == 0) ms = first_turn_ms_;  // Unchanged since start.
    if (ms == 0) return;
    c["lastTransitionTime"] = core::FormatRfc3339Ms(ms);
    c["lastTransitionUnixMs"] = ms;
  };
  auto it = agents_.find(node);
  if (it == agents_.end()) {
    c["status"] = "True";
    c["reason"] = "NoAgent";
    c["message"] = "configured without an agent: always schedulable";
    transition(0);
    return c;
  }
  const AgentInfo& a = it->second;
  if (!a.ready) {
    c["status"] = "False";
    c["reason"] = "AgentNotHeartbeating";
    c["message"] = "NotReady: " + a.not_ready_message +
                   "; its workloads went back to their queues";
  } else if (a.last_seen_ms == 0) {
    c["status"] = "Unknown";
    c["reason"] = "AwaitingAgent";
    c["message"] = "the server restarted and has not heard from this node's agent "
                   "yet; it keeps its workloads during the startup grace period";
  } else {
    c["status"] = "True";
    c["reason"] = "AgentReady";
    c["message"] = "its agent is heartbeating";
  }
  if (a.last_seen_ms != 0) {
    c["lastHeartbeatTime"] = core::FormatRfc3339Ms(a.last_seen_ms);
    c["lastHeartbeatUnixMs"] = a.last_seen_ms;
  }
  transition(a.transition_ms);
  return c;
}

// ---- Verbs ------------------------------------------------------------------

Status State::Create(const Principal& p, Kind kind, core::Config doc,
                     Txn* txn) {
  Docs d = Split(std::move(doc), false);
  size_t n = d.objects.size() + d.workloads.size();
  bool right_kind =
      n == 1 && (kind == Kind::kWorkload
                     ? d.workloads.size() == 1
                     : d.objects.size() == 1 &&
                           d.objects[0].second.index() == size_t(kind));
  if (!right_kind) {
    return Status::InvalidArgument(
        std::string("the body must hold exactly one ") + KindName(kind) +
            (kind == Kind::kTenant ? " (a v1 Namespace document)" : "") +
            ", found " + std::to_string(n) + " object(s)" +
            (n == 1 ? " of another kind" : ""),
        "kind");
  }
  if (kind == Kind::kWorkload) {
    return SubmitWorkload(p, std::move(d.workloads[0].second), txn);
  }
  Change ch;
  ch.kind = kind;
  ch.key = std::visit([](const auto& o) { return KeyOf(o); }, d.objects[0].second);
  ch.obj = std::move(d.objects[0].second);
  ch.mode = Change::Mode::kCreate;
  std::vector<Change> changes;
  changes.push_back(std::move(ch));
  return ChangeConfig(p, std::move(changes), false, txn, nullptr);
}

Status State::Replace(const Principal& p, Kind kind, const std::string& key,
                      core::Config doc, std::optional<int64_t> expected_rv,
                      Txn* txn) {
  std::string tenant = TenantOf(kind, key);
  if (!CanSee(p, kind, tenant) || !Exists(kind, key)) {
    return Status::NotFound(std::string(KindName(kind)) + " " + key +
                            " does not exist");
  }
  Docs d = Split(std::move(doc), false);
  size_t n = d.objects.size() + d.workloads.size();
  if (n != 1 || (kind == Kind::kWorkload) != (d.workloads.size() == 1) ||
      (kind != Kind::kWorkload && d.objects[0].second.index() != size_t(kind))) {
    return Status::InvalidArgument(std::string("the body must hold exactly one ") +
                                       KindName(kind),
                                   "kind");
  }
  std::string body_key =
      kind == Kind::kWorkload
          ? d.workloads[0].second.Key()
          : std::visit([](const auto& o) { return KeyOf(o); }, d.objects[0].second);
  if (body_key != key) {
    return Status::InvalidArgument("the body names " + body_key +
                                       " but the URL names " + key,
                                   "metadata.name");
  }
  if (!CanWrite(p, kind, tenant)) {
    return Status::PermissionDenied(std::string("role ") + ToString(p.role) +
                                    " may not change " + KindName(kind) + " " +
                                    key);
  }
  if (kind == Kind::kWorkload) {
    return Status::FailedPrecondition(
        "a Workload's spec cannot change once submitted; delete it and "
        "submit it again",
        "spec");
  }
  Change ch;
  ch.kind = kind;
  ch.key = key;
  ch.obj = std::move(d.objects[0].second);
  ch.mode = Change::Mode::kReplace;
  ch.expected_rv = expected_rv;
  std::vector<Change> changes;
  changes.push_back(std::move(ch));
  return ChangeConfig(p, std::move(changes), false, txn, nullptr);
}

Status State::Delete(const Principal& p, Kind kind, const std::string& key,
                     bool drain, Txn* txn) {
  std::string tenant = TenantOf(kind, key);
  std::string what = std::string(KindName(kind)) + " " + key;
  if (!CanSee(p, kind, tenant) || !Exists(kind, key)) {
    return Status::NotFound(what + " does not exist");
  }
  if (!CanWrite(p, kind, tenant)) {
    return Status::PermissionDenied(std::string("role ") + ToString(p.role) +
                                    " may not delete " + what);
  }
  if (kind == Kind::kWorkload) return DeleteWorkload(key, txn);
  Change ch;
  ch.kind = kind;
  ch.key = key;
  ch.mode = Change::Mode::kDelete;
  std::vector<Change> changes;
  changes.push_back(std::move(ch));
  return ChangeConfig(p, std::move(changes), drain, txn, nullptr);
}

Status State::NodeAction(const Principal& p, const std::string& node,
                         const std::string& action, Txn* txn) {
  auto it = objs_.nodes.find(node);
  if (it == objs_.nodes.end()) {
    return Status::NotFound("Node " + node + " does not exist");
  }
  if (p.role != Role::kClusterAdmin) {
    return Status::PermissionDenied("only a cluster-admin may " + action +
                                    " nodes");
  }
  if (action != "cordon" && action != "uncordon" && action != "drain") {
    return Status::NotFound("no node action '" + action +
                            "': use cordon, uncordon or drain");
  }
  core::Node n = it->second.obj;
  n.unschedulable = action != "uncordon";
  bool drain = action == "drain";
  if (n.unschedulable == it->second.obj.unschedulable && !drain) {
    return Status::Ok();
  }
  Change ch;
  ch.kind = Kind::kNode;
  ch.key = node;
  ch.obj = std::move(n);
  ch.mode = Change::Mode::kReplace;
  std::vector<Change> changes;
  changes.push_back(std::move(ch));
  if (drain && it->second.obj.unschedulable) {
    // Already cordoned: the change is a no-op, so evict directly.
    std::vector<std::string> on_node =
        internal::AdmittedUsing(workloads_, Kind::kNode, node);
    std::set<std::string> evict(on_node.begin(), on_node.end());
    if (evict.empty()) return Status::Ok();
    // Rebuild without them: they return to their queues.
    return Reschedule(evict, "NodeDrained", "node " + node + " is being drained",
                      txn->now_unix_ms);
  }
  return ChangeConfig(p, std::move(changes), drain, txn, nullptr);
}

Result<std::vector<ApplyResult>> State::Apply(const Principal& p,
                                              core::Config docs, Txn* txn) {
  // A SchedulerConfig document is the only one that leaves no object.
  core::SchedulerConfig sc = docs.scheduler;
  bool has_scheduler = docs.scheduler_declared;
  Docs d = Split(std::move(docs), has_scheduler);
  std::vector<Change> changes;
  std::map<std::pair<Kind, std::string>, int> first_doc;
  for (auto& [at, obj] : d.objects) {
    Change ch;
    ch.kind = Kind(obj.index());
    ch.key = std::visit([](const auto& o) { return KeyOf(o); }, obj);
    auto [it, fresh] = first_doc.insert({{ch.kind, ch.key}, at});
    if (!fresh) {
      // As the dry-run says: one body may not declare an object twice.
      return Status::InvalidArgument(
          "document " + std::to_string(at) + ": duplicate " +
              KindName(ch.kind) + " name " + ch.key + " (first in document " +
              std::to_string(it->second) + ")",
          "metadata.name");
    }
    ch.obj = std::move(obj);
    ch.mode = Change::Mode::kApply;
    changes.push_back(std::move(ch));
  }
  if (has_scheduler) {
    Change ch;
    ch.scheduler = sc;
    changes.push_back(std::move(ch));
  }
  std::vector<ApplyResult> results;
  std::set<std::string> seen;
  std::vector<bool> unchanged(d.workloads.size(), false);
  // Workloads are checked against the configuration as it will be.
  auto check = [&](const Objects& cand) -> Status {
    for (size_t i = 0; i < d.workloads.size(); ++i) {
      core::Workload& w = d.workloads[i].second;
      const std::string key = w.Key();
      if (!seen.insert(key).second) {
        return Status::InvalidArgument("Workload " + key + " appears twice",
                                       "metadata.name");
      }
      if (const WorkloadRecord* old = FindWorkload(key);
          old && CanSee(p, Kind::kWorkload, w.ns)) {
        if (!CanWrite(p, Kind::kWorkload, w.ns)) {
          return Status::PermissionDenied(std::string("role ") +
                                          ToString(p.role) +
                                          " may not submit workloads");
        }
        core::Workload same = w;
        same.creation_unix_ms = old->spec.creation_unix_ms;
        same.admission = old->spec.admission;
        same.priority = old->spec.priority;
        if (json::serialize(core::EncodeWorkload(same)) ==
            json::serialize(core::EncodeWorkload(old->spec))) {
          unchanged[i] = true;
          continue;
        }
        return Status::AlreadyExists(
            "Workload " + key +
                " already exists with another spec; a Workload cannot change "
                "once submitted (delete it first)",
            "spec");
      }
      ALLOT_RETURN_IF_ERROR(CheckWorkload(p, w, cand));
    }
    return Status::Ok();
  };
  ALLOT_RETURN_IF_ERROR(
      ChangeConfig(p, std::move(changes), false, txn, &results, check));
  for (size_t i = 0; i < d.workloads.size(); ++i) {
    std::string key = d.workloads[i].second.Key();
    if (unchanged[i]) {
      results.push_back({Kind::kWorkload, key, "unchanged"});
      continue;
    }
    Status s = SubmitWorkload(p, std::move(d.workloads[i].second), txn);
    // Checked above against the same configuration; cannot fail.
    if (!s.ok()) return Status::Internal("apply: " + s.message());
    results.push_back({Kind::kWorkload, key, "created"});
  }
  return results;
}

Result<json::object> State::Get(const Principal& p, Kind kind,
                                const std::string& key, bool explain) const {
  if (!CanSee(p, kind, TenantOf(kind, key)) || !Exists(kind, key)) {
    return Status::NotFound(std::string(KindName(kind)) + " " + key +
                            " does not exist");
  }
  if (kind == Kind::kWorkload) {
    return WorkloadJson(workloads_.at(key), explain, p.role == Role::kClusterAdmin);
  }
  return ConfigJson(kind, key, true);
}

Result<std::string> State::List(const Principal& p, Kind kind,
                                const ListOptions& opts,
                                int64_t now_unix_ms) const {
  std::string tenant = opts.tenant;
  if (p.role != Role::kClusterAdmin && IsNamespaced(kind)) {
    if (!tenant.empty() && tenant != p.tenant) tenant = "\x01";  // Nothing.
    if (tenant.empty()) tenant = p.tenant;
  }
  std::string out;
  out.reserve(opts.limit > 0 ? size_t(std::min<int64_t>(opts.limit, 100000)) * 700
                             : size_t(1) << 16);
  out += "{\"items\":[";
  int64_t n = 0;
  std::string last;
  bool more = false;
  auto add = [&](const std::string& key, const std::string& item) {
    if (opts.limit > 0 && n >= opts.limit) {
      more = true;
      return false;
    }
    if (n > 0) out += ',';
    out += item;
    last = key;
    ++n;
    return true;
  };
  if (kind == Kind::kWorkload) {
    std::string prefix = tenant.empty() ? "" : tenant + "/";
    auto it = opts.after.empty() ? workloads_.lower_bound(prefix)
                                 : workloads_.upper_bound(opts.after);
    // The page first; then the scheduler explains its pending rows in one
    // call (each ClusterQueue's queue sorted once, not once per row).
    std::vector<const WorkloadRecord*> page;
    for (; it != workloads_.end(); ++it) {
      const WorkloadRecord& r = it->second;
      if (!tenant.empty() && r.spec.ns != tenant) break;
      if (!CanSee(p, kind, r.spec.ns)) continue;
      if (!opts.queue.empty() && r.spec.queue_name != opts.queue) continue;
      if (opts.state && r.state != *opts.state) continue;
      if (!core::LabelsMatch(opts.labels, r.spec.labels)) continue;
      if (opts.limit > 0 && int64_t(page.size()) >= opts.limit) {
        more = true;
        break;
      }
      page.push_back(&r);
    }
    std::vector<std::string> pending;
    for (const WorkloadRecord* r : page) {
      if (!r->spec.admission && !r->finished()) pending.push_back(r->spec.Key());
    }
    std::unordered_map<std::string, sched::PendingWorkload> why = sched_->Explain(pending);
    for (const WorkloadRecord* r : page) {
      json::object o = WorkloadJson(*r, false, p.role == Role::kClusterAdmin);
      if (auto w = why.find(r->spec.Key()); w != why.end()) {
        PutPending(w->second, &o["status"].as_object());
      }
      add(r->spec.Key(), json::serialize(o));
    }
  } else {
    WithMap(objs_, kind, [&](const auto& m) {
      auto it = opts.after.empty() ? m.begin() : m.upper_bound(opts.after);
      for (; it != m.end(); ++it) {
        std::string t = TenantOf(kind, it->first);
        if (!tenant.empty() && IsNamespaced(kind) && t != tenant) continue;
        if (!CanSee(p, kind, t)) continue;
        if constexpr (requires { it->second.obj.labels; }) {
          if (!core::LabelsMatch(opts.labels, it->second.obj.labels)) continue;
        }
        if (!add(it->first, json::serialize(ConfigJson(kind, it->first, true))))
          break;
      }
    });
  }
  out += "],\"resourceVersion\":\"" + std::to_string(rv_) + "\"";
  out += ",\"serverTimeUnixMs\":" + std::to_string(now_unix_ms);
  if (more) out += ",\"continue\":" + json::serialize(json::value(last));
  out += "}";
  return out;
}

std::vector<std::string> State::Snapshot(const Principal& p, Kind kind,
                                         const std::string& tenant) const {
  std::vector<std::string> lines;
  auto line = [](const std::string& obj) {
    return internal::EventLine("ADDED", obj);
  };
  if (kind == Kind::kWorkload) {
    for (const auto& [k, r] : workloads_) {
      if (!tenant.empty() && r.spec.ns != tenant) continue;
      if (CanSee(p, kind, r.spec.ns))
        lines.push_back(
            line(json::serialize(WorkloadJson(r, false, p.role == Role::kClusterAdmin))));
    }
    return lines;
  }
  WithMap(objs_, kind, [&](const auto& m) {
    for (const auto& [k, e] : m) {
      std::string t = TenantOf(kind, k);
      if (!tenant.empty() && IsNamespaced(kind) && t != tenant) continue;
      if (CanSee(p, kind, t))
        lines.push_back(line(json::serialize(ConfigJson(kind, k, true))));
    }
  });
  return lines;
}

// ---- Tokens -----------------------------------------------------------------

void State::IndexToken(const store::TokenRow& row) {
  tokens_[row.id] = row;
  Result<Role> role = ParseRole(row.role);
  if (row.revoked || !role.ok()) {
    tokens_by_hash_->Erase(row.hash);
  } else {
    tokens_by_hash_->Put(row.hash, Principal{row.user, *role, row.tenant, row.id, row.node});
  }
}

namespace {
Status CheckUserName(const std::string& user) {
  if (user.empty() || user.size() > 128) {
    return Status::InvalidArgument("user must be 1 to 128 characters", "user");
  }
  for (char c : user) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' ||
          c == '_' || c == '.' || c == '@')) {
      return Status::InvalidArgument(
          "user may hold only letters, digits, '-', '_', '.' and '@'", "user");
    }
  }
  return Status::Ok();
}
}  // namespace

Result<std::pair<std::string, std::string>> State::CreateToken(const Principal& p,
                                       const std::string& user, Role role,
                                       const std::string& tenant,
                                       const std::string& node, Txn* txn) {
  ALLOT_RETURN_IF_ERROR(CheckUserName(user));
  if (!node.empty() && role != Role::kNode) {
    return Status::InvalidArgument(
        std::string("only a node token is bound to a node, not a ") + ToString(role) + " token",
        "node");
  }
  if (!node.empty() && !IsNodeBinding(node)) {
    return Status::InvalidArgument(
        "node must be a node name (a DNS-1123 subdomain, like gpu-07) or a prefix of one "
        "ending in a single '*' (like sim-*), got '" + node + "'",
        "node");
  }
  const bool tenantless = role == Role::kClusterAdmin || role == Role::kNode ||
                          role == Role::kMetrics;
  if (tenantless && !tenant.empty()) {
    return Status::InvalidArgument(
        std::string("a ") + ToString(role) + " token has no tenant", "tenant");
  }
  if (!tenantless) {
    if (tenant.empty()) {
      return Status::InvalidArgument(
          std::string("a ") + ToString(role) + " token needs a tenant",
          "tenant");
    }
    if (!objs_.tenants.count(tenant) ||
        (p.role != Role::kClusterAdmin && tenant != p.tenant)) {
      return Status::NotFound("tenant " + tenant + " does not exist", "tenant");
    }
  }
  if (!CanGrant(p, role, tenant)) {
    return Status::PermissionDenied(std::string("role ") + ToString(p.role) +
                                    " may not create " + ToString(role) +
                                    " tokens");
  }
  std::string secret = "allot_" + RandomHex(32);
  store::TokenRow row;
  do {
    row.id = RandomHex(6);
  } while (tokens_.count(row.id));
  row.hash = Sha256Hex(secret);
  row.user = user;
  row.role = ToString(role);
  row.tenant = tenant;
  row.node = node;
  row.created_unix_ms = txn->now_unix_ms;
  IndexToken(row);
  txn->batch.tokens.push_back(row);
  return std::make_pair(row.id, secret);
}

Status State::AddAdminToken(const std::string& secret, const std::string& user,
                            Txn* txn) {
  if (secret.size() < 32) {
    return Status::InvalidArgument(
        "the admin token must be at least 32 characters (use 256 random "
        "bits, e.g. allot_ followed by 64 hex digits)");
  }
  std::string hash = Sha256Hex(secret);
  if (tokens_by_hash_->Contains(hash)) return Status::Ok();
  store::TokenRow row;
  row.id = RandomHex(6);
  row.hash = hash;
  row.user = user;
  row.role = ToString(Role::kClusterAdmin);
  row.created_unix_ms = txn->now_unix_ms;
  IndexToken(row);
  txn->batch.tokens.push_back(row);
  return Status::Ok();
}

Status State::RevokeToken(const Principal& p, const std::string& id,
                          Txn* txn) {
  auto it = tokens_.find(id);
  if (it == tokens_.end() || it->second.revoked) {
    return Status::NotFound("token " + id + " does not exist", "id");
  }
  Result<Role> role = ParseRole(it->second.role);
  if (!role.ok() || !CanGrant(p, *role, it->second.tenant)) {
    return Status::NotFound("token " + id + " does not exist", "id");
  }
  it->second.revoked = true;
  IndexToken(it->second);
  txn->batch.tokens.push_back(it->second);
  return Status::Ok();
}

void State::RevokeTenantTokens(const std::string& tenant, Txn* txn) {
  for (auto& [id, t] : tokens_) {
    if (t.tenant != tenant || t.revoked) continue;
    t.revoked = true;
    IndexToken(t);
    txn->batch.tokens.push_back(t);
  }
}

json::array State::ListTokens(const Principal& p) const {
  json::array out;
  for (const auto& [id, t] : tokens_) {
    Result<Role> role = ParseRole(t.role);
    if (!role.ok() || !CanGrant(p, *role, t.tenant)) continue;
    json::object o;
    o["id"] = id;
    o["user"] = t.user;
    o["role"] = t.role;
    o["tenant"] = t.tenant;
    o["node"] = t.node;
    o["created"] = core::FormatRfc3339Ms(t.created_unix_ms);
    o["revoked"] = t.revoked;
    out.push_back(std::move(o));
  }
  return out;
}

void State::Audit(const std::string& principal, const std::string& tenant,
                  const std::string& verb, const std::string& object,
                  const std::string& outcome, Txn* txn) {
  if (!audit_broken_.empty()) {
    std::fprintf(stderr,
                 "allot: audit (not appended: the chain is broken): principal=%s tenant=%s "
                 "verb=%s object=%s outcome=%s\n",
                 ForLog(principal).c_str(), ForLog(tenant).c_str(), verb.c_str(),
                 ForLog(object).c_str(), ForLog(outcome).c_str());
    return;
  }
  store::AuditRow row;
  row.seq = ++audit_seq_;
  row.time_unix_ms = txn->now_unix_ms;
  row.principal = principal;
  row.tenant = tenant;
  row.verb = verb;
  row.object = object;
  row.outcome = outcome;
  row.prev_hash = audit_hash_.empty() ? kAuditGenesis : audit_hash_;
  row.hash = AuditHash(row);
  audit_hash_ = row.hash;
  txn->batch.meta["audit_head"] = std::to_string(row.seq) + ":" + row.hash;
  txn->batch.audit.push_back(std::move(row));
}

Status State::AcknowledgeAuditBreak(const Principal& p, const std::string& reason,
                                    Txn* txn) {
  if (audit_broken_.empty()) {
    return Status::FailedPrecondition("the audit log is not broken: there is nothing to acknowledge");
  }
  const std::string what = audit_broken_;
  audit_broken_.clear();
  Audit(p.user, p.tenant, "acknowledge", "AuditLog",
        "ok: acknowledged break: " + what + "; reason: " + reason, txn);
  return Status::Ok();
}

}  // namespace allot::server
