// Traces from history: the workloads an Allot server recorded (the items of
// GET /api/v1/workloads), replayed as a trace.
//
// Per workload that requests GPUs and was admitted: tenant = namespace,
// queue = spec.queueName, priority = status.priority (the value the server
// resolved), type = spec.type, submit = metadata.creationTimestamp, pods
// and per-pod GPUs (or MIG slices) from its first pod set that requests
// any (its `count`, not a partial admission's). Run time = the Finished
// condition's time minus the last Admitted (True) condition's time: the
// last admission's run, restarts after pod failures included, earlier runs
// ended by a preemption or eviction not (the replay decides preemptions
// itself).
//
// What is left out, each counted in a note (not an issue): workloads that
// request no GPUs, and workloads not admitted when the list was read
// (pending, or back in their queue after an eviction). A workload still
// running when the list was read is replayed with its run time so far (it
// ends at `read_at_ms`), also counted in a note; without `read_at_ms` it is
// left out. Finished workloads count whether they succeeded or failed:
// both held their GPUs. Deleted workloads are not in the list at all (the
// server forgets them). A workload without a parsable creationTimestamp,
// or finished before its admission, is an issue whose "line" is its
// 1-based position in the list.
#pragma once

#include <boost/json/fwd.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "sim/trace.h"

namespace allot::sim {

// Builds a trace from a workload list read page by page, so only one page
// of JSON is held at a time. Not thread-safe.
class HistoryReader {
 public:
  explicit HistoryReader(std::string source);

  // One item of the list, in list order.
  void Add(const boost::json::value& workload);
  // A note for the trace (e.g. whose workloads the list holds).
  void AddNote(std::string note) { notes_.push_back(std::move(note)); }
  // The trace, jobs sorted by submit time from 0. `read_at_ms` is the
  // server's clock when the list was read (Unix ms; < 0 unknown).
  Trace Finish(int64_t read_at_ms);

 private:
  Trace t_;
  std::vector<std::string> notes_;
  // Jobs still running: (index in t_.jobs, admission time).
  std::vector<std::pair<size_t, int64_t>> running_;
  int64_t pending_ = 0, no_gpus_ = 0, multi_ = 0;
};

// The same over one array of items.
Trace TraceFromWorkloads(const boost::json::array& items,
                         const std::string& source, int64_t read_at_ms = -1);

// RFC 3339 ("2024-05-01T10:00:00.250Z", offsets allowed) -> Unix ms.
bool ParseRfc3339Ms(const std::string& text, int64_t* out);

}  // namespace allot::sim
