// AgentBroker: the agents' long-poll broker and the log relay of `allot serve`.
//
// Thread: the owner thread only (every method takes the owner's Turn); the
// network threads never call it: Api posts a command to the Owner, which
// calls it. It touches only its own maps, the exchanges it holds (replying
// through Turn::Reply, so the reply goes out after the turn's commit) and,
// of the turn's State, the desired pods, the live tokens and (taking them)
// the nodes changed in the turn.
// It neither authenticates nor authorizes: Api has done both before calling.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "net/http.h"
#include "proto/agent_protocol.h"
#include "server/owner.h"

namespace allot::server {

class AgentBroker {
 public:
  AgentBroker() = default;
  AgentBroker(const AgentBroker&) = delete;
  AgentBroker& operator=(const AgentBroker&) = delete;

  // An agent's sync of `node` has been applied to State: answers a poll of
  // the same node held before (a newer poll replaces it), then answers `ex`
  // at once when `wait_ms` is 0, the agent reported an exit (`exits`), its
  // running pods (`reported`) differ from the desired ones, or logs are
  // asked of the node; else holds it until the node's pods change, its token
  // is revoked or `wait_ms` runs out (OnTurnEnd).
  void Sync(Turn& t, std::shared_ptr<net::Exchange> ex, const std::string& node,
            const std::set<std::string>& reported, bool exits, int64_t wait_ms,
            const std::string& token_id);
  // A log read of `pod_id` on `node` (GET .../workloads/NS/NAME/log): asked
  // of the node in its next sync answer, answered by AnswerLogs, or 504
  // after 10 s.
  void AskLog(Turn& t, std::shared_ptr<net::Exchange> ex,
              const std::string& node, const std::string& pod_id, bool finished,
              int64_t offset, int64_t limit, const std::string& token_id);
  // `node`'s agent answers log reads (POST /api/v1/agents/logs): each answer
  // to a read waiting on that node is relayed; returns how many were.
  int AnswerLogs(Turn& t, const std::string& node,
                 const std::vector<proto::LogAnswer>& answers);
  // At the end of every turn: answers the held polls whose node's pods
  // changed or logs were asked or whose wait ran out, and cuts what waits
  // on a revoked token (401) or ran out of time (504 for a log read).
  void OnTurnEnd(Turn& t);

 private:
  struct HeldPoll {
    std::shared_ptr<net::Exchange> ex;
    int64_t deadline_ms = 0;
    std::string token_id;  // Answered 401 at once if it is revoked.
  };
  struct LogWait {
    std::shared_ptr<net::Exchange> ex;
    std::string node;
    std::string pod_id;
    bool finished = false;
    int64_t deadline_ms = 0;
    std::string token_id;  // Answered 401 at once if it is revoked.
  };
  // The answer to `node`'s sync: its desired pods, and (`with_logs`) the
  // log reads asked of it since its last answer.
  net::Response SyncReply(const State& state, const std::string& node,
                          bool with_logs);

  std::map<std::string, HeldPoll> held_;                            // By node.
  std::map<std::string, std::vector<proto::LogRequest>> log_asks_;  // By node.
  std::map<int64_t, LogWait> log_waits_;  // By ask id.
  int64_t next_log_id_ = 1;
};

}  // namespace allot::server
