// State's part of autoscaled NodePools (docs/autoscaling.md): the pools'
// runtime follows the NodePool objects, the autoscaler's actions become
// provider calls, cordons and node deletions, and its notes the pending
// workloads' reasons.
#include <algorithm>
#include <cstdio>

#include "server/state.h"
#include "server/state_internal.h"

namespace allot::server {

namespace {
const char kAutoscaler[] = "autoscaler";
}  // namespace

void State::SyncPools(int64_t now) {
  std::vector<core::NodePool> specs;
  for (const auto& [name, e] : objs_.node_pools) specs.push_back(e.obj);
  std::vector<ProviderCall> lists = pools_.SetPools(
      std::move(specs),
      [&](const std::string& node) {
        return objs_.nodes.count(node) > 0 && agents_.Ready(node);
      },
      now);
  for (ProviderCall& c : lists) RunProvider(std::move(c));
  ctrl_changes_ |= ctrl::kCapacity;
}

void State::RunProvider(ProviderCall c) {
  if (run_provider_) {
    run_provider_(std::move(c));
  } else {
    queued_provider_calls_.push_back(std::move(c));
  }
}

void State::NoteArrival(const core::Workload& w, int64_t now) {
  if (pools_.empty()) return;
  int64_t milli = 0;
  for (const core::PodSet& ps : w.pod_sets) {
    if (auto it = ps.requests.find(core::kGpuResource); it != ps.requests.end()) {
      milli += it->second.milli() * ps.count;
    }
  }
  // The flavors its ClusterQueue may give it GPUs of.
  std::vector<std::string> flavors;
  auto lq = objs_.local_queues.find(w.ns + "/" + w.queue_name);
  if (lq == objs_.local_queues.end()) return;
  auto cq = objs_.cluster_queues.find(lq->second.obj.cluster_queue);
  if (cq == objs_.cluster_queues.end()) return;
  for (const core::ResourceGroup& g : cq->second.obj.resource_groups) {
    const auto& r = g.covered_resources;
    if (std::find(r.begin(), r.end(), core::kGpuResource) == r.end()) continue;
    for (const core::FlavorQuotas& f : g.flavors) flavors.push_back(f.name);
  }
  pools_.NoteArrival(flavors, milli, now);
}

void State::DescribePoolNode(const std::string& node, ctrl::PoolNodeView* nv) const {
  auto n = objs_.nodes.find(node);
  nv->cordoned = n != objs_.nodes.end() && n->second.obj.unschedulable;
  if (const AgentInfo* a = agents_.Find(node); a != nullptr && !a->ready) {
    nv->lost_since_ms = std::max<int64_t>(1, a->last_seen_ms > 0 ? a->last_seen_ms : a->transition_ms);
  }
  const std::set<std::string>* on = agents_.WorkloadsOn(node);
  if (on == nullptr) return;
  for (const std::string& key : *on) {
    auto it = workloads_.find(key);
    if (it == workloads_.end() || !it->second.spec.admission) continue;
    const WorkloadRecord& rec = it->second;
    ctrl::PoolNodeWorkload w;
    w.key = key;
    bool elsewhere = false, here = false;
    for (const core::PodSetAssignment& a : rec.spec.admission->pod_set_assignments) {
      const core::PodSet* ps = nullptr;
      for (const core::PodSet& s : rec.spec.pod_sets) {
        if (s.name == a.name) ps = &s;
      }
      auto request = [&](const char* r) {
        if (ps == nullptr) return int64_t(0);
        auto it = ps->requests.find(r);
        return it == ps->requests.end() ? int64_t(0) : it->second.milli();
      };
      for (const core::PodPlacement& pl : a.placements) {
        if (pl.node != node) {
          elsewhere = true;
          continue;
        }
        here = true;
        w.gpus += int32_t(pl.gpus.size());
        w.cpu_milli += request(core::kCpuResource);
        w.memory_milli += request(core::kMemoryResource);
      }
    }
    // Parked: it holds no GPU here (and moves nothing); moved away: not
    // here any more (the agent's pods may still be stopping).
    if (rec.state == WorkloadState::kParked || !here) continue;
    w.movable = rec.spec.preemptible && !elsewhere;
    nv->workloads.push_back(std::move(w));
  }
}

const std::string& State::CapacityNote(const std::string& key) const {
  static const std::string kNone;
  auto it = capacity_notes_.find(key);
  return it == capacity_notes_.end() ? kNone : it->second;
}

void State::ApplyPoolActions(const std::vector<ctrl::TakenAction>& actions, Txn* txn) {
  const int64_t now = txn->now_unix_ms;
  bool ran = false;
  std::map<std::string, std::string> notes;
  const std::string principal = std::string("controller:") + kAutoscaler;
  for (const ctrl::TakenAction& t : actions) {
    if (t.controller != kAutoscaler) continue;
    ran = true;
    const ctrl::Action& a = t.action;
    const char* verb = ctrl::ToString(a.type);
    std::string nodes;
    for (const std::string& n : a.nodes) nodes += (nodes.empty() ? "" : ",") + n;
    switch (a.type) {
      case ctrl::Action::Type::kExplain:
        notes[a.target] = a.message;
        break;
      case ctrl::Action::Type::kResumeNodes:
        for (ProviderCall& c : pools_.Resume(a, now)) RunProvider(std::move(c));
        Audit(principal, "", verb, "NodePool " + a.target + " " + nodes, "ok", txn);
        std::fprintf(stderr, "allot: pool %s: resume %s (%s: %s)\n", a.target.c_str(),
                     nodes.c_str(), a.reason.c_str(), a.message.c_str());
        break;
      case ctrl::Action::Type::kBootFailed:
        for (ProviderCall& c : pools_.BootFailed(a, now)) RunProvider(std::move(c));
        Audit(principal, "", verb, "NodePool " + a.target + " " + nodes, "ok", txn);
        std::fprintf(stderr, "allot: pool %s: %s\n", a.target.c_str(), a.message.c_str());
        break;
      case ctrl::Action::Type::kListNodes:
        for (ProviderCall& c : pools_.List(a.target)) RunProvider(std::move(c));
        break;
      case ctrl::Action::Type::kConsolidate:
        for (const std::string& n : a.nodes) {
          // Still all movable, as the autoscaler saw them (parked ones
          // hold nothing there and stay parked): cordoned, its workloads
          // back to their queues, the node suspended once empty.
          ctrl::PoolNodeView now_on;
          DescribePoolNode(n, &now_on);
          std::set<std::string> evict;
          bool movable = true;
          for (const ctrl::PoolNodeWorkload& w : now_on.workloads) {
            movable = movable && w.movable;
            evict.insert(w.key);
          }
          if (!movable || !NodeAction(Actor::System(principal), n, "cordon", txn).ok()) continue;
          if (!Reschedule(evict, {n}, "Consolidation",
                          "moved off node " + n + " to empty it (its pool consolidates: " +
                              a.message + ")",
                          now)
                   .ok()) {
            continue;
          }
          pools_.Drained(n, a.message, now);
          Audit(principal, "", verb, "NodePool " + a.target + " " + n, "ok", txn);
          std::fprintf(stderr, "allot: pool %s: consolidate %s (%s)\n", a.target.c_str(),
                       n.c_str(), a.message.c_str());
        }
        break;
      case ctrl::Action::Type::kSuspendNodes: {
        // Cordoned first; only a node that holds nothing goes.
        std::vector<std::string> empty;
        for (const std::string& n : a.nodes) {
          const std::set<std::string>* on = agents_.WorkloadsOn(n);
          if (on != nullptr && !on->empty()) continue;
          if (!internal::AdmittedUsing(workloads_, Kind::kNode, n).empty()) continue;
          if (!NodeAction(Actor::System(principal), n, "cordon", txn).ok()) continue;
          empty.push_back(n);
        }
        for (ProviderCall& c : pools_.Suspend(empty, a.message, now)) RunProvider(std::move(c));
        if (!empty.empty()) {
          std::string list;
          for (const std::string& n : empty) list += (list.empty() ? "" : ",") + n;
          Audit(principal, "", verb, "NodePool " + a.target + " " + list, "ok", txn);
          std::fprintf(stderr, "allot: pool %s: suspend %s (%s)\n", a.target.c_str(),
                       list.c_str(), a.message.c_str());
        }
        break;
      }
      default:
        break;
    }
  }
  // The autoscaler says each run what every workload it packed waits for.
  if (ran) capacity_notes_ = std::move(notes);
}

void State::PoolCallDone(const ProviderResult& r, Txn* txn) {
  const int64_t now = txn->now_unix_ms;
  std::string event;
  std::vector<ProviderCall> calls;
  const std::vector<std::string> gone = pools_.CallDone(r, now, &event, &calls);
  if (!event.empty()) std::fprintf(stderr, "allot: %s\n", event.c_str());
  if (!calls.empty()) {  // Leaked machines a periodic list found.
    std::string list;
    for (const std::string& n : calls.front().nodes) list += (list.empty() ? "" : ",") + n;
    Audit("controller:autoscaler", "", "stop-leaked", "NodePool " + r.call.pool + " " + list, "ok",
          txn);
  } else if (!event.empty()) {
    Audit("controller:autoscaler", "", r.call.verb, "NodePool " + r.call.pool, "failed", txn);
  }
  for (ProviderCall& c : calls) RunProvider(std::move(c));
  for (const std::string& node : gone) {
    if (!objs_.nodes.count(node)) continue;
    // Cordoned and empty: its Node goes (an agent that comes back later
    // registers it again).
    Status s = Delete(Actor::System("controller:autoscaler"), Kind::kNode, node, false, txn);
    if (!s.ok()) std::fprintf(stderr, "allot: pool %s: %s\n", r.call.pool.c_str(), s.message().c_str());
  }
  ctrl_changes_ |= ctrl::kCapacity;
}

}  // namespace allot::server
