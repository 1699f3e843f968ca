#include "server/api.h"

#include <boost/json.hpp>

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <ctime>
#include <set>
#include <optional>
#include <utility>
#include <vector>

#include "core/manifest.h"
#include "core/manifest_encode.h"
#include "core/names.h"
#include "server/api_internal.h"
#include "server/audit.h"
#include "server/crypto.h"
#include "server/query_params.h"
#include "server/telemetry.h"
#include "server/usage.h"
#include "server/web.h"

namespace allot::server {
namespace json = boost::json;

namespace {

const char* CodeName(StatusCode c) {
  switch (c) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kInvalidArgument: return "InvalidArgument";
    case StatusCode::kNotFound: return "NotFound";
    case StatusCode::kAlreadyExists: return "AlreadyExists";
    case StatusCode::kFailedPrecondition: return "Conflict";
    case StatusCode::kPermissionDenied: return "Forbidden";
    case StatusCode::kUnauthenticated: return "Unauthorized";
    case StatusCode::kInternal: return "Internal";
  }
  return "Internal";
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(sep, start);
    if (end == std::string::npos) end = s.size();
    out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

Result<int64_t> ParseInt(const std::string& v, const char* field) {
  int64_t n = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || p != v.data() + v.size() || n < 0) {
    return Status::InvalidArgument(
        std::string(field) + " must be a non-negative integer, not '" + v + "'",
        field);
  }
  return n;
}

// Query parameter `k` of `req` as a non-negative integer, or `dflt` when it
// is absent; a malformed one sets *bad (the first error wins) and gives dflt.
int64_t QueryInt(const net::Request& req, const char* k, int64_t dflt, Status* bad) {
  auto it = req.query.find(k);
  if (it == req.query.end() || !bad->ok()) return dflt;
  Result<int64_t> v = ParseInt(it->second, k);
  if (!v.ok()) *bad = v.status();
  return v.ok() ? *v : dflt;
}

// metadata.resourceVersion of a request body, if any (the manifest reader
// treats it as bookkeeping and drops it).
Result<std::optional<int64_t>> BodyResourceVersion(const std::string& body) {
  try {
    YAML::Node n = YAML::Load(body);
    if (!n.IsMap() || !n["metadata"] || !n["metadata"].IsMap()) {
      return std::optional<int64_t>();
    }
    YAML::Node rv = n["metadata"]["resourceVersion"];
    if (!rv || rv.IsNull()) return std::optional<int64_t>();
    if (!rv.IsScalar()) {
      return Status::InvalidArgument("must be a string",
                                     "metadata.resourceVersion");
    }
    Result<int64_t> v = ParseInt(rv.Scalar(), "metadata.resourceVersion");
    if (!v.ok()) return v.status();
    return std::optional<int64_t>(*v);
  } catch (const YAML::Exception&) {
    return std::optional<int64_t>();  // The manifest reader reports it.
  }
}

using core::IsDnsLabel;
using core::IsDnsSubdomain;

template <typename T>
Status CheckNames(const std::vector<T>& items, bool label_only) {
  for (const T& x : items) {
    bool ok = label_only ? IsDnsLabel(x.name) : IsDnsSubdomain(x.name);
    if (!ok) {
      return Status::InvalidArgument(
          x.source.Describe(x.name) + ": metadata.name: '" + x.name +
              "' is not a DNS-1123 " + (label_only ? "label" : "subdomain") +
              " (lower-case letters, digits and '-'" +
              (label_only ? ", at most 63" : " and '.', at most 253") +
              " characters, starting and ending with a letter or digit)",
          "metadata.name");
    }
    if constexpr (requires { x.ns; }) {
      if (!IsDnsLabel(x.ns)) {
        return Status::InvalidArgument(
            x.source.Describe(x.name) + ": metadata.namespace: '" + x.ns +
                "' is not a DNS-1123 label",
            "metadata.namespace");
      }
    }
  }
  return Status::Ok();
}

// Object names follow Kubernetes: tenants, queues and workloads are DNS
// labels; the rest DNS subdomains.
Status CheckAllNames(const core::Config& c) {
  ALLOT_RETURN_IF_ERROR(CheckNames(c.flavors, false));
  ALLOT_RETURN_IF_ERROR(CheckNames(c.cohorts, false));
  ALLOT_RETURN_IF_ERROR(CheckNames(c.cluster_queues, false));
  ALLOT_RETURN_IF_ERROR(CheckNames(c.local_queues, true));
  ALLOT_RETURN_IF_ERROR(CheckNames(c.priority_classes, false));
  ALLOT_RETURN_IF_ERROR(CheckNames(c.namespaces, true));
  ALLOT_RETURN_IF_ERROR(CheckNames(c.nodes, false));
  ALLOT_RETURN_IF_ERROR(CheckNames(c.workloads, true));
  return Status::Ok();
}

// The body of a create, replace or apply, parsed on the network thread.
struct Body {
  Status status;
  core::Config config;
  std::optional<int64_t> expected_rv;
};

Body ParseBody(const net::Request& req, bool want_rv) {
  Body b;
  if (req.body.empty()) {
    b.status = Status::InvalidArgument("the request has no body", "body");
    return b;
  }
  b.status = core::ParseManifests(req.body, "request body", &b.config);
  if (b.status.ok()) b.status = CheckAllNames(b.config);
  if (b.status.ok() && want_rv) {
    Result<std::optional<int64_t>> rv = BodyResourceVersion(req.body);
    if (rv.ok()) {
      b.expected_rv = *rv;
    } else {
      b.status = rv.status();
    }
  }
  return b;
}

std::string Bearer(const net::Request& req) {
  const std::string& h = req.Header("authorization");
  if (h.size() > 7 && (h.compare(0, 7, "Bearer ") == 0 ||
                       h.compare(0, 7, "bearer ") == 0)) {
    return h.substr(7);
  }
  return "";
}

std::string Outcome(const Status& s) {
  if (s.ok()) return "ok";
  std::string m = s.message();
  if (m.size() > 200) m = m.substr(0, 200) + "...";
  return std::to_string(HttpStatusFor(s.code())) + " " + m;
}

json::object AuditJson(const store::AuditRow& r) {
  json::object o;
  o["seq"] = r.seq;
  o["time"] = core::FormatRfc3339Ms(r.time_unix_ms);
  o["principal"] = r.principal;
  o["tenant"] = r.tenant;
  o["verb"] = r.verb;
  o["object"] = r.object;
  o["outcome"] = r.outcome;
  o["hash"] = r.hash;
  return o;
}

net::Response Http(int status, const char* code, const std::string& message,
                   const std::string& field = "") {
  json::object e;
  e["code"] = code;
  e["message"] = message;
  e["field"] = field;
  return JsonResponse(status, json::object{{"error", std::move(e)}});
}

net::Response MethodNotAllowed(const std::string& method,
                               const std::string& path,
                               const std::string& allow) {
  net::Response r = Http(405, "MethodNotAllowed",
                         "method " + method + " is not allowed on " + path +
                             " (allowed: " + allow + ")",
                         "method");
  r.headers.push_back({"Allow", allow});
  return r;
}

// How often `"key"` appears as an object key in `body` (Boost.JSON's DOM
// keeps only one of repeated keys, so the token body is checked first).
int KeyCount(const std::string& body, const std::string& key) {
  int n = 0;
  std::string quoted = "\"" + key + "\"";
  for (size_t at = body.find(quoted); at != std::string::npos;
       at = body.find(quoted, at + 1)) {
    size_t next = body.find_first_not_of(" \t\r\n", at + quoted.size());
    if (next != std::string::npos && body[next] == ':') ++n;
  }
  return n;
}

// The body of POST /api/v1/agents/sync (proto::DecodeAgentReport), its
// node's names checked as every other object's are.
Result<AgentReport> ParseAgentReport(const std::string& body) {
  Result<AgentReport> r = proto::DecodeAgentReport(body);
  if (!r.ok()) return r;
  ALLOT_RETURN_IF_ERROR(CheckNames(std::vector<core::Node>{r->node}, false));
  return r;
}

// Records every API request (metrics::Metrics::ApiRequest) as it is
// answered: by method, route pattern and code.
class MeteredExchange : public net::Exchange {
 public:
  MeteredExchange(std::shared_ptr<net::Exchange> inner,
                  std::shared_ptr<metrics::Metrics> m, std::string route)
      : inner_(std::move(inner)),
        m_(std::move(m)),
        route_(std::move(route)),
        start_(std::chrono::steady_clock::now()) {}
  const net::Request& request() const override { return inner_->request(); }
  void Reply(net::Response response) override {
    Record(response.status);
    inner_->Reply(std::move(response));
  }
  std::shared_ptr<net::Stream> StartStream(
      int status, const std::string& content_type,
      std::vector<std::pair<std::string, std::string>> headers) override {
    Record(status);
    return inner_->StartStream(status, content_type, std::move(headers));
  }

