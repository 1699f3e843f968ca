// An in-process server for tests: State, the controllers and a real
// SQLite store in a temporary directory, on a fake clock. A turn here is
// an owner turn (server/owner.h) without the threads: commands, the
// controllers that are due, scheduling, then a commit. So server behaviour
// over time (lifecycle, restarts, controllers) is tested in microseconds,
// without forking the binary or sleeping.
//
// Not the owner's idle turns: Advance runs a turn at each controller
// wake-up on the way, and one at the end.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/manifest.h"
#include "ctrl/registry.h"
#include "ctrl/runner.h"
#include "server/state.h"
#include "store/store.h"

namespace allot::server::testing {

class Harness {
 public:
  static constexpr int64_t kT0 = 1764547200000;  // 2025-12-01T00:00:00Z.

  explicit Harness(ctrl::Options opts = {}) : opts_(opts) {
    char tmpl[] = "/tmp/allot-harness-XXXXXX";
    const char* d = mkdtemp(tmpl);
    EXPECT_NE(d, nullptr);
    dir_ = d == nullptr ? "" : d;
    auto st = store::OpenStore("sqlite:" + dir_ + "/allot.db");
    EXPECT_TRUE(st.ok()) << st.status().ToString();
    if (st.ok()) store_ = std::move(*st);
    Start();
  }
  ~Harness() {
    state_.reset();
    store_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  Harness(const Harness&) = delete;
  Harness& operator=(const Harness&) = delete;

  State& state() { return *state_; }
  const State& state() const { return *state_; }
  int64_t now() const { return now_; }
  // When the next controller is due (ctrl::kNever: none).
  int64_t next_wake() const { return next_wake_; }

  // One owner turn at now(): `fn` (the turn's commands), the controllers
  // that are due, scheduling, and the commit.
  void Turn(const std::function<void(State&, Txn&)>& fn = nullptr) {
    Txn txn;
    txn.now_unix_ms = now_;
    if (fn) fn(*state_, txn);
    state_->RunControllers(runner_.get(), &txn);
    state_->FinishTurn(&txn);
    next_wake_ = state_->ControllersNextWake(runner_.get());
    if (!txn.batch.empty()) {
      Status s = store_->CommitGroup({&txn.batch});
      ASSERT_TRUE(s.ok()) << s.ToString();
    }
  }
  // A turn at time `t` (>= now()), and no other on the way: as when the
  // owner is busy with commands until then.
  void At(int64_t t) {
    now_ = std::max(now_, t);
    Turn();
  }
  // Moves the clock `ms` on, with a turn at every controller wake-up on the
  // way and one at the end.
  void Advance(int64_t ms) {
    const int64_t until = now_ + ms;
    while (next_wake_ <= until) {
      now_ = std::max(now_, next_wake_);
      Turn();
    }
    now_ = until;
    Turn();
  }
  // The server stops, and starts again at `at` (>= now()) on the same
  // store: the state is loaded from what was committed, the controllers
  // start anew. No turn runs until the next call.
  void Restart(int64_t at) {
    state_.reset();
    now_ = std::max(now_, at);
    Start();
  }

  // Applies `yaml` as a cluster-admin, in one turn.
  Status Apply(const std::string& yaml) {
    core::Config cfg;
    Status s = core::ParseManifests(yaml, "test", &cfg);
    if (!s.ok()) return s;
    Turn([&](State& st, Txn& txn) { s = st.Apply(kAdmin, std::move(cfg), &txn).status(); });
    return s;
  }
  // One agent sync of `report`, in one turn (whether the caller may act as
  // its node is the API edge's to decide).
  Status Sync(AgentReport report) {
    Status s;
    Turn([&](State& st, Txn& txn) { s = st.AgentSync(std::move(report), &txn); });
    return s;
  }
  // The workload's state ("Pending", "Running", ...) and the reason of its
  // condition of `type` ("" when it has none).
  std::string WorkloadState(const std::string& key) const {
    const WorkloadRecord* r = state_->FindWorkload(key);
    return r == nullptr ? "(none)" : ToString(r->state);
  }
  std::string Reason(const std::string& key, const std::string& type) const {
    const WorkloadRecord* r = state_->FindWorkload(key);
    if (r == nullptr) return "(none)";
    for (const Condition& c : r->conditions) {
      if (c.type == type) return c.reason;
    }
    return "";
  }

  // The audit log as committed.
  std::vector<store::AuditRow> AuditLog() {
    auto rows = store_->ListAudit({});
    EXPECT_TRUE(rows.ok()) << rows.status().ToString();
    return rows.ok() ? *rows : std::vector<store::AuditRow>{};
  }

  // A cluster-admin: who the changes above are made by, and the reader of
  // State's reads.
  static inline const Actor kAdmin{"admin", /*bypasses_priority_policy=*/true};
  static inline const Principal kAdminReader{"admin", Role::kClusterAdmin, "", "admin-token", ""};

 private:
  void Start() {
    auto snap = store_->Load();
    ASSERT_TRUE(snap.ok()) << snap.status().ToString();
    auto st = State::Load(*snap);
    ASSERT_TRUE(st.ok()) << st.status().ToString();
    state_ = std::move(*st);
    runner_ = std::make_unique<ctrl::Runner>(ctrl::DefaultControllers(opts_));
    next_wake_ = 0;
  }

  ctrl::Options opts_;
  std::string dir_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<State> state_;
  std::unique_ptr<ctrl::Runner> runner_;
  int64_t now_ = kT0;
  int64_t next_wake_ = 0;
};

}  // namespace allot::server::testing
