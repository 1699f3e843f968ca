// Accounting: what admitted workloads hold, for how long, how busy their
// GPUs were and what that costs at their flavor's price; and the GPUs'
// telemetry rollups, fed by the same agent samples that measure how busy
// a workload's GPUs are. A part of the state (server/state.h): owner
// thread only.
//
// Guarantees: a closed stretch (eviction, end, deletion: Close) becomes a
// store::UsageRow in the batch of the turn that closed it (Flush), and so
// does each GPU-hour of telemetry when its minutes are closed; an open
// stretch is computed from memory when asked (OpenUsage), so a report
// always covers up to now. The rows of one admission add up exactly to
// its measured utilization.
//
// Accounting keeps no workloads: each call is given the records it reads
// or changes (their admitted_unix_ms, util_milli_ms and idle_since_ms are
// its) and the flavors that price them.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "proto/agent_protocol.h"
#include "server/records.h"
#include "server/telemetry.h"
#include "store/store.h"

namespace allot::server {

class Accounting {
 public:
  using Flavors = std::map<std::string, Entry<core::ResourceFlavor>>;
  using Workloads = std::map<std::string, WorkloadRecord>;

  // Starts or ends the accounting of rec's current admission; Close keeps
  // its rows for the turn's batch. A parked workload's stretch starts at
  // its park (WorkloadRecord::ParkedSinceMs) and is closed as any other
  // (at its resume, eviction, suspension or deletion): call Close before
  // its state changes.
  static void Open(WorkloadRecord* rec, int64_t now);
  void Close(WorkloadRecord* rec, int64_t now, const Flavors& flavors);
  // The usage rows of rec's current admission from its start to `now`:
  // of kind parked while it is parked (no utilization; parked in part, the
  // pod sets that keep their devices are runs from the park on), on parked
  // capacity for a borrower of parked capacity, run otherwise.
  static std::vector<store::UsageRow> Rows(const WorkloadRecord& rec, int64_t now,
                                           const Flavors& flavors);

  // Rows for what admitted workloads hold now, from their admission to
  // `now` (the store has every closed stretch): all tenants when `tenant`
  // is empty.
  static std::vector<store::UsageRow> OpenUsage(const Workloads& workloads,
                                                const std::string& tenant, int64_t now,
                                                const Flavors& flavors);
  // Admitted workloads whose GPUs have all been under the idle threshold
  // for at least `min_ms` (by agents' telemetry), with since when.
  struct IdleHolder {
    std::string key;
    int64_t idle_since_ms = 0;
    std::vector<store::UsageRow> rows;  // What it holds, up to now.
  };
  static std::vector<IdleHolder> IdleHolders(const Workloads& workloads,
                                             const std::string& tenant, int64_t now,
                                             int64_t min_ms, const Flavors& flavors);

  // Attributes one telemetry report of `node` (`obj`: its Node object,
  // nullptr if none; a MIG slice is as busy as its GPU), taken at `now`
  // after the previous one at `prev_ms`, to `holders`, the workloads placed
  // there: their utilization and since when they are idle.
  // Returns whether some of them went idle (its idle_since began).
  bool Attribute(const std::string& node, const core::Node* obj,
                 const std::set<std::string>& holders,
                 const std::vector<proto::GpuTelemetry>& samples, int64_t prev_ms,
                 int64_t now, Workloads* workloads) const;
  // Adds the samples of `node`'s GPUs taken at `now` to their rollups.
  void Roll(const std::string& node, const std::vector<proto::GpuTelemetry>& samples,
            int64_t now);

  // Moves what this turn closed (usage rows, telemetry hours) into `batch`,
  // and once an hour prunes telemetry older than the retention.
  void Flush(int64_t now, store::Batch* batch);

  // The utilization under which a GPU counts as idle (percent).
  void SetIdleThreshold(int pct) { idle_util_pct_ = pct; }
  int idle_threshold() const { return idle_util_pct_; }
  // How long GPU telemetry rollups are kept (server/telemetry.h).
  void SetTelemetryRetention(int64_t ms) { telemetry_retention_ms_ = ms; }

 private:
  // Usage rows closed this turn; Flush moves them into the batch.
  std::vector<store::UsageRow> closed_usage_;
  // GPU telemetry: the running minute of each GPU (by UUID), the hour rows
  // closed this turn, and when old hours were last pruned.
  std::unordered_map<std::string, GpuRollup> rollups_;
  std::vector<store::RollupRow> closed_rollups_;
  int64_t telemetry_retention_ms_ = 30LL * 86400000;
  int64_t pruned_hour_ms_ = 0;
  int idle_util_pct_ = 5;
};

}  // namespace allot::server
