// Usage and cost accounting, and GPU telemetry rollups (server/accounting.h).
#include "server/accounting.h"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace allot::server {

namespace {

// Resources accounted as devices: whole GPUs and MIG slices.
bool IsDevice(const std::string& resource) {
  return resource == "nvidia.com/gpu" || resource.rfind("nvidia.com/mig-", 0) == 0;
}

}  // namespace

void Accounting::Open(WorkloadRecord* rec, int64_t now) {
  rec->admitted_unix_ms = now;
  rec->util_milli_ms = 0;
  rec->idle_since_ms = 0;
  rec->pull_ms = 0;  // A new admission's pods pull afresh.
  rec->pulling_since_ms = 0;
}

std::vector<store::UsageRow> Accounting::Rows(const WorkloadRecord& rec, int64_t now,
                                              const Flavors& flavors) {
  std::vector<store::UsageRow> rows;
  // A parked workload holds its quota but no device, from its park on.
  const bool parked = rec.state == WorkloadState::kParked;
  const int64_t start = parked ? rec.ParkedSinceMs() : rec.admitted_unix_ms;
  if (start == 0 || !rec.spec.admission) return rows;
  const store::UsageKind running = rec.spec.admission->on_parked_capacity
                                      ? store::UsageKind::kOnParked
                                      : store::UsageKind::kRun;
  const int64_t util = parked ? 0 : rec.util_milli_ms;
  // (kind, flavor, resource). Parked in part, the pod sets that kept their
  // devices run on (their utilization is not measured while parked).
  std::map<std::tuple<store::UsageKind, std::string, std::string>, int64_t> held;
  for (const core::PodSetAssignment& psa : rec.spec.admission->pod_set_assignments) {
    const store::UsageKind kind =
        parked && psa.placements.empty() ? store::UsageKind::kParked : running;
    for (const core::PodSet& ps : rec.spec.pod_sets) {
      if (ps.name != psa.name) continue;
      for (const auto& [res, flavor] : psa.flavors) {
        auto q = ps.requests.find(res);
        if (q == ps.requests.end() || !IsDevice(res)) continue;
        held[{kind, flavor, res}] += q->second.milli() * psa.count;
      }
    }
  }
  int64_t total = 0;
  for (const auto& [fr, q] : held) total += q;
  if (total == 0) return rows;
  int64_t util_left = util;
  size_t i = 0;
  for (const auto& [fr, q] : held) {
    store::UsageRow u;
    u.tenant = rec.spec.ns;
    u.workload = rec.spec.name;
    u.attempt = rec.attempt;
    u.local_queue = rec.spec.queue_name;
    u.cluster_queue = rec.spec.admission->cluster_queue;
    u.user = rec.submitted_by;
    u.kind = std::get<0>(fr);
    u.flavor = std::get<1>(fr);
    u.resource = std::get<2>(fr);
    u.quantity_milli = q;
    u.start_unix_ms = start;
    u.end_unix_ms = std::max(now, start);
    // The measured utilization, shared in proportion to what each holds;
    // the last row takes the remainder so the rows add up exactly.
    int64_t share = ++i == held.size() ? util_left : int64_t(__int128(util) * q / total);
    u.util_milli_ms = std::min(share, q * (u.end_unix_ms - u.start_unix_ms));
    util_left -= share;
    if (auto f = flavors.find(u.flavor); f != flavors.end()) {
      auto p = f->second.obj.price_micros_per_hour.find(u.resource);
      if (p != f->second.obj.price_micros_per_hour.end()) u.price_micros_per_hour = p->second;
    }
    rows.push_back(std::move(u));
  }
  return rows;
}

void Accounting::Close(WorkloadRecord* rec, int64_t now, const Flavors& flavors) {
  for (store::UsageRow& u : Rows(*rec, now, flavors)) closed_usage_.push_back(std::move(u));
  rec->admitted_unix_ms = 0;
  rec->util_milli_ms = 0;
  rec->idle_since_ms = 0;
}

