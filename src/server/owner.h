// Owner: the one thread that mutates State, with group commit.
//
// Network threads Post commands; the owner runs every queued command in
// one turn, ends the turn with State::FinishTurn (scheduling), commits the
// whole turn's Batch in one store transaction, publishes the events to
// watchers, and only then runs the commands' completions (the replies). So
// a client hears "done" only when its change is durable, and concurrent
// writers share one fsync. A store that fails to commit stops the process:
// memory would otherwise run ahead of what a restart can load.
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
  store::Store& store;
  Txn& txn;
  // Runs after the turn's commit, in posting order.
  void After(std::function<void()> fn) { after_.push_back(std::move(fn)); }
  // Whether every event after `from_rv` is still in the ring (else a
  // resumed watch must be answered 410 Gone and the client must list).
  bool CanResume(int64_t from_rv) const;
  // Registers a watcher: events with resource version > from_rv still in
  // the ring are written first (from_rv < 0: none), then every later event.
  // Call it from an After function, when the turn's events are published,
  // so that nothing is sent twice or missed.
  void Watch(Watcher w, int64_t from_rv);

  Turn(State& s, store::Store& st, Txn& t, class Owner* o)
      : state(s), store(st), txn(t), owner_(o) {}

 private:
  friend class Owner;
  std::vector<std::function<void()>> after_;
  class Owner* owner_;
};

struct OwnerStats {
  int64_t turns = 0;
  int64_t commands = 0;
  int64_t commits = 0;
  int64_t cycles = 0;
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
  OwnerStats stats() const;

 private:
  friend class Turn;
  void Loop();
  void Publish(const std::vector<Event>& events);

  std::unique_ptr<store::Store> store_;
  std::unique_ptr<State> state_;
  std::function<int64_t()> now_;
  size_t ring_cap_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Command> queue_;
  bool stopping_ = false;
  OwnerStats stats_;
  std::thread thread_;

  // Owner thread only.
  std::vector<Watcher> watchers_;
  std::deque<Event> ring_;
};

}  // namespace allot::server
