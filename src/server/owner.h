// Owner: the one thread that mutates State, with pipelined group commit.
//
// Network threads Post commands; the owner runs every queued command in
// one turn, then the controllers that are due (SetControllers), and ends
// the turn with State::FinishTurn (scheduling). At that
// point State is exactly what the turn's Batch makes durable, so the
// turn's After functions compute their replies then. The Batch and the
// replies (and the watch events) go to a second thread, the committer,
// which commits the Batch in one store transaction and only then sends
// them; meanwhile the owner runs the next turns, and the committer takes
// every turn that finished during a commit into its next transaction. So a
// client hears "done" only when its change (and everything it read) is
// durable, concurrent writers share one fsync, and the fsync does not stall
// the state. Turns commit in order; the owner runs at most 256 turns ahead
// of the store. A
// store that fails to commit stops the process: memory would otherwise run
// ahead of what a restart can load.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ctrl/runner.h"
#include "net/http.h"
#include "server/state.h"
#include "store/store.h"

namespace allot::server {

struct Watcher {
  Principal principal;
  Kind kind = Kind::kWorkload;
  std::string tenant;  // "" = every tenant the principal may see.
  std::shared_ptr<net::Stream> stream;
};

// What a command sees during its turn.
class Turn {
 public:
  State& state;
  Txn& txn;
  // Runs on the owner thread at the end of the turn, after scheduling, in
  // posting order: State is then what this turn commits. It must not reply
  // directly (the commit has not happened): use Reply or Deliver.
  void After(std::function<void()> fn) { after_.push_back(std::move(fn)); }
  // Sends `r` once this turn is committed.
  void Reply(std::shared_ptr<net::Exchange> ex, net::Response r);
  // Runs `fn` on the committer thread once this turn is committed, in
  // order with every other delivery. It must not touch State; the store
  // then holds exactly the turns up to this one.
  void Deliver(std::function<void(store::Store&)> fn) {
    deliveries_.push_back(std::move(fn));
  }
  // Whether every event after `from_rv` is still in the ring (else a
  // resumed watch must be answered 410 Gone and the client must list).
  bool CanResume(int64_t from_rv) const;
  // Registers a watcher: events with resource version > from_rv still in
  // the ring are written first (from_rv < 0: none), then every later event.
  // Call it from an After function, when the turn's events are in the
  // ring, so that nothing is sent twice or missed.
  void Watch(Watcher w, int64_t from_rv);

  Turn(State& s, Txn& t, class Owner* o) : state(s), txn(t), owner_(o) {}

 private:
  friend class Owner;
  std::vector<std::function<void()>> after_;
  std::vector<std::function<void(store::Store&)>> deliveries_;
  class Owner* owner_;
};

struct OwnerStats {
  int64_t turns = 0;
  int64_t commands = 0;
  int64_t commits = 0;  // Turns that wrote something.
  int64_t groups = 0;   // Store transactions (each of one or more turns).
  int64_t cycles = 0;
  // Owner-thread time, in nanoseconds: waiting for commands, running them,
  // scheduling and flushing (FinishTurn), computing replies (After), and
  // waiting for the committer to take the turn.
  int64_t wait_ns = 0;
  int64_t run_ns = 0;
  int64_t finish_ns = 0;
  int64_t after_ns = 0;
  int64_t handoff_ns = 0;
  // Committer-thread time: committing, and sending replies and events.
  int64_t commit_ns = 0;
  int64_t deliver_ns = 0;
};

class Owner {
 public:
  using Command = std::function<void(Turn&)>;
  // `now` gives wall-clock milliseconds (injected for tests).
  Owner(std::unique_ptr<store::Store> store, std::unique_ptr<State> state,
        std::function<int64_t()> now, size_t event_ring = 10000);
  ~Owner();
  void Start();
  // Finishes queued commands, then stops the thread; closes watch streams.
  void Stop();
  // Thread-safe.
  void Post(Command cmd);
  // Runs on the owner thread at the end of every turn, after scheduling and
  // before the turn's After functions. Set it before Start.
  void SetTurnHook(Command hook) { hook_ = std::move(hook); }
  // The controllers (ctrl/runner.h): run in every turn after its commands
  // and before scheduling, on this state's view; their actions are applied
  // in the same turn. The owner also runs a turn, without commands, when
  // the next controller is due, and at least every kIdleTurnMs (held agent
  // polls and log reads expire then). Set it before Start.
  void SetControllers(std::unique_ptr<ctrl::Runner> runner) { runner_ = std::move(runner); }
  static constexpr int64_t kIdleTurnMs = 1000;
  // Runs on the committer thread after each group commit is durable and
  // before its replies go out (the audit head file). Set it before Start.
  using CommitHook = std::function<void(const std::vector<const store::Batch*>&)>;
  void SetCommitHook(CommitHook hook) { commit_hook_ = std::move(hook); }
  OwnerStats stats() const;

 private:
  friend class Turn;
  // A finished turn on its way to the store.
  struct Committing {
    store::Batch batch;
    std::vector<std::function<void(store::Store&)>> deliveries;
  };
  void Loop();
  void CommitLoop();
  // Puts the turn's events in the ring and queues their writes to watchers.
  void Publish(const std::vector<Event>& events, Turn* turn);

  std::unique_ptr<store::Store> store_;  // Committer thread only, once started.
  std::unique_ptr<State> state_;         // Owner thread only, once started.
  std::shared_ptr<metrics::Metrics> metrics_;  // Thread-safe.
  std::function<int64_t()> now_;
  size_t ring_cap_;
  Command hook_;
  CommitHook commit_hook_;
  std::unique_ptr<ctrl::Runner> runner_;  // Owner thread only, once started.
  int64_t next_wake_ms_ = 0;              // Owner thread only.

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Command> queue_;
  bool stopping_ = false;
  OwnerStats stats_;
  std::thread thread_;

  // Owner -> committer; guarded by mu_.
  std::condition_variable commit_cv_;   // Work for the committer.
  std::condition_variable handoff_cv_;  // Room for the owner.
  std::deque<Committing> committing_;
  bool owner_done_ = false;
  std::thread committer_;

  // Owner thread only.
  std::vector<Watcher> watchers_;
  std::deque<Event> ring_;
};

}  // namespace allot::server
