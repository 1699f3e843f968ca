#include "server/wake_waits.h"

#include <boost/json/object.hpp>

#include <utility>

#include "server/api.h"
#include "server/api_internal.h"
#include "server/state.h"

namespace allot::server {
namespace json = boost::json;

void WakeWaits::Hold(std::shared_ptr<net::Exchange> ex, const std::string& key, int64_t asked_ms,
                     int64_t deadline_ms, const std::string& token_id) {
  waits_.push_back({std::move(ex), key, asked_ms, deadline_ms, token_id});
}

std::optional<net::Response> WakeWaits::AnswerNow(const State& state, const std::string& key,
                                                  int64_t waited_ms) {
  const WorkloadRecord* rec = state.FindWorkload(key);
  if (rec == nullptr) {
    return ErrorResponse(Status::NotFound("Workload " + key + " does not exist (any more)"));
  }
  if (rec->state == WorkloadState::kRunning) {
    return JsonResponse(200, json::object{{"workload", key},
                                          {"state", ToString(rec->state)},
                                          {"waitedMs", waited_ms}});
  }
  if (rec->finished() || rec->state == WorkloadState::kSuspended) {
    return ErrorResponse(Status::FailedPrecondition(
        "Workload " + key + " is " + ToString(rec->state) + ": it will not run"));
  }
  return std::nullopt;
}

void WakeWaits::OnTurnEnd(Turn& t) {
  const int64_t now = t.txn.now_unix_ms;
  std::erase_if(waits_, [&](Wait& w) {
    if (!t.state.TokenLive(w.token_id)) {
      t.Reply(w.ex, ErrorResponse(Status::Unauthenticated(
                        "the token of this request was revoked while it waited")));
      return true;
    }
    if (std::optional<net::Response> r = AnswerNow(t.state, w.key, now - w.asked_ms)) {
      t.Reply(w.ex, std::move(*r));
      return true;
    }
    if (now < w.deadline_ms) return false;
    std::string where;
    if (const WorkloadRecord* rec = t.state.FindWorkload(w.key)) {
      where = ToString(rec->state);
      for (const Condition& c : rec->conditions) {
        if (c.type == "Parked" && c.status) where += ": " + c.message;
      }
    }
    t.Reply(w.ex, TimeoutResponse("workload " + w.key + " is not running after " +
                                  std::to_string((now - w.asked_ms) / 1000) + " s (" + where +
                                  "); try again"));
    return true;
  });
}

}  // namespace allot::server
