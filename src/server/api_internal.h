// What the API's files share (api.cc: the router and these helpers;
// api_objects.cc, api_agents.cc, api_admin.cc, api_usage.cc: the handlers).
// Internal to src/server.
//
// Threads: a handler runs on a network thread: it may read its request and
// reply at once (a 4xx found before the state is needed), and posts the rest
// to the owner through ApiCall::authed; what it posts runs on the owner
// thread with the Turn, and replies with Turn::Reply (after the commit).
// The helpers below are pure unless they take a Turn (owner thread).
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/manifest.h"
#include "net/http.h"
#include "server/access.h"
#include "server/owner.h"

namespace allot::server {

// `v` serialized, with a trailing newline, as a response with `status`.
net::Response JsonResponse(int status, const boost::json::value& v);

// What a handler's work is, as the route table knows it (server/access.h),
// and what a refusal says and records.
struct Gate {
  Route route;
  // Completes the refusal's message: "read tokens", "cordon nodes".
  std::string what;
  // When set, a refusal is audited with this verb and object (the routes
  // that change something audit every attempt).
  std::string audit_verb;
  std::string audit_object;
};

// Posts a command to the owner that authenticates the request's token
// again (it may have been revoked since the network thread looked; 401 and
// an audit record then), refuses a change (503) while the audit chain is
// broken, refuses (403) a principal whose role the route table does not
// allow on `gate.route`, and otherwise runs `fn` with the principal. Any
// thread.
class Authed {
 public:
  using Fn = std::function<void(Turn&, const Principal&)>;
  Authed(Owner* owner, std::shared_ptr<net::Exchange> ex,
         std::string token_hash, bool changes)
      : owner_(owner),
        ex_(std::move(ex)),
        token_hash_(std::move(token_hash)),
        changes_(changes) {}
  void operator()(Gate gate, Fn fn) const;

 private:
  Owner* owner_;
  std::shared_ptr<net::Exchange> ex_;
  std::string token_hash_;
  bool changes_;  // A change: refused while the audit chain is broken.
};

// One routed request under /api/v1/ (or /metrics) with a live token, as the
// router saw it: `seg` is the path after /api/v1/ split at '/'. Handlers
// take it apart with `const auto& [ex, req, path, seg, method, authed] = c;`.
struct ApiCall {
  std::shared_ptr<net::Exchange> ex;
  const net::Request& req;
  const std::string& path;
  const std::vector<std::string>& seg;
  const std::string& method;
  Authed authed;
};

// The handlers of the routes (Api::Route picks one), by file.
// api_admin.cc
void HandleWhoami(const ApiCall& c);
void HandleTokens(const ApiCall& c);  // /tokens and /tokens/ID.
void HandleAuditAcknowledge(const ApiCall& c);
void HandleAuditRead(const ApiCall& c);  // GET /audit and /audit/verify.
// api_usage.cc
void HandleMetrics(const ApiCall& c);
void HandleTelemetry(const ApiCall& c);
// api_secrets.cc
void HandleSecrets(const ApiCall& c);
void HandleOverview(const ApiCall& c);
void HandleUsage(const ApiCall& c);
// api_objects.cc
void HandleApply(const ApiCall& c);
// POST /api/v1/workloads/TENANT/NAME/{park,resume} (or NAME:park,
// NAME:resume): api_parking.cc.
void HandleObject(
    const ApiCall& c);  // /KIND[/TENANT]/NAME; 404 for anything else.

// The body of a create, replace or apply, parsed on the network thread.
struct Body {
  Status status;
  core::Config config;
  std::optional<int64_t> expected_rv;
  // Documents of kinds Allot does not run, left out (`skip_unsupported`).
  std::vector<core::SkippedDocument> skipped;
};
// With `skip_unsupported` (apply's ?skipUnsupported=true), documents of
// kinds Allot does not run are listed in Body::skipped instead of refused.
Body ParseBody(const net::Request& req, bool want_rv,
               bool skip_unsupported = false);
// The body of POST /api/v1/agents/sync (proto::DecodeAgentReport), its
// node's names checked as every other object's are.
Result<AgentReport> ParseAgentReport(const std::string& body);

std::vector<std::string> Split(const std::string& s, char sep);
Result<int64_t> ParseInt(const std::string& v, const char* field);
// Query parameter `k` of `req` as a non-negative integer, or `dflt` when it
// is absent; a malformed one sets *bad (the first error wins) and gives dflt.
int64_t QueryInt(const net::Request& req, const char* k, int64_t dflt,
                 Status* bad);
// An audit record's outcome: "ok", or the HTTP status and the message.
std::string Outcome(const Status& s);
// {"error":{"code","message","field"}} with `status`.
net::Response Http(int status, const char* code, const std::string& message,
                   const std::string& field = "");
net::Response MethodNotAllowed(const std::string& method,
                               const std::string& path,
                               const std::string& allow);

}  // namespace allot::server
