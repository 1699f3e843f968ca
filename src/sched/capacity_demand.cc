// Scheduler::CapacityDemands: the capacity-blocked workloads one by one,
// for an autoscaler (ctrl/autoscaler.h), and what it reads of flavors and
// nodes.
#include <algorithm>
#include <map>
#include <utility>

#include "sched/scheduler.h"
#include "sched/scheduler_internal.h"

namespace allot::sched {

std::vector<CapacityDemand> Scheduler::CapacityDemands() const {
  const Impl& m = *impl_;
  // Every waiting workload once, in queue order across ClusterQueues.
  std::vector<std::pair<QueueKey, WlIdx>> order;
  for (const auto& entry : m.placement_waiters) {
    for (WlIdx w : entry.second) {
      const Wl& wl = m.wls[w];
      if (wl.state != Wl::State::kPending || wl.cq < 0 || !m.Settled(m.cqs[wl.cq])) continue;
      order.emplace_back(wl.QKey(w), w);
    }
  }
  // One entry per flavor it waits for: keep one.
  std::sort(order.begin(), order.end());
  order.erase(std::unique(order.begin(), order.end()), order.end());

  // The quota the listed workloads take, on a copy of the tree.
  QuotaTree quota = *m.quota;
  std::vector<CapacityDemand> out;
  std::vector<std::pair<int32_t, int64_t>> take;  // (fr, milli)
  for (const auto& [qk, w] : order) {
    const Wl& wl = m.wls[w];
    const CQ& cq = m.cqs[wl.cq];
    // Its flavors in the ClusterQueue's order (groups, then within each).
    std::vector<int32_t> flavors;
    for (const Group& g : cq.groups) {
      for (int32_t f : g.flavors) {
        if (std::find(wl.waiting_flavors.begin(), wl.waiting_flavors.end(), f) !=
                wl.waiting_flavors.end() &&
            std::find(flavors.begin(), flavors.end(), f) == flavors.end()) {
          flavors.push_back(f);
        }
      }
    }
    // The first flavor whose quota still holds all of it is the one it
    // would take; none: the workloads before it took the room.
    std::vector<std::string> fits;
    bool took = false;
    for (int32_t f : flavors) {
      take.clear();
      bool ok = true;
      for (size_t p = 0; p < wl.needs.size() && ok; ++p) {
        for (const auto& [r, per] : wl.needs[p].per_pod) {
          const int32_t g = r < int32_t(cq.res_group.size()) ? cq.res_group[size_t(r)] : -1;
          if (g < 0) continue;
          const std::vector<int32_t>& gf = cq.groups[size_t(g)].flavors;
          // A resource of another group takes that group's flavor: only
          // the resources of f's group are checked here.
          if (std::find(gf.begin(), gf.end(), f) == gf.end()) continue;
          const int32_t fr = m.Fr(f, r);
          const int64_t milli = per * wl.full_counts[p];
          int64_t already = 0;
          for (const auto& [tfr, tm] : take) already += tfr == fr ? tm : 0;
          if (quota.Available(cq.node, fr) < already + milli) {
            ok = false;
            break;
          }
          take.emplace_back(fr, milli);
        }
      }
      if (!ok) continue;
      if (!took) {
        for (const auto& [fr, milli] : take) quota.AddUsage(cq.node, fr, milli);
        took = true;
      }
      fits.push_back(m.flavors[size_t(f)].name);
    }
    if (!took) continue;
    CapacityDemand& d = out.emplace_back();
    d.key = wl.key;
    d.cluster_queue = wl.cq_name;
    d.priority = wl.priority;
    d.flavors = std::move(fits);
    for (size_t p = 0; p < wl.spec.pod_sets.size(); ++p) {
      const core::PodSet& ps = wl.spec.pod_sets[p];
      CapacityDemandPodSet& s = d.pod_sets.emplace_back();
      s.count = p < wl.full_counts.size() ? wl.full_counts[p] : ps.count;
      for (const auto& [name, q] : ps.requests) {
        if (name == core::kGpuResource) {
          s.gpus = int32_t((q.milli() + 999) / 1000);
        } else if (name == core::kCpuResource) {
          s.cpu = q;
        } else if (name == core::kMemoryResource) {
          s.memory = q;
        } else if (core::IsGpuResource(name)) {
          s.other_devices = true;
        }
      }
      s.node_selector = ps.node_selector;
      s.tolerations = ps.tolerations;
    }
  }
  return out;
}

const core::ResourceFlavor* Scheduler::Flavor(const std::string& name) const {
  const Impl& m = *impl_;
  auto it = m.flavor_idx.find(name);
  return it == m.flavor_idx.end() ? nullptr : &m.flavors[size_t(it->second)];
}

std::optional<NodePool::NodeFree> Scheduler::NodeFree(const std::string& name) const {
  const Impl& m = *impl_;
  std::optional<NodeIdx> n = m.pool->FindNode(name);
  if (!n) return std::nullopt;
  return m.pool->Free(*n);
}

}  // namespace allot::sched
