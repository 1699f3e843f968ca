#include "ctrl/runner.h"

#include <algorithm>

namespace allot::ctrl {

const char* ToString(Action::Type t) {
  switch (t) {
    case Action::Type::kFail: return "fail";
    case Action::Type::kRestartGang: return "restart";
    case Action::Type::kNodeNotReady: return "mark-not-ready";
    case Action::Type::kPark: return "park";
    case Action::Type::kStopParked: return "stop-parked";
    case Action::Type::kResumeNodes: return "resume-nodes";
    case Action::Type::kSuspendNodes: return "suspend-nodes";
    case Action::Type::kBootFailed: return "boot-failed";
    case Action::Type::kConsolidate: return "consolidate";
    case Action::Type::kListNodes: return "list-nodes";
    case Action::Type::kExplain: return "explain";
  }
  return "?";
}

Runner::Runner(std::vector<std::unique_ptr<Controller>> controllers) {
  for (auto& c : controllers) slots_.push_back(Slot{std::move(c)});
}

void Runner::Note(uint32_t changes) {
  for (Slot& s : slots_) s.pending |= changes & s.c->Triggers();
}

int64_t Runner::DueAt(const Slot& s) const {
  int64_t at = s.wake_ms;
  if (s.pending != 0) {
    const int64_t earliest =
        s.last_run_ms < 0 ? 0 : s.last_run_ms + s.c->MinIntervalMs();
    at = std::min(at, earliest);
  }
  return at;
}

std::vector<TakenAction> Runner::Run(const View& view, int64_t now_ms) {
  std::vector<TakenAction> out;
  for (Slot& s : slots_) {
    if (DueAt(s) > now_ms) continue;
    Plan p = s.c->Run(view, now_ms);
    s.last_run_ms = now_ms;
    s.pending = 0;
    // A wake in the past would spin: the earliest is the next millisecond.
    s.wake_ms = std::max(p.next_wake_ms, now_ms + 1);
    for (Action& a : p.actions) out.push_back({std::string(s.c->Name()), std::move(a)});
  }
  return out;
}

int64_t Runner::NextWakeMs() const {
  int64_t at = kNever;
  for (const Slot& s : slots_) at = std::min(at, DueAt(s));
  return at;
}

}  // namespace allot::ctrl
