#include "server/pools.h"

#include <boost/json.hpp>

#include <algorithm>

#include "core/manifest_encode.h"
#include "core/names.h"
#include "ctrl/autoscaler.h"

namespace allot::server {

namespace json = boost::json;
using State = ctrl::PoolNodeView::State;

namespace {
constexpr int64_t kHourMs = 3600 * 1000;
constexpr size_t kBootsKept = 20;
constexpr size_t kHistoryKept = 2000;
constexpr size_t kDecisionsKept = 50;
constexpr int64_t kHistoryMs = 24 * kHourMs;
// How often a pool's provider is asked what runs (leaked machines).
constexpr int64_t kListIntervalMs = 10 * 60 * 1000;

int64_t MedianMs(const std::deque<int64_t>& d) {
  if (d.empty()) return 0;
  std::vector<int64_t> b(d.begin(), d.end());
  std::nth_element(b.begin(), b.begin() + int64_t(b.size() / 2), b.end());
  return b[b.size() / 2];
}
}  // namespace

std::vector<ProviderCall> PoolRuntime::SetPools(
    std::vector<core::NodePool> pools,
    const std::function<bool(const std::string&)>& registered, int64_t now) {
  std::map<std::string, Pool> next;
  std::vector<std::string> to_list;
  pool_of_.clear();
  for (core::NodePool& spec : pools) {
    Pool& p = next[spec.name];
    auto old = pools_.find(spec.name);
    bool list = true;
    if (old != pools_.end()) {
      list = !(old->second.spec.provider == spec.provider);
      p = std::move(old->second);
      p.names.clear();
    }
    if (list) to_list.push_back(spec.name);
    p.spec = std::move(spec);
    p.counts.pool = p.spec.name;
    std::map<std::string, Node> nodes;
    for (int32_t i = 0; i < p.spec.max_nodes; ++i) {
      const std::string name = core::PoolNodeName(p.spec.name, i, p.spec.max_nodes);
      p.names.push_back(name);
      pool_of_[name] = p.spec.name;
      auto n = p.nodes.find(name);
      if (n != p.nodes.end()) {
        nodes[name] = n->second;
      } else if (registered(name)) {
        nodes[name] = Node{State::kReady, now, 0};
      } else {
        nodes[name] = Node{};
      }
    }
    p.nodes = std::move(nodes);
  }
  pools_ = std::move(next);
  std::vector<ProviderCall> calls;
  for (const std::string& name : to_list) {
    Pool& p = pools_.at(name);
    p.listing = true;
    calls.push_back(Call(p, "list", p.names));
    Changed(p, now);
  }
  return calls;
}

const core::NodePool* PoolRuntime::PoolOf(const std::string& name) const {
  auto it = pool_of_.find(name);
  return it == pool_of_.end() ? nullptr : &pools_.at(it->second).spec;
}

void PoolRuntime::Decorate(core::Node* n) const {
  const core::NodePool* p = PoolOf(n->name);
  if (p == nullptr) return;
  for (const auto& [k, v] : p->node.labels) n->labels[k] = v;
  for (const core::Taint& t : p->node.taints) {
    if (std::find(n->taints.begin(), n->taints.end(), t) == n->taints.end()) n->taints.push_back(t);
  }
}

PoolRuntime::Pool* PoolRuntime::PoolFor(const std::string& node, Node** n) {
  auto it = pool_of_.find(node);
  if (it == pool_of_.end()) return nullptr;
  Pool& p = pools_.at(it->second);
  *n = &p.nodes.at(node);
  return &p;
}

bool PoolRuntime::Registered(const std::string& name, int64_t now, int64_t* boot_ms) {
  *boot_ms = -1;
  Node* n = nullptr;
  Pool* p = PoolFor(name, &n);
  // Ready already, or suspending (its agent heartbeats until the machine
  // stops): nothing changes.
  if (p == nullptr || n->state == State::kReady || n->state == State::kSuspending) return false;
  if (n->state == State::kBooting) {
    const int64_t took = now - n->since_ms;
    *boot_ms = took;
    p->recent_boots.push_back(took);
    if (p->recent_boots.size() > kBootsKept) p->recent_boots.pop_front();
  }
  n->state = State::kReady;
  n->since_ms = now;
  n->idle_since_ms = 0;
  p->failures_in_a_row = 0;
  Changed(*p, now);
  return true;
}

void PoolRuntime::NoteArrival(const std::vector<std::string>& flavors, int64_t gpu_milli,
                              int64_t now) {
  if (gpu_milli <= 0) return;
  for (const std::string& f : flavors) {
    auto& q = arrivals_[f];
    q.emplace_back(now, gpu_milli);
    while (!q.empty() && q.front().first <= now - kHourMs) q.pop_front();
  }
}

void PoolRuntime::Describe(
    Node& n, const std::string& name,
    const std::function<void(const std::string&, ctrl::PoolNodeView*)>& describe,
    ctrl::PoolNodeView* nv) {
  describe(name, nv);
  if (!nv->cordoned) n.drained = false;  // Uncordoned by an admin: not ours.
  nv->drained = n.drained;
  // Cordoned, the scheduler offers none of its GPUs; drained and holding
  // nothing, it is empty.
  const core::NodePool* spec = PoolOf(name);
  if (n.drained && nv->workloads.empty() && spec != nullptr) {
    nv->gpus_free = int32_t(spec->node.gpus.size());
  }
}

void PoolRuntime::ForEachPool(
    const sched::Scheduler& sched, int64_t now,
    const std::function<void(const std::string&, ctrl::PoolNodeView*)>& describe,
    const std::function<void(const ctrl::PoolView&)>& fn) {
  for (auto& [name, p] : pools_) {
    if (p.listing) continue;  // Not known yet what is up.
    ctrl::PoolView v;
    v.spec = &p.spec;
    v.failures_in_a_row = p.failures_in_a_row;
    v.retry_after_ms = p.retry_after_ms;
    v.last_error = p.last_error;
    if (!p.listing && !p.list_in_flight) v.next_list_ms = p.last_list_ms + kListIntervalMs;
    if (!p.recent_boots.empty()) {
      v.expected_boot_ms = MedianMs(p.recent_boots);
    } else if (p.spec.provider.boot_delay_ms > 0) {
      v.expected_boot_ms = p.spec.provider.boot_delay_ms;
    }
    // Arrivals of the last hour for the flavors whose labels its nodes carry.
    int64_t milli = 0;
    for (auto& [flavor, q] : arrivals_) {
      const core::ResourceFlavor* f = sched.Flavor(flavor);
      if (f == nullptr || !core::LabelsMatch(f->node_labels, p.spec.node.labels)) continue;
      while (!q.empty() && q.front().first <= now - kHourMs) q.pop_front();
      for (const auto& [t, m] : q) milli += m;
    }
    v.arrival_gpus_per_hour = double(milli) / 1000.0;
    v.nodes.reserve(p.names.size());
    for (const std::string& nn : p.names) {
      Node& n = p.nodes.at(nn);
      ctrl::PoolNodeView& nv = v.nodes.emplace_back();
      nv.name = nn;
      nv.state = n.state;
      nv.since_ms = n.since_ms;
      if (n.state != State::kReady) continue;
      std::optional<sched::NodePool::NodeFree> f = sched.NodeFree(nn);
      if (!f) {
        // Registered, not (yet) in the scheduler, or cordoned: nothing
        // free to place on; a node drained to consolidate is suspended
        // once nothing runs there.
        n.idle_since_ms = 0;
        n.underused_since_ms = 0;
        Describe(n, nn, describe, &nv);
        continue;
      }
      nv.gpus_free = f->gpus_free;
      nv.cpu_free = f->cpu;
      nv.memory_free = f->memory;
      const bool idle = f->gpus_free == f->gpus;
      if (!idle) {
        n.idle_since_ms = 0;
      } else if (n.idle_since_ms == 0) {
        n.idle_since_ms = now;
      }
      nv.idle_since_ms = n.idle_since_ms;
      const int32_t used = f->gpus - f->gpus_free;
      if (used <= 0 || 2 * used > f->gpus) {
        n.underused_since_ms = 0;
      } else if (n.underused_since_ms == 0) {
        n.underused_since_ms = now;
      }
      nv.underused_since_ms = n.underused_since_ms;
      Describe(n, nn, describe, &nv);
    }
    fn(v);
  }
}

ProviderCall PoolRuntime::Call(const Pool& p, const char* verb,
                               const std::vector<std::string>& nodes) const {
  ProviderCall c;
  c.pool = p.spec.name;
  c.verb = verb;
  c.nodes = nodes;
  c.command = p.spec.provider.command;
  if (p.spec.provider.type == core::PoolProvider::Type::kLocal) {
    c.local = true;
    c.command = {"local"};
    c.boot_delay_ms = p.spec.provider.boot_delay_ms;
  }
  // A resume must return within the boot timeout (it counts from the
  // call); a suspend gets as long.
  c.timeout_ms = p.spec.boot_timeout_ms;
  json::object req;
  req["verb"] = verb;
  req["pool"] = p.spec.name;
  req["location"] = p.spec.location;
  req["zone"] = p.spec.zone;
  json::array list;
  for (const std::string& n : nodes) {
    core::Node node = p.spec.node;
    node.name = n;
    for (size_t g = 0; g < node.gpus.size(); ++g) node.gpus[g].uuid = core::PoolGpuUuid(n, int32_t(g));
    json::object o = core::EncodeNode(node);
    json::object e;
    e["name"] = n;
    e["labels"] = o["metadata"].as_object().contains("labels") ? o["metadata"].at("labels")
                                                                : json::value(json::object());
    e["taints"] = o["spec"].as_object().contains("taints") ? o["spec"].at("taints")
                                                            : json::value(json::array());
    e["gpus"] = int64_t(node.gpus.size());
    e["product"] = node.gpus.empty() ? "" : node.gpus[0].product;
    if (node.cpu.milli() > 0) e["cpu"] = node.cpu.ToString();
    if (node.memory.milli() > 0) e["memory"] = node.memory.ToString();
    list.push_back(std::move(e));
  }
  req["nodes"] = std::move(list);
  c.input = json::serialize(req) + "\n";
  return c;
}

void PoolRuntime::Drained(const std::string& name, const std::string& why, int64_t now) {
  Node* n = nullptr;
  Pool* p = PoolFor(name, &n);
  if (p == nullptr || n->state != State::kReady) return;
  n->drained = true;
  Changed(*p, now, "consolidate", {name}, why);
}

std::vector<ProviderCall> PoolRuntime::Resume(const ctrl::Action& a, int64_t now) {
  auto it = pools_.find(a.target);
  if (it == pools_.end() || it->second.spec.provider.type == core::PoolProvider::Type::kSimulated) {
    return {};
  }
  Pool& p = it->second;
  std::vector<std::string> nodes;
  for (const std::string& n : a.nodes) {
    auto nit = p.nodes.find(n);
    if (nit == p.nodes.end() || nit->second.state != State::kSuspended) continue;
    // Booting from now: the boot timeout counts the call's time too.
    nit->second = Node{State::kBooting, now, 0};
    nodes.push_back(n);
  }
  if (nodes.empty()) return {};
  ++p.counts.scale_ups;
  p.counts.boots += int64_t(nodes.size());
  Changed(p, now, "resume", nodes, a.message);
  return {Call(p, "resume", nodes)};
}

void PoolRuntime::Failed(Pool& p, const std::vector<std::string>& nodes, const std::string& why,
                         int64_t now) {
  int32_t n = 0;
  for (const std::string& name : nodes) {
    auto it = p.nodes.find(name);
    if (it == p.nodes.end() || it->second.state != State::kBooting) continue;
    it->second = Node{State::kSuspended, now, 0};
    ++n;
  }
  // A call that failed after its boot timed out still says why best.
  if (!why.empty()) p.last_error = why;
  if (n == 0) return;
  Changed(p, now, "boot failed", nodes, why);
  p.failures_in_a_row += n;
  p.counts.boot_failures += n;
  p.retry_after_ms = now + ctrl::BootRetryDelayMs(p.failures_in_a_row);
}

std::vector<ProviderCall> PoolRuntime::BootFailed(const ctrl::Action& a, int64_t now) {
  auto it = pools_.find(a.target);
  if (it == pools_.end()) return {};
  std::vector<std::string> stop;
  for (const std::string& n : a.nodes) {
    auto nit = it->second.nodes.find(n);
    if (nit != it->second.nodes.end() && nit->second.state == State::kBooting) stop.push_back(n);
  }
  Failed(it->second, a.nodes, a.message, now);
  if (stop.empty()) return {};
  return {Call(it->second, "suspend", stop)};
}

std::vector<ProviderCall> PoolRuntime::Suspend(const std::vector<std::string>& nodes,
                                               const std::string& why, int64_t now) {
  std::map<std::string, std::vector<std::string>> by_pool;
  for (const std::string& name : nodes) {
    Node* n = nullptr;
    Pool* p = PoolFor(name, &n);
    if (p == nullptr || n->state != State::kReady) continue;
    *n = Node{State::kSuspending, now, 0};
    by_pool[p->spec.name].push_back(name);
  }
  std::vector<ProviderCall> calls;
  for (const auto& [pool, list] : by_pool) {
    Pool& p = pools_.at(pool);
    p.counts.suspends += int64_t(list.size());
    calls.push_back(Call(p, "suspend", list));
    Changed(p, now, "suspend", list, why);
  }
  return calls;
}

std::vector<ProviderCall> PoolRuntime::List(const std::string& pool) {
  auto it = pools_.find(pool);
  if (it == pools_.end() || it->second.listing || it->second.list_in_flight) return {};
  Pool& p = it->second;
  p.list_in_flight = true;
  return {Call(p, "list", p.names)};
}

std::vector<std::string> PoolRuntime::CallDone(const ProviderResult& r, int64_t now,
                                               std::string* event,
                                               std::vector<ProviderCall>* calls) {
  std::vector<std::string> gone;
  auto it = pools_.find(r.call.pool);
  if (it == pools_.end()) return gone;
  Pool& p = it->second;
  if (r.call.verb == "list" && !p.listing) {  // Periodic.
    p.list_in_flight = false;
    p.last_list_ms = now;
    if (!r.status.ok()) {
      *event = r.status.message();
      return gone;
    }
    std::vector<std::string> leaked;
    for (const auto& [node, up] : ParseProviderList(r.output, r.call.nodes)) {
      auto nit = p.nodes.find(node);
      if (!up || nit == p.nodes.end() || nit->second.state != State::kSuspended) continue;
      if (now - nit->second.since_ms < p.spec.boot_timeout_ms) continue;  // Stopping still.
      leaked.push_back(node);
    }
    if (!leaked.empty()) {
      calls->push_back(Call(p, "suspend", leaked));
      const std::string why = "up at its provider but suspended here for " +
                              std::to_string(p.spec.boot_timeout_ms / 60000) +
                              "m or more (bootTimeout): stopped";
      Changed(p, now, "stop leaked", leaked, why);
      *event = "pool " + p.spec.name + ": " + std::to_string(leaked.size()) + " node(s) " + why;
    }
    return gone;
  }
  if (r.call.verb == "list") {
    p.listing = false;
    p.last_list_ms = now;
    if (!r.status.ok()) {
      *event = r.status.message() + " (its unregistered nodes are taken as down)";
      return gone;
    }
    for (const auto& [node, up] : ParseProviderList(r.output, r.call.nodes)) {
      auto nit = p.nodes.find(node);
      if (!up || nit == p.nodes.end() || nit->second.state != State::kSuspended) continue;
      // Up, its agent not heard yet: booting from now.
      nit->second = Node{State::kBooting, now, 0};
    }
    Changed(p, now);
    return gone;
  }
  if (r.call.verb == "resume") {
    if (r.status.ok()) return gone;  // Booting; its agent will tell.
    Failed(p, r.call.nodes, r.status.message(), now);
    *event = r.status.message();
    return gone;
  }
  // A suspend: the nodes go, whatever the program said (they are cordoned
  // and empty; a failed suspend is reported and the nodes are not used).
  for (const std::string& n : r.call.nodes) {
    auto nit = p.nodes.find(n);
    if (nit == p.nodes.end() || nit->second.state != State::kSuspending) continue;
    nit->second = Node{State::kSuspended, now, 0};
    gone.push_back(n);
  }
  if (!r.status.ok()) *event = r.status.message();
  Changed(p, now);
  return gone;
}

void PoolRuntime::Changed(Pool& p, int64_t now, const char* what,
                          const std::vector<std::string>& nodes, const std::string& why) {
  if (now <= 0) return;  // Loading: no clock yet.
  std::array<int64_t, 4> point{now, 0, 0, 0};
  for (const auto& [name, n] : p.nodes) {
    if (n.state == State::kBooting) ++point[1];
    if (n.state == State::kReady) ++point[2];
    if (n.state == State::kSuspending) ++point[3];
  }
  auto& h = p.history;
  if (h.empty() || !std::equal(point.begin() + 1, point.end(), h.back().begin() + 1)) {
    h.push_back(point);
  }
  while (h.size() > kHistoryKept || (h.size() > 1 && h.front()[0] < now - kHistoryMs)) h.pop_front();
  if (*what == '\0') return;
  p.decisions.push_back(Pool::Decision{now, what, nodes, why});
  while (p.decisions.size() > kDecisionsKept ||
         (!p.decisions.empty() && p.decisions.front().at_ms < now - kHistoryMs)) {
    p.decisions.pop_front();
  }
}

std::vector<PoolCounts> PoolRuntime::Counts() const {
  std::vector<PoolCounts> out;
  for (const auto& [name, p] : pools_) {
    PoolCounts c = p.counts;
    c.suspended = c.booting = c.ready = c.idle = c.suspending = 0;
    for (const auto& [nn, n] : p.nodes) {
      switch (n.state) {
        case State::kSuspended: ++c.suspended; break;
        case State::kBooting: ++c.booting; break;
        case State::kReady:
          ++c.ready;
          c.idle += n.idle_since_ms > 0;
          break;
        case State::kSuspending: ++c.suspending; break;
      }
    }
    c.degraded = p.failures_in_a_row >= p.spec.failure_threshold;
    out.push_back(std::move(c));
  }
  return out;
}

json::object PoolRuntime::Status(const std::string& pool) const {
  json::object st;
  auto it = pools_.find(pool);
  if (it == pools_.end()) return st;
  const Pool& p = it->second;
  json::object counts;
  json::array nodes;
  int32_t by[5] = {0, 0, 0, 0, 0};
  for (const std::string& name : p.names) {
    const Node& n = p.nodes.at(name);
    const char* state = "suspended";
    switch (n.state) {
      case State::kSuspended: state = "suspended"; ++by[0]; break;
      case State::kBooting: state = "booting"; ++by[1]; break;
      case State::kReady: state = n.idle_since_ms > 0 ? "idle" : "ready"; ++by[2]; break;
      case State::kSuspending: state = "suspending"; ++by[3]; break;
    }
    if (n.state == State::kReady && n.idle_since_ms > 0) ++by[4];
    if (n.state == State::kSuspended && n.since_ms == 0) continue;  // Never up.
    json::object o;
    o["name"] = name;
    o["state"] = state;
    if (n.since_ms > 0) o["since"] = core::FormatRfc3339Ms(n.since_ms);
    nodes.push_back(std::move(o));
  }
  counts["suspended"] = by[0];
  counts["booting"] = by[1];
  counts["ready"] = by[2];
  counts["suspending"] = by[3];
  counts["idle"] = by[4];
  st["nodes"] = std::move(counts);
  st["nodeStates"] = std::move(nodes);
  if (!p.recent_boots.empty()) st["medianBootSeconds"] = double(MedianMs(p.recent_boots)) / 1000.0;
  st["boots"] = p.counts.boots;
  st["bootFailures"] = p.counts.boot_failures;
  st["failuresInARow"] = p.failures_in_a_row;
  st["degraded"] = p.failures_in_a_row >= p.spec.failure_threshold;
  if (p.failures_in_a_row > 0 && p.retry_after_ms > 0) {
    st["retryAfter"] = core::FormatRfc3339Ms(p.retry_after_ms);
  }
  if (!p.last_error.empty()) st["lastError"] = p.last_error;
  if (p.listing) st["listing"] = true;
  json::array history;
  for (const auto& [t, booting, ready, suspending] : p.history) {
    history.push_back(json::array{t, booting, ready, suspending});
  }
  st["history"] = json::object{{"columns", json::array{"unixMs", "booting", "ready", "suspending"}},
                               {"points", std::move(history)}};
  json::array decisions;
  for (const Pool::Decision& d : p.decisions) {
    json::array nodes;
    for (const std::string& n : d.nodes) nodes.push_back(json::string(n));
    decisions.push_back(json::object{{"time", core::FormatRfc3339Ms(d.at_ms)},
                                     {"action", d.what},
                                     {"nodes", std::move(nodes)},
                                     {"reason", d.why}});
  }
  st["decisions"] = std::move(decisions);
  return st;
}

}  // namespace allot::server
