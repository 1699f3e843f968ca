// The API's handlers for tokens, whoami and the audit log.
// Network threads: each parses and checks its request, then posts its work
// to the owner through ApiCall::authed (api_internal.h).
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

namespace {

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

}  // namespace

void HandleWhoami(const ApiCall& c) {
  const auto& [ex, req, path, seg, method, authed] = c;
  authed(Gate{Route::kWhoami, "", "", ""}, [ex](Turn& t, const Principal& p) {
    json::object o;
    o["user"] = p.user;
    o["role"] = ToString(p.role);
    o["tenant"] = p.tenant;
    o["tokenId"] = p.token_id;
    if (!p.node.empty()) o["node"] = p.node;
    t.Reply(ex, JsonResponse(200, o));
  });
  return;
}

void HandleTokens(const ApiCall& c) {
  const auto& [ex, req, path, seg, method, authed] = c;
  if (seg.size() == 1 && method == "GET") {
    authed(Gate{Route::kTokens, "read tokens", "", ""}, [ex](Turn& t, const Principal& p) {
      json::object o;
      o["items"] = t.state.ListTokens(p);
      t.Reply(ex, JsonResponse(200, o));
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
          "the body must be a JSON object "
          "{\"user\",\"role\",\"tenant\",\"node\"}",
          "body");
    } else if (int dup = KeyCount(req.body, "user") > 1     ? 1
                         : KeyCount(req.body, "role") > 1   ? 2
                         : KeyCount(req.body, "tenant") > 1 ? 3
                         : KeyCount(req.body, "node") > 1   ? 4
                                                            : 0) {
      const char* f = dup == 1   ? "user"
                      : dup == 2 ? "role"
                      : dup == 3 ? "tenant"
                                 : "node";
      bad = Status::InvalidArgument("field given twice", f);
    } else {
      for (const auto& [k, val] : v.as_object()) {
        if (!val.is_string()) {
          bad = Status::InvalidArgument(std::string(k) + " must be a string",
                                        std::string(k));
          break;
        }
        std::string sv(val.as_string());
        if (k == "user")
          user = sv;
        else if (k == "role")
          role_s = sv;
        else if (k == "tenant")
          tenant = sv;
        else if (k == "node")
          node = sv;
        else {
          bad = Status::InvalidArgument("unknown field " + std::string(k),
                                        std::string(k));
          break;
        }
      }
    }
    const std::string object = "Token for " + user + " (" + role_s +
                               (tenant.empty() ? "" : " " + tenant) +
                               (node.empty() ? "" : " bound to " + node) + ")";
    Gate gate{Route::kTokens, "create tokens", "create", object};
    authed(std::move(gate), [ex, bad, user, role_s, tenant, node, object](Turn& t,
                                                                          const Principal& p) {
      Status s = bad;
      Result<std::pair<std::string, std::string>> secret =
          Status::InvalidArgument("unset");
      Result<Role> role = ParseRole(role_s);
      if (s.ok() && !role.ok()) s = role.status();
      if (s.ok()) s = MayCreateToken(p, *role, tenant);
      if (s.ok()) {
        secret = t.state.CreateToken(user, *role, tenant, node, &t.txn);
        s = secret.status();
      }
      t.state.Audit(p.user, p.tenant, "create", object, Outcome(s), &t.txn);
      if (!s.ok()) {
        t.Reply(ex, ErrorResponse(s));
        return;
      }
      json::object o;
      o["id"] = secret->first;
      o["token"] = secret->second;
      o["user"] = user;
      o["role"] = role_s;
      o["tenant"] = tenant;
      o["node"] = node;
      t.Reply(ex, JsonResponse(201, o));
    });
    return;
  }
  if (seg.size() == 2 && method == "DELETE") {
    std::string id = seg[1];
    Gate gate{Route::kTokens, "revoke tokens", "revoke", "Token " + id};
    authed(std::move(gate), [ex, id](Turn& t, const Principal& p) {
      Status s = MayRevokeToken(p, id, t.state);
      if (s.ok()) s = t.state.RevokeToken(id, &t.txn);
      t.state.Audit(p.user, p.tenant, "revoke", "Token " + id, Outcome(s),
                    &t.txn);
      t.Reply(ex, s.ok() ? JsonResponse(200, json::object{{"revoked", id}})
                         : ErrorResponse(s));
    });
    return;
  }
  ex->Reply(
      MethodNotAllowed(method, path, seg.size() == 1 ? "GET, POST" : "DELETE"));
}

void HandleAuditAcknowledge(const ApiCall& c) {
  const auto& [ex, req, path, seg, method, authed] = c;
  if (method != "POST") {
    ex->Reply(MethodNotAllowed(method, path, "POST"));
    return;
  }
  boost::system::error_code ec;
  json::value body = json::parse(req.body, ec);
  const json::value* reason_v = !ec && body.is_object()
                                    ? body.as_object().if_contains("reason")
                                    : nullptr;
  if (reason_v == nullptr || !reason_v->is_string() ||
      reason_v->as_string().empty() || body.as_object().size() != 1) {
    ex->Reply(ErrorResponse(Status::InvalidArgument(
        "the body must be {\"reason\": TEXT}: why the break is accepted",
        "reason")));
    return;
  }
  std::string reason(reason_v->as_string());
  if (reason.size() > 1024) {
    ex->Reply(ErrorResponse(
        Status::InvalidArgument("reason: at most 1024 bytes", "reason")));
    return;
  }
  Gate gate{Route::kAuditAcknowledge, "acknowledge the audit log", "acknowledge", "AuditLog"};
  authed(std::move(gate), [ex, reason](Turn& t, const Principal& p) {
    const std::string what = t.state.AuditBroken();
    Status s = t.state.AcknowledgeAuditBreak(p.user, reason, &t.txn);
    if (!s.ok()) {
      t.Reply(ex, ErrorResponse(s));
      return;
    }
    std::fprintf(stderr, "allot: audit log break acknowledged by %s (%s): %s\n",
                 ForLog(p.user).c_str(), ForLog(reason).c_str(), what.c_str());
    t.Reply(ex, JsonResponse(
                    200, json::object{{"acknowledged", what},
                                      {"record", t.state.AuditHead().first}}));
  });
  return;
}

void HandleAuditRead(const ApiCall& c) {
  const auto& [ex, req, path, seg, method, authed] = c;
  store::AuditFilter f;
  Status bad;
  if (req.query.count("sinceUnixMs"))
    f.since_unix_ms = QueryInt(req, "sinceUnixMs", 0, &bad);
  if (req.query.count("untilUnixMs"))
    f.until_unix_ms = QueryInt(req, "untilUnixMs", 0, &bad);
  f.after_seq = QueryInt(req, "after", f.after_seq, &bad);
  f.limit = QueryInt(req, "limit", f.limit, &bad);
  if (auto it = req.query.find("principal"); it != req.query.end())
    f.principal = it->second;
  if (auto it = req.query.find("tenant"); it != req.query.end())
    f.tenant = it->second;
  if (auto it = req.query.find("verb"); it != req.query.end())
    f.verb = it->second;
  bool verify = seg.size() == 2 && seg[1] == "verify";
  if (seg.size() > 2 || (seg.size() == 2 && !verify)) {
    ex->Reply(ErrorResponse(Status::NotFound("no route " + path)));
    return;
  }
  Gate gate{Route::kAuditRead, "read the audit log", "", ""};
  authed(std::move(gate), [ex, f, bad, verify](Turn& t, const Principal&) {
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
          ex->Reply(
              JsonResponse(200, json::object{{"items", std::move(items)}}));
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

}  // namespace allot::server
