#include "server/owner.h"

#include <cstdio>
#include <cstdlib>

namespace allot::server {

Owner::Owner(std::unique_ptr<store::Store> store, std::unique_ptr<State> state,
             std::function<int64_t()> now, size_t event_ring)
    : store_(std::move(store)),
      state_(std::move(state)),
      now_(std::move(now)),
      ring_cap_(event_ring) {}

Owner::~Owner() { Stop(); }

void Owner::Start() { thread_ = std::thread([this] { Loop(); }); }

void Owner::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Owner::Post(Command cmd) {
  {
    std::lock_guard<std::mutex> l(mu_);
    queue_.push_back(std::move(cmd));
  }
  cv_.notify_one();
}

OwnerStats Owner::stats() const {
  std::lock_guard<std::mutex> l(mu_);
  return stats_;
}

bool Turn::CanResume(int64_t from_rv) const {
  const Owner& o = *owner_;
  if (from_rv >= state.resource_version()) return true;
  return !o.ring_.empty() && o.ring_.front().resource_version <= from_rv + 1;
}

void Turn::Watch(Watcher w, int64_t from_rv) {
  Owner& o = *owner_;
  if (from_rv >= 0) {
    for (const Event& e : o.ring_) {
      if (e.resource_version <= from_rv || e.kind != w.kind) continue;
      if (!w.tenant.empty() && e.tenant != w.tenant) continue;
      if (!CanSee(w.principal, e.kind, e.tenant)) continue;
      w.stream->Write(e.line);
    }
  }
  o.watchers_.push_back(std::move(w));
}

void Owner::Publish(const std::vector<Event>& events) {
  for (const Event& e : events) {
    for (Watcher& w : watchers_) {
      if (e.kind != w.kind) continue;
      if (!w.tenant.empty() && e.tenant != w.tenant) continue;
      if (!CanSee(w.principal, e.kind, e.tenant)) continue;
      w.stream->Write(e.line);
    }
    ring_.push_back(e);
    if (ring_.size() > ring_cap_) ring_.pop_front();
  }
  std::erase_if(watchers_, [](const Watcher& w) { return w.stream->closed(); });
}

void Owner::Loop() {
  for (;;) {
    std::deque<Command> cmds;
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty() && stopping_) break;
      cmds.swap(queue_);
    }
    Txn txn;
    txn.now_unix_ms = now_();
    Turn turn(*state_, *store_, txn, this);
    for (Command& c : cmds) c(turn);
    int32_t cycles = state_->FinishTurn(&txn);
    bool committed = false;
    if (!txn.batch.empty()) {
      Status s = store_->Commit(txn.batch);
      if (!s.ok()) {
        std::fprintf(stderr,
                     "allot: FATAL: the store failed to commit (%s); stopping "
                     "so that a restart reloads what is durable\n",
                     s.ToString().c_str());
        std::fflush(stderr);
        std::_Exit(70);
      }
      committed = true;
    }
    Publish(txn.events);
    for (auto& fn : turn.after_) fn();
    std::lock_guard<std::mutex> l(mu_);
    ++stats_.turns;
    stats_.commands += int64_t(cmds.size());
    stats_.commits += committed ? 1 : 0;
    stats_.cycles += cycles;
  }
  for (Watcher& w : watchers_) w.stream->Close();
  watchers_.clear();
}

}  // namespace allot::server
