#include "ctrl/autoscaler.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <utility>

#include "core/duration.h"
#include "core/pool_order.h"

namespace allot::ctrl {

int64_t BootRetryDelayMs(int32_t failures) {
  if (failures <= 0) return 0;
  int64_t d = 30000;
  for (int32_t i = 1; i < failures && d < 600000; ++i) d *= 2;
  return std::min<int64_t>(d, 600000);
}

bool InWindows(const std::vector<std::pair<int32_t, int32_t>>& windows,
               int32_t minute_of_day) {
  if (windows.empty()) return true;
  for (const auto& [from, to] : windows) {
    if (from < to ? minute_of_day >= from && minute_of_day < to
                  : minute_of_day >= from || minute_of_day < to) {
      return true;
    }
  }
  return false;
}

namespace {

constexpr int64_t kUnlimited = std::numeric_limits<int64_t>::max() / 4;
constexpr size_t kConsolidationTries = 16;

// Room on one node for the packing: a ready node's free capacity, a
// booting node's or a new one's whole shape.
struct Bin {
  enum class Kind { kReady, kBooting, kNew };
  Kind kind = Kind::kReady;
  int32_t node = -1;  // Index into PoolView::nodes.
  int32_t gpus_free = 0;
  int64_t cpu_milli = 0;
  int64_t memory_milli = 0;
  int32_t pos = 0;  // In its bucket.
  bool touched = false;  // Demand was packed on it.
};

struct Pool {
  const PoolView* view = nullptr;
  const core::NodePool* spec = nullptr;
  int32_t gpus = 0;  // Per node.
  int64_t cpu_milli = kUnlimited;
  int64_t memory_milli = kUnlimited;
  bool degraded = false;
  bool can_grow = true;  // Not backing off.
  int64_t retry_ms = 0;  // When it may grow again, if not now.
  int32_t alive = 0;     // Ready, booting or suspending.
  int32_t up = 0;        // Ready or booting (what minNodes counts).
  std::vector<int32_t> free_names;  // Suspended nodes, in name order.
  std::vector<Bin> bins;
  std::vector<std::vector<int32_t>> buckets;  // By gpus_free.
  // New nodes opened, per cause, and the workloads they are for.
  std::vector<int32_t> opened_for_demand, opened_for_min, opened_for_headroom;
  std::vector<std::string> for_workloads;
  int32_t demand_workloads = 0;
  int64_t free_gpus = 0;  // Over every bin.

