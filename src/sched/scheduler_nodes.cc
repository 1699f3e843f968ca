// Scheduler: changes to existing nodes (UpdateNode, RemoveNode) and
// EvictWorkload, without a rebuild. See scheduler.h for the contract.
#include <algorithm>
#include <string>
#include <vector>

#include "sched/scheduler.h"
#include "sched/scheduler_internal.h"

namespace allot::sched {

void Scheduler::Impl::IndexNodes(WlIdx w, const Placement& p, bool add) {
  for (const PodSetPlacement& ps : p) {
    for (const PodAssignment& pa : ps) {
      if (size_t(pa.node) >= on_node.size()) on_node.resize(size_t(pa.node) + 1);
      std::vector<WlIdx>& list = on_node[size_t(pa.node)];
      auto it = std::find(list.begin(), list.end(), w);
      if (add && it == list.end()) list.push_back(w);
      if (!add && it != list.end()) {
        *it = list.back();
        list.pop_back();
      }
    }
  }
}

std::vector<WlIdx> Scheduler::Impl::AdmittedOn(NodeIdx n) const {
  if (size_t(n) >= on_node.size()) return {};
  std::vector<WlIdx> on = on_node[size_t(n)];
  std::sort(on.begin(), on.end());
  return on;
}

void Scheduler::Impl::RequeueAll() {
  ++requeue_epoch;
  settle_pending = true;
}

void Scheduler::Impl::SettleAll() {
  if (!settle_pending) return;
  for (int32_t c = 0; c < int32_t(cqs.size()); ++c) Settle(c);
  settle_pending = false;
}

void Scheduler::TEST_SettleAll() { impl_->SettleAll(); }

Status Scheduler::UpdateNode(const core::Node& node) {
  Impl& m = *impl_;
  const std::optional<NodeIdx> found = m.pool->FindNode(node.name);
  if (!found) return Status::NotFound("node " + node.name + " does not exist");
  const NodeIdx n = *found;
  const std::vector<WlIdx> on = m.AdmittedOn(n);
  // The devices each of them holds on n, by UUID: slots may move when the
  // GPU list or MIG layout changes.
  std::vector<std::vector<std::vector<std::vector<std::string>>>> uuids;
  for (WlIdx w : on) {
    const Placement& p = m.wls[w].adm->placement;
    auto& per_set = uuids.emplace_back(p.size());
    for (size_t i = 0; i < p.size(); ++i) {
      for (const PodAssignment& pa : p[i]) {
        auto& pod = per_set[i].emplace_back();
        if (pa.node != n) continue;
        for (int32_t d : pa.devices) pod.push_back(m.pool->DeviceUuid(n, d));
      }
    }
  }
  for (WlIdx w : on) m.pool->Release(m.wls[w].adm->requests, m.wls[w].adm->placement);
  auto restore = [&]() {
    for (WlIdx w : on) m.pool->Commit(m.wls[w].adm->requests, m.wls[w].adm->placement);
  };
  const core::Node old = m.pool->NodeSpec(n);
  if (Status st = m.pool->ReplaceNode(n, node); !st.ok()) {
    restore();
    return st;
  }
  // Each placement, moved to the node's new slots, must still be valid: as
  // Create would check it (Validate), against the others committed.
  std::vector<Placement> moved;
  Status failed = Status::Ok();
  for (size_t k = 0; k < on.size() && failed.ok(); ++k) {
    const Assignment& a = *m.wls[on[k]].adm;
    Placement p = a.placement;
    for (size_t i = 0; i < p.size() && failed.ok(); ++i) {
      for (size_t j = 0; j < p[i].size() && failed.ok(); ++j) {
        if (p[i][j].node != n) continue;
        p[i][j].devices.clear();
        for (const std::string& u : uuids[k][i][j]) {
          std::optional<int32_t> slot = m.pool->FindDevice(n, u);
          if (!slot) {
            failed = Status::InvalidArgument("GPU " + u + " is not on node " +
                                             node.name);
            break;
          }
          p[i][j].devices.push_back(*slot);
        }
      }
    }
    if (failed.ok()) {
      const Wl& wl = m.wls[on[k]];
      failed = m.ValidatePlaced(a.requests, p, wl.unplaced ? wl.park_sets : 0);
    }
    if (!failed.ok()) {
      failed = Status::FailedPrecondition(
          "node " + node.name + " cannot change while admitted workload " +
          m.wls[on[k]].key + " is placed on it (" + failed.message() +
          "): evict it first");
      break;
    }
    m.pool->Commit(a.requests, p);
    moved.push_back(std::move(p));
  }
  if (!failed.ok()) {
    for (size_t k = 0; k < moved.size(); ++k) {
      m.pool->Release(m.wls[on[k]].adm->requests, moved[k]);
    }
    Status back = m.pool->ReplaceNode(n, old);
    ALLOT_CHECK(back.ok());
    restore();
    return failed;
  }
  for (size_t k = 0; k < on.size(); ++k) {
    m.wls[on[k]].adm->placement = std::move(moved[k]);
  }
  m.RequeueAll();
  return Status::Ok();
}

Status Scheduler::RemoveNode(const std::string& name) {
  Impl& m = *impl_;
  const std::optional<NodeIdx> found = m.pool->FindNode(name);
  if (!found) return Status::NotFound("node " + name + " does not exist");
  const std::vector<WlIdx> on = m.AdmittedOn(*found);
  if (!on.empty()) {
    return Status::FailedPrecondition(
        "node " + name + " cannot be removed while admitted workload " +
        m.wls[on[0]].key + " is placed on it: evict it first");
  }
  ALLOT_RETURN_IF_ERROR(m.pool->RemoveNode(*found));
  m.RequeueAll();
  return Status::Ok();
}

Status Scheduler::EvictWorkload(const std::string& key) {
  Impl& m = *impl_;
  auto it = m.by_key.find(key);
  if (it == m.by_key.end())
    return Status::NotFound("workload " + key + " does not exist");
  const WlIdx w = it->second;
  Wl& wl = m.wls[w];
  if (wl.state != Wl::State::kAdmitted)
    return Status::FailedPrecondition("workload " + key + " is not admitted");
  m.ReleaseAdmission(w);
  wl.spec.admission.reset();
  wl.tried = false;
  wl.reason.clear();
  m.ForgetEvictions(w);
  m.Enqueue(w);
  m.RequeueAll();
  m.SettleLent();  // A parked workload's quota went: its borrowers may go.
  return Status::Ok();
}

}  // namespace allot::sched
