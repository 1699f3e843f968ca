#include "server/usage.h"

#include <algorithm>
#include <map>
#include <set>

namespace allot::server {

namespace json = boost::json;

namespace {
constexpr const char* kBy[] = {"tenant", "queue", "clusterqueue", "flavor", "user",
                               "workload"};
}  // namespace

Result<UsageBy> ParseUsageBy(const std::string& s) {
  for (size_t i = 0; i < std::size(kBy); ++i) {
    if (s == kBy[i]) return UsageBy(i);
  }
  return Status::InvalidArgument(
      "unknown grouping '" + s +
          "': use tenant, queue, clusterqueue, flavor, user or workload",
      "by");
}

const char* ToString(UsageBy by) { return kBy[size_t(by)]; }

UsageAmounts Clip(const store::UsageRow& u, int64_t since, int64_t until) {
  UsageAmounts a;
  const int64_t from = std::max(u.start_unix_ms, since);
  const int64_t to = std::min(u.end_unix_ms, until);
  if (to <= from) return a;
  const int64_t overlap = to - from;
  const int64_t duration = u.end_unix_ms - u.start_unix_ms;
  a.gpu_ms = int64_t(__int128(u.quantity_milli) * overlap / 1000);
  a.util_gpu_ms = duration > 0 ? int64_t(__int128(u.util_milli_ms) * overlap / duration / 1000) : 0;
  a.cost_micros = int64_t(__int128(u.quantity_milli) * overlap * u.price_micros_per_hour /
                          (__int128(1000) * 3600000));
  return a;
}

namespace {

struct Sum {
  UsageAmounts a;               // Used and charged (runs, on parked capacity too).
  UsageAmounts reserved;        // Parked: held quota, no device, not charged.
  int64_t on_parked_gpu_ms = 0;  // Of a.gpu_ms, on capacity lent by parked work.
  std::set<std::string> workloads;
};

json::object Line(const std::string& key, const Sum& s) {
  json::object o;
  if (!key.empty()) o["key"] = key;
  o["gpuMs"] = s.a.gpu_ms;
  o["gpuHours"] = double(s.a.gpu_ms) / 3600000.0;
  o["utilGpuMs"] = s.a.util_gpu_ms;
  o["utilizationPct"] = s.a.gpu_ms > 0 ? 100.0 * double(s.a.util_gpu_ms) / double(s.a.gpu_ms) : 0.0;
  o["costMicros"] = s.a.cost_micros;
  o["cost"] = double(s.a.cost_micros) / 1e6;
  o["reservedGpuMs"] = s.reserved.gpu_ms;
  o["reservedGpuHours"] = double(s.reserved.gpu_ms) / 3600000.0;
  o["reservedCostMicros"] = s.reserved.cost_micros;
  o["onParkedGpuMs"] = s.on_parked_gpu_ms;
  o["onParkedGpuHours"] = double(s.on_parked_gpu_ms) / 3600000.0;
  o["workloads"] = int64_t(s.workloads.size());
  return o;
}

}  // namespace

json::object UsageReport(const std::vector<store::UsageRow>& rows, UsageBy by,
                         int64_t since, int64_t until) {
  std::map<std::string, Sum> groups;
  Sum total;
  for (const store::UsageRow& u : rows) {
    UsageAmounts a = Clip(u, since, until);
    if (a.gpu_ms == 0 && a.cost_micros == 0) continue;
    const std::string wl = u.tenant + "/" + u.workload;
    std::string key;
    switch (by) {
      case UsageBy::kTenant: key = u.tenant; break;
      case UsageBy::kQueue: key = u.tenant + "/" + u.local_queue; break;
      case UsageBy::kClusterQueue: key = u.cluster_queue; break;
      case UsageBy::kFlavor: key = u.flavor + " " + u.resource; break;
      case UsageBy::kUser: key = u.user; break;
      case UsageBy::kWorkload: key = wl; break;
    }
    for (Sum* s : {&groups[key], &total}) {
      UsageAmounts& to = u.kind == store::UsageKind::kParked ? s->reserved : s->a;
      to.gpu_ms += a.gpu_ms;
      to.util_gpu_ms += a.util_gpu_ms;
      to.cost_micros += a.cost_micros;
      if (u.kind == store::UsageKind::kOnParked) s->on_parked_gpu_ms += a.gpu_ms;
      s->workloads.insert(wl);
    }
  }
  json::array items;
  for (const auto& [key, s] : groups) items.push_back(Line(key, s));
  json::object o;
  o["by"] = ToString(by);
  o["sinceUnixMs"] = since;
  o["untilUnixMs"] = until;
  o["items"] = std::move(items);
  o["total"] = Line("", total);
  return o;
}

}  // namespace allot::server
