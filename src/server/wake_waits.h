// WakeWaits: requests that wait for a workload to run (POST
// /api/v1/workloads/TENANT/NAME/wake, docs/parking.md "Resume on
// demand"): the hook a router in front of a parked workload uses to hold a
// request while the workload resumes. Held on the owner thread; each is
// answered at the end of the first turn in which its workload is Running
// (200), has finished, is held out of its queue or is gone (409, 404),
// its token is revoked (401), or its time is up (504, with where the
// workload stands).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "net/http.h"
#include "server/owner.h"

namespace allot::server {

class WakeWaits {
 public:
  WakeWaits() = default;
  WakeWaits(const WakeWaits&) = delete;
  WakeWaits& operator=(const WakeWaits&) = delete;

  // Holds `ex` until workload `key` runs; asked at `asked_ms`, answered 504
  // at `deadline_ms` at the latest.
  void Hold(std::shared_ptr<net::Exchange> ex, const std::string& key, int64_t asked_ms,
            int64_t deadline_ms, const std::string& token_id);
  // The answer for `key` now, when there is one (Running, finished, held
  // out, gone); `waited_ms` goes into a 200's body.
  static std::optional<net::Response> AnswerNow(const State& state, const std::string& key,
                                                int64_t waited_ms);
  // At the end of every turn: answers what can be answered.
  void OnTurnEnd(Turn& t);
  size_t size() const { return waits_.size(); }

 private:
  struct Wait {
    std::shared_ptr<net::Exchange> ex;
    std::string key;
    int64_t asked_ms = 0;
    int64_t deadline_ms = 0;
    std::string token_id;
  };
  std::vector<Wait> waits_;
};

}  // namespace allot::server
