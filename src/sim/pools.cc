#include "sim/pools.h"

#include <algorithm>
#include <limits>

#include "core/duration.h"
#include "core/names.h"
#include "ctrl/autoscaler.h"

namespace allot::sim {

using State = ctrl::PoolNodeView::State;

namespace {
constexpr int64_t kHourMs = 3600 * 1000;
constexpr int32_t kGiveUpFailures = 100;
// PoolNodeView::idle_since_ms is 0 for "busy": an idle time of 0 (the
// first submission) is told as 1 ms.
int64_t IdleSince(int64_t t) { return std::max<int64_t>(t, 1); }

// Node `name` of pool `p`, with its GPUs named.
core::Node PoolNode(const core::NodePool& p, const std::string& name) {
  core::Node node = p.node;
  node.name = name;
  node.source = p.source;
  for (size_t g = 0; g < node.gpus.size(); ++g) node.gpus[g].uuid = core::PoolGpuUuid(name, int32_t(g));
  return node;
}
}  // namespace

const std::vector<std::string>& AutoscaleModes() {
  static const std::vector<std::string> modes = {"fixed", "reactive", "headroom"};
  return modes;
}

Result<core::Config> ApplyAutoscale(const core::Config& config, const std::string& mode) {
  // headroom=D: arrivals within D for every pool.
  int64_t window_ms = 0;
  std::string name = mode;
  if (mode.rfind("headroom=", 0) == 0) {
    name = "headroom";
    Result<int64_t> secs = core::ParseDurationSeconds(mode.substr(9));
    if (!secs.ok() || *secs <= 0) {
      return Status::InvalidArgument("--autoscale: " + mode +
                                     ": expected headroom=WINDOW, e.g. headroom=30m");
    }
    window_ms = *secs * 1000;
  }
  if (std::find(AutoscaleModes().begin(), AutoscaleModes().end(), name) == AutoscaleModes().end()) {
    return Status::InvalidArgument("--autoscale: unknown mode \"" + mode +
                                   "\" (expected fixed, reactive, headroom or headroom=WINDOW)");
  }
  if (config.node_pools.empty()) {
    return Status::InvalidArgument(
        "--autoscale: the config has no autoscaled NodePool (one with spec.provider and "
        "maxNodes)");
  }
  core::Config out = config;
  for (core::NodePool& p : out.node_pools) {
    if (mode == "fixed") {
      p.min_nodes = p.max_nodes;  // All up from the start, never suspended.
      p.headroom_gpus = 0;
      p.headroom_arrivals = false;
    } else if (mode == "reactive") {
      p.headroom_gpus = 0;
      p.headroom_arrivals = false;
    } else if (window_ms > 0) {
      p.headroom_arrivals = true;
      p.headroom_window_ms = window_ms;
    } else if (p.headroom_gpus == 0 && !p.headroom_arrivals) {
      p.headroom_arrivals = true;
    }
  }
  return out;
}

PoolFleet::PoolFleet(const std::vector<core::NodePool>& pools, uint64_t seed)
    : rng_(seed * 0x9E3779B97F4A7C15ull + 0x51ed) {
  for (const core::NodePool& spec : pools) {
    Pool& p = pools_.emplace_back();
    p.spec = &spec;
    p.result.name = spec.name;
    p.result.gpus_per_node = int32_t(spec.node.gpus.size());
    p.result.price_micros_per_node_hour = spec.price_micros_per_node_hour;
    for (int32_t i = 0; i < spec.max_nodes; ++i) {
      Node& n = p.nodes.emplace_back();
      n.name = core::PoolNodeName(spec.name, i, spec.max_nodes);
      by_name_[n.name] = {int32_t(pools_.size()) - 1, i};
    }
  }
}


std::vector<core::Node> PoolFleet::InitialNodes() {
  std::vector<core::Node> out;
  for (Pool& p : pools_) {
    for (int32_t i = 0; i < p.spec->min_nodes; ++i) {
      Node& n = p.nodes[size_t(i)];
      n.state = State::kReady;
      n.since_ms = 0;
      n.idle_since_ms = IdleSince(0);  // Up and empty from the start.
      out.push_back(PoolNode(*p.spec, n.name));
      ++p.up;
    }
    p.result.peak_nodes = p.up;
  }
  return out;
}

void PoolFleet::LargestNodes(std::map<std::string, int64_t>* max_per_node) const {
  for (const Pool& p : pools_) {
    int64_t& m = (*max_per_node)[core::kGpuResource];
    m = std::max<int64_t>(m, int64_t(p.spec->node.gpus.size()));
  }
}

int64_t PoolFleet::MaxGpuMilli() const {
  int64_t total = 0;
  for (const Pool& p : pools_) total += int64_t(p.spec->max_nodes) * int64_t(p.spec->node.gpus.size()) * 1000;
  return total;
}

void PoolFleet::Count(Pool& p, int64_t t) {
  if (t > p.last_ms) p.result.node_ms += int64_t(p.up) * (t - p.last_ms);
  p.last_ms = std::max(p.last_ms, t);
  now_ms_ = std::max(now_ms_, t);
}

PoolFleet::Node* PoolFleet::Find(const std::string& name, State state, Pool** pool,
                                  int32_t* pool_idx, int32_t* node_idx) {
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return nullptr;
  Pool& p = pools_[size_t(it->second.first)];
  Node& n = p.nodes[size_t(it->second.second)];
  if (n.state != state) return nullptr;
  if (pool) *pool = &p;
  if (pool_idx) *pool_idx = it->second.first;
  if (node_idx) *node_idx = it->second.second;
  return &n;
}

void PoolFleet::Resume(const ctrl::Action& a, int64_t t) {
  Pool* resumed = nullptr;
  for (const std::string& name : a.nodes) {
    Pool* pp = nullptr;
    int32_t pi = 0, ni = 0;
    Node* np = Find(name, State::kSuspended, &pp, &pi, &ni);
    if (np == nullptr) continue;
    Pool& p = *pp;
    Node& n = *np;
    Count(p, t);
    n.state = State::kBooting;
    n.since_ms = t;
    ++n.gen;
    ++p.up;
    ++p.result.boots;
    p.result.peak_nodes = std::max(p.result.peak_nodes, p.up);
    resumed = &p;
    const double draw = std::uniform_real_distribution<double>(0, 1)(rng_);
    if (draw < p.spec->provider.failure_rate) continue;  // Never registers.
    boots_.push({t + p.spec->provider.boot_delay_ms, pi, ni, n.gen});
  }
  if (resumed) ++resumed->result.scale_ups;
}

void PoolFleet::Down(Pool& p, Node& n, int64_t t) {
  Count(p, t);
  n.state = State::kSuspended;
  n.since_ms = t;
  --p.up;
}

void PoolFleet::BootFailed(const ctrl::Action& a, int64_t t) {
  for (const std::string& name : a.nodes) {
    Pool* pp = nullptr;
    Node* np = Find(name, State::kBooting, &pp);
    if (np == nullptr) continue;
    Pool& p = *pp;
    Down(p, *np, t);
    ++np->gen;  // A boot that would still come is void.
    ++p.result.boot_failures;
    ++p.failures_in_a_row;
    ++failures_in_a_row_;
    p.retry_after_ms = t + ctrl::BootRetryDelayMs(p.failures_in_a_row);
  }
}

void PoolFleet::Suspended(const std::string& node, int64_t t) {
  Pool* pp = nullptr;
  Node* np = Find(node, State::kReady, &pp);
  if (np == nullptr) return;
  Down(*pp, *np, t);
  ++pp->result.suspends;
}

bool PoolFleet::IsReady(const std::string& node) const {
  auto it = by_name_.find(node);
  return it != by_name_.end() &&
         pools_[size_t(it->second.first)].nodes[size_t(it->second.second)].state == State::kReady;
}

int64_t PoolFleet::NextBootMs() const {
  // Stale events (a boot reported failed) still come out here; Booted
  // skips them.
  return boots_.empty() ? std::numeric_limits<int64_t>::max() : boots_.top().t;
}

std::vector<core::Node> PoolFleet::Booted(int64_t t) {
  std::vector<core::Node> out;
  while (!boots_.empty() && boots_.top().t == t) {
    const BootEvent e = boots_.top();
    boots_.pop();
    Pool& p = pools_[size_t(e.pool)];
    Node& n = p.nodes[size_t(e.node)];
    if (n.gen != e.gen || n.state != State::kBooting) continue;
    Count(p, t);
    p.result.boot_ms.push_back(t - n.since_ms);
    n.state = State::kReady;
    n.since_ms = t;
    n.idle_since_ms = IdleSince(t);
    p.failures_in_a_row = 0;
    failures_in_a_row_ = 0;
    out.push_back(PoolNode(*p.spec, n.name));
  }
  return out;
}

void PoolFleet::SetBusy(const std::string& node, bool busy, int64_t t) {
  if (Node* n = Find(node, State::kReady)) n->idle_since_ms = busy ? 0 : IdleSince(t);
}

void PoolFleet::NoteArrival(int64_t t, int64_t gpu_milli) {
  now_ms_ = std::max(now_ms_, t);
  if (gpu_milli > 0) arrivals_.emplace_back(t, gpu_milli);
}

bool PoolFleet::Active(bool work_pending) const {
  for (const Pool& p : pools_) {
    if (p.up > 0) return true;
  }
  return work_pending && failures_in_a_row_ < kGiveUpFailures;
}

void PoolFleet::ForEachPool(const sched::Scheduler& sched,
                            const std::function<void(const ctrl::PoolView&)>& fn) const {
  // GPUs asked over the last hour, for every pool (one rate: the
  // simulator does not tell flavors apart here).
  while (arrivals_from_ < arrivals_.size() && arrivals_[arrivals_from_].first <= now_ms_ - kHourMs) {
    ++arrivals_from_;
  }
  if (arrivals_from_ > 4096 && arrivals_from_ * 2 > arrivals_.size()) {
    arrivals_.erase(arrivals_.begin(), arrivals_.begin() + int64_t(arrivals_from_));
    arrivals_from_ = 0;
  }
  int64_t milli = 0;
  for (size_t i = arrivals_from_; i < arrivals_.size(); ++i) milli += arrivals_[i].second;
  for (const Pool& p : pools_) {
    ctrl::PoolView v;
    v.spec = p.spec;
    v.failures_in_a_row = p.failures_in_a_row;
    v.retry_after_ms = p.retry_after_ms;
    v.expected_boot_ms = p.spec->provider.boot_delay_ms;
    v.arrival_gpus_per_hour = double(milli) / 1000.0;
    v.nodes.reserve(p.nodes.size());
    for (const Node& n : p.nodes) {
      ctrl::PoolNodeView& nv = v.nodes.emplace_back();
      nv.name = n.name;
      nv.state = n.state;
      nv.since_ms = n.since_ms;
      if (n.state != State::kReady) continue;
      nv.idle_since_ms = n.idle_since_ms;
      if (std::optional<sched::NodePool::NodeFree> f = sched.NodeFree(n.name)) {
        nv.gpus_free = f->gpus_free;
        nv.cpu_free = f->cpu;
        nv.memory_free = f->memory;
      }
    }
    fn(v);
  }
}

std::vector<PoolResult> PoolFleet::Finish(int64_t t) {
  std::vector<PoolResult> out;
  for (Pool& p : pools_) {
    Count(p, t);
    out.push_back(p.result);
  }
  return out;
}

}  // namespace allot::sim