 private:
  void Record(int status) {
    m_->ApiRequest(inner_->request().method, route_, status,
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - start_)
                       .count());
  }
  std::shared_ptr<net::Exchange> inner_;
  std::shared_ptr<metrics::Metrics> m_;
  std::string route_;
  std::chrono::steady_clock::time_point start_;
};

// The route pattern of `path` for the metrics' labels: names become {id},
// anything unknown is "other", so a scan of random paths adds no series.
std::string RouteOf(const std::string& path) {
  if (path == "/healthz" || path == "/readyz" || path == "/version" ||
      path == "/metrics") {
    return path;
  }
  if (FindWebAsset(path) != nullptr) return "/ui";
  const std::string prefix = "/api/v1/";
  if (path.compare(0, prefix.size(), prefix) != 0) return "other";
  std::vector<std::string> seg = Split(path.substr(prefix.size()), '/');
  static const std::set<std::string> kTop = {"whoami", "tokens", "audit", "apply",
                                             "agents", "usage", "telemetry", "overview"};
  static const std::set<std::string> kVerbs = {"sync", "logs",   "log",     "verify",
                                               "cordon", "uncordon", "drain"};
  if (seg.empty() || (!kTop.count(seg[0]) && !KindFromPlural(seg[0]).ok()) ||
      seg.size() > 4) {
    return "other";
  }
  std::string route = "/api/v1/" + seg[0];
  for (size_t i = 1; i < seg.size(); ++i) {
    route += "/";
    route += kVerbs.count(seg[i]) ? seg[i] : "{id}";
  }
  return route;
}

// Objects, usage, telemetry and the overview are for people: a node token
// speaks the agent protocol only and a metrics token reads /metrics only,
// so both get 403 on these routes (replied here; false then), not an empty
// answer that looks like an empty cluster.
bool MayReadReports(Turn& t, const std::shared_ptr<net::Exchange>& ex, const Principal& p,
                    const std::string& what) {
  if (p.role != Role::kNode && p.role != Role::kMetrics) return true;
  const char* only = p.role == Role::kNode ? "it may only register and sync its node "
                                             "(/api/v1/agent/...)"
                                           : "it may only read /metrics";
  t.Reply(ex, ErrorResponse(Status::PermissionDenied(std::string("a ") + ToString(p.role) +
                                                     " token may not read " + what + ": " +
                                                     only)));
  return false;
}

// Once the turn is committed: the usage rows of `f` (the closed stretches
// in the store, plus `open`, what is still held, from the state) given to
// `reply`, which builds the answer; a store error is answered instead.
void DeliverUsage(Turn& t, std::shared_ptr<net::Exchange> ex, store::UsageFilter f,
                  std::vector<store::UsageRow> open,
                  std::function<net::Response(std::vector<store::UsageRow>&)> reply) {
  t.Deliver([ex = std::move(ex), f, open = std::move(open),
             reply = std::move(reply)](store::Store& store) mutable {
    Result<std::vector<store::UsageRow>> rows = store.ListUsage(f);
    if (!rows.ok()) {
      ex->Reply(ErrorResponse(rows.status()));
      return;
    }
    rows->insert(rows->end(), std::make_move_iterator(open.begin()),
                 std::make_move_iterator(open.end()));
    ex->Reply(reply(*rows));
  });
}

}  // namespace

net::Response JsonResponse(int status, const json::value& v) {
  net::Response r;
  r.status = status;
  r.body = json::serialize(v);
  r.body += '\n';
  return r;
}

