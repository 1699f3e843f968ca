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

#include "core/generate_name.h"
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
    // A name to be generated: the prefix with a suffix, as it will be.
    const bool generated = x.name.empty() && !x.generate_name.empty();
    const std::string name =
        generated ? core::GenerateName(x.generate_name, [] { return 0; })
                  : x.name;
    const std::string field = generated ? "metadata.generateName" : "metadata.name";
    bool ok = label_only ? IsDnsLabel(name) : IsDnsSubdomain(name);
    if (!ok) {
      return Status::InvalidArgument(
          x.source.Describe(generated ? x.generate_name + "*" : x.name) + ": " +
              field + ": '" + (generated ? x.generate_name : x.name) + "' " +
              (generated ? "does not make" : "is not") + " a DNS-1123 " +
              (label_only ? "label" : "subdomain") +
              " (lower-case letters, digits and '-'" +
              (label_only ? ", at most 63" : " and '.', at most 253") +
              " characters, starting and ending with a letter or digit)",
          field);
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
  ALLOT_RETURN_IF_ERROR(CheckNames(c.topologies, false));
  ALLOT_RETURN_IF_ERROR(CheckNames(c.images, false));
  ALLOT_RETURN_IF_ERROR(CheckNames(c.cohorts, false));
  ALLOT_RETURN_IF_ERROR(CheckNames(c.cluster_queues, false));
  ALLOT_RETURN_IF_ERROR(CheckNames(c.local_queues, true));
  ALLOT_RETURN_IF_ERROR(CheckNames(c.priority_classes, false));
  ALLOT_RETURN_IF_ERROR(CheckNames(c.namespaces, true));
  ALLOT_RETURN_IF_ERROR(CheckNames(c.nodes, false));
  ALLOT_RETURN_IF_ERROR(CheckNames(c.node_pools, false));
  ALLOT_RETURN_IF_ERROR(CheckNames(c.workloads, true));
  return Status::Ok();
}

std::string Bearer(const net::Request& req) {
  const std::string& h = req.Header("authorization");
  if (h.size() > 7 && (h.compare(0, 7, "Bearer ") == 0 ||
                       h.compare(0, 7, "bearer ") == 0)) {
    return h.substr(7);
  }
  return "";
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
  void Tunnel(net::TunnelTarget target) override { inner_->Tunnel(std::move(target)); }

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
  if (path.starts_with("/notebooks/")) return "/notebooks";
  const std::string prefix = "/api/v1/";
  if (path.compare(0, prefix.size(), prefix) != 0) return "other";
  std::vector<std::string> seg = Split(path.substr(prefix.size()), '/');
  static const std::set<std::string> kTop = {"whoami", "tokens", "audit", "apply",
                                             "agents", "usage", "telemetry", "overview",
                                             "secrets"};
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

// Authenticated requests only: audits and refuses (401) one whose token is
// not live. Owner thread.
void Refuse(Turn& t, const std::shared_ptr<net::Exchange>& ex, const std::string& why) {
  const net::Request& rq = ex->request();
  t.state.Audit("-", "", "authenticate", rq.method + " " + rq.path,
                "401 " + why, &t.txn);
  t.Reply(ex, ErrorResponse(Status::Unauthenticated(
                  why + ": send 'Authorization: Bearer TOKEN' (allot token create)")));
}

}  // namespace

