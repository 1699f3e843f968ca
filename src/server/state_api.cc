// State: the request-facing verbs (create, replace, delete, node actions,
// apply) and reads (get, list, watch snapshots), and the token list. The
// JSON they show: state_json.cc.
#include <algorithm>
#include <cstdio>
#include <random>
#include <set>
#include <utility>

#include "core/generate_name.h"
#include "core/manifest.h"
#include "server/audit.h"
#include "server/crypto.h"
#include "server/state.h"
#include "server/state_internal.h"

namespace allot::server {

using internal::ConfigObject;
using internal::KeyOf;
using internal::PutPending;
using internal::WithMap;
namespace json = boost::json;

namespace {

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
  Take(c.topologies, &d);
  Take(c.images, &d);
  Take(c.node_pools, &d);
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


}  // namespace

// ---- Verbs ------------------------------------------------------------------

Status State::Create(const Actor& a, Kind kind, core::Config doc,
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
    return SubmitWorkload(a, std::move(d.workloads[0].second), txn);
  }
  Change ch;
  ch.kind = kind;
  ch.key = std::visit([](const auto& o) { return KeyOf(o); }, d.objects[0].second);
  ch.obj = std::move(d.objects[0].second);
  ch.mode = Change::Mode::kCreate;
  std::vector<Change> changes;
  changes.push_back(std::move(ch));
  return ChangeConfig(a, std::move(changes), false, txn, nullptr);
}