std::vector<store::UsageRow> Accounting::OpenUsage(const Workloads& workloads,
                                                   const std::string& tenant, int64_t now,
                                                   const Flavors& flavors) {
  std::vector<store::UsageRow> rows;
  auto add = [&](const WorkloadRecord& rec) {
    if (rec.finished()) return;
    for (store::UsageRow& u : Rows(rec, now, flavors)) rows.push_back(std::move(u));
  };
  if (tenant.empty()) {
    for (const auto& [key, rec] : workloads) add(rec);
  } else {
    for (auto it = workloads.lower_bound(tenant + "/");
         it != workloads.end() && it->second.spec.ns == tenant; ++it) {
      add(it->second);
    }
  }
  return rows;
}

std::vector<Accounting::IdleHolder> Accounting::IdleHolders(const Workloads& workloads,
                                                            const std::string& tenant,
                                                            int64_t now, int64_t min_ms,
                                                            const Flavors& flavors) {
  std::vector<IdleHolder> out;
  for (const auto& [key, rec] : workloads) {
    if (!tenant.empty() && rec.spec.ns != tenant) continue;
    if (rec.finished() || rec.idle_since_ms == 0 || now - rec.idle_since_ms < min_ms) continue;
    out.push_back({key, rec.idle_since_ms, Rows(rec, now, flavors)});
  }
  return out;
}

bool Accounting::Attribute(const std::string& node, const core::Node* obj,
                           const std::set<std::string>& holders,
                           const std::vector<proto::GpuTelemetry>& samples, int64_t prev_ms,
                           int64_t now, Workloads* workloads) const {
  bool went_idle = false;
  std::map<std::string, int> util;  // Device UUID -> utilization %.
  for (const proto::GpuTelemetry& t : samples) util[t.uuid] = std::clamp(t.utilization_pct, 0, 100);
  if (obj != nullptr) {
    for (const core::Gpu& g : obj->gpus) {
      auto u = util.find(g.uuid);
      if (u == util.end()) continue;
      // A MIG slice is as busy as its GPU (NVML samples whole GPUs).
      for (const core::MigSlice& m : g.mig) util[m.uuid] = u->second;
    }
  }
  for (const std::string& key : holders) {
    WorkloadRecord& rec = workloads->at(key);
    if (rec.finished() || rec.admitted_unix_ms == 0 || !rec.spec.admission) continue;
    // The stretch since the previous sample (at most a minute, so a silent
    // agent is not credited for the gap) that this admission held.
    const int64_t from = std::max({prev_ms, rec.admitted_unix_ms, now - 60000});
    const int64_t dt = prev_ms > 0 ? std::max<int64_t>(0, now - from) : 0;
    bool any = false, busy = false;
    for (const auto& psa : rec.spec.admission->pod_set_assignments) {
      for (const auto& pl : psa.placements) {
        if (pl.node != node) continue;
        for (const std::string& d : pl.gpus) {
          auto u = util.find(d);
          if (u == util.end()) continue;
          any = true;
          busy |= u->second >= idle_util_pct_;
          rec.util_milli_ms += 10 * int64_t(u->second) * dt;  // 1000 x pct/100.
        }
      }
    }
    if (!any) continue;
    if (busy) {
      rec.idle_since_ms = 0;
    } else if (rec.idle_since_ms == 0) {
      rec.idle_since_ms = std::max(prev_ms > 0 ? prev_ms : now, rec.admitted_unix_ms);
      went_idle = true;
    }
  }
  return went_idle;
}

void Accounting::Roll(const std::string& node,
                      const std::vector<proto::GpuTelemetry>& samples, int64_t now) {
  for (const proto::GpuTelemetry& t : samples) {
    store::RollupRow row;
    if (rollups_[t.uuid].Add(t.uuid, node, now, t.utilization_pct, t.temperature_c,
                             t.power_watts, t.memory_used_bytes, &row)) {
      closed_rollups_.push_back(std::move(row));
    }
  }
}

void Accounting::Flush(int64_t now, store::Batch* batch) {
  for (store::UsageRow& u : closed_usage_) batch->usage.push_back(std::move(u));
  closed_usage_.clear();
  for (store::RollupRow& r : closed_rollups_) batch->rollups.push_back(std::move(r));
  closed_rollups_.clear();
  // Once an hour: telemetry older than the retention goes.
  const int64_t hour = now / 3600000 * 3600000;
  if (hour != pruned_hour_ms_ && now > telemetry_retention_ms_) {
    pruned_hour_ms_ = hour;
    batch->prune_rollups_before_ms = now - telemetry_retention_ms_;
  }
}

}  // namespace allot::server
