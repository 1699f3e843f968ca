// /notebooks/TENANT/NAME/...: a notebook's Jupyter through the server
// (docs/notebooks.md). Allot's own sign-in (a bearer token, or the
// HttpOnly cookie a one-time open link sets), the tenant's rules (whoever
// may change the tenant's workloads; anyone else, signed in or not, gets
// 404), then the request goes to the notebook's pod through a tunnel with
// the client's credentials taken out and the pod's Jupyter token put in.
// A notebook that is not running yet answers a page that says where it
// stands and reloads itself; a parked one is resumed by the visit.
#include <boost/json.hpp>

#include <charconv>
#include <string>
#include <vector>

#include "core/encoding.h"
#include "server/api.h"
#include "server/api_internal.h"
#include "server/audit.h"
#include "server/crypto.h"
#include "server/notebook_auth.h"
#include "server/state.h"

namespace allot::server {
namespace json = boost::json;

namespace {

net::Response NotFoundPage(const std::string& path) {
  net::Response r;
  r.status = 404;
  r.content_type = "text/plain; charset=utf-8";
  r.body = "404: no notebook at " + path +
           " for you (sign in with `allot notebook open NAME` or the dashboard's Open)\n";
  return r;
}

// Requests a notebook's page makes on its own (Jupyter's polling, its
// static files, its WebSockets reconnecting): not a sign of someone at
// work. Anything else (a page opened, a save, a kernel started) is.
bool IsBackground(const net::Request& req, const std::string& rest) {
  if (req.method != "GET" && req.method != "HEAD") return false;
  if (!req.Header("upgrade").empty()) return true;  // Kernels, terminals: the probe's.
  for (const char* p : {"api/", "static/", "custom/", "nbextensions/", "kernelspecs/"}) {
    if (rest.starts_with(p)) return true;
  }
  return false;
}

// The request as the notebook's Jupyter gets it: Allot's credentials out,
// Jupyter's token in, one request per connection (the next one on a
// kept-alive connection would skip Allot's checks).
std::string UpstreamHead(const net::Request& req, const std::string& token) {
  const bool upgrade = !req.Header("upgrade").empty();
  std::string h = req.method + " " + req.target + " HTTP/1.1\r\n";
  for (const auto& [name, value] : req.headers) {
    if (name == "authorization" || name == "connection" || name == "keep-alive" ||
        name == "transfer-encoding" || name == "content-length" || name == "te" ||
        name == "proxy-authorization" || name.starts_with("proxy-") ||
        name == "x-forwarded-for") {
      continue;
    }
    if (name == "cookie") {
      const std::string rest = WithoutNotebookCookie(value);
      if (!rest.empty()) h += "cookie: " + rest + "\r\n";
      continue;
    }
    h += name + ": " + value + "\r\n";
  }
  h += "authorization: token " + token + "\r\n";
  h += upgrade ? "connection: Upgrade\r\n" : "connection: close\r\n";
  if (!req.remote.empty()) {
    h += "x-forwarded-for: " + req.remote.substr(0, req.remote.rfind(':')) + "\r\n";
  }
  if (!req.body.empty() || (req.method != "GET" && req.method != "HEAD" && !upgrade)) {
    h += "content-length: " + std::to_string(req.body.size()) + "\r\n";
  }
  h += "\r\n";
  h += req.body;
  return h;
}

// What the user sees while the notebook is not running yet: its state,
// why it waits and its place in line (the pending reason ends with it);
// the page reloads itself and shows Jupyter once it runs.
net::Response WaitingPage(const std::string& key, const json::object& status,
                          const std::string& note) {
  auto str = [&](const char* k) {
    const json::value* v = status.if_contains(k);
    return v && v->is_string() ? std::string(v->as_string()) : std::string();
  };
  std::string state = str("state");
  std::string why = str("pendingReason");  // Its place in line included.
  if (why.empty()) {
    if (const json::value* cs = status.if_contains("conditions"); cs && cs->is_array()) {
      for (const json::value& c : cs->as_array()) {
        const json::object& co = c.as_object();
        if (co.at("status") == "True" && co.contains("message")) {
          why = std::string(co.at("message").as_string());
        }
      }
    }
  }
  net::Response r;
  r.status = 202;
  r.content_type = "text/html; charset=utf-8";
  r.headers.push_back({"Cache-Control", "no-store"});
  r.headers.push_back({"Retry-After", "2"});
  r.body =
      "<!doctype html><html><head><meta charset=\"utf-8\">"
      "<meta http-equiv=\"refresh\" content=\"2\">"
      "<title>" + core::HtmlEscape(key) + ": starting</title>"
      "<style>body{font-family:sans-serif;margin:3em;color:#222}"
      "code{background:#eee;padding:.1em .3em}</style></head><body>"
      "<h1>Notebook <code>" + core::HtmlEscape(key) + "</code> is starting</h1>"
      "<p id=\"state\">State: <b>" + core::HtmlEscape(state) + "</b>" +
      (note.empty() ? "" : " (" + core::HtmlEscape(note) + ")") + "</p>" +
      (why.empty() ? "" : "<p id=\"reason\">" + core::HtmlEscape(why) + "</p>") +
      "<p>This page opens the notebook by itself when it is ready.</p></body></html>\n";
  return r;
}

}  // namespace

void Api::HandleNotebook(std::shared_ptr<net::Exchange> ex) {
  const net::Request& req = ex->request();
  // /notebooks/TENANT/NAME/REST
  const std::string prefix = "/notebooks/";
  std::vector<std::string> seg = Split(req.path.substr(prefix.size()), '/');
  if (seg.size() < 2 || seg[0].empty() || seg[1].empty()) {
    ex->Reply(NotFoundPage(req.path));
    return;
  }
  const std::string key = seg[0] + "/" + seg[1];
  const std::string base = prefix + key + "/";
  if (seg.size() == 2) {  // Jupyter's pages are relative to the base URL.
    net::Response r;
    r.status = 301;
    r.content_type = "text/plain";
    r.headers.push_back({"Location", base});
    ex->Reply(std::move(r));
    return;
  }
  const std::string rest = req.path.substr(base.size());
  const std::string bearer = [&] {
    const std::string& h = req.Header("authorization");
    return h.size() > 7 && (h.starts_with("Bearer ") || h.starts_with("bearer "))
               ? h.substr(7)
               : std::string();
  }();
  const std::string token_hash = bearer.empty() ? "" : Sha256Hex(bearer);
  std::string ticket;
  if (auto it = req.query.find(kNotebookTicketParam); it != req.query.end()) ticket = it->second;
  const std::string cookie = NotebookCookie(req.Header("cookie"));
  owner_->Post([ex, key, base, rest, token_hash, ticket, cookie](Turn& t) {
    const net::Request& rq = ex->request();
    const int64_t now = t.txn.now_unix_ms;
    // Who: a bearer token, else the open link's ticket, else the cookie.
    std::optional<Principal> p;
    if (!token_hash.empty()) {
      p = t.state.Authenticate(token_hash);
    } else if (!ticket.empty()) {
      p = NotebookCredential::Check(t.state, ticket, "ticket", key, now);
    } else if (!cookie.empty()) {
      p = NotebookCredential::Check(t.state, cookie, "session", key, now);
    }
    // Nobody, someone of another tenant, a viewer, not its owner when the
    // tenant's notebooks are private, or no such notebook: the same 404,
    // so that nothing tells them apart.
    if (!p || !MayOpenNotebook(t.state, *p, key).ok()) {
      t.Reply(ex, NotFoundPage(rq.path));
      return;
    }
    const WorkloadRecord* rec = t.state.FindWorkload(key);
    if (!ticket.empty()) {
      // The one-time link becomes a cookie for this notebook's path, and
      // the address bar loses the ticket.
      net::Response r;
      r.status = 303;
      r.content_type = "text/plain";
      r.headers.push_back({"Location", base + rest});
      r.headers.push_back(
          {"Set-Cookie", NotebookCredential::CookieHeader(
                             NotebookCredential::Make(t.state, p->token_id, "session", key,
                                                      now + kNotebookSessionMs),
                             base, kNotebookSessionMs)});
      t.Reply(ex, std::move(r));
      return;
    }
    // A tab left open polls on its own: only a person's request (a page
    // opened, a save, a new kernel) is activity, or resumes it.
    const bool background = IsBackground(rq, rest);
    std::string note;
    if (((rec->state == WorkloadState::kParked && !t.state.ResumeWaits(key)) ||
         rec->state == WorkloadState::kSuspended) &&
        !background) {
      // Opening a parked notebook resumes it, a stopped one queues again
      // (docs/parking.md's wake).
      std::string result;
      Status s = t.state.ResumeWorkload(Actor::Of(*p), key, &t.txn, &result);
      t.state.Audit(p->user, p->tenant, "resume", "Workload " + key, Outcome(s), &t.txn);
      note = s.ok() ? "resuming: " + result : s.message();
    }
    std::optional<State::PodEndpoint> ep = t.state.EndpointOf(key);
    if (!ep && background) {
      net::Response r = Http(503, "Unavailable",
                             "notebook " + key + " is " + ToString(rec->state) +
                                 ", not serving: open its page to start it",
                             "");
      r.headers.push_back({"Retry-After", "5"});
      t.Reply(ex, std::move(r));
      return;
    }
    if (!ep) {
      Result<json::object> o = t.state.Get(*p, Kind::kWorkload, key);
      json::object status;
      if (o.ok() && o->contains("status") && o->at("status").is_object()) {
        status = o->at("status").as_object();
      }
      t.Reply(ex, WaitingPage(key, status, note));
      return;
    }
    if (!background) (void)t.state.ReportActivity(key, now);
    const size_t colon = ep->endpoint.rfind(':');
    uint16_t port = 0;
    const std::string port_s = ep->endpoint.substr(colon + 1);
    std::from_chars(port_s.data(), port_s.data() + port_s.size(), port);
    net::TunnelTarget target;
    target.host = ep->endpoint.substr(0, colon);
    target.port = port;
    target.head = UpstreamHead(rq, NotebookJupyterToken(t.state, ep->pod_id));
    target.connect_timeout_ms = 5000;
    ex->Tunnel(std::move(target));
  });
}

}  // namespace allot::server