int HttpStatusFor(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return 200;
    case StatusCode::kInvalidArgument: return 400;
    case StatusCode::kNotFound: return 404;
    case StatusCode::kAlreadyExists: return 409;
    case StatusCode::kFailedPrecondition: return 409;
    case StatusCode::kPermissionDenied: return 403;
    case StatusCode::kUnauthenticated: return 401;
    case StatusCode::kInternal: return 500;
  }
  return 500;
}

net::Response ErrorResponse(const Status& s) {
  json::object e;
  e["code"] = CodeName(s.code());
  e["message"] = s.message();
  e["field"] = s.field();
  json::object o;
  o["error"] = std::move(e);
  net::Response r = JsonResponse(HttpStatusFor(s.code()), o);
  if (s.code() == StatusCode::kUnauthenticated) {
    r.headers.push_back({"WWW-Authenticate", "Bearer realm=\"allot\""});
  }
  return r;
}

void Api::Handle(std::shared_ptr<net::Exchange> raw) {
  std::shared_ptr<net::Exchange> ex =
      std::make_shared<MeteredExchange>(raw, metrics_, RouteOf(raw->request().path));
  const net::Request& req = ex->request();
  const std::string& path = req.path;
  if (path == "/healthz" || path == "/readyz") {
    json::object o;
    o["status"] = "ok";
    ex->Reply(JsonResponse(200, o));
    return;
  }
  if (path == "/version") {
    json::object o;
    o["version"] = kVersion;
    o["api"] = "v1";
    ex->Reply(JsonResponse(200, o));
    return;
  }
  // The dashboard's files: public (the page signs in with a token).
  if (req.method == "GET" || req.method == "HEAD") {
    if (const WebAsset* a = FindWebAsset(path == "/index.html" ? "/" : path)) {
      net::Response r;
      r.content_type = a->content_type;
      r.body.assign(reinterpret_cast<const char*>(a->data), a->size);
      r.headers.push_back({"Cache-Control", "no-cache"});
      r.headers.push_back({"X-Content-Type-Options", "nosniff"});
      r.headers.push_back({"Content-Security-Policy",
                           "default-src 'self'; style-src 'self' 'unsafe-inline'"});
      ex->Reply(std::move(r));
      return;
    }
  }
  const std::string prefix = "/api/v1/";
  if (path != "/metrics" && path.compare(0, prefix.size(), prefix) != 0) {
    ex->Reply(ErrorResponse(Status::NotFound("no route " + path)));
    return;
  }
  std::vector<std::string> seg = Split(path.substr(prefix.size()), '/');
  if (!seg.empty() && seg.back().empty()) seg.pop_back();
  const std::string& method = req.method;
  // The token is hashed here, once; a request without a live one is
  // answered (and audited by the owner) before its body is parsed.
  const std::string token = Bearer(req);
  const std::string token_hash = token.empty() ? "" : Sha256Hex(token);
  auto refuse = [ex](Turn& t, const std::string& why) {
    const net::Request& rq = ex->request();
    t.state.Audit("-", "", "authenticate", rq.method + " " + rq.path,
                  "401 " + why, &t.txn);
    t.Reply(ex, ErrorResponse(Status::Unauthenticated(
                    why + ": send 'Authorization: Bearer TOKEN' (allot token create)")));
  };
  if (token.empty() || !tokens_->Find(token_hash)) {
    std::string why = token.empty() ? "no bearer token" : "unknown or revoked token";
    owner_->Post([refuse, why](Turn& t) { refuse(t, why); });
    return;
  }
  if (Status q = CheckQuery(method, path == "/metrics" ? std::vector<std::string>() : seg,
                            req.query);
      !q.ok()) {
    ex->Reply(ErrorResponse(q));
    return;
  }

  // Everything below has a principal; the owner checks it again. While the
  // audit chain is broken (docs/server.md, "Audit log") a change cannot be
  // audited, so it is refused; agents keep syncing (their nodes' work keeps
  // running) and the acknowledgement itself gets through.
  const bool changes = method != "GET" && method != "HEAD" &&
                       !(seg.size() == 2 && seg[0] == "agents") &&
                       !(seg.size() == 2 && seg[0] == "audit" && seg[1] == "acknowledge");
  auto authed = [this, refuse, token_hash, changes, ex](auto fn) {
    owner_->Post([refuse, token_hash, changes, ex, fn = std::move(fn)](Turn& t) mutable {
      std::optional<Principal> p = t.state.Authenticate(token_hash);
      if (!p) {
        refuse(t, "unknown or revoked token");
        return;
      }
      if (changes && !t.state.AuditBroken().empty()) {
        net::Response r = JsonResponse(
            503, json::object{{"error",
                               json::object{{"code", "Unavailable"},
                                            {"message",
                                             "the audit log is broken (" + t.state.AuditBroken() +
                                                 "): changes are refused until a cluster-admin "
                                                 "acknowledges it with `allot audit acknowledge "
                                                 "--reason TEXT`"},
                                            {"field", ""}}}});
        t.Reply(ex, std::move(r));
        return;
      }
      fn(t, *p);
    });
  };
  auto reply_after = [](Turn& t, std::shared_ptr<net::Exchange> ex,
                        net::Response r) {
    t.Reply(std::move(ex), std::move(r));
  };

  // ---- GET /metrics (Prometheus) ---------------------------------------------
  if (path == "/metrics") {
    if (method != "GET") {
      ex->Reply(ErrorResponse(Status::NotFound("no route " + method + " " + path)));
      return;
    }
    authed([ex](Turn& t, const Principal& p) {
      if (p.role != Role::kClusterAdmin && p.role != Role::kMetrics) {
        t.Reply(ex, ErrorResponse(Status::PermissionDenied(
                        "only a cluster-admin or a metrics token (allot token "
                        "create --role metrics) may read /metrics")));
        return;
      }
      metrics::Gauges g;
      t.state.CollectMetrics(&g);
      net::Response r;
      r.content_type = "text/plain; version=0.0.4; charset=utf-8";
      r.body = t.state.metrics()->Render(g.Take());
      t.Reply(ex, std::move(r));
    });
    return;
  }

  // ---- whoami, tokens, audit, apply --------------------------------------
  if (seg.size() == 1 && seg[0] == "whoami" && method == "GET") {
    authed([ex, reply_after](Turn& t, const Principal& p) {
      json::object o;
      o["user"] = p.user;
      o["role"] = ToString(p.role);
      o["tenant"] = p.tenant;
      o["tokenId"] = p.token_id;
      if (!p.node.empty()) o["node"] = p.node;
      reply_after(t, ex, JsonResponse(200, o));
    });
    return;
  }
  if (!seg.empty() && seg[0] == "tokens") {
    if (seg.size() == 1 && method == "GET") {
      authed([ex, reply_after](Turn& t, const Principal& p) {
        if (!MayReadReports(t, ex, p, "tokens")) return;
        json::object o;
        o["items"] = t.state.ListTokens(p);
        reply_after(t, ex, JsonResponse(200, o));
      });
      return;
    }
    if (seg.size() == 1 && method == "POST") {
      // {"user":U,"role":R,"tenant":T,"node":N}
      Status bad;
      std::string user, role_s, tenant, node;
      boost::system::error_code ec;
      json::value v = json::parse(req.body, ec);
      if (ec || !v.is_object()) {
        bad = Status::InvalidArgument(
            "the body must be a JSON object {\"user\",\"role\",\"tenant\",\"node\"}", "body");
      } else if (int dup = KeyCount(req.body, "user") > 1     ? 1
                           : KeyCount(req.body, "role") > 1   ? 2
                           : KeyCount(req.body, "tenant") > 1 ? 3
                           : KeyCount(req.body, "node") > 1   ? 4
                                                              : 0) {
        const char* f = dup == 1 ? "user" : dup == 2 ? "role" : dup == 3 ? "tenant" : "node";
        bad = Status::InvalidArgument("field given twice", f);
      } else {
        for (const auto& [k, val] : v.as_object()) {
          if (!val.is_string()) {
            bad = Status::InvalidArgument(std::string(k) + " must be a string", std::string(k));
            break;
          }
          std::string sv(val.as_string());
          if (k == "user") user = sv;
          else if (k == "role") role_s = sv;
          else if (k == "tenant") tenant = sv;
          else if (k == "node") node = sv;
          else {
            bad = Status::InvalidArgument("unknown field " + std::string(k), std::string(k));
            break;
          }
        }
      }
      authed([ex, reply_after, bad, user, role_s, tenant, node](Turn& t, const Principal& p) {
        Status s = bad;
        Result<std::pair<std::string, std::string>> secret =
            Status::InvalidArgument("unset");
        Result<Role> role = ParseRole(role_s);
        if (s.ok() && !role.ok()) s = role.status();
        if (s.ok()) {
          secret = t.state.CreateToken(p, user, *role, tenant, node, &t.txn);
          s = secret.status();
        }
        t.state.Audit(p.user, p.tenant, "create",
                      "Token for " + user + " (" + role_s +
                          (tenant.empty() ? "" : " " + tenant) +
                          (node.empty() ? "" : " bound to " + node) + ")",
                      Outcome(s), &t.txn);
        if (!s.ok()) {
          reply_after(t, ex, ErrorResponse(s));
          return;
        }
        json::object o;
        o["id"] = secret->first;
        o["token"] = secret->second;
        o["user"] = user;
        o["role"] = role_s;
        o["tenant"] = tenant;
        o["node"] = node;
        reply_after(t, ex, JsonResponse(201, o));
      });
      return;
    }
    if (seg.size() == 2 && method == "DELETE") {
      std::string id = seg[1];
      authed([ex, reply_after, id](Turn& t, const Principal& p) {
        Status s = t.state.RevokeToken(p, id, &t.txn);
        t.state.Audit(p.user, p.tenant, "revoke", "Token " + id, Outcome(s), &t.txn);
        reply_after(t, ex, s.ok() ? JsonResponse(200, json::object{{"revoked", id}})
                                  : ErrorResponse(s));
      });
      return;
    }
  }
  if (!seg.empty() && seg[0] == "tokens" && seg.size() <= 2) {
    ex->Reply(MethodNotAllowed(method, path, seg.size() == 1 ? "GET, POST" : "DELETE"));
    return;
  }
  // ---- GPU telemetry: GET /api/v1/telemetry --------------------------------------
  if (!seg.empty() && seg[0] == "telemetry") {
    if (seg.size() != 1) {
      ex->Reply(ErrorResponse(Status::NotFound("no route " + path)));
      return;
    }
    if (method != "GET") {
      ex->Reply(MethodNotAllowed(method, path, "GET"));
      return;
    }
    Status bad;
    store::RollupFilter f;
    auto num = [&](const char* k, int64_t dflt) { return QueryInt(req, k, dflt, &bad); };
    const int64_t since = num("sinceUnixMs", -1);
    const int64_t until = num("untilUnixMs", -1);
    if (auto it = req.query.find("node"); it != req.query.end()) f.node = it->second;
    if (auto it = req.query.find("uuid"); it != req.query.end()) f.uuid = it->second;
    authed([ex, f, bad, since, until](Turn& t, const Principal& p) mutable {
      if (!MayReadReports(t, ex, p, "telemetry")) return;
      const int64_t now = t.txn.now_unix_ms;
      f.until_unix_ms = until >= 0 ? until : now;
      f.since_unix_ms = since >= 0 ? since : f.until_unix_ms - 3600000;  // Default: the last hour.
      if (bad.ok() && f.until_unix_ms <= f.since_unix_ms) {
        bad = Status::InvalidArgument("untilUnixMs must be after sinceUnixMs", "untilUnixMs");
      }
      if (bad.ok() && f.until_unix_ms - f.since_unix_ms > 31LL * 86400000) {
        bad = Status::InvalidArgument("the window is at most 31 days", "sinceUnixMs");
      }
      if (!bad.ok()) {
        t.Reply(ex, ErrorResponse(bad));
        return;
      }
      // The newest sample of each GPU (not yet in a closed minute), so a
      // page shows current values at once.
      json::object latest;
      for (const auto& [uuid, st] : t.state.LatestTelemetry(f.node)) {
        if (!f.uuid.empty() && uuid != f.uuid) continue;
        const GpuTelemetry& g = st.second;
        latest[uuid] = json::array{st.first, g.utilization_pct, g.temperature_c,
                                   int64_t(g.power_watts + 0.5), g.memory_used_bytes >> 20};
      }
      t.Deliver([ex, f, latest = std::move(latest)](store::Store& store) mutable {
        Result<std::vector<store::RollupRow>> rows = store.ListRollups(f);
        if (!rows.ok()) {
          ex->Reply(ErrorResponse(rows.status()));
          return;
        }
        json::array items;
        for (size_t i = 0; i < rows->size();) {
          const std::string& uuid = (*rows)[i].uuid;
          json::array points;
          std::string node;
          for (; i < rows->size() && (*rows)[i].uuid == uuid; ++i) {
            node = (*rows)[i].node;
            for (const MinutePoint& m : DecodeHour((*rows)[i], f.since_unix_ms, f.until_unix_ms)) {
              points.push_back(json::array{m.t_ms, m.util_pct, m.temp_c, m.power_w, m.fb_used_mib});
            }
          }
          items.push_back(json::object{{"uuid", uuid}, {"node", node}, {"points", std::move(points)}});
        }
        ex->Reply(JsonResponse(200, json::object{
            {"stepMs", 60000},
            {"sinceUnixMs", f.since_unix_ms},
            {"untilUnixMs", f.until_unix_ms},
            {"columns", json::array{"t", "util", "temp", "power", "fbUsedMiB"}},
            {"items", std::move(items)},
            {"latest", std::move(latest)}}));
      });
    });
    return;
  }

  // ---- GET /api/v1/overview: the dashboard's first page in one answer -------
  if (seg.size() == 1 && seg[0] == "overview") {
    if (method != "GET") {
      ex->Reply(MethodNotAllowed(method, path, "GET"));
      return;
    }
    Status bad;
    const int64_t minutes = QueryInt(req, "idleMinutes", 30, &bad);
    authed([ex, bad, minutes](Turn& t, const Principal& p) {
      if (!MayReadReports(t, ex, p, "the overview")) return;
      if (!bad.ok()) {
        t.Reply(ex, ErrorResponse(bad));
        return;
      }
      // As GET /api/v1/usage: at the end of the turn, then the cost of this
      // calendar month (UTC) from the store plus what is still held.
      t.After([ex, minutes, p, &t]() {
        const int64_t now = t.txn.now_unix_ms;
        json::object o = t.state.Overview(p, now, minutes * 60000);
        store::UsageFilter f;
        if (p.role != Role::kClusterAdmin) f.tenant = p.tenant;
        const std::time_t secs = std::time_t(now / 1000);
        std::tm tm{};
        gmtime_r(&secs, &tm);
        tm.tm_mday = 1;
        tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
        f.since_unix_ms = int64_t(timegm(&tm)) * 1000;
        f.until_unix_ms = now;
        DeliverUsage(t, ex, f, t.state.OpenUsage(f.tenant, now),
                     [f, o = std::move(o)](std::vector<store::UsageRow>& rows) mutable {
                       json::object month =
                           UsageReport(rows, UsageBy::kTenant, f.since_unix_ms, f.until_unix_ms);
                       o["thisMonth"] = json::object{{"sinceUnixMs", f.since_unix_ms},
                                                     {"total", std::move(month["total"])}};
                       return JsonResponse(200, o);
                     });
      });
    });
    return;
  }

  // ---- usage and cost: GET /api/v1/usage, GET /api/v1/usage/idle ------------
  if (!seg.empty() && seg[0] == "usage") {
    if (seg.size() > 2 || (seg.size() == 2 && seg[1] != "idle")) {
      ex->Reply(ErrorResponse(Status::NotFound("no route " + path)));
      return;
    }
    if (method != "GET") {
      ex->Reply(MethodNotAllowed(method, path, "GET"));
      return;
    }
    const bool idle = seg.size() == 2;
    Status bad;
    auto num = [&](const char* k, int64_t dflt) { return QueryInt(req, k, dflt, &bad); };
    store::UsageFilter f;
    f.since_unix_ms = num("sinceUnixMs", 0);
    const bool has_until = req.query.count("untilUnixMs") > 0;
    f.until_unix_ms = num("untilUnixMs", f.until_unix_ms);
    const int64_t minutes = num("minutes", 30);
    UsageBy by = UsageBy::kTenant;
    if (auto it = req.query.find("by"); it != req.query.end() && bad.ok()) {
      Result<UsageBy> b = ParseUsageBy(it->second);
      if (b.ok()) by = *b; else bad = b.status();
    }
    if (bad.ok() && has_until && f.until_unix_ms <= f.since_unix_ms) {
      bad = Status::InvalidArgument("untilUnixMs must be after sinceUnixMs", "untilUnixMs");
    }
    std::string tenant;
    if (auto it = req.query.find("tenant"); it != req.query.end()) tenant = it->second;
    authed([ex, f, by, bad, tenant, idle, has_until, minutes](Turn& t, const Principal& p) mutable {
      if (!MayReadReports(t, ex, p, "usage")) return;
      if (!bad.ok()) {
        t.Reply(ex, ErrorResponse(bad));
        return;
      }
      // A tenant's users see their tenant only; another tenant is empty.
      if (p.role != Role::kClusterAdmin) {
        if (!tenant.empty() && tenant != p.tenant) {
          t.Reply(ex, ErrorResponse(Status::NotFound("Tenant " + tenant + " does not exist")));
          return;
        }
        tenant = p.tenant;
      }
      f.tenant = tenant;
      // At the end of the turn, so that what this turn closed is in the
      // store (read after the commit) and not also among the open rows.
      t.After([ex, f, by, idle, has_until, minutes, &t]() mutable {
        const int64_t now = t.txn.now_unix_ms;
        if (!has_until) f.until_unix_ms = now;
        if (idle) {
          json::array items;
          for (const State::IdleHolder& h : t.state.IdleHolders(f.tenant, now, minutes * 60000)) {
            UsageAmounts wasted;
            int64_t gpus_milli = 0;
            for (const store::UsageRow& u : h.rows) {
              UsageAmounts a = Clip(u, h.idle_since_ms, now);
              wasted.gpu_ms += a.gpu_ms;
              wasted.cost_micros += a.cost_micros;
              gpus_milli += u.quantity_milli;
            }
            items.push_back(json::object{
                {"workload", h.key},
                {"idleSinceUnixMs", h.idle_since_ms},
                {"idleMinutes", double(now - h.idle_since_ms) / 60000.0},
                {"gpus", double(gpus_milli) / 1000.0},
                {"wastedGpuHours", double(wasted.gpu_ms) / 3600000.0},
                {"wastedCostMicros", wasted.cost_micros},
                {"wastedCost", double(wasted.cost_micros) / 1e6}});
          }
          t.Reply(ex, JsonResponse(200, json::object{{"minutes", minutes},
                                                     {"items", std::move(items)}}));
          return;
        }
        DeliverUsage(t, ex, f, t.state.OpenUsage(f.tenant, now),
                     [f, by](std::vector<store::UsageRow>& rows) {
                       return JsonResponse(200, UsageReport(rows, by, f.since_unix_ms,
                                                            f.until_unix_ms));
                     });
      });
    });
    return;
  }
  // POST /api/v1/audit/acknowledge {"reason": TEXT}: a cluster-admin
  // accepts a broken tail (docs/server.md, "Audit log").
  if (seg.size() == 2 && seg[0] == "audit" && seg[1] == "acknowledge") {
    if (method != "POST") {
      ex->Reply(MethodNotAllowed(method, path, "POST"));
      return;
    }
    boost::system::error_code ec;
    json::value body = json::parse(req.body, ec);
    const json::value* reason_v =
        !ec && body.is_object() ? body.as_object().if_contains("reason") : nullptr;
    if (reason_v == nullptr || !reason_v->is_string() || reason_v->as_string().empty() ||
        body.as_object().size() != 1) {
      ex->Reply(ErrorResponse(Status::InvalidArgument(
          "the body must be {\"reason\": TEXT}: why the break is accepted", "reason")));
      return;
    }
    std::string reason(reason_v->as_string());
    if (reason.size() > 1024) {
      ex->Reply(ErrorResponse(
          Status::InvalidArgument("reason: at most 1024 bytes", "reason")));
      return;
    }
    authed([ex, reason](Turn& t, const Principal& p) {
      if (p.role != Role::kClusterAdmin) {
        Status s = Status::PermissionDenied("only a cluster-admin may acknowledge the audit log");
        t.state.Audit(p.user, p.tenant, "acknowledge", "AuditLog", Outcome(s), &t.txn);
        t.Reply(ex, ErrorResponse(s));
        return;
      }
      const std::string what = t.state.AuditBroken();
      Status s = t.state.AcknowledgeAuditBreak(p, reason, &t.txn);
      if (!s.ok()) {
        t.Reply(ex, ErrorResponse(s));
        return;
      }
      std::fprintf(stderr, "allot: audit log break acknowledged by %s (%s): %s\n",
                   ForLog(p.user).c_str(), ForLog(reason).c_str(), what.c_str());
      t.Reply(ex, JsonResponse(200, json::object{{"acknowledged", what},
                                                 {"record", t.state.AuditHead().first}}));
    });
    return;
  }
  if (!seg.empty() && (seg[0] == "audit" || seg[0] == "whoami") &&
      method != "GET") {
    ex->Reply(MethodNotAllowed(method, path, "GET"));
    return;
  }
  if (!seg.empty() && seg[0] == "audit" && method == "GET") {
    store::AuditFilter f;
    Status bad;
    if (req.query.count("sinceUnixMs")) f.since_unix_ms = QueryInt(req, "sinceUnixMs", 0, &bad);
    if (req.query.count("untilUnixMs")) f.until_unix_ms = QueryInt(req, "untilUnixMs", 0, &bad);
    f.after_seq = QueryInt(req, "after", f.after_seq, &bad);
    f.limit = QueryInt(req, "limit", f.limit, &bad);
    if (auto it = req.query.find("principal"); it != req.query.end()) f.principal = it->second;
    if (auto it = req.query.find("tenant"); it != req.query.end()) f.tenant = it->second;
    if (auto it = req.query.find("verb"); it != req.query.end()) f.verb = it->second;
    bool verify = seg.size() == 2 && seg[1] == "verify";
    if (seg.size() > 2 || (seg.size() == 2 && !verify)) {
      ex->Reply(ErrorResponse(Status::NotFound("no route " + path)));
      return;
    }
    authed([ex, f, bad, verify](Turn& t, const Principal& p) {
      if (p.role != Role::kClusterAdmin) {
        t.Reply(ex, ErrorResponse(Status::PermissionDenied(
                        "only a cluster-admin may read the audit log")));
        return;
      }
      if (!bad.ok()) {
        t.Reply(ex, ErrorResponse(bad));
        return;
      }
      // After the commit: the log then holds everything written up to
      // this turn, and memory's head at the end of this turn is the store's.
      t.After([ex, f, verify, &t] {
        t.Deliver([ex, f, verify, head = t.state.AuditHead(),
                   broken = t.state.AuditBroken()](store::Store& store) {
        if (!verify) {
          Result<std::vector<store::AuditRow>> rows = store.ListAudit(f);
          if (!rows.ok()) {
            ex->Reply(ErrorResponse(rows.status()));
            return;
          }
          json::array items;
          for (const store::AuditRow& r : *rows) items.push_back(AuditJson(r));
          ex->Reply(JsonResponse(200, json::object{{"items", std::move(items)}}));
          return;
        }
        Result<std::vector<store::AuditRow>> rows = store.ListAudit({});
        if (!rows.ok()) {
          ex->Reply(ErrorResponse(rows.status()));
          return;
        }
        Status s = VerifyAuditChain(*rows, head);
        if (s.ok() && !broken.empty()) s = Status::FailedPrecondition(broken);
        json::object o;
        o["ok"] = s.ok();
        o["records"] = rows->size();
        if (!s.ok()) o["error"] = s.message();
        ex->Reply(JsonResponse(200, o));
        });
      });
    });
    return;
  }
  if (seg.size() == 1 && seg[0] == "apply") {
    if (method != "POST") {
      ex->Reply(MethodNotAllowed(method, path, "POST"));
      return;
    }
    auto body = std::make_shared<Body>(ParseBody(req, false));
    authed([ex, reply_after, body](Turn& t, const Principal& p) {
      Status s = body->status;
      json::array items;
      if (s.ok()) {
        Result<std::vector<ApplyResult>> r =
            t.state.Apply(p, std::move(body->config), &t.txn);
        s = r.status();
        if (r.ok()) {
          for (const ApplyResult& a : *r) {
            json::object o;
            o["kind"] = a.key == "SchedulerConfig" ? "SchedulerConfig" : KindName(a.kind);
            o["name"] = a.key;
            o["action"] = a.action;
            items.push_back(std::move(o));
          }
        }
      }
      t.state.Audit(p.user, p.tenant, "apply",
                    std::to_string(items.size()) + " object(s)", Outcome(s), &t.txn);
      reply_after(t, ex, s.ok() ? JsonResponse(200, json::object{{"results", std::move(items)}})
                                : ErrorResponse(s));
    });
    return;
  }

  if (seg.size() == 3 && seg[0] == "nodes" && method != "POST") {
    ex->Reply(MethodNotAllowed(method, path, "POST"));
    return;
  }
  if (seg.size() == 3 && seg[0] == "nodes" && method == "POST") {
    std::string node = seg[1], action = seg[2];
    authed([ex, reply_after, node, action](Turn& t, const Principal& p) {
      Status s = t.state.NodeAction(p, node, action, &t.txn);
      t.state.Audit(p.user, p.tenant, action, "Node " + node, Outcome(s), &t.txn);
      std::string done = action == "drain" ? "drained" : action + "ed";
      reply_after(t, ex, s.ok() ? JsonResponse(200, json::object{{"result", done}})
                                : ErrorResponse(s));
    });
    return;
  }

  // ---- pod logs: GET /api/v1/workloads/TENANT/NAME/log -------------------
  if (seg.size() == 4 && seg[0] == "workloads" && seg[3] == "log") {
    if (method != "GET") {
      ex->Reply(MethodNotAllowed(method, path, "GET"));
      return;
    }
    Status bad;
    auto num = [&](const char* k, int64_t lo, int64_t hi, int64_t def) -> int64_t {
      auto it = req.query.find(k);
      if (it == req.query.end() || !bad.ok()) return def;
      Result<int64_t> v = ParseInt(it->second, k);
      if (v.ok() && (*v < lo || *v > hi)) {
        v = Status::InvalidArgument(std::string(k) + " must be " + std::to_string(lo) +
                                        " to " + std::to_string(hi),
                                    k);
      }
      if (!v.ok()) bad = v.status();
      return v.ok() ? *v : def;
    };
    const int64_t rank = num("pod", 0, 1000000, 0);
    const int64_t attempt = num("attempt", 1, 1000000, 0);  // 0: the current one.
    const int64_t offset = num("offset", 0, int64_t(1) << 50, -1);  // -1: tail.
    const int64_t limit = num("limit", 1, 1 << 20, 64 << 10);
    const std::string key = seg[1] + "/" + seg[2];
    authed([this, ex, reply_after, bad, key, rank, attempt, offset, limit](
               Turn& t, const Principal& p) {
      if (!MayReadReports(t, ex, p, "workload logs")) return;
      Result<State::PodLogTarget> target =
          bad.ok() ? t.state.LogTarget(p, key, int32_t(rank), int32_t(attempt))
                   : Result<State::PodLogTarget>(bad);
      if (!target.ok()) {
        reply_after(t, ex, ErrorResponse(target.status()));
        return;
      }
      broker_.AskLog(t, ex, target->node, target->pod_id, target->finished, offset, limit,
                     p.token_id);
    });
    return;
  }

  // ---- node agents: POST /api/v1/agents/sync?wait=SECONDS --------------
  // and the answers to log reads: POST /api/v1/agents/logs
  if (seg.size() == 2 && seg[0] == "agents" && seg[1] == "logs") {
    if (method != "POST") {
      ex->Reply(MethodNotAllowed(method, path, "POST"));
      return;
    }
    auto body = std::make_shared<Result<proto::LogAnswers>>(proto::DecodeLogAnswers(req.body));
    if (!body->ok()) {
      ex->Reply(ErrorResponse(body->status()));
      return;
    }
    authed([this, ex, reply_after, body](Turn& t, const Principal& p) {
      if (p.role != Role::kNode && p.role != Role::kClusterAdmin) {
        reply_after(t, ex, ErrorResponse(Status::PermissionDenied(
                               "only a node token may answer log reads")));
        return;
      }
      const std::string node = (*body)->node;
      if (!MayActAsNode(p, node)) {
        Status s = Status::PermissionDenied("this node token is bound to node " + p.node +
                                            "; it may not answer for node " + node);
        t.state.Audit(p.user, p.tenant, "logs", "Node " + node, Outcome(s), &t.txn);
        reply_after(t, ex, ErrorResponse(s));
        return;
      }
      const int answered = broker_.AnswerLogs(t, node, (*body)->logs);
      reply_after(t, ex, JsonResponse(200, json::object{{"answered", answered}}));
    });
    return;
  }
  if (!seg.empty() && seg[0] == "agents") {
    if (seg.size() != 2 || seg[1] != "sync") {
      ex->Reply(ErrorResponse(Status::NotFound("no route " + path)));
      return;
    }
    if (method != "POST") {
      ex->Reply(MethodNotAllowed(method, path, "POST"));
      return;
    }
    auto report = std::make_shared<Result<AgentReport>>(ParseAgentReport(req.body));
    int64_t wait_ms = 0;
    if (auto it = req.query.find("wait"); it != req.query.end()) {
      Result<int64_t> w = ParseInt(it->second, "wait");
      if (!w.ok() || *w < 0 || *w > 300) {
        ex->Reply(ErrorResponse(Status::InvalidArgument(
            "wait must be 0 to 300 seconds", "wait")));
        return;
      }
      wait_ms = std::min(*w * 1000, max_hold_ms_);
    }
    authed([this, ex, reply_after, report, wait_ms](Turn& t, const Principal& p) {
      if (!report->ok()) {
        t.state.Audit(p.user, p.tenant, "sync", "Node ?", Outcome(report->status()),
                      &t.txn);
        reply_after(t, ex, ErrorResponse(report->status()));
        return;
      }
      AgentReport& r = **report;
      const std::string node = r.node.name;
      std::set<std::string> reported;
      bool exits = false;
      for (const PodReport& pr : r.pods) {
        if (pr.exited) exits = true;
        else reported.insert(pr.id);
      }
      bool registered = false;
      Status s = t.state.AgentSync(p, std::move(r), &t.txn, &registered);
      if (!s.ok() || registered) {
        t.state.Audit(p.user, p.tenant, "sync", "Node " + node, Outcome(s), &t.txn);
      }
      if (!s.ok()) {
        reply_after(t, ex, ErrorResponse(s));
        return;
      }
      // Answer now when the agent has something to do or to forget, else
      // hold the request until its pods change or `wait` runs out.
      broker_.Sync(t, ex, node, reported, exits, wait_ms, p.token_id);
    });
    return;
  }

  // ---- resources: /api/v1/{plural}[/{tenant}]/{name} -----------------------
  Result<Kind> kind_r = seg.empty() ? Result<Kind>(Status::NotFound("no route " + path))
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
        "no route " + path + (IsNamespaced(kind)
                                  ? ": use /api/v1/" + seg[0] + "/TENANT/NAME"
                                  : ": use /api/v1/" + seg[0] + "/NAME"))));
    return;
  }
  const bool collection = seg.size() == 1;
  const std::string key =
      collection ? "" : (key_parts == 2 ? seg[1] + "/" + seg[2] : seg[1]);

  if (collection && method == "GET") {
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
      if (st.ok()) o.state = *st; else bad = st.status();
    }
    if (!q("label").empty()) {
      for (const std::string& kv : Split(q("label"), ',')) {
        size_t eq = kv.find('=');
        if (eq == std::string::npos || eq == 0) {
          bad = Status::InvalidArgument("label must be k=v[,k=v...], not '" + q("label") + "'", "label");
          break;
        }
        o.labels[kv.substr(0, eq)] = kv.substr(eq + 1);
      }
    }
    if (!q("limit").empty() && bad.ok()) {
      Result<int64_t> n = ParseInt(q("limit"), "limit");
      if (n.ok()) o.limit = *n; else bad = n.status();
    }
    o.after = q("continue");
    bool watch = QueryFlag(q("watch"));
    std::optional<int64_t> from_rv;
    if (!q("resourceVersion").empty() && bad.ok()) {
      Result<int64_t> n = ParseInt(q("resourceVersion"), "resourceVersion");
      if (n.ok()) from_rv = *n; else bad = n.status();
    }
    authed([ex, reply_after, kind, o, bad, watch, from_rv](Turn& t, const Principal& p) {
      if (!bad.ok()) {
        reply_after(t, ex, ErrorResponse(bad));
        return;
      }
      if (!MayReadReports(t, ex, p, KindPlural(kind))) return;
      if (!watch) {
        Result<std::string> body = t.state.List(p, kind, o, t.txn.now_unix_ms);
        if (!body.ok()) {
          reply_after(t, ex, ErrorResponse(body.status()));
          return;
        }
        net::Response r;
        r.body = std::move(*body);
        r.body += '\n';
        reply_after(t, ex, std::move(r));
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
  if (collection && method == "POST") {
    auto body = std::make_shared<Body>(ParseBody(req, false));
    authed([ex, reply_after, body, kind](Turn& t, const Principal& p) {
      Status s = body->status;
      std::string name;
      if (s.ok()) {
        // The key of what is created, for the reply and the audit (read
        // before the body is moved; no copy of it on the owner thread).
        const core::Config& c = body->config;
        for (const auto& w : c.workloads) name = w.Key();
        for (const auto& x : c.local_queues) name = x.ns + "/" + x.name;
        auto any = [&](const auto& v) { for (const auto& x : v) name = x.name; };
        any(c.flavors); any(c.cohorts); any(c.cluster_queues);
        any(c.priority_classes); any(c.namespaces); any(c.nodes);
        s = t.state.Create(p, kind, std::move(body->config), &t.txn);
      }
      t.state.Audit(p.user, p.tenant, "create", std::string(KindName(kind)) + " " + name,
                    Outcome(s), &t.txn);
      if (!s.ok()) {
        reply_after(t, ex, ErrorResponse(s));
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
  if (!collection && method == "GET") {
    authed([ex, kind, key](Turn& t, const Principal& p) {
      if (!MayReadReports(t, ex, p, KindPlural(kind))) return;
      t.After([ex, kind, key, p, &t] {
        Result<json::object> o = t.state.Get(p, kind, key);
        t.Reply(ex, o.ok() ? JsonResponse(200, *o) : ErrorResponse(o.status()));
      });
    });
    return;
  }
  if (!collection && method == "PUT") {
    auto body = std::make_shared<Body>(ParseBody(req, true));
    authed([ex, reply_after, body, kind, key](Turn& t, const Principal& p) {
      Status s = body->status;
      if (s.ok()) {
        s = t.state.Replace(p, kind, key, std::move(body->config),
                            body->expected_rv, &t.txn);
      }
      t.state.Audit(p.user, p.tenant, "replace", std::string(KindName(kind)) + " " + key,
                    Outcome(s), &t.txn);
      if (!s.ok()) {
        reply_after(t, ex, ErrorResponse(s));
        return;
      }
      t.After([ex, kind, key, p, &t] {
        Result<json::object> o = t.state.Get(p, kind, key);
        t.Reply(ex, o.ok() ? JsonResponse(200, *o) : ErrorResponse(o.status()));
      });
    });
    return;
  }
  if (!collection && method == "DELETE") {
    bool drain = false;
    if (auto it = req.query.find("drain"); it != req.query.end()) drain = QueryFlag(it->second);
    authed([ex, reply_after, kind, key, drain](Turn& t, const Principal& p) {
      Status s = t.state.Delete(p, kind, key, drain, &t.txn);
      t.state.Audit(p.user, p.tenant, drain ? "delete (drain)" : "delete",
                    std::string(KindName(kind)) + " " + key, Outcome(s), &t.txn);
      reply_after(t, ex, s.ok() ? JsonResponse(200, json::object{{"deleted", key}})
                                : ErrorResponse(s));
    });
    return;
  }
  ex->Reply(MethodNotAllowed(method, path,
                             collection ? "GET, POST" : "GET, PUT, DELETE"));
}

}  // namespace allot::server
