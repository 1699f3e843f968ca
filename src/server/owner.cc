#include "server/owner.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace allot::server {

namespace {

using Clock = std::chrono::steady_clock;

int64_t Nanos(Clock::time_point a, Clock::time_point b) {
  return int64_t(
      std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count());
}

// How many finished turns may wait for the committer while it commits:
// it then takes all of them in one transaction. This bounds how far the
// state runs ahead of the store.
constexpr size_t kMaxWaitingTurns = 256;

}  // namespace

Owner::Owner(std::unique_ptr<store::Store> store, std::unique_ptr<State> state,
             std::function<int64_t()> now, size_t event_ring)
    : store_(std::move(store)),
      state_(std::move(state)),
      metrics_(state_->metrics()),
      now_(std::move(now)),
      ring_cap_(event_ring) {}

Owner::~Owner() { Stop(); }

void Owner::Start() {
  committer_ = std::thread([this] { CommitLoop(); });
  thread_ = std::thread([this] { Loop(); });
}

void Owner::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (committer_.joinable()) committer_.join();
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

void Turn::Reply(std::shared_ptr<net::Exchange> ex, net::Response r) {
  deliveries_.push_back([ex = std::move(ex), r = std::move(r)](store::Store&) mutable {
    ex->Reply(std::move(r));
  });
}

bool Turn::CanResume(int64_t from_rv) const {
  const Owner& o = *owner_;
  if (from_rv >= state.resource_version()) return true;
  return !o.ring_.empty() && o.ring_.front().resource_version <= from_rv + 1;
}

void Turn::Watch(Watcher w, int64_t from_rv) {
  Owner& o = *owner_;
  if (from_rv >= 0) {
    std::vector<std::string> lines;
    for (const Event& e : o.ring_) {
      if (e.resource_version <= from_rv || e.kind != w.kind) continue;
      if (!w.tenant.empty() && e.tenant != w.tenant) continue;
      if (!CanSee(w.principal, e.kind, e.tenant)) continue;
      lines.push_back(e.LineFor(w.principal));
    }
    if (!lines.empty()) {
      Deliver([stream = w.stream, lines = std::move(lines)](store::Store&) mutable {
        for (std::string& line : lines) stream->Write(std::move(line));
      });
    }
  }
  o.watchers_.push_back(std::move(w));
}

void Owner::Publish(const std::vector<Event>& events, Turn* turn) {
  std::erase_if(watchers_, [&](const Watcher& w) {
    if (w.stream->closed()) return true;
    if (state_->TokenLive(w.principal.token_id)) return false;
    // Its token was revoked (or its tenant deleted) in this turn: the
    // stream ends now, with a last line that says why, after what was
    // queued for it before.
    turn->Deliver([stream = w.stream](store::Store&) {
      stream->Write(
          R"({"type":"ERROR","object":{"kind":"Status","code":401,"reason":"Unauthorized",)"
          R"("message":"the token of this watch was revoked"}})"
          "\n");
      stream->Close();
    });
    return true;
  });
  for (const Watcher& w : watchers_) {
    std::vector<std::string> lines;
    for (const Event& e : events) {
      if (e.kind != w.kind) continue;
      if (!w.tenant.empty() && e.tenant != w.tenant) continue;
      if (!CanSee(w.principal, e.kind, e.tenant)) continue;
      lines.push_back(e.LineFor(w.principal));
    }
    if (lines.empty()) continue;
    turn->Deliver([stream = w.stream, lines = std::move(lines)](store::Store&) mutable {
      for (std::string& line : lines) stream->Write(std::move(line));
    });
  }
  for (const Event& e : events) {
    ring_.push_back(e);
    if (ring_.size() > ring_cap_) ring_.pop_front();
  }
}