Body ParseBody(const net::Request& req, bool want_rv, bool skip_unsupported) {
  Body b;
  if (req.body.empty()) {
    b.status = Status::InvalidArgument("the request has no body", "body");
    return b;
  }
  b.status = core::ParseManifests(req.body, "request body", &b.config, {},
                                  skip_unsupported ? &b.skipped : nullptr);
  if (b.status.ok()) b.status = CheckAllNames(b.config);
  for (const core::NodePool& p : b.config.node_pools) {
    if (!b.status.ok() || p.provider.type != core::PoolProvider::Type::kSimulated) continue;
    b.status = Status::InvalidArgument(
        p.source.Describe(p.name) +
            ": spec.provider.type: simulated pools are allot simulate's; the server runs "
            "type exec (admin programs) and local (agents on this machine)",
        "spec.provider.type");
  }
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

int64_t QueryInt(const net::Request& req, const char* k, int64_t dflt, Status* bad) {
  auto it = req.query.find(k);
  if (it == req.query.end() || !bad->ok()) return dflt;
  Result<int64_t> v = ParseInt(it->second, k);
  if (!v.ok()) *bad = v.status();
  return v.ok() ? *v : dflt;
}

std::string Outcome(const Status& s) {
  if (s.ok()) return "ok";
  std::string m = s.message();
  if (m.size() > 200) m = m.substr(0, 200) + "...";
  return std::to_string(HttpStatusFor(s.code())) + " " + m;
}

net::Response Http(int status, const char* code, const std::string& message,
                   const std::string& field) {
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

Result<AgentReport> ParseAgentReport(const std::string& body) {
  Result<AgentReport> r = proto::DecodeAgentReport(body);
  if (!r.ok()) return r;
  ALLOT_RETURN_IF_ERROR(CheckNames(std::vector<core::Node>{r->node}, false));
  return r;
}

void Authed::operator()(Gate gate, Fn fn) const {
  owner_->Post([ex = ex_, token_hash = token_hash_, changes = changes_, gate = std::move(gate),
                fn = std::move(fn)](Turn& t) {
    std::optional<Principal> p = t.state.Authenticate(token_hash);
    if (!p) {
      Refuse(t, ex, "unknown or revoked token");
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
    if (Status s = RouteAllows(gate.route, *p, gate.what); !s.ok()) {
      if (!gate.audit_verb.empty()) {
        t.state.Audit(p->user, p->tenant, gate.audit_verb, gate.audit_object, Outcome(s),
                      &t.txn);
      }
      t.Reply(ex, ErrorResponse(s));
      return;
    }
    fn(t, *p);
  });
}

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

net::Response TimeoutResponse(const std::string& message) {
  json::object e{{"code", "Timeout"}, {"message", message}, {"field", ""}};
  return JsonResponse(504, json::object{{"error", std::move(e)}});
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
  // Notebooks through the proxy: their own sign-in (api_notebooks.cc).
  if (path.starts_with("/notebooks/")) {
    HandleNotebook(ex);
    return;
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
  if (token.empty() || !tokens_->Find(token_hash)) {
    std::string why = token.empty() ? "no bearer token" : "unknown or revoked token";
    owner_->Post([ex, why](Turn& t) { Refuse(t, ex, why); });
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
  Route(ApiCall{ex, req, path, seg, method, Authed(owner_, ex, token_hash, changes)});
}

// The if-chain of routes; each area's handlers live in their own file
// (api_objects.cc, api_agents.cc, api_admin.cc, api_usage.cc).
void Api::Route(const ApiCall& c) {
  const auto& [ex, req, path, seg, method, authed] = c;
  // ---- GET /metrics (Prometheus) ---------------------------------------------
  if (path == "/metrics") {
    HandleMetrics(c);
    return;
  }

  // ---- whoami, tokens, audit, apply --------------------------------------
  if (seg.size() == 1 && seg[0] == "whoami" && method == "GET") {
    HandleWhoami(c);
    return;
  }
  if (!seg.empty() && seg[0] == "tokens" && seg.size() <= 2) {
    HandleTokens(c);
    return;
  }
  // ---- tenants' Secrets: /api/v1/secrets[/TENANT[/NAME]] -------------------
  if (!seg.empty() && seg[0] == "secrets") {
    HandleSecrets(c);
    return;
  }
  // ---- GPU telemetry: GET /api/v1/telemetry --------------------------------------
  if (!seg.empty() && seg[0] == "telemetry") {
    HandleTelemetry(c);
    return;
  }

  // ---- GET /api/v1/overview: the dashboard's first page in one answer -------
  if (seg.size() == 1 && seg[0] == "overview") {
    HandleOverview(c);
    return;
  }

  // ---- usage and cost: GET /api/v1/usage, GET /api/v1/usage/idle ------------
  if (!seg.empty() && seg[0] == "usage") {
    HandleUsage(c);
    return;
  }
  // POST /api/v1/audit/acknowledge {"reason": TEXT}: a cluster-admin
  // accepts a broken tail (docs/server.md, "Audit log").
  if (seg.size() == 2 && seg[0] == "audit" && seg[1] == "acknowledge") {
    HandleAuditAcknowledge(c);
    return;
  }
  if (!seg.empty() && (seg[0] == "audit" || seg[0] == "whoami") &&
      method != "GET") {
    ex->Reply(MethodNotAllowed(method, path, "GET"));
    return;
  }
  if (!seg.empty() && seg[0] == "audit" && method == "GET") {
    HandleAuditRead(c);
    return;
  }
  if (seg.size() == 1 && seg[0] == "apply") {
    HandleApply(c);
    return;
  }

  if (seg.size() == 3 && seg[0] == "nodes" && method != "POST") {
    ex->Reply(MethodNotAllowed(method, path, "POST"));
    return;
  }
  if (seg.size() == 3 && seg[0] == "nodes" && method == "POST") {
    HandleNodeAction(c);
    return;
  }

  // ---- parking: POST /api/v1/workloads/TENANT/NAME/{park,resume,wake,activity}
  if (!seg.empty() && seg[0] == "workloads" &&
      ((seg.size() == 4 && (seg[3] == "park" || seg[3] == "resume" || seg[3] == "wake" ||
                            seg[3] == "activity" || seg[3] == "open")) ||
       (seg.size() == 3 && (seg[2].ends_with(":park") || seg[2].ends_with(":resume") ||
                            seg[2].ends_with(":wake") || seg[2].ends_with(":activity") ||
                            seg[2].ends_with(":open"))))) {
    HandleWorkloadAction(c);
    return;
  }

  // ---- pod logs: GET /api/v1/workloads/TENANT/NAME/log -------------------
  if (seg.size() == 4 && seg[0] == "workloads" && seg[3] == "log") {
    HandlePodLog(c);
    return;
  }

  // ---- node agents: POST /api/v1/agents/sync?wait=SECONDS --------------
  // and the answers to log reads: POST /api/v1/agents/logs
  if (seg.size() == 2 && seg[0] == "agents" && seg[1] == "logs") {
    HandleAgentLogs(c);
    return;
  }
  if (!seg.empty() && seg[0] == "agents") {
    HandleAgentSync(c);
    return;
  }

  HandleObject(c);
}

}  // namespace allot::server
