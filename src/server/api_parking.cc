// The API's parking verbs (docs/parking.md): POST
// /api/v1/workloads/TENANT/NAME/park and .../resume, also spelled
// NAME:park and NAME:resume. Whoever may delete a workload may park and
// resume it (members their own tenant's); each is audited.
#include <boost/json.hpp>
#include <string>

#include "server/api.h"
#include "server/api_internal.h"
#include "server/audit.h"

namespace allot::server {
namespace json = boost::json;

void HandleWorkloadAction(const ApiCall& c) {
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