void Owner::Loop() {
  for (;;) {
    std::deque<Command> cmds;
    Clock::time_point t0 = Clock::now();
    {
      std::unique_lock<std::mutex> l(mu_);
      auto ready = [&] { return stopping_ || !queue_.empty(); };
      if (runner_) {
        // Until a command comes, the next controller is due, or an idle
        // turn is; a wait that ends without a command runs a turn anyway.
        const int64_t wait_ms =
            std::clamp<int64_t>(next_wake_ms_ - now_(), 0, kIdleTurnMs);
        cv_.wait_for(l, std::chrono::milliseconds(wait_ms), ready);
      } else {
        cv_.wait(l, ready);
      }
      if (queue_.empty() && stopping_) break;
      cmds.swap(queue_);
    }
    Clock::time_point t1 = Clock::now();
    Txn txn;
    txn.now_unix_ms = now_();
    Turn turn(*state_, txn, this);
    for (Command& c : cmds) c(turn);
    if (runner_) state_->RunControllers(runner_.get(), &txn);
    Clock::time_point t2 = Clock::now();
    int32_t cycles = state_->FinishTurn(&txn);
    if (runner_) next_wake_ms_ = state_->ControllersNextWake(runner_.get());
    Clock::time_point t3 = Clock::now();
    if (hook_) hook_(turn);
    Publish(txn.events, &turn);
    for (auto& fn : turn.after_) fn();
    Clock::time_point t4 = Clock::now();
    bool commits = !txn.batch.empty();
    std::unique_lock<std::mutex> l(mu_);
    handoff_cv_.wait(l, [&] { return committing_.size() < kMaxWaitingTurns; });
    committing_.push_back({std::move(txn.batch), std::move(turn.deliveries_)});
    commit_cv_.notify_one();
    Clock::time_point t5 = Clock::now();
    stats_.wait_ns += Nanos(t0, t1);
    stats_.run_ns += Nanos(t1, t2);
    stats_.finish_ns += Nanos(t2, t3);
    stats_.after_ns += Nanos(t3, t4);
    stats_.handoff_ns += Nanos(t4, t5);
    ++stats_.turns;
    stats_.commands += int64_t(cmds.size());
    stats_.commits += commits ? 1 : 0;
    stats_.cycles += cycles;
  }
  {
    std::lock_guard<std::mutex> l(mu_);
    owner_done_ = true;
  }
  commit_cv_.notify_one();
  // Every delivery is written before the streams close.
  if (committer_.joinable()) committer_.join();
  for (Watcher& w : watchers_) w.stream->Close();
  watchers_.clear();
}

void Owner::CommitLoop() {
  for (;;) {
    std::deque<Committing> group;
    {
      std::unique_lock<std::mutex> l(mu_);
      commit_cv_.wait(l, [&] { return owner_done_ || !committing_.empty(); });
      if (committing_.empty()) return;  // owner_done_.
      group.swap(committing_);
    }
    handoff_cv_.notify_one();
    Clock::time_point t0 = Clock::now();
    std::vector<const store::Batch*> batches;
    for (const Committing& c : group) batches.push_back(&c.batch);
    Status s = store_->CommitGroup(batches);
    if (!s.ok()) {
      std::fprintf(stderr,
                   "allot: FATAL: the store failed to commit (%s); stopping "
                   "so that a restart reloads what is durable\n",
                   s.ToString().c_str());
      std::fflush(stderr);
      std::_Exit(70);
    }
    if (commit_hook_) commit_hook_(batches);
    Clock::time_point t1 = Clock::now();
    metrics_->StoreCommit(std::chrono::duration<double>(t1 - t0).count(),
                          batches.size());
    for (Committing& c : group) {
      for (auto& fn : c.deliveries) fn(*store_);
    }
    Clock::time_point t2 = Clock::now();
    std::lock_guard<std::mutex> l(mu_);
    ++stats_.groups;
    stats_.commit_ns += Nanos(t0, t1);
    stats_.deliver_ns += Nanos(t1, t2);
  }
}

}  // namespace allot::server
