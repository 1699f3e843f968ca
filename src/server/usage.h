// Usage reports: store::UsageRow stretches clipped to a window and summed by
// tenant, LocalQueue, ClusterQueue, flavor, user or workload. Every figure is
// computed per row in integers and then added, so a report's total is
// exactly the sum of its lines, whatever the grouping.
#pragma once

#include <boost/json/object.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "store/store.h"

namespace allot::server {

enum class UsageBy { kTenant, kQueue, kClusterQueue, kFlavor, kUser, kWorkload };
Result<UsageBy> ParseUsageBy(const std::string& s);
const char* ToString(UsageBy by);

// One row's share of [since, until).
struct UsageAmounts {
  int64_t gpu_ms = 0;       // Device-milliseconds held (a MIG slice is a device).
  int64_t util_gpu_ms = 0;  // The same, weighted by measured utilization.
  int64_t cost_micros = 0;  // At the row's price per device-hour.
};
UsageAmounts Clip(const store::UsageRow& row, int64_t since, int64_t until);

// {"by","sinceUnixMs","untilUnixMs","items":[{"key","gpuMs","gpuHours",
// "utilGpuMs","utilizationPct","costMicros","cost","reservedGpuMs",
// "reservedGpuHours","reservedCostMicros","onParkedGpuMs","onParkedGpuHours",
// "workloads"}...],"total":{...}}; items by key. Parked stretches are
// reserved, not used: their GPU-hours and their value at the flavor's
// price (reservedCostMicros) are apart and charge nothing; stretches on
// parked capacity are used and charged as any run, and also counted in
// onParkedGpuMs.
boost::json::object UsageReport(const std::vector<store::UsageRow>& rows,
                                UsageBy by, int64_t since, int64_t until);

}  // namespace allot::server
