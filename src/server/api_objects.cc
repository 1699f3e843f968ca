// The API's handlers for objects: /api/v1/KIND[/TENANT]/NAME (list, watch,
// create, get, replace, delete) and apply. Network threads: each parses and
// checks its request, then posts its work to the owner through ApiCall::authed
// (api_internal.h).
#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/manifest.h"
#include "core/manifest_encode.h"
#include "core/names.h"
#include "server/api.h"
#include "server/api_internal.h"
#include "server/audit.h"
#include "server/query_params.h"
#include "server/telemetry.h"
#include "server/usage.h"

namespace allot::server {
namespace json = boost::json;

void HandleApply(const ApiCall& c) {
  const auto& [ex, req, path, seg, method, authed] = c;
  if (method != "POST") {
    ex->Reply(MethodNotAllowed(method, path, "POST"));
    return;
  }
  auto skip = req.query.find("skipUnsupported");
  const bool skip_unsupported = skip != req.query.end() && QueryFlag(skip->second);
  auto body = std::make_shared<Body>(ParseBody(req, false, skip_unsupported));
  Gate gate{Route::kObjectWrite, "apply objects", "apply", "0 object(s)"};
  authed(std::move(gate), [ex, body](Turn& t, const Principal& p) {
    Status s = body->status;
    if (s.ok()) s = t.state.GenerateNames(&body->config);
    if (s.ok()) s = MayCreateOrApply(p, body->config, t.state);
    json::array items;
    size_t applied = 0;
    if (s.ok()) {
      Result<std::vector<ApplyResult>> r =
          t.state.Apply(Actor::Of(p), std::move(body->config), &t.txn);
      s = r.status();
      if (r.ok()) {
        for (const ApplyResult& a : *r) {
          json::object o;
          o["kind"] =
              a.key == "SchedulerConfig" ? "SchedulerConfig" : KindName(a.kind);
          o["name"] = a.key;
          o["action"] = a.action;
          items.push_back(std::move(o));
        }
        applied = items.size();
        // What was left out, in document order, after what was applied.
        for (const core::SkippedDocument& d : body->skipped) {
          json::object o;
          o["kind"] = d.kind;
          o["name"] = d.name;
          o["action"] = "skipped";
          o["apiVersion"] = d.api_version;
          o["document"] = d.doc_index;
          items.push_back(std::move(o));
        }
      }
    }
    t.state.Audit(p.user, p.tenant, "apply",
                  std::to_string(applied) + " object(s)", Outcome(s),
                  &t.txn);
    t.Reply(ex, s.ok() ? JsonResponse(
                             200, json::object{{"results", std::move(items)}})
                       : ErrorResponse(s));
  });
  return;
}

namespace {

void ListObjects(const ApiCall& c, Kind kind) {
  const auto& [ex, req, path, seg, method, authed] = c;
  ListOptions o;
  Status bad;
  auto q = [&](const char* k) -> std::string {
    auto it = req.query.find(k);
    return it == req.query.end() ? "" : it->second;
  };
  o.tenant = q("tenant");
  o.queue = q("queue");
  if (!q("state").empty()) {
    Result<WorkloadState> st = ParseWorkloadState(q("state"));
    if (st.ok())
      o.state = *st;
    else
      bad = st.status();
  }
  if (!q("label").empty()) {
    for (const std::string& kv : Split(q("label"), ',')) {
      size_t eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) {
        bad = Status::InvalidArgument(
            "label must be k=v[,k=v...], not '" + q("label") + "'", "label");
        break;
      }
      o.labels[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
  }
  if (!q("limit").empty() && bad.ok()) {
    Result<int64_t> n = ParseInt(q("limit"), "limit");
    if (n.ok())
      o.limit = *n;
    else
      bad = n.status();
  }
  o.after = q("continue");
  bool watch = QueryFlag(q("watch"));
  std::optional<int64_t> from_rv;
  if (!q("resourceVersion").empty() && bad.ok()) {
    Result<int64_t> n = ParseInt(q("resourceVersion"), "resourceVersion");
    if (n.ok())
      from_rv = *n;
    else
      bad = n.status();
  }
  Gate gate{Route::kObjectRead, std::string("read ") + KindPlural(kind), "", ""};
  authed(std::move(gate), [ex, kind, o, bad, watch, from_rv](Turn& t, const Principal& p) {
    if (!bad.ok()) {
      t.Reply(ex, ErrorResponse(bad));
      return;
    }
    if (!watch) {
      Result<std::string> body = t.state.List(p, kind, o, t.txn.now_unix_ms);
      if (!body.ok()) {
        t.Reply(ex, ErrorResponse(body.status()));
        return;
      }
      net::Response r;
      r.body = std::move(*body);
      r.body += '\n';
      t.Reply(ex, std::move(r));
      return;
    }
    // ?tenant= narrows namespaced kinds only (as it does for lists).
    std::string tenant = IsNamespaced(kind) ? o.tenant : "";
    if (p.role != Role::kClusterAdmin && IsNamespaced(kind) && tenant.empty()) {
      tenant = p.tenant;
    }
    Principal pr = p;
    t.After([ex, kind, tenant, from_rv, pr, &t] {
      if (from_rv && !t.CanResume(*from_rv)) {
        t.Reply(ex, Http(410, "Gone",
                         "resourceVersion " + std::to_string(*from_rv) +
                             " is too old: list again and watch from the "
                             "list's resourceVersion",
                         "resourceVersion"));
        return;
      }
      auto stream = ex->StartStream(200, "application/x-ndjson");
      if (!from_rv) {
        t.Deliver([stream, lines = t.state.Snapshot(pr, kind, tenant)](
                      store::Store&) mutable {
          for (std::string& line : lines) stream->Write(std::move(line));
        });
      }
      t.Watch(Watcher{pr, kind, tenant, stream}, from_rv.value_or(-1));
    });
  });
  return;
}

// The key of what a create's body holds, for the reply and the audit
// ("ns/prefix*" for a name still to be generated).
std::string KeyOfBody(const core::Config& cfg) {
  std::string key;
  auto name = [](const auto& x) {
    return x.name.empty() ? x.generate_name + "*" : x.name;
  };
  for (const auto& w : cfg.workloads) key = w.ns + "/" + name(w);
  for (const auto& x : cfg.local_queues) key = x.ns + "/" + name(x);
  auto any = [&](const auto& v) {
    for (const auto& x : v) key = name(x);
  };
  any(cfg.flavors);
  any(cfg.topologies);
  any(cfg.images);
  any(cfg.cohorts);
  any(cfg.cluster_queues);
  any(cfg.priority_classes);
  any(cfg.namespaces);
  any(cfg.nodes);
  any(cfg.node_pools);
  return key;
}

void CreateObjects(const ApiCall& c, Kind kind) {
  const auto& [ex, req, path, seg, method, authed] = c;
  auto body = std::make_shared<Body>(ParseBody(req, false));
  std::string prefix = body->status.ok() ? KeyOfBody(body->config) : "";
  Gate gate{Route::kObjectWrite, std::string("change ") + KindPlural(kind), "create",
            std::string(KindName(kind)) + " " + prefix};
  authed(std::move(gate), [ex, body, kind](Turn& t, const Principal& p) {
    Status s = body->status;
    if (s.ok()) s = t.state.GenerateNames(&body->config);
    const std::string name = body->status.ok() ? KeyOfBody(body->config) : "";
    if (s.ok()) s = MayCreateOrApply(p, body->config, t.state);
    if (s.ok()) s = t.state.Create(Actor::Of(p), kind, std::move(body->config), &t.txn);
    t.state.Audit(p.user, p.tenant, "create",
                  std::string(KindName(kind)) + " " + name, Outcome(s), &t.txn);
    if (!s.ok()) {
      t.Reply(ex, ErrorResponse(s));
      return;
    }
    t.After([ex, kind, name, p, &t] {
      if (kind == Kind::kWorkload) {
        // The creator sees its own workload: send what was stored.
        if (const std::string* body = t.txn.WrittenWorkload(name)) {
          net::Response r;
          r.status = 201;
          r.body.reserve(body->size() + 1);
          r.body += *body;
          r.body += '\n';
          t.Reply(ex, std::move(r));
          return;
        }
      }
      Result<json::object> o = t.state.Get(p, kind, name, /*explain=*/false);
      t.Reply(ex, o.ok() ? JsonResponse(201, *o) : ErrorResponse(o.status()));
    });
  });
  return;
}

void GetObject(const ApiCall& c, Kind kind, const std::string& key) {
  const auto& [ex, req, path, seg, method, authed] = c;
  Gate gate{Route::kObjectRead, std::string("read ") + KindPlural(kind), "", ""};
  authed(std::move(gate), [ex, kind, key](Turn& t, const Principal& p) {
    t.After([ex, kind, key, p, &t] {
      Result<json::object> o = t.state.Get(p, kind, key);
      t.Reply(ex, o.ok() ? JsonResponse(200, *o) : ErrorResponse(o.status()));
    });
  });
  return;
}

void ReplaceObject(const ApiCall& c, Kind kind, const std::string& key) {
  const auto& [ex, req, path, seg, method, authed] = c;
  auto body = std::make_shared<Body>(ParseBody(req, true));
  Gate gate{Route::kObjectWrite, std::string("change ") + KindPlural(kind), "replace",
            std::string(KindName(kind)) + " " + key};
  authed(std::move(gate), [ex, body, kind, key](Turn& t, const Principal& p) {
    Status s = body->status;
    if (s.ok()) s = MayWriteObject(p, kind, key, "change", t.state);
    if (s.ok()) s = MayCreateOrApply(p, body->config, t.state);
    if (s.ok()) {
      s = t.state.Replace(Actor::Of(p), kind, key, std::move(body->config),
                          body->expected_rv, &t.txn);
    }
    t.state.Audit(p.user, p.tenant, "replace",
                  std::string(KindName(kind)) + " " + key, Outcome(s), &t.txn);
    if (!s.ok()) {
      t.Reply(ex, ErrorResponse(s));
      return;
    }
    t.After([ex, kind, key, p, &t] {
      Result<json::object> o = t.state.Get(p, kind, key);
      t.Reply(ex, o.ok() ? JsonResponse(200, *o) : ErrorResponse(o.status()));
    });
  });
  return;
}

void DeleteObject(const ApiCall& c, Kind kind, const std::string& key) {
  const auto& [ex, req, path, seg, method, authed] = c;
  bool drain = false;
  if (auto it = req.query.find("drain"); it != req.query.end())
    drain = QueryFlag(it->second);
  Gate gate{Route::kObjectWrite, std::string("change ") + KindPlural(kind),
            drain ? "delete (drain)" : "delete", std::string(KindName(kind)) + " " + key};
  authed(std::move(gate), [ex, kind, key, drain](Turn& t, const Principal& p) {
    Status s = MayWriteObject(p, kind, key, "delete", t.state);
    if (s.ok()) s = t.state.Delete(Actor::Of(p), kind, key, drain, &t.txn);
    t.state.Audit(p.user, p.tenant, drain ? "delete (drain)" : "delete",
                  std::string(KindName(kind)) + " " + key, Outcome(s), &t.txn);
    t.Reply(ex, s.ok() ? JsonResponse(200, json::object{{"deleted", key}})
                       : ErrorResponse(s));
  });
  return;
}

}  // namespace

void HandleObject(const ApiCall& c) {
  const auto& [ex, req, path, seg, method, authed] = c;
  // ---- resources: /api/v1/{plural}[/{tenant}]/{name} -----------------------
  Result<Kind> kind_r = seg.empty()
                            ? Result<Kind>(Status::NotFound("no route " + path))
                            : KindFromPlural(seg[0]);
  if (!kind_r.ok()) {
    ex->Reply(ErrorResponse(Status::NotFound("no route " + path + ": " +
                                             kind_r.status().message())));
    return;
  }
  const Kind kind = *kind_r;
  const size_t key_parts = IsNamespaced(kind) ? 2 : 1;
  if (seg.size() != 1 && seg.size() != 1 + key_parts) {
    ex->Reply(ErrorResponse(Status::NotFound(
        "no route " + path +
        (IsNamespaced(kind) ? ": use /api/v1/" + seg[0] + "/TENANT/NAME"
                            : ": use /api/v1/" + seg[0] + "/NAME"))));
    return;
  }
  const bool collection = seg.size() == 1;
  const std::string key =
      collection ? "" : (key_parts == 2 ? seg[1] + "/" + seg[2] : seg[1]);

  if (collection && method == "GET") return ListObjects(c, kind);
  if (collection && method == "POST") return CreateObjects(c, kind);
  if (!collection && method == "GET") return GetObject(c, kind, key);
  if (!collection && method == "PUT") return ReplaceObject(c, kind, key);
  if (!collection && method == "DELETE") return DeleteObject(c, kind, key);
  ex->Reply(MethodNotAllowed(method, path,
                             collection ? "GET, POST" : "GET, PUT, DELETE"));
}

}  // namespace allot::server
