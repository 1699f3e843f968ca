// The audit log's head outside the store (audit.h): checked at start,
// then kept in the head file as the log grows.
//
// The head file is written off the commit path by its own thread: each
// write is the newest head committed so far (tmp file, fsync, rename), so
// a burst of group commits costs one write, and replies do not wait for
// it. The file may therefore trail the store by the commits of one fsync;
// after a crash in that window CheckAuditTail accepts the trailing file
// when the record it names is unchanged (docs/server.md, "Audit log").
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "server/audit.h"
#include "store/store.h"

namespace allot::server {

// The tail of the log in `snap` against the store's head and `head_file`
// ("" for none): what is wrong, or "" (then a missing or trailing head
// file is brought up to date, and a trailing one is reported on stderr).
std::string CheckAuditAtStart(store::Store& st, const store::Snapshot& snap,
                              const std::string& head_file);

class AuditAnchor {
 public:
  // Every kLogEvery records the head is also printed to stderr: a second
  // anchor, in whatever keeps the server's log.
  static constexpr int64_t kLogEvery = 1000;
  // The most often the head file is written.
  static constexpr std::chrono::milliseconds kMinInterval{20};

  // `seq`: the head the server started with.
  AuditAnchor(std::string head_file, int64_t seq);
  // Writes the last head handed in, then stops.
  ~AuditAnchor();
  AuditAnchor(const AuditAnchor&) = delete;
  AuditAnchor& operator=(const AuditAnchor&) = delete;

  // After a durable commit (Owner::CommitHook): the newest "audit_head" of
  // the batches, if any, becomes the one to write.
  void Committed(const std::vector<const store::Batch*>& batches);
  // Waits until the head file holds everything handed in (tests, stop).
  void Flush();

 private:
  void Loop();

  const std::string file_;
  int64_t logged_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<AuditHead> pending_;
  bool writing_ = false;
  int flushing_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace allot::server
