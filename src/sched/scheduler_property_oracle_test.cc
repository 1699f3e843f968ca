// The property tests' oracle: config index, quota arithmetic, CheckState.
#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "sched/scheduler_property_util.h"

namespace allot::sched::proptest {
namespace {

std::string FrName(const FR& fr) { return fr.first + "/" + fr.second; }

}  // namespace

bool FlavorEligible(const core::PodSet& ps, const core::ResourceFlavor& f) {
  if (!core::TaintsTolerated(f.node_taints, ps.tolerations, f.tolerations))
    return false;
  for (const auto& [k, v] : ps.node_selector) {
    auto it = f.node_labels.find(k);
    if (it != f.node_labels.end() && it->second != v) return false;
  }
  return true;
}

int Oracle::CohortNode(const std::string& name) {
  auto it = cohort_node_.find(name);
  if (it != cohort_node_.end()) return it->second;
  q_.push_back(QNode{});
  q_.back().name = "cohort " + name;
  cohort_node_[name] = int(q_.size()) - 1;
  return int(q_.size()) - 1;
}

void Oracle::Index() {
  for (const auto& f : config_.flavors) flavors_[f.name] = &f;
  for (const auto& n : config_.nodes) {
    nodes_[n.name] = &n;
    for (const auto& g : n.gpus) {
      devs_[g.uuid] =
          Dev{n.name, core::kGpuResource, g.healthy, !g.mig.empty()};
      for (const auto& m : g.mig)
        devs_[m.uuid] =
            Dev{n.name, core::MigResourceName(m.profile), g.healthy, false};
    }
  }
  for (const auto& q : config_.cluster_queues) cqs_[q.name] = &q;
  for (const auto& lq : config_.local_queues)
    lqs_[{lq.ns, lq.name}] = lq.cluster_queue;

  auto set_quota = [&](int n, const std::vector<core::ResourceGroup>& groups) {
    for (const auto& g : groups) {
      for (const auto& fq : g.flavors) {
        for (const auto& rq : fq.resources) {
          q_[size_t(n)].quota[{fq.name, rq.name}] = rq;
          frs_.insert({fq.name, rq.name});
        }
      }
    }
  };
  for (const auto& co : config_.cohorts) {
    int n = CohortNode(co.name);
    if (!co.parent.empty()) {
      int p = CohortNode(co.parent);
      q_[size_t(n)].parent = p;
      q_[size_t(p)].children.push_back(n);
    }
    set_quota(n, co.resource_groups);
  }
  for (const auto& cq : config_.cluster_queues) {
    int parent = cq.cohort.empty() ? -1 : CohortNode(cq.cohort);
    q_.push_back(QNode{});
    int n = int(q_.size()) - 1;
    q_[size_t(n)].name = "ClusterQueue " + cq.name;
    q_[size_t(n)].is_cq = true;
    q_[size_t(n)].parent = parent;
    if (parent >= 0) q_[size_t(parent)].children.push_back(n);
    cq_node_[cq.name] = n;
    set_quota(n, cq.resource_groups);
  }
  std::function<void(int)> visit = [&](int n) {
    for (int c : q_[size_t(n)].children) visit(c);
    post_order_.push_back(n);
  };
  for (int n = 0; n < int(q_.size()); ++n) {
    if (q_[size_t(n)].parent < 0) visit(n);
  }
  for (int n : post_order_) {
    for (const FR& fr : frs_) {
      int64_t s = Nominal(n, fr);
      for (int c : q_[size_t(n)].children)
        s += Subtree(c, fr) - Guaranteed(c, fr);
      q_[size_t(n)].subtree[fr] = s;
    }
  }
}

Oracle::Usage Oracle::TreeUsage(
    const std::map<std::string, std::map<FR, int64_t>>& cq_usage) const {
  Usage u(q_.size());
  for (const auto& [cq, m] : cq_usage) u[size_t(cq_node_.at(cq))] = m;
  for (int n : post_order_) {
    if (q_[size_t(n)].is_cq) continue;
    for (int c : q_[size_t(n)].children) {
      for (const auto& [fr, v] : u[size_t(c)]) {
        int64_t up = std::max<int64_t>(0, v - Guaranteed(c, fr));
        if (up > 0) u[size_t(n)][fr] += up;
      }
    }
  }
  return u;
}

int64_t Oracle::Available(int n, const FR& fr, const Usage& u) const {
  const int64_t usage = Get(u[size_t(n)], fr);
  if (q_[size_t(n)].parent < 0) return Subtree(n, fr) - usage;
  const int64_t g = Guaranteed(n, fr);
  const int64_t local = std::max<int64_t>(0, g - usage);
  int64_t parent = Available(q_[size_t(n)].parent, fr, u);
  if (auto bl = Bl(n, fr)) {
    int64_t stored = Subtree(n, fr) - g;
    int64_t used = std::max<int64_t>(0, usage - g);
    parent = std::min(parent, stored - used + *bl);
  }
  return local + parent;
}

void Oracle::CheckQuota(
    const std::map<std::string, std::map<FR, int64_t>>& cq_usage,
    std::vector<std::string>* errors) const {
  auto err = [&](const std::string& m) { errors->push_back("[quota] " + m); };
  const Usage u = TreeUsage(cq_usage);
  // Kueue's admission conditions, node by node.
  for (int n = 0; n < int(q_.size()); ++n) {
    for (const auto& [fr, v] : u[size_t(n)]) {
      const int64_t sub = Subtree(n, fr);
      if (q_[size_t(n)].parent < 0) {
        if (v > sub) {
          err(q_[size_t(n)].name + " (a root) uses " + std::to_string(v) +
              "m of " + FrName(fr) + ", more than its subtree quota " +
              std::to_string(sub) + "m");
        }
      } else if (auto bl = Bl(n, fr); bl && v > sub + *bl) {
        err(q_[size_t(n)].name + " uses " + std::to_string(v) + "m of " +
            FrName(fr) + ", more than its subtree quota " +
            std::to_string(sub) + "m + borrowingLimit " + std::to_string(*bl) +
            "m");
      }
    }
  }
  // Per cohort tree: the simple sums.
  std::map<int, std::vector<int>> trees;
  for (int n = 0; n < int(q_.size()); ++n) trees[Root(n)].push_back(n);
  for (const auto& [root, members] : trees) {
    std::set<FR> frs;
    for (int n : members) {
      for (const auto& [fr, v] : u[size_t(n)]) frs.insert(fr);
    }
    for (const FR& fr : frs) {
      int64_t total_usage = 0, total_nominal = 0, unused_guaranteed = 0,
              cohort_nominal = 0;
      for (int n : members) {
        total_nominal += Nominal(n, fr);
        if (q_[size_t(n)].is_cq) {
          total_usage += Get(u[size_t(n)], fr);
        } else {
          cohort_nominal += Nominal(n, fr);
        }
        if (n != root)
          unused_guaranteed +=
              std::max<int64_t>(0, Guaranteed(n, fr) - Get(u[size_t(n)], fr));
      }
      std::string where =
          "cohort tree of " + q_[size_t(root)].name + ", " + FrName(fr) + ": ";
      if (total_usage > total_nominal) {
        err(where + "ClusterQueues use " + std::to_string(total_usage) +
            "m, the tree's nominal quotas sum to " +
            std::to_string(total_nominal) + "m");
      }
      if (total_usage + unused_guaranteed > total_nominal) {
        err(where + "usage " + std::to_string(total_usage) +
            "m eats into lenders' guaranteed quota: " +
            std::to_string(unused_guaranteed) +
            "m guaranteed is unused, nominal sum is " +
            std::to_string(total_nominal) + "m");
      }
      for (int n : members) {
        if (!q_[size_t(n)].is_cq) continue;
        int64_t borrowed = Get(u[size_t(n)], fr) - Nominal(n, fr);
        if (borrowed <= 0) continue;
        ++stats().borrowing;
        int64_t lendable = cohort_nominal;
        for (int m : members) {
          if (m == n || !q_[size_t(m)].is_cq) continue;
          int64_t nom = Nominal(m, fr);
          auto ll = Ll(m, fr);
          lendable += ll ? std::min(*ll, nom) : nom;
        }
        if (borrowed > lendable) {
          err(where + q_[size_t(n)].name + " borrows " +
              std::to_string(borrowed) + "m, the others can lend at most " +
              std::to_string(lendable) + "m");
        }
        if (root == n) {
          err(where + q_[size_t(n)].name +
              " has no cohort but uses more than its nominal quota");
        }
      }
    }
  }
}

namespace {

std::string AdmissionString(const core::Admission& a) {
  std::string s = a.cluster_queue;
  for (const auto& psa : a.pod_set_assignments) {
    s += "|" + psa.name + ":" + std::to_string(psa.count);
    for (const auto& [r, f] : psa.flavors) s += "," + r + "=" + f;
    for (const auto& pp : psa.placements) {
      s += ";" + pp.node;
      for (const auto& g : pp.gpus) s += "," + g;
    }
  }
  return s;
}

}  // namespace

void Oracle::CheckState(const Scheduler& s, std::vector<std::string>* errors) {
  auto err = [&](const std::string& tag, const std::string& m) {
    errors->push_back("[" + tag + "] " + m);
  };
  const std::vector<AdmittedWorkload> admitted = s.Admitted();
  const std::vector<PendingWorkload> pending = s.Pending();
  ++stats().checks;
  stats().admitted += int64_t(admitted.size());
  stats().pending += int64_t(pending.size());

  // Counts and keys.
  if (admitted.size() != s.AdmittedCount()) {
    err("count", "Admitted() lists " + std::to_string(admitted.size()) +
                     ", AdmittedCount() is " +
                     std::to_string(s.AdmittedCount()));
  }
  if (pending.size() != s.PendingCount()) {
    err("count", "Pending() lists " + std::to_string(pending.size()) +
                     ", PendingCount() is " + std::to_string(s.PendingCount()));
  }
  if (s.AdmittedCount() + s.PendingCount() != live_.size()) {
    err("count", "AdmittedCount()+PendingCount() = " +
                     std::to_string(s.AdmittedCount() + s.PendingCount()) +
                     " but " + std::to_string(live_.size()) +
                     " workloads were added and not removed");
  }
  std::set<std::string> keys;
  for (const auto& a : admitted) {
    if (!keys.insert(a.workload).second)
      err("count", a.workload + " is listed twice");
    if (!live_.count(a.workload))
      err("count",
          "unknown or removed workload " + a.workload + " is admitted");
  }
  for (const auto& p : pending) {
    if (!keys.insert(p.workload).second)
      err("count", p.workload + " is listed twice (admitted and pending?)");
    if (!live_.count(p.workload))
      err("count", "unknown or removed workload " + p.workload + " is pending");
  }
  for (const auto& [k, w] : live_) {
    if (!keys.count(k)) err("count", k + " is neither admitted nor pending");
  }
  auto by_key = [](const auto& a, const auto& b) {
    return a.workload < b.workload;
  };
  if (!std::is_sorted(admitted.begin(), admitted.end(), by_key))
    err("api", "Admitted() is not sorted by key");
  if (!std::is_sorted(pending.begin(), pending.end(), by_key))
    err("api", "Pending() is not sorted by key");

  // The one-workload views agree with the full lists.
  for (const auto& a : admitted) {
    std::optional<core::Admission> one = s.AdmissionOf(a.workload);
    if (!one || AdmissionString(*one) != AdmissionString(a.admission))
      err("api", "AdmissionOf(" + a.workload + ") differs from Admitted()");
    if (s.Explain(a.workload)) err("api", a.workload + " admitted but explained");
  }
  for (const auto& p : pending) {
    std::optional<PendingWorkload> one = s.Explain(p.workload);
    if (!one || one->reason != p.reason || one->position != p.position ||
        one->cluster_queue != p.cluster_queue)
      err("api", "Explain(" + p.workload + ") differs from Pending()");
    if (s.AdmissionOf(p.workload)) err("api", p.workload + " pending but has an admission");
  }
  std::map<std::string, std::pair<int32_t, int32_t>> cq_counts;  // pending, admitted
  for (const auto& p : pending) {
    if (p.position > 0) ++cq_counts[p.cluster_queue].first;
  }
  for (const auto& a : admitted) ++cq_counts[a.admission.cluster_queue].second;
  for (const auto& [cq, counts] : cq_counts) {
    std::optional<ClusterQueueStatus> st = s.GetClusterQueueStatus(cq);
    if (!st || st->pending != counts.first || st->admitted != counts.second)
      err("api", "GetClusterQueueStatus(" + cq + ") counts differ from the lists");
    // What it lends is unused quota of its own; a borrower lends nothing.
    for (const QuotaUsage& u : st ? st->quota : std::vector<QuotaUsage>{}) {
      if (u.lent_milli < 0 || u.lent_milli > std::max<int64_t>(0, u.nominal_milli - u.usage_milli) ||
          (u.borrowed_milli > 0 && u.lent_milli > 0)) {
        err("api", "GetClusterQueueStatus(" + cq + ") lends " + std::to_string(u.lent_milli) +
                       "m of " + u.flavor + " with " + std::to_string(u.usage_milli) + "m of " +
                       std::to_string(u.nominal_milli) + "m in use");
      }
    }
  }

  // Pending: reasons, queues, positions.
  std::map<std::string, std::vector<int32_t>> positions;
  for (const auto& p : pending) {
    if (p.reason.empty())
      err("pending", p.workload + " is pending with no reason");
    auto it = live_.find(p.workload);
    if (it == live_.end()) continue;
    std::string cq = CqOf(it->second);
    if (p.cluster_queue != cq) {
      err("pending", p.workload + " is pending in ClusterQueue '" +
                         p.cluster_queue + "', its LocalQueue names '" + cq +
                         "'");
    }
    const core::ClusterQueue* q = FindCq(cq);
    if (q && Selected(*q)) positions[cq].push_back(p.position);
  }
  {
    // Queue order: priority, then creation time, then arrival.
    std::map<std::string, std::vector<std::pair<int32_t, std::string>>> queues;
    for (const auto& p : pending) {
      if (live_.count(p.workload) && positions.count(p.cluster_queue)) {
        queues[p.cluster_queue].emplace_back(p.position, p.workload);
      }
    }
    for (auto& [cq, list] : queues) {
      std::sort(list.begin(), list.end());
      for (size_t i = 1; i < list.size(); ++i) {
        const core::Workload& a = live_.at(list[i - 1].second);
        const core::Workload& b = live_.at(list[i].second);
        if (std::tuple(-a.priority, a.creation_unix_ms, arrival_.at(a.Key())) >
            std::tuple(-b.priority, b.creation_unix_ms, arrival_.at(b.Key()))) {
          err("pending", "ClusterQueue " + cq + " lists " + a.Key() +
                             " at position " +
                             std::to_string(list[i - 1].first) + " before " +
                             b.Key() + " at " + std::to_string(list[i].first) +
                             " out of queue order");
          break;
        }
      }
    }
  }
  {
    // "waiting behind K" names the head of the same queue.
    std::map<std::string, std::string> heads;
    for (const auto& p : pending) {
      if (p.position == 1) heads[p.cluster_queue] = p.workload;
    }
    for (const auto& p : pending) {
      const std::string prefix = "waiting behind ";
      if (p.reason.rfind(prefix, 0) != 0) continue;
      std::string named =
          p.reason.substr(prefix.size(), p.reason.find(':') - prefix.size());
      // Another tenant's head is not named (issue 14 §4).
      auto tenant = [](const std::string& key) { return key.substr(0, key.find('/')); };
      const std::string& head = heads[p.cluster_queue];
      const bool foreign = tenant(head) != tenant(p.workload);
      if (p.position == 1 ||
          (foreign ? named != "a workload of another tenant" : head != named)) {
        err("pending", p.workload + " at position " +
                           std::to_string(p.position) + " says '" + p.reason +
                           "' but the head of " + p.cluster_queue + " is " +
                           heads[p.cluster_queue]);
      }
    }
  }
  for (auto& [cq, pos] : positions) {
    std::sort(pos.begin(), pos.end());
    for (size_t i = 0; i < pos.size(); ++i) {
      if (pos[i] != int32_t(i + 1)) {
        err("pending", "positions in ClusterQueue " + cq + " are not 1.." +
                           std::to_string(pos.size()));
        break;
      }
    }
  }

  // Admitted workloads: flavors, counts, placements.
  std::map<std::string, std::string> device_holder;
  std::map<std::string, std::pair<int64_t, int64_t>>
      node_use;  // cpu, memory (milli).
  std::map<std::string, std::map<FR, int64_t>> cq_usage;
  used_devices_.clear();
  for (const auto& a : admitted) {
    auto wit = live_.find(a.workload);
    if (wit == live_.end()) continue;
    const core::Workload& w = wit->second;
    const std::string who = a.workload;
    const std::string cqn = CqOf(w);
    if (a.admission.cluster_queue != cqn) {
      err("flavor", who + " is admitted by ClusterQueue '" +
                        a.admission.cluster_queue +
                        "', its LocalQueue names '" + cqn + "'");
    }
    const core::ClusterQueue* cq = FindCq(a.admission.cluster_queue);
    if (!cq) {
      err("flavor", who + " is admitted by a missing ClusterQueue");
      continue;
    }
    if (!Selected(*cq))
      err("flavor", who + " is admitted though its namespace is not selected");
    if (cq->stop_policy != core::StopPolicy::kNone)
      err("flavor", who + " is admitted by a stopped ClusterQueue");
    if (a.admission.pod_set_assignments.size() != w.pod_sets.size()) {
      err("count", who + " has " +
                       std::to_string(a.admission.pod_set_assignments.size()) +
                       " pod set assignments for " +
                       std::to_string(w.pod_sets.size()) + " pod sets");
      continue;
    }
    for (size_t i = 0; i < w.pod_sets.size(); ++i) {
      const core::PodSet& ps = w.pod_sets[i];
      const core::PodSetAssignment& psa = a.admission.pod_set_assignments[i];
      const std::string set = who + "/" + ps.name;
      if (psa.name != ps.name)
        err("count", set + ": assignment is named " + psa.name);
      const int32_t lo =
          ps.min_count ? std::min(*ps.min_count, ps.count) : ps.count;
      if (psa.count < ps.count) ++stats().partial;
      if (psa.count < lo || psa.count > ps.count) {
        err("count", set + ": admits " + std::to_string(psa.count) +
                         " pods, allowed [" + std::to_string(lo) + ", " +
                         std::to_string(ps.count) + "]");
      }
      if (int64_t(psa.placements.size()) != psa.count) {
        err("count", set + ": " + std::to_string(psa.placements.size()) +
                         " placements for " + std::to_string(psa.count) +
                         " pods");
      }
      // Flavors.
      std::set<std::string> used_flavors;
      size_t requested = 0;
      std::map<std::string, int32_t> want;  // Devices per pod.
      for (const auto& [r, q] : ps.requests) {
        if (q.IsZero()) continue;
        ++requested;
        if (core::IsGpuResource(r)) want[r] = int32_t(q.UnitsCeil());
        auto f = psa.flavors.find(r);
        if (f == psa.flavors.end()) {
          err("flavor", set + ": no flavor for requested resource " + r);
          continue;
        }
        const core::ResourceGroup* g = GroupOf(*cq, r);
        bool listed = g && std::any_of(g->flavors.begin(), g->flavors.end(),
                                       [&](const core::FlavorQuotas& fq) {
                                         return fq.name == f->second;
                                       });
        if (!listed) {
          err("flavor", set + ": flavor " + f->second + " for " + r +
                            " is not in ClusterQueue " + cq->name +
                            "'s resource group for it");
        }
        cq_usage[cq->name][{f->second, r}] += q.milli() * psa.count;
        used_flavors.insert(f->second);
      }
      if (psa.flavors.size() != requested) {
        err("flavor", set + ": " + std::to_string(psa.flavors.size()) +
                          " flavors for " + std::to_string(requested) +
                          " requested resources");
      }
      std::vector<const core::ResourceFlavor*> fl;
      std::vector<core::Toleration> flavor_tolerations;
      for (const auto& name : used_flavors) {
        auto it = flavors_.find(name);
        if (it == flavors_.end()) {
          err("flavor", set + ": unknown flavor " + name);
          continue;
        }
        fl.push_back(it->second);
        flavor_tolerations.insert(flavor_tolerations.end(),
                                  it->second->tolerations.begin(),
                                  it->second->tolerations.end());
        if (!FlavorEligible(ps, *it->second)) {
          err("flavor", set + ": flavor " + name +
                            " is not eligible (untolerated nodeTaints or a "
                            "nodeSelector that "
                            "contradicts its labels)");
        }
      }
      // Placements.
      for (size_t k = 0; k < psa.placements.size(); ++k) {
        const core::PodPlacement& pp = psa.placements[k];
        const std::string pod = set + "[" + std::to_string(k) + "]";
        auto nit = nodes_.find(pp.node);
        if (nit == nodes_.end()) {
          err("node", pod + " is on unknown node '" + pp.node + "'");
          continue;
        }
        const core::Node& node = *nit->second;
        if (node.unschedulable)
          err("node", pod + " is on cordoned node " + node.name);
        for (const auto* f : fl) {
          if (!core::LabelsMatch(f->node_labels, node.labels)) {
            err("node", pod + " is on node " + node.name +
                            " which lacks flavor " + f->name + "'s labels");
          }
        }
        if (!core::LabelsMatch(ps.node_selector, node.labels)) {
          err("node", pod + " is on node " + node.name +
                          " which fails its nodeSelector");
        }
        if (!core::TaintsTolerated(node.taints, ps.tolerations,
                                   flavor_tolerations)) {
          err("node", pod + " is on node " + node.name + " whose taints " +
                          TaintsText(node.taints) + " it does not tolerate");
        }
        std::map<std::string, int32_t> got;
        for (const auto& uuid : pp.gpus) {
          used_devices_.insert(uuid);
          auto [hit, fresh] = device_holder.emplace(uuid, pod);
          if (!fresh)
            err("device", "device " + uuid + " is held by " + hit->second +
                              " and " + pod);
          auto dit = devs_.find(uuid);
          if (dit == devs_.end()) {
            err("device", pod + " holds unknown device " + uuid);
            continue;
          }
          const Dev& d = dit->second;
          if (d.node != node.name)
            err("device", pod + " on node " + node.name + " holds " + uuid +
                              " of node " + d.node);
          if (!d.healthy)
            err("device", pod + " holds unhealthy device " + uuid);
          if (d.partitioned)
            err("device", pod + " holds MIG-partitioned whole GPU " + uuid);
          ++got[d.resource];
          if (d.resource != core::kGpuResource) ++stats().mig_pods;
        }
        if (got != want) {
          std::string g, wnt;
          for (const auto& [r, c] : got) g += " " + r + "=" + std::to_string(c);
          for (const auto& [r, c] : want)
            wnt += " " + r + "=" + std::to_string(c);
          err("device", pod + " holds{" + g + " } but requests{" + wnt + " }");
        }
        auto cpu = ps.requests.find(core::kCpuResource);
        auto mem = ps.requests.find(core::kMemoryResource);
        if (cpu != ps.requests.end())
          node_use[node.name].first += cpu->second.milli();
        if (mem != ps.requests.end())
          node_use[node.name].second += mem->second.milli();
      }
    }
  }
  for (const auto& [name, use] : node_use) {
    const core::Node& node = *nodes_.at(name);
    if (use.first > node.cpu.milli()) {
      err("node", "node " + name + " runs pods requesting " +
                      Quantity::FromMilli(use.first).ToString() +
                      " cpu, capacity " + node.cpu.ToString());
    }
    if (use.second > node.memory.milli()) {
      err("node", "node " + name + " runs pods requesting " +
                      Quantity::FromMilli(use.second).ToString() +
                      " memory, capacity " + node.memory.ToString());
    }
  }
  CheckQuota(cq_usage, errors);
  usage_ = TreeUsage(cq_usage);
  cq_usage_ = std::move(cq_usage);
  node_use_ = std::move(node_use);
  admitted_ = admitted;
}

}  // namespace allot::sched::proptest