  int32_t Grown() const {
    return int32_t(opened_for_demand.size() + opened_for_min.size() +
                   opened_for_headroom.size());
  }
  void Insert(int32_t b) {
    auto& bucket = buckets[size_t(bins[size_t(b)].gpus_free)];
    bins[size_t(b)].pos = int32_t(bucket.size());
    bucket.push_back(b);
  }
  void Erase(int32_t b) {
    auto& bucket = buckets[size_t(bins[size_t(b)].gpus_free)];
    const int32_t pos = bins[size_t(b)].pos;
    bucket[size_t(pos)] = bucket.back();
    bins[size_t(bucket[size_t(pos)])].pos = pos;
    bucket.pop_back();
  }
  void Add(Bin b) {
    bins.push_back(b);
    free_gpus += b.gpus_free;
    Insert(int32_t(bins.size()) - 1);
  }
  // Takes (sign 1) or gives back (-1) one pod's needs on bin b.
  void Take(int32_t b, const sched::CapacityDemandPodSet& ps, int32_t sign) {
    Erase(b);
    Bin& bin = bins[size_t(b)];
    bin.gpus_free -= sign * ps.gpus;
    if (bin.cpu_milli < kUnlimited) bin.cpu_milli -= sign * ps.cpu.milli();
    if (bin.memory_milli < kUnlimited) bin.memory_milli -= sign * ps.memory.milli();
    free_gpus -= sign * ps.gpus;
    Insert(b);
  }
  // Best fit: the bin with the fewest free GPUs that holds the pod.
  int32_t Find(const sched::CapacityDemandPodSet& ps) const {
    for (size_t g = size_t(ps.gpus); g < buckets.size(); ++g) {
      for (auto it = buckets[g].rbegin(); it != buckets[g].rend(); ++it) {
        const Bin& bin = bins[size_t(*it)];
        if (bin.cpu_milli >= ps.cpu.milli() && bin.memory_milli >= ps.memory.milli()) {
          return *it;
        }
      }
    }
    return -1;
  }
  bool CanOpen() const {
    return can_grow && Grown() < int32_t(free_names.size()) &&
           alive + Grown() < spec->max_nodes;
  }
  int32_t Open(std::vector<int32_t>* cause) {
    Bin b;
    b.kind = Bin::Kind::kNew;
    b.node = free_names[size_t(Grown())];
    b.gpus_free = gpus;
    b.cpu_milli = cpu_milli;
    b.memory_milli = memory_milli;
    cause->push_back(b.node);
    Add(b);
    return int32_t(bins.size()) - 1;
  }
  // Whether one pod of `ps` fits an empty node of this pool at all.
  bool ShapeFits(const sched::CapacityDemandPodSet& ps) const {
    return !ps.other_devices && ps.gpus <= gpus && ps.cpu.milli() <= cpu_milli &&
           ps.memory.milli() <= memory_milli;
  }
  int64_t BootMs() const {
    return view->expected_boot_ms > 0 ? view->expected_boot_ms : spec->boot_timeout_ms;
  }
  int64_t HeadroomGpus() const {
    int64_t h = spec->headroom_gpus;
    if (spec->headroom_arrivals) {
      const int64_t window = spec->headroom_window_ms > 0 ? spec->headroom_window_ms : BootMs();
      h += int64_t(std::ceil(view->arrival_gpus_per_hour * double(window) / 3600000.0));
    }
    return h;
  }
};

// The pool order of a workload's ClusterQueue (allot.dev/pool-order;
// validated when the ClusterQueue was read), else the default.
core::PoolOrder OrderOf(const View& view, const std::string& cluster_queue) {
  const core::ClusterQueue* cq = view.FindClusterQueue(cluster_queue);
  if (cq == nullptr) return {};
  auto it = cq->annotations.find(core::kPoolOrderKey);
  if (it == cq->annotations.end()) return {};
  Result<core::PoolOrder> o = core::ParsePoolOrder(it->second);
  return o.ok() ? *o : core::PoolOrder{};
}

std::string Minutes(int64_t ms) {
  return core::FormatDurationSeconds(std::max<int64_t>(60, (ms + 59999) / 60000 * 60));
}

std::string Nodes(size_t n) { return std::to_string(n) + (n == 1 ? " node" : " nodes"); }

// One workload's pods on one pool, all or none. Returns whether they went
// on; sets the booting bins and the new ones (asked for in this run) it
// used.
bool Pack(Pool& p, const sched::CapacityDemand& d, std::vector<int32_t>* booting,
          std::vector<int32_t>* fresh) {
  struct Taken {
    int32_t bin;
    const sched::CapacityDemandPodSet* ps;
  };
  std::vector<Taken> taken;
  const size_t opened_before = p.opened_for_demand.size();
  bool ok = true;
  for (const sched::CapacityDemandPodSet& ps : d.pod_sets) {
    for (int32_t i = 0; i < ps.count && ok; ++i) {
      int32_t b = p.Find(ps);
      if (b < 0 && p.CanOpen()) b = p.Open(&p.opened_for_demand);
      if (b < 0) {
        ok = false;
        break;
      }
      p.Take(b, ps, 1);
      taken.push_back({b, &ps});
    }
    if (!ok) break;
  }
  if (!ok) {
    for (auto it = taken.rbegin(); it != taken.rend(); ++it) p.Take(it->bin, *it->ps, -1);
    while (p.opened_for_demand.size() > opened_before) {
      const int32_t b = int32_t(p.bins.size()) - 1;
      p.Erase(b);
      p.free_gpus -= p.bins.back().gpus_free;
      p.bins.pop_back();
      p.opened_for_demand.pop_back();
    }
    return false;
  }
  for (const Taken& t : taken) {
    Bin& bin = p.bins[size_t(t.bin)];
    bin.touched = true;
    std::vector<int32_t>* used = bin.kind == Bin::Kind::kBooting ? booting
                                 : bin.kind == Bin::Kind::kNew   ? fresh
                                                                 : nullptr;
    if (used && std::find(used->begin(), used->end(), t.bin) == used->end()) {
      used->push_back(t.bin);
    }
  }
  return true;
}

// Consolidation: a ready node of `p` whose GPUs have been at most half
// allocated for the pool's scaleDownDelay, untouched by demand in this
// run, running only movable workloads (preemptible, all their pods on it)
// that fit in the free room of the pool's other ready nodes (GPUs, cpu and
// memory; each workload whole on one node, best fit by GPUs; the pool's
// nodes share their labels, so node selectors are not checked), is
// drained: cordoned and its workloads evicted, to be suspended once empty;
// the scheduler then places them where they fit. Within the disruption
// budget and windows (a drained node counts as disrupted until it is
// suspended), never below minNodes or the headroom; the least used first.
void Consolidate(const Pool& p, int64_t now_ms, bool window, int64_t headroom,
                 int32_t* suspending, int32_t* up, int64_t* free, std::vector<bool>* going,
                 Plan* plan) {
  std::vector<const Bin*> candidates;
  // What is free on the ready nodes that stay: GPUs, cpu, memory.
  std::vector<std::array<int64_t, 3>> room(p.view->nodes.size(), {0, 0, 0});
  for (const Bin& b : p.bins) {
    if (b.kind != Bin::Kind::kReady || (*going)[size_t(b.node)]) continue;
    room[size_t(b.node)] = {b.gpus_free, b.cpu_milli, b.memory_milli};
    const PoolNodeView& n = p.view->nodes[size_t(b.node)];
    if (b.touched || n.underused_since_ms <= 0 || n.workloads.empty()) continue;
    bool movable = true;
    for (const PoolNodeWorkload& w : n.workloads) movable = movable && w.movable;
    if (!movable) continue;
    const int64_t due = n.underused_since_ms + p.spec->scale_down_delay_ms;
    if (due > now_ms) {
      plan->next_wake_ms = std::min(plan->next_wake_ms, due);
      continue;
    }
    candidates.push_back(&b);
  }
  std::stable_sort(candidates.begin(), candidates.end(), [](const Bin* a, const Bin* b) {
    return a->gpus_free > b->gpus_free;  // The least used first.
  });
  // Each try scans the pool's nodes: at most kConsolidationTries a run (the
  // next run tries again).
  if (candidates.size() > kConsolidationTries) candidates.resize(kConsolidationTries);
  for (const Bin* c : candidates) {
    if (!window || *suspending >= p.spec->max_disrupted) return;
    const PoolNodeView& n = p.view->nodes[size_t(c->node)];
    int32_t used = 0;
    for (const PoolNodeWorkload& w : n.workloads) used += w.gpus;
    // Its free GPUs and the room its workloads take elsewhere leave.
    if (*up - 1 < p.spec->min_nodes || *free - c->gpus_free - used < headroom) continue;
    std::vector<std::array<int64_t, 3>> trial = room;
    trial[size_t(c->node)] = {0, 0, 0};
    std::vector<std::pair<std::string, std::string>> moves;  // Workload, node.
    bool fits = true;
    for (const PoolNodeWorkload& w : n.workloads) {
      const std::array<int64_t, 3> want = {w.gpus, w.cpu_milli, w.memory_milli};
      int32_t best = -1;
      for (size_t i = 0; i < trial.size(); ++i) {
        const auto& r = trial[i];
        if (r[0] < want[0] || r[1] < want[1] || r[2] < want[2]) continue;
        if (best < 0 || r[0] < trial[size_t(best)][0]) best = int32_t(i);
      }
      if (best < 0) {
        fits = false;
        break;
      }
      for (size_t k = 0; k < 3; ++k) {
        if (trial[size_t(best)][k] < kUnlimited) trial[size_t(best)][k] -= want[k];
      }
      moves.emplace_back(w.key, std::string(p.view->nodes[size_t(best)].name));
    }
    if (!fits) continue;
    room = std::move(trial);
    (*going)[size_t(c->node)] = true;
    ++*suspending;
    --*up;
    *free -= c->gpus_free + used;
    Action a{Action::Type::kConsolidate, p.spec->name, "Consolidation", "", "", {}};
    a.nodes.emplace_back(n.name);
    std::string list;
    for (const auto& [w, to] : moves) list += (list.empty() ? "" : ", ") + w + " (room on " + to + ")";
    a.message = std::string(n.name) + " had " + std::to_string(used) + " of " +
                std::to_string(p.gpus) + " GPUs allocated for " +
                core::FormatDurationSeconds(p.spec->scale_down_delay_ms / 1000) +
                " or more; its preemptible workloads move: " + list;
    plan->actions.push_back(std::move(a));
  }
}

}  // namespace

Plan Autoscaler::Run(const View& view, int64_t now_ms) const {
  Plan plan;
  std::vector<Pool> pools;
  std::vector<PoolView> views;  // ForEachPool's views live only in its call.
  view.ForEachPool([&](const PoolView& v) { views.push_back(v); });
  if (views.empty()) return plan;
  for (const PoolView& v : views) {
    Pool& p = pools.emplace_back();
    p.view = &v;
    p.spec = v.spec;
    const core::Node& shape = v.spec->node;
    p.gpus = int32_t(shape.gpus.size());
    if (shape.cpu.milli() > 0) p.cpu_milli = shape.cpu.milli();
    if (shape.memory.milli() > 0) p.memory_milli = shape.memory.milli();
    p.buckets.resize(size_t(p.gpus) + 1);
    p.degraded = v.failures_in_a_row >= v.spec->failure_threshold;
    p.retry_ms = v.retry_after_ms;
    p.can_grow = p.retry_ms <= now_ms;
    Action failed{Action::Type::kBootFailed, v.spec->name, "BootTimeout", "", "", {}};
    for (size_t i = 0; i < v.nodes.size(); ++i) {
      const PoolNodeView& n = v.nodes[i];
      switch (n.state) {
        case PoolNodeView::State::kSuspended:
          p.free_names.push_back(int32_t(i));
          break;
        case PoolNodeView::State::kBooting:
          if (now_ms - n.since_ms >= v.spec->boot_timeout_ms) {
            failed.nodes.emplace_back(n.name);
            break;
          }
          ++p.alive;
          ++p.up;
          plan.next_wake_ms = std::min(plan.next_wake_ms, n.since_ms + v.spec->boot_timeout_ms);
          p.Add({Bin::Kind::kBooting, int32_t(i), p.gpus, p.cpu_milli, p.memory_milli, 0, false});
          break;
        case PoolNodeView::State::kReady:
          ++p.alive;
          ++p.up;
          if (!n.cordoned) {
            p.Add({Bin::Kind::kReady, int32_t(i), n.gpus_free,
                   p.cpu_milli < kUnlimited ? n.cpu_free.milli() : kUnlimited,
                   p.memory_milli < kUnlimited ? n.memory_free.milli() : kUnlimited, 0,
                   false});
          }
          break;
        case PoolNodeView::State::kSuspending:
          ++p.alive;
          break;
      }
    }
    if (!failed.nodes.empty()) {
      // The owner backs off from now on: no resume in this run either.
      p.can_grow = false;
      p.retry_ms = now_ms + BootRetryDelayMs(v.failures_in_a_row + int32_t(failed.nodes.size()));
      failed.message = Nodes(failed.nodes.size()) + " did not register within " +
                       core::FormatDurationSeconds(v.spec->boot_timeout_ms / 1000) +
                       " of their resume: " + failed.nodes.front() +
                       (failed.nodes.size() > 1 ? ", ..." : "");
      plan.actions.push_back(std::move(failed));
    }
  }

  // The pools that can serve each flavor, best first in a ClusterQueue's
  // pool order.
  std::map<std::pair<std::string, std::array<int32_t, 3>>, std::vector<int32_t>> by_flavor;
  auto candidates = [&](const std::string& flavor,
                        const core::PoolOrder& order) -> const std::vector<int32_t>& {
    const auto key = std::make_pair(flavor, std::array<int32_t, 3>{order.onprem, order.edge,
                                                                   order.cloud});
    auto it = by_flavor.find(key);
    if (it != by_flavor.end()) return it->second;
    std::vector<int32_t>& c = by_flavor[key];
    const core::ResourceFlavor* f = view.FindFlavor(flavor);
    if (f == nullptr) return c;
    for (size_t i = 0; i < pools.size(); ++i) {
      if (core::LabelsMatch(f->node_labels, pools[i].spec->node.labels)) c.push_back(int32_t(i));
    }
    std::stable_sort(c.begin(), c.end(), [&](int32_t a, int32_t b) {
      const Pool& x = pools[size_t(a)];
      const Pool& y = pools[size_t(b)];
      // Price per GPU, compared without dividing.
      auto per_gpu = [](const Pool& p, const Pool& q) {
        return __int128(p.spec->price_micros_per_node_hour) * std::max(1, q.gpus);
      };
      return std::make_tuple(x.degraded, order.Rank(x.spec->location), per_gpu(x, y)) <
             std::make_tuple(y.degraded, order.Rank(y.spec->location), per_gpu(y, x));
    });
    return c;
  };

  // Why pools that would take a workload cannot now (backing off).
  auto backing_off = [&](const Pool& p) {
    std::string s = "pool " + p.spec->name + " cannot start nodes before about " +
                    Minutes(p.retry_ms - now_ms) + " from now (" +
                    std::to_string(p.view->failures_in_a_row) + " failed boot" +
                    (p.view->failures_in_a_row == 1 ? "" : "s") + " in a row";
    if (!p.view->last_error.empty()) s += "; last: " + std::string(p.view->last_error);
    return s + ")";
  };

  // Scale-up for the demand, workload by workload.
  std::map<std::string, core::PoolOrder, std::less<>> orders;  // By ClusterQueue.
  std::vector<int32_t> booting, fresh;
  std::vector<Action> explains;  // After the pools' actions.
  for (const sched::CapacityDemand& d : view.CapacityDemands()) {
    bool placed = false;
    std::string held;  // The pools that would fit it but back off.
    auto known = orders.find(d.cluster_queue);
    if (known == orders.end()) {
      known = orders.emplace(d.cluster_queue, OrderOf(view, d.cluster_queue)).first;
    }
    const core::PoolOrder& order = known->second;
    for (const std::string& flavor : d.flavors) {
      const core::ResourceFlavor* f = view.FindFlavor(flavor);
      for (int32_t pi : candidates(flavor, order)) {
        Pool& p = pools[size_t(pi)];
        bool fits = true;
        for (const sched::CapacityDemandPodSet& ps : d.pod_sets) {
          fits = fits && p.ShapeFits(ps) &&
                 core::LabelsMatch(ps.node_selector, p.spec->node.labels) &&
                 core::TaintsTolerated(p.spec->node.taints, f->tolerations, ps.tolerations);
        }
        if (!fits) continue;
        if (!p.can_grow && p.retry_ms > now_ms) {
          held += (held.empty() ? "" : "; ") + backing_off(p);
        }
        booting.clear();
        fresh.clear();
        if (!Pack(p, d, &booting, &fresh)) continue;
        placed = true;
        ++p.demand_workloads;
        if (p.for_workloads.size() < 3) p.for_workloads.push_back(d.key);
        std::string why;
        if (!booting.empty()) {
          int64_t ready_ms = 0;
          for (int32_t b : booting) {
            const PoolNodeView& n = p.view->nodes[size_t(p.bins[size_t(b)].node)];
            ready_ms = std::max(ready_ms, n.since_ms + p.BootMs() - now_ms);
          }
          why = "waits for " + Nodes(booting.size()) + " of pool " + p.spec->name +
                ", booting, ready in about " + Minutes(ready_ms);
        }
        if (!fresh.empty()) {
          why += (why.empty() ? "waits for " : "; and for ") + Nodes(fresh.size()) + " of pool " +
                 p.spec->name + " asked for now (a boot takes about " + Minutes(p.BootMs()) +
                 ")";
        }
        if (!why.empty()) {
          explains.push_back({Action::Type::kExplain, d.key, "WaitingForNodes", why, "", {}});
        }
        break;
      }
      if (placed) break;
    }
    if (!placed && !held.empty()) {
      explains.push_back({Action::Type::kExplain, d.key, "WaitingForNodes", held, "", {}});
    }
  }

  // minNodes and headroom, then scale-down.
  const int32_t minute = int32_t((now_ms / 60000) % 1440);
  for (Pool& p : pools) {
    while (p.up + p.Grown() < p.spec->min_nodes && p.CanOpen()) p.Open(&p.opened_for_min);
    const int64_t headroom = p.HeadroomGpus();
    while (p.free_gpus < headroom && p.gpus > 0 && p.CanOpen()) p.Open(&p.opened_for_headroom);

    auto resume = [&](const std::vector<int32_t>& nodes, const char* reason, std::string message) {
      if (nodes.empty()) return;
      Action a{Action::Type::kResumeNodes, p.spec->name, reason, "", "", {}};
      for (int32_t n : nodes) a.nodes.emplace_back(p.view->nodes[size_t(n)].name);
      a.message = Nodes(nodes.size()) + " (" + std::to_string(nodes.size() * size_t(p.gpus)) +
                  " GPUs) " + message;
      plan.actions.push_back(std::move(a));
      // To see that they registered (or report that they did not).
      plan.next_wake_ms = std::min(plan.next_wake_ms, now_ms + p.spec->boot_timeout_ms);
    };
    std::string names;
    for (const std::string& k : p.for_workloads) names += (names.empty() ? "" : ", ") + k;
    if (p.demand_workloads > int32_t(p.for_workloads.size())) {
      names += " and " + std::to_string(p.demand_workloads - int32_t(p.for_workloads.size())) +
               " more";
    }
    resume(p.opened_for_demand, "ScaleUp",
           "for " + std::to_string(p.demand_workloads) + " pending workload" +
               (p.demand_workloads == 1 ? "" : "s") + " that quota admits: " + names);
    resume(p.opened_for_min, "MinNodes",
           "to keep minNodes " + std::to_string(p.spec->min_nodes));
    resume(p.opened_for_headroom, "Headroom",
           "to keep " + std::to_string(headroom) + " GPUs free");

    // Scale-down: idle long enough, untouched, not needed; a node drained
    // to consolidate goes as soon as it is empty.
    std::vector<const Bin*> idle;
    Action drained{Action::Type::kSuspendNodes, p.spec->name, "Consolidation", "", "", {}};
    int32_t draining = 0;  // Drained, not yet empty: disrupted still.
    Action lost{Action::Type::kSuspendNodes, p.spec->name, "NodeLost", "", "", {}};
    for (const PoolNodeView& n : p.view->nodes) {
      if (n.state != PoolNodeView::State::kReady) continue;
      if (n.lost_since_ms > 0) {  // Its work went back to the queues already.
        const int64_t due = n.lost_since_ms + p.spec->boot_timeout_ms;
        if (due <= now_ms) {
          lost.nodes.emplace_back(n.name);
        } else {
          plan.next_wake_ms = std::min(plan.next_wake_ms, due);
        }
        continue;
      }
      if (!n.drained) continue;
      if (n.gpus_free >= p.gpus) {
        drained.nodes.emplace_back(n.name);
      } else {
        ++draining;
      }
    }
    for (const Bin& b : p.bins) {
      if (b.kind != Bin::Kind::kReady || b.touched) continue;
      const PoolNodeView& n = p.view->nodes[size_t(b.node)];
      if (n.idle_since_ms <= 0 || b.gpus_free < p.gpus) continue;
      const int64_t due = n.idle_since_ms + p.spec->scale_down_delay_ms;
      if (due > now_ms) {
        plan.next_wake_ms = std::min(plan.next_wake_ms, due);
        continue;
      }
      idle.push_back(&b);
    }
    int32_t suspending = p.alive - p.up + draining + int32_t(drained.nodes.size());
    if (!lost.nodes.empty()) {
      lost.message = Nodes(lost.nodes.size()) + " not heard from for " +
                     core::FormatDurationSeconds(p.spec->boot_timeout_ms / 1000) +
                     " (bootTimeout): given up, to be booted again when needed";
      plan.actions.push_back(std::move(lost));
    }
    if (!drained.nodes.empty()) {
      drained.message = Nodes(drained.nodes.size()) + " emptied to consolidate";
      plan.actions.push_back(std::move(drained));
    }
    const bool window = InWindows(p.spec->windows, minute);
    if (!window && !p.spec->windows.empty()) {  // Look again when one opens.
      int32_t wait = 1440;
      for (const auto& w : p.spec->windows) wait = std::min(wait, (w.first - minute + 1440) % 1440);
      plan.next_wake_ms = std::min(plan.next_wake_ms, (now_ms / 60000 + wait) * 60000);
    }
    std::stable_sort(idle.begin(), idle.end(), [&](const Bin* a, const Bin* b) {
      return p.view->nodes[size_t(a->node)].idle_since_ms <
             p.view->nodes[size_t(b->node)].idle_since_ms;
    });
    Action a{Action::Type::kSuspendNodes, p.spec->name, "ScaleDown", "", "", {}};
    int32_t up = p.up + p.Grown();
    int64_t free = p.free_gpus;
    std::vector<bool> going(p.view->nodes.size(), false);
    for (const Bin* b : idle) {
      if (!window || suspending >= p.spec->max_disrupted) break;
      if (up - 1 < p.spec->min_nodes || free - b->gpus_free < headroom) continue;
      a.nodes.emplace_back(p.view->nodes[size_t(b->node)].name);
      going[size_t(b->node)] = true;
      ++suspending;
      --up;
      free -= b->gpus_free;
    }
    if (!a.nodes.empty()) {
      a.message = Nodes(a.nodes.size()) + " without an allocated GPU for " +
                  core::FormatDurationSeconds(p.spec->scale_down_delay_ms / 1000) + " or more";
      plan.actions.push_back(std::move(a));
    }
    Consolidate(p, now_ms, window, headroom, &suspending, &up, &free, &going, &plan);
  }
  // The periodic `list`: machines up that a pool holds suspended.
  for (const Pool& p : pools) {
    const int64_t at = p.view->next_list_ms;
    if (at <= 0) continue;
    if (at <= now_ms) {
      plan.actions.push_back(
          {Action::Type::kListNodes, p.spec->name, "List", "what its provider runs", "", {}});
    } else {
      plan.next_wake_ms = std::min(plan.next_wake_ms, at);
    }
  }
  for (Action& a : explains) plan.actions.push_back(std::move(a));
  for (const Pool& p : pools) {
    if (!p.can_grow) plan.next_wake_ms = std::min(plan.next_wake_ms, p.retry_ms);
  }
  return plan;
}

}  // namespace allot::ctrl
