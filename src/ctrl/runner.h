// Runner: decides which controllers are due and collects their actions.
//
// A controller is due when its wake time has come, or when something it
// triggers on changed and at least its MinIntervalMs has passed since it
// last ran. The runner itself is pure bookkeeping (no clock, no threads):
// its owner tells it the time and what changed. The server's owner thread
// (server/owner.h) runs it in every turn, before scheduling; the simulator
// at each event time. Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ctrl/controller.h"

namespace allot::ctrl {

// An action with the controller that asked for it.
struct TakenAction {
  std::string controller;  // Controller::Name().
  Action action;
};

class Runner {
 public:
  explicit Runner(std::vector<std::unique_ptr<Controller>> controllers);

  // Records changes (Change bits) for the controllers that trigger on them.
  void Note(uint32_t changes);
  // Runs every controller due at `now`, in registration order, and returns
  // their actions in that order.
  std::vector<TakenAction> Run(const View& view, int64_t now_ms);
  // When the next controller is due (kNever: none until something changes);
  // may be in the past: one is due now.
  int64_t NextWakeMs() const;

 private:
  struct Slot {
    std::unique_ptr<Controller> c;
    int64_t wake_ms = 0;  // Every controller runs once at the start.
    int64_t last_run_ms = -1;
    uint32_t pending = 0;  // Changes it triggers on, not yet seen.
  };
  int64_t DueAt(const Slot& s) const;
  std::vector<Slot> slots_;
};

}  // namespace allot::ctrl
