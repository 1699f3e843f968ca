// Api: the HTTP/JSON API of `allot serve` (docs/api/openapi.yaml).
//
// Runs on the network threads: routes the request (Route, in api.cc; the
// handlers by area in api_objects.cc, api_agents.cc, api_admin.cc and
// api_usage.cc), turns away one without a live bearer token (TokenIndex)
// before reading its body, parses and size-checks the body there (YAML/JSON
// parsing is the expensive part), then posts one command to the Owner,
// which authenticates again (a token may be revoked in between), authorizes,
// changes state, audits, and replies after the commit. A refused token is
// audited by the Owner too. The agents' held polls and the log relay are
// AgentBroker's (owner thread).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "metrics/metrics.h"
#include "net/http.h"
#include "server/agent_broker.h"
#include "server/wake_waits.h"
#include "server/owner.h"

namespace allot::server {

inline constexpr char kVersion[] = "0.2.0";

struct ApiCall;

class Api {
 public:
  // An agent's poll is held at most a third of `node_timeout_ms`, so that
  // its answers come often enough to count as heartbeats.
  // `metrics` records every request (State::metrics()).
  Api(Owner* owner, std::shared_ptr<const TokenIndex> tokens,
      std::shared_ptr<metrics::Metrics> metrics, int64_t node_timeout_ms = 15000)
      : owner_(owner),
        tokens_(std::move(tokens)),
        metrics_(std::move(metrics)),
        max_hold_ms_(std::max<int64_t>(500, node_timeout_ms / 3)) {}
  void Handle(std::shared_ptr<net::Exchange> ex);
  // Owner thread, at the end of every turn (Owner::SetTurnHook): answers
  // the held agent polls whose node's pods changed or whose wait ran out
  // (AgentBroker::OnTurnEnd).
  void OnTurnEnd(Turn& t) {
    broker_.OnTurnEnd(t);
    wakes_.OnTurnEnd(t);
  }

 private:
  Owner* owner_;
  std::shared_ptr<const TokenIndex> tokens_;
  std::shared_ptr<metrics::Metrics> metrics_;
  int64_t max_hold_ms_;
  // Network thread: the routes under /api/v1/ and /metrics (api.cc).
  void Route(const ApiCall& c);
  // Network thread: node actions, pod logs and the agent protocol
  // (api_agents.cc); what they post uses broker_ on the owner thread.
  void HandleNodeAction(const ApiCall& c);
  void HandlePodLog(const ApiCall& c);
  void HandleAgentLogs(const ApiCall& c);
  void HandleAgentSync(const ApiCall& c);
  // The agents' long polls and the log relay; owner thread only.
  AgentBroker broker_;
  // Network thread: park, resume and wake (api_parking.cc); a wake that
  // waits is held in wakes_ on the owner thread.
  void HandleWorkloadAction(const ApiCall& c);
  WakeWaits wakes_;
  // Network thread: /notebooks/TENANT/NAME/... (api_notebooks.cc), Allot's
  // sign-in and the tenant's rules, then a tunnel to the notebook's pod.
  void HandleNotebook(std::shared_ptr<net::Exchange> ex);
};

// {"error":{"code","message","field"}} with the HTTP status for `s`.
net::Response ErrorResponse(const Status& s);
// 504 {"error":{"code":"Timeout","message",...}}: a held request's time ran out.
net::Response TimeoutResponse(const std::string& message);
int HttpStatusFor(StatusCode code);

}  // namespace allot::server
