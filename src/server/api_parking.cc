// The API's parking verbs (docs/parking.md): POST
// /api/v1/workloads/TENANT/NAME/park, .../resume, .../wake and
// .../activity, also spelled NAME:park and so on. Whoever may delete a
// workload may park, resume and wake it and report its activity (members
// their own tenant's); each park and resume is audited. A wake resumes a
// parked (or suspended) workload and answers once it runs (WakeWaits);
// activity feeds its custom idle signal (allot.dev/idle-signal).
#include <boost/json.hpp>
#include <string>

#include "server/api.h"
#include "server/api_internal.h"
#include "server/audit.h"
#include "server/notebook_auth.h"

namespace allot::server {
namespace json = boost::json;

void Api::HandleWorkloadAction(const ApiCall& c) {
  const auto& [ex, req, path, seg, method, authed] = c;
  std::string name = seg[2], action;
  if (seg.size() == 4) {
    action = seg[3];
  } else {
    const size_t colon = name.rfind(':');
    action = name.substr(colon + 1);
    name = name.substr(0, colon);
  }
  if (method != "POST") {
    ex->Reply(MethodNotAllowed(method, path, "POST"));
    return;
  }
  const std::string key = seg[1] + "/" + name;
  if (action == "activity") {
    // Its custom idle signal: whoever may park it may say it is active.
    // Not audited (a notebook's kernels report often); not stored.
    Gate gate{Route::kObjectWrite, "change workloads", "activity", "Workload " + key};
    authed(std::move(gate), [ex, key](Turn& t, const Principal& p) {
      Status s = MayWriteObject(p, Kind::kWorkload, key, "report the activity of", t.state);
      if (s.ok()) s = t.state.ReportActivity(key, t.txn.now_unix_ms);
      if (!s.ok()) {
        t.Reply(ex, ErrorResponse(s));
        return;
      }
      t.Reply(ex, JsonResponse(200, json::object{{"workload", key},
                                                 {"lastActivityUnixMs", t.txn.now_unix_ms}}));
    });
    return;
  }
  if (action == "open") {
    // A notebook's one-time link (notebook_auth.h): whoever may change it
    // may open it. Audited: it hands out a sign-in.
    Gate gate{Route::kObjectWrite, "change workloads", "open", "Workload " + key};
    authed(std::move(gate), [ex, key](Turn& t, const Principal& p) {
      Status s = MayWriteObject(p, Kind::kWorkload, key, "open", t.state);
      const WorkloadRecord* rec = s.ok() ? t.state.FindWorkload(key) : nullptr;
      if (s.ok() && rec == nullptr) s = Status::NotFound("Workload " + key + " does not exist");
      if (s.ok() && rec->spec.type != "notebook") {
        s = Status::FailedPrecondition("Workload " + key + " is of type " + rec->spec.type +
                                       ", not notebook: it has nothing to open");
      }
      if (s.ok()) s = MayOpenNotebook(t.state, p, key);  // Private: its owner's.
      if (!s.ok() && s.code() == StatusCode::kNotFound) {
        s = Status::NotFound("Workload " + key + " does not exist");
      }
      t.state.Audit(p.user, p.tenant, "open", "Workload " + key, Outcome(s), &t.txn);
      if (!s.ok()) {
        t.Reply(ex, ErrorResponse(s));
        return;
      }
      const int64_t expires = t.txn.now_unix_ms + kNotebookTicketMs;
      const std::string path = "/notebooks/" + key + "/";
      const std::string url =
          path + "tree?" + kNotebookTicketParam + "=" +
          NotebookCredential::Make(t.state, p.token_id, "ticket", key, expires);
      t.Reply(ex, JsonResponse(200, json::object{{"workload", key},
                                                 {"path", path},
                                                 {"url", url},
                                                 {"expiresUnixMs", expires},
                                                 {"state", ToString(rec->state)}}));
    });
    return;
  }
  if (action == "wake") {
    int64_t timeout_s = 60;
    if (auto it = req.query.find("timeoutSeconds"); it != req.query.end()) {
      Result<int64_t> v = ParseInt(it->second, "timeoutSeconds");
      if (v.ok() && (*v < 0 || *v > 600)) {
        v = Status::InvalidArgument("timeoutSeconds must be 0 to 600", "timeoutSeconds");
      }
      if (!v.ok()) {
        ex->Reply(ErrorResponse(v.status()));
        return;
      }
      timeout_s = *v;
    }
    // Resume on demand: whoever may resume it may wake it; the request is
    // answered once it runs (WakeWaits). Only a wake that resumes is
    // audited (a router wakes on every request).
    Gate gate{Route::kObjectWrite, "change workloads", "resume", "Workload " + key};
    authed(std::move(gate), [this, ex, key, timeout_s](Turn& t, const Principal& p) {
      Status s = MayWriteObject(p, Kind::kWorkload, key, "resume", t.state);
      const WorkloadRecord* rec = s.ok() ? t.state.FindWorkload(key) : nullptr;
      if (s.ok() && rec == nullptr) s = Status::NotFound("Workload " + key + " does not exist");
      if (!s.ok()) {
        t.Reply(ex, ErrorResponse(s));
        return;
      }
      if ((rec->state == WorkloadState::kParked && !t.state.ResumeWaits(key)) ||
          rec->state == WorkloadState::kSuspended) {
        std::string result;
        s = t.state.ResumeWorkload(Actor::Of(p), key, &t.txn, &result);
        t.state.Audit(p.user, p.tenant, "resume", "Workload " + key, Outcome(s), &t.txn);
        if (!s.ok()) {
          t.Reply(ex, ErrorResponse(s));
          return;
        }
      }
      const int64_t now = t.txn.now_unix_ms;
      if (std::optional<net::Response> r = WakeWaits::AnswerNow(t.state, key, 0)) {
        t.Reply(ex, std::move(*r));
        return;
      }
      wakes_.Hold(ex, key, now, now + timeout_s * 1000, p.token_id);
    });
    return;
  }
  Gate gate{Route::kObjectWrite, "change workloads", action, "Workload " + key};
  authed(std::move(gate), [ex, key, action](Turn& t, const Principal& p) {
    Status s = MayWriteObject(p, Kind::kWorkload, key, action.c_str(), t.state);
    std::string result;
    if (s.ok() && action == "park") {
      s = t.state.ParkWorkload(key, "UserRequest", "parked by " + p.user, &t.txn);
      result = "parked";
    } else if (s.ok()) {
      s = t.state.ResumeWorkload(Actor::Of(p), key, &t.txn, &result);
    }
    t.state.Audit(p.user, p.tenant, action, "Workload " + key, Outcome(s), &t.txn);
    if (!s.ok()) {
      t.Reply(ex, ErrorResponse(s));
      return;
    }
    json::object out{{"workload", key}, {"result", result}};
    if (const WorkloadRecord* rec = t.state.FindWorkload(key)) {
      out["state"] = ToString(rec->state);
      for (const Condition& cond : rec->conditions) {
        if (cond.type == "Parked") out["message"] = cond.message;
      }
    }
    t.Reply(ex, JsonResponse(200, out));
  });
}

}  // namespace allot::server
