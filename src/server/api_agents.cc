// The API's handlers for nodes and agents: node actions, pod logs, the agent
// sync long poll and log answers. Network threads: each parses and checks its
// request, then posts its work to the owner through ApiCall::authed
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

void Api::HandleNodeAction(const ApiCall& c) {
  const auto& [ex, req, path, seg, method, authed] = c;
  std::string node = seg[1], action = seg[2];
  Gate gate{Route::kNodeAction, action + " nodes", action, "Node " + node};
  authed(std::move(gate), [ex, node, action](Turn& t, const Principal& p) {
    Status s = MayActOnNode(p, node, action, t.state);
    if (s.ok()) s = t.state.NodeAction(Actor::Of(p), node, action, &t.txn);
    t.state.Audit(p.user, p.tenant, action, "Node " + node, Outcome(s), &t.txn);
    std::string done = action == "drain" ? "drained" : action + "ed";
    t.Reply(ex, s.ok() ? JsonResponse(200, json::object{{"result", done}})
                       : ErrorResponse(s));
  });
  return;
}

void Api::HandlePodLog(const ApiCall& c) {
  const auto& [ex, req, path, seg, method, authed] = c;
  if (method != "GET") {
    ex->Reply(MethodNotAllowed(method, path, "GET"));
    return;
  }
  Status bad;
  auto num = [&](const char* k, int64_t lo, int64_t hi,
                 int64_t def) -> int64_t {
    auto it = req.query.find(k);
    if (it == req.query.end() || !bad.ok()) return def;
    Result<int64_t> v = ParseInt(it->second, k);
    if (v.ok() && (*v < lo || *v > hi)) {
      v = Status::InvalidArgument(std::string(k) + " must be " +
                                      std::to_string(lo) + " to " +
                                      std::to_string(hi),
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
  Gate gate{Route::kPodLog, "read workload logs", "", ""};
  authed(std::move(gate), [this, ex, bad, key, rank, attempt, offset, limit](
                              Turn& t, const Principal& p) {
    Result<State::PodLogTarget> target =
        bad.ok() ? t.state.LogTarget(p, key, int32_t(rank), int32_t(attempt))
                 : Result<State::PodLogTarget>(bad);
    if (!target.ok()) {
      t.Reply(ex, ErrorResponse(target.status()));
      return;
    }
    broker_.AskLog(t, ex, target->node, target->pod_id, target->finished,
                   offset, limit, p.token_id);
  });
  return;
}

void Api::HandleAgentLogs(const ApiCall& c) {
  const auto& [ex, req, path, seg, method, authed] = c;
  if (method != "POST") {
    ex->Reply(MethodNotAllowed(method, path, "POST"));
    return;
  }
  auto body = std::make_shared<Result<proto::LogAnswers>>(
      proto::DecodeLogAnswers(req.body));
  if (!body->ok()) {
    ex->Reply(ErrorResponse(body->status()));
    return;
  }
  authed(Gate{Route::kAgentLogs, "answer log reads", "", ""}, [this, ex, body](
                                                                   Turn& t, const Principal& p) {
    const std::string node = (*body)->node;
    if (Status s = MayActAs(p, node, "answer for"); !s.ok()) {
      t.state.Audit(p.user, p.tenant, "logs", "Node " + node, Outcome(s),
                    &t.txn);
      t.Reply(ex, ErrorResponse(s));
      return;
    }
    const int answered = broker_.AnswerLogs(t, node, (*body)->logs);
    t.Reply(ex, JsonResponse(200, json::object{{"answered", answered}}));
  });
  return;
}

void Api::HandleAgentSync(const ApiCall& c) {
  const auto& [ex, req, path, seg, method, authed] = c;
  if (seg.size() != 2 || seg[1] != "sync") {
    ex->Reply(ErrorResponse(Status::NotFound("no route " + path)));
    return;
  }
  if (method != "POST") {
    ex->Reply(MethodNotAllowed(method, path, "POST"));
    return;
  }
  auto report =
      std::make_shared<Result<AgentReport>>(ParseAgentReport(req.body));
  int64_t wait_ms = 0;
  if (auto it = req.query.find("wait"); it != req.query.end()) {
    Result<int64_t> w = ParseInt(it->second, "wait");
    if (!w.ok() || *w < 0 || *w > 300) {
      ex->Reply(ErrorResponse(
          Status::InvalidArgument("wait must be 0 to 300 seconds", "wait")));
      return;
    }
    wait_ms = std::min(*w * 1000, max_hold_ms_);
  }
  const std::string node_name = report->ok() ? (*report)->node.name : "?";
  Gate gate{Route::kAgentSync, "act as an agent", "sync", "Node " + node_name};
  authed(std::move(gate), [this, ex, report, wait_ms](Turn& t, const Principal& p) {
    if (!report->ok()) {
      t.state.Audit(p.user, p.tenant, "sync", "Node ?",
                    Outcome(report->status()), &t.txn);
      t.Reply(ex, ErrorResponse(report->status()));
      return;
    }
    AgentReport& r = **report;
    const std::string node = r.node.name;
    std::set<std::string> reported;
    bool exits = false;
    for (const PodReport& pr : r.pods) {
      if (pr.exited)
        exits = true;
      else
        reported.insert(pr.id);
    }
    bool registered = false;
    Status s = MayActAs(p, node, "act as");
    if (s.ok()) s = t.state.AgentSync(std::move(r), &t.txn, &registered);
    if (!s.ok() || registered) {
      t.state.Audit(p.user, p.tenant, "sync", "Node " + node, Outcome(s),
                    &t.txn);
    }
    if (!s.ok()) {
      t.Reply(ex, ErrorResponse(s));
      return;
    }
    // Answer now when the agent has something to do or to forget, else
    // hold the request until its pods change or `wait` runs out.
    broker_.Sync(t, ex, node, reported, exits, wait_ms, p.token_id);
  });
  return;
}

}  // namespace allot::server
