#include "server/agent_broker.h"

#include <boost/json.hpp>
#include <utility>

#include "server/api.h"
#include "server/api_internal.h"

namespace allot::server {
namespace json = boost::json;

net::Response AgentBroker::SyncReply(const State& state,
                                     const std::string& node, bool with_logs) {
  proto::SyncAnswer a;
  a.node = node;
  a.revision = state.resource_version();
  a.pods = state.DesiredPods(node);
  a.peers = state.NetworkPeers(node);
  if (auto it = log_asks_.find(node); with_logs && it != log_asks_.end()) {
    a.log_requests = std::move(it->second);
    log_asks_.erase(it);
  }
  return JsonResponse(200, proto::EncodeSyncAnswer(a));
}

void AgentBroker::Sync(Turn& t, std::shared_ptr<net::Exchange> ex,
                       const std::string& node,
                       const std::set<std::string>& reported, bool exits,
                       int64_t wait_ms, const std::string& token_id) {
  std::set<std::string> desired;
  for (const DesiredPod& d : t.state.DesiredPods(node)) desired.insert(d.id);
  auto old = held_.find(node);
  if (old != held_.end()) {  // A newer poll replaces it.
    t.Reply(old->second.ex, SyncReply(t.state, node, false));
    held_.erase(old);
  }
  if (wait_ms == 0 || exits || desired != reported || log_asks_.count(node)) {
    t.Reply(std::move(ex), SyncReply(t.state, node, true));
    return;
  }
  held_[node] = HeldPoll{std::move(ex), t.txn.now_unix_ms + wait_ms, token_id};
}

void AgentBroker::AskLog(Turn& t, std::shared_ptr<net::Exchange> ex,
                         const std::string& node, const std::string& pod_id,
                         bool finished, int64_t offset, int64_t limit,
                         const std::string& token_id) {
  const int64_t id = next_log_id_++;
  log_asks_[node].push_back(proto::LogRequest{id, pod_id, offset, limit});
  // An agent that does not answer within 10 s: 504 (OnTurnEnd).
  log_waits_[id] =
      LogWait{std::move(ex), node, pod_id, finished, t.txn.now_unix_ms + 10000,
              token_id};
}

int AgentBroker::AnswerLogs(Turn& t, const std::string& node,
                            const std::vector<proto::LogAnswer>& answers) {
  int answered = 0;
  for (const proto::LogAnswer& a : answers) {
    auto w = log_waits_.find(a.id);
    if (w == log_waits_.end() || w->second.node != node) continue;
    json::object o;
    o["pod"] = w->second.pod_id;
    o["node"] = node;
    o["offset"] = a.offset;
    o["nextOffset"] = a.next_offset;
    o["data"] = a.data;
    o["exists"] = a.exists;
    o["finished"] = w->second.finished;
    t.Reply(w->second.ex, JsonResponse(200, o));
    log_waits_.erase(w);
    ++answered;
  }
  return answered;
}

void AgentBroker::OnTurnEnd(Turn& t) {
  std::set<std::string> changed = t.state.TakeChangedNodes();
  for (const auto& [node, asks] : log_asks_) changed.insert(node);
  for (const std::string& node : changed) {
    auto it = held_.find(node);
    if (it == held_.end()) continue;
    t.Reply(it->second.ex, SyncReply(t.state, node, true));
    held_.erase(it);
  }
  // What waits on a token revoked in this turn is answered now.
  auto revoked = [&t](const std::string& token_id) {
    return !t.state.TokenLive(token_id);
  };
  const net::Response gone = ErrorResponse(Status::Unauthenticated(
      "the token of this request was revoked while it waited"));
  for (auto it = held_.begin(); it != held_.end();) {
    if (revoked(it->second.token_id)) {
      t.Reply(it->second.ex, gone);
      it = held_.erase(it);
    } else if (it->second.deadline_ms <= t.txn.now_unix_ms) {
      t.Reply(it->second.ex, SyncReply(t.state, it->first, true));
      it = held_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = log_waits_.begin(); it != log_waits_.end();) {
    const bool cut = revoked(it->second.token_id);
    if (cut || it->second.deadline_ms <= t.txn.now_unix_ms) {
      if (cut) {
        t.Reply(it->second.ex, gone);
      } else {
        t.Reply(it->second.ex, TimeoutResponse("node " + it->second.node +
                                               " did not send the log in time; try again"));
      }
      // Not asked yet (the node has not polled): no longer asked.
      if (auto q = log_asks_.find(it->second.node); q != log_asks_.end()) {
        const int64_t id = it->first;
        std::erase_if(q->second,
                      [id](const proto::LogRequest& a) { return a.id == id; });
        if (q->second.empty()) log_asks_.erase(q);
      }
      it = log_waits_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace allot::server
