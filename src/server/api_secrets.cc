// The Secrets routes (server/secrets.h):
//   GET    /api/v1/secrets[/TENANT]         the Secrets one may see, no values
//   GET    /api/v1/secrets/TENANT/NAME      one, no values; ?values=true adds
//                                           them (the tenant's admins only)
//   POST   /api/v1/secrets/TENANT           create (a v1 Secret, YAML or JSON)
//   PUT    /api/v1/secrets/TENANT/NAME      create or replace
//   DELETE /api/v1/secrets/TENANT/NAME
// Every change and every read of values is audited, naming the Secret only.
#include <boost/json.hpp>

#include "core/secret.h"
#include "server/api.h"
#include "server/api_internal.h"
#include "server/query_params.h"
#include "server/state.h"

namespace allot::server {
namespace json = boost::json;

namespace {

void List(const ApiCall& c) {
  const auto& [ex, req, path, seg, method, authed] = c;
  const std::string ns = seg.size() > 1 ? seg[1] : "";
  authed(Gate{Route::kSecrets, "read secrets", "", ""},
         [ex, ns](Turn& t, const Principal& p) {
           std::string tenant = ns;
           if (tenant.empty() && p.role != Role::kClusterAdmin) tenant = p.tenant;
           if (!tenant.empty()) {
             if (Status s = MayUseSecrets(p, tenant, SecretAccess::kList, t.state); !s.ok()) {
               t.Reply(ex, ErrorResponse(s));
               return;
             }
           }
           json::object o;
           o["items"] = t.state.secrets().List(tenant);
           t.Reply(ex, JsonResponse(200, o));
         });
}

void Get(const ApiCall& c) {
  const auto& [ex, req, path, seg, method, authed] = c;
  const std::string ns = seg[1], name = seg[2];
  auto v = req.query.find("values");
  const bool values = v != req.query.end() && QueryFlag(v->second);
  const std::string object = "Secret " + ns + "/" + name;
  Gate gate{Route::kSecrets, "read secrets", values ? "reveal" : "", values ? object : ""};
  authed(std::move(gate), [ex, ns, name, values, object](Turn& t, const Principal& p) {
    Status s = MayUseSecrets(p, ns, values ? SecretAccess::kReveal : SecretAccess::kList,
                             t.state);
    Result<json::object> o = s.ok() ? (values ? t.state.secrets().Reveal(ns, name)
                                              : t.state.secrets().Describe(ns, name))
                                    : Result<json::object>(s);
    if (values) t.state.Audit(p.user, p.tenant, "reveal", object, Outcome(o.status()), &t.txn);
    t.Reply(ex, o.ok() ? JsonResponse(200, *o) : ErrorResponse(o.status()));
  });
}

void Write(const ApiCall& c) {
  const auto& [ex, req, path, seg, method, authed] = c;
  const std::string ns = seg[1];
  const bool replace = method == "PUT";
  Result<core::Secret> in = core::ParseSecretManifest(req.body, "body", ns);
  if (in.ok() && replace && in->name != seg[2]) {
    in = Status::InvalidArgument("metadata.name is " + in->name + " but the path names " +
                                     seg[2],
                                 "metadata.name");
  }
  const std::string name = replace ? seg[2] : (in.ok() ? in->name : "?");
  const std::string object = "Secret " + ns + "/" + name;
  const char* verb = replace ? "replace" : "create";
  auto secret = std::make_shared<Result<core::Secret>>(std::move(in));
  Gate gate{Route::kSecrets, std::string(verb) + " secrets", verb, object};
  authed(std::move(gate), [ex, ns, replace, object, verb, secret](Turn& t,
                                                                  const Principal& p) {
    Status s = MayUseSecrets(p, ns, SecretAccess::kWrite, t.state);
    if (s.ok()) s = secret->status();
    Result<std::string> action =
        s.ok() ? t.state.PutSecret(**secret, replace, Actor::Of(p), &t.txn)
               : Result<std::string>(s);
    t.state.Audit(p.user, p.tenant, verb, object, Outcome(action.status()), &t.txn);
    if (!action.ok()) {
      t.Reply(ex, ErrorResponse(action.status()));
      return;
    }
    Result<json::object> o = t.state.secrets().Describe(ns, (*secret)->name);
    json::object out = o.ok() ? *o : json::object{};
    out["action"] = *action;
    t.Reply(ex, JsonResponse(*action == "created" ? 201 : 200, out));
  });
}

void Delete(const ApiCall& c) {
  const auto& [ex, req, path, seg, method, authed] = c;
  const std::string ns = seg[1], name = seg[2];
  const std::string object = "Secret " + ns + "/" + name;
  authed(Gate{Route::kSecrets, "delete secrets", "delete", object},
         [ex, ns, name, object](Turn& t, const Principal& p) {
           Status s = MayUseSecrets(p, ns, SecretAccess::kWrite, t.state);
           if (s.ok()) s = t.state.DeleteSecret(ns, name, &t.txn);
           t.state.Audit(p.user, p.tenant, "delete", object, Outcome(s), &t.txn);
           if (!s.ok()) {
             t.Reply(ex, ErrorResponse(s));
             return;
           }
           json::object o;
           o["deleted"] = object;
           t.Reply(ex, JsonResponse(200, o));
         });
}

}  // namespace

void HandleSecrets(const ApiCall& c) {
  const auto& [ex, req, path, seg, method, authed] = c;
  if (seg.size() <= 2 && method == "GET") return List(c);
  if (seg.size() == 2 && method == "POST") return Write(c);
  if (seg.size() == 3 && method == "GET") return Get(c);
  if (seg.size() == 3 && (method == "PUT" || method == "DELETE")) {
    return method == "PUT" ? Write(c) : Delete(c);
  }
  if (seg.size() > 3) {
    ex->Reply(ErrorResponse(Status::NotFound("no route " + path)));
    return;
  }
  ex->Reply(MethodNotAllowed(method, path, seg.size() == 3 ? "GET, PUT, DELETE"
                                         : seg.size() == 2 ? "GET, POST"
                                                           : "GET"));
}

}  // namespace allot::server
