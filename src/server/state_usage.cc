// Usage and cost accounting: what each admission of a workload holds, for
// how long, how busy its GPUs were, and what that costs at its flavor's
// price. A closed stretch (eviction, end, deletion) becomes a store::UsageRow
// in the same commit as the change that closed it; an open one is computed
// from memory when asked (OpenUsage), so a report always covers up to now.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "server/state.h"
#include "server/state_internal.h"

namespace allot::server {

namespace {

// Resources accounted as devices: whole GPUs and MIG slices.
bool IsDevice(const std::string& resource) {
  return resource == "nvidia.com/gpu" || resource.rfind("nvidia.com/mig-", 0) == 0;
}

}  // namespace

void State::OpenAccount(WorkloadRecord* rec, int64_t now) {
  rec->admitted_unix_ms = now;
  rec->util_milli_ms = 0;
  rec->idle_since_ms = 0;
}

std::vector<store::UsageRow> State::AccountRows(const WorkloadRecord& rec,
                                                int64_t now) const {
  std::vector<store::UsageRow> rows;
  if (rec.admitted_unix_ms == 0 || !rec.spec.admission) return rows;
  std::map<std::pair<std::string, std::string>, int64_t> held;  // (flavor, resource)
  for (const core::PodSetAssignment& psa : rec.spec.admission->pod_set_assignments) {
    for (const core::PodSet& ps : rec.spec.pod_sets) {
      if (ps.name != psa.name) continue;
      for (const auto& [res, flavor] : psa.flavors) {
        auto q = ps.requests.find(res);
        if (q == ps.requests.end() || !IsDevice(res)) continue;
        held[{flavor, res}] += q->second.milli() * psa.count;
      }
    }
  }
  int64_t total = 0;
  for (const auto& [fr, q] : held) total += q;
  if (total == 0) return rows;
  int64_t util_left = rec.util_milli_ms;
  size_t i = 0;
  for (const auto& [fr, q] : held) {
    store::UsageRow u;
    u.tenant = rec.spec.ns;
    u.workload = rec.spec.name;
    u.attempt = rec.attempt;
    u.local_queue = rec.spec.queue_name;
    u.cluster_queue = rec.spec.admission->cluster_queue;
    u.user = rec.submitted_by;
    u.flavor = fr.first;
    u.resource = fr.second;
    u.quantity_milli = q;
    u.start_unix_ms = rec.admitted_unix_ms;
    u.end_unix_ms = std::max(now, rec.admitted_unix_ms);
    // The measured utilization, shared in proportion to what each holds;
    // the last row takes the remainder so the rows add up exactly.
    int64_t share = ++i == held.size() ? util_left
                                       : int64_t(__int128(rec.util_milli_ms) * q / total);
    u.util_milli_ms = std::min(share, q * (u.end_unix_ms - u.start_unix_ms));
    util_left -= share;
    if (auto f = objs_.flavors.find(fr.first); f != objs_.flavors.end()) {
      auto p = f->second.obj.price_micros_per_hour.find(fr.second);
      if (p != f->second.obj.price_micros_per_hour.end()) u.price_micros_per_hour = p->second;
    }
    rows.push_back(std::move(u));
  }
  return rows;
}

void State::CloseAccount(WorkloadRecord* rec, int64_t now) {
  for (store::UsageRow& u : AccountRows(*rec, now)) closed_usage_.push_back(std::move(u));
  rec->admitted_unix_ms = 0;
  rec->util_milli_ms = 0;
  rec->idle_since_ms = 0;
}

std::vector<store::UsageRow> State::OpenUsage(const std::string& tenant,
                                              int64_t now) const {
  std::vector<store::UsageRow> rows;
  auto add = [&](const WorkloadRecord& rec) {
    if (rec.finished() || rec.admitted_unix_ms == 0) return;
    for (store::UsageRow& u : AccountRows(rec, now)) rows.push_back(std::move(u));
  };
  if (tenant.empty()) {
    for (const auto& [key, rec] : workloads_) add(rec);
  } else {
    for (auto it = workloads_.lower_bound(tenant + "/");
         it != workloads_.end() && it->second.spec.ns == tenant; ++it) {
      add(it->second);
    }
  }
  return rows;
}

std::vector<State::IdleHolder> State::IdleHolders(const std::string& tenant,
                                                  int64_t now,
                                                  int64_t min_ms) const {
  std::vector<IdleHolder> out;
  for (const auto& [key, rec] : workloads_) {
    if (!tenant.empty() && rec.spec.ns != tenant) continue;
    if (rec.finished() || rec.idle_since_ms == 0 || now - rec.idle_since_ms < min_ms) continue;
    out.push_back({key, rec.idle_since_ms, AccountRows(rec, now)});
  }
  return out;
}

std::map<std::string, std::pair<int64_t, GpuTelemetry>> State::LatestTelemetry(
    const std::string& node) const {
  std::map<std::string, std::pair<int64_t, GpuTelemetry>> out;
  for (const auto& [name, info] : agents_) {
    if ((!node.empty() && name != node) || !info.ready) continue;
    for (const GpuTelemetry& t : info.gpus) out[t.uuid] = {info.sampled_ms, t};
  }
  return out;
}

void State::AttributeTelemetry(const std::string& node,
                               const std::vector<GpuTelemetry>& samples,
                               int64_t prev_ms, int64_t now) {
  auto idx = node_index_.find(node);
  if (idx == node_index_.end()) return;
  std::map<std::string, int> util;  // Device UUID -> utilization %.
  for (const GpuTelemetry& t : samples) util[t.uuid] = std::clamp(t.utilization_pct, 0, 100);
  if (auto n = objs_.nodes.find(node); n != objs_.nodes.end()) {
    for (const core::Gpu& g : n->second.obj.gpus) {
      auto u = util.find(g.uuid);
      if (u == util.end()) continue;
      // A MIG slice is as busy as its GPU (NVML samples whole GPUs).
      for (const core::MigSlice& m : g.mig) util[m.uuid] = u->second;
    }
  }
  for (const std::string& key : idx->second) {
    WorkloadRecord& rec = workloads_.at(key);
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
    }
  }
}

}  // namespace allot::server