Status State::Replace(const Actor& a, Kind kind, const std::string& key,
                      core::Config doc, std::optional<int64_t> expected_rv,
                      Txn* txn) {
  if (!Exists(kind, key)) {
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
  return ChangeConfig(a, std::move(changes), false, txn, nullptr);
}

Status State::Delete(const Actor& a, Kind kind, const std::string& key,
                     bool drain, Txn* txn) {
  if (!Exists(kind, key)) {
    return Status::NotFound(std::string(KindName(kind)) + " " + key + " does not exist");
  }
  if (kind == Kind::kWorkload) return DeleteWorkload(key, txn);
  if (kind == Kind::kTenant && key == kDefaultTenant) {
    return Status::FailedPrecondition(
        "tenant default always exists, as Kubernetes' default namespace "
        "does; it cannot be deleted");
  }
  Change ch;
  ch.kind = kind;
  ch.key = key;
  ch.mode = Change::Mode::kDelete;
  std::vector<Change> changes;
  changes.push_back(std::move(ch));
  return ChangeConfig(a, std::move(changes), drain, txn, nullptr);
}

Status State::NodeAction(const Actor& a, const std::string& node,
                         const std::string& action, Txn* txn) {
  auto it = objs_.nodes.find(node);
  if (it == objs_.nodes.end()) {
    return Status::NotFound("Node " + node + " does not exist");
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
    return Reschedule(evict, {}, "NodeDrained", "node " + node + " is being drained",
                      txn->now_unix_ms);
  }
  return ChangeConfig(a, std::move(changes), drain, txn, nullptr);
}

Result<std::vector<ApplyResult>> State::Apply(const Actor& a,
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
  // Only spec.active differs from what runs: park or resume (docs/parking.md).
  std::vector<bool> toggled(d.workloads.size(), false);
  // Workloads are checked against the configuration as it will be.
  auto check = [&](const Objects& cand) -> Status {
    for (size_t i = 0; i < d.workloads.size(); ++i) {
      // As SubmitWorkload will store it: images resolved (on a copy, as
      // SubmitWorkload resolves the document again against the same
      // configuration).
      core::Workload w = d.workloads[i].second;
      ALLOT_RETURN_IF_ERROR(ResolveImages(cand, &w));
      const std::string key = w.Key();
      if (!seen.insert(key).second) {
        return Status::InvalidArgument("Workload " + key + " appears twice",
                                       "metadata.name");
      }
      if (const WorkloadRecord* old = FindWorkload(key)) {
        core::Workload same = w;
        same.creation_unix_ms = old->spec.creation_unix_ms;
        same.admission = old->spec.admission;
        same.priority = old->spec.priority;
        same.active = old->spec.active;
        if (json::serialize(core::EncodeWorkload(same)) ==
            json::serialize(core::EncodeWorkload(old->spec))) {
          // Kueue's spec.active is the one field that may change.
          // (A parked workload whose resume waits counts as active.)
          const bool running =
              (old->state != WorkloadState::kParked || resume_wanted_.count(key) > 0) &&
              old->state != WorkloadState::kSuspended;
          toggled[i] = !old->finished() && w.active != running;
          unchanged[i] = !toggled[i];
          continue;
        }
        return Status::AlreadyExists(
            "Workload " + key +
                " already exists with another spec; a Workload cannot change "
                "once submitted (delete it first)",
            "spec");
      }
      ALLOT_RETURN_IF_ERROR(CheckWorkload(a, w, cand));
    }
    return Status::Ok();
  };
  ALLOT_RETURN_IF_ERROR(
      ChangeConfig(a, std::move(changes), false, txn, &results, check));
  for (size_t i = 0; i < d.workloads.size(); ++i) {
    std::string key = d.workloads[i].second.Key();
    if (unchanged[i]) {
      results.push_back({Kind::kWorkload, key, "unchanged"});
      continue;
    }
    if (toggled[i]) {
      ALLOT_RETURN_IF_ERROR(SetActive(a, key, d.workloads[i].second.active, txn));
      results.push_back({Kind::kWorkload, key, "configured"});
      continue;
    }
    Status s = SubmitWorkload(a, std::move(d.workloads[i].second), txn);
    // Checked above against the same configuration; cannot fail.
    if (!s.ok()) return Status::Internal("apply: " + s.message());
    results.push_back({Kind::kWorkload, key, "created"});
  }
  return results;
}

Status State::GenerateNames(core::Config* doc) {
  if (!random_) random_ = core::SeededRandom(std::random_device{}());
  auto taken = [this](std::string_view kind, const std::string& key) {
    static const std::pair<std::string_view, Kind> kKinds[] = {
        {"ResourceFlavor", Kind::kResourceFlavor},
        {"Cohort", Kind::kCohort},
        {"ClusterQueue", Kind::kClusterQueue},
        {"LocalQueue", Kind::kLocalQueue},
        {"WorkloadPriorityClass", Kind::kWorkloadPriorityClass},
        {"Namespace", Kind::kTenant},
        {"Node", Kind::kNode},
        {"Topology", Kind::kTopology},
        {"Image", Kind::kImage},
        {"NodePool", Kind::kNodePool},
        {"Workload", Kind::kWorkload}};
    for (const auto& [name, k] : kKinds) {
      if (name == kind) return Exists(k, key);
    }
    return false;
  };
  return core::GenerateNames(doc, taken, random_);
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
        PutPending(w->second, &o["status"].as_object(), CapacityNote(r->spec.Key()));
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

Result<std::pair<std::string, std::string>> State::CreateToken(const std::string& user,
                                                               Role role,
                                                               const std::string& tenant,
                                                               const std::string& node,
                                                               Txn* txn) {
  return tokens_.Create(user, role, tenant, node, objs_.tenants.count(tenant) > 0,
                        txn->now_unix_ms, &txn->batch);
}

Result<std::string> State::PutSecret(const core::Secret& s, bool replace,
                                     const Actor& a, Txn* txn) {
  if (!objs_.tenants.count(s.ns)) {
    return Status::NotFound("tenant " + s.ns + " does not exist", "metadata.namespace");
  }
  Result<std::string> r = secrets_.Put(s, replace, a.name, txn->now_unix_ms, rv_ + 1,
                                       &txn->batch);
  if (r.ok() && *r != "unchanged") txn->batch.meta["rv"] = std::to_string(++rv_);
  return r;
}

json::array State::ListTokens(const Principal& p) const {
  json::array out;
  for (const auto& [id, t] : tokens_.all()) {
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

}  // namespace allot::server
