// Text forms of configs and scheduler state for the property tests.
#include <sstream>
#include <string>
#include <vector>

#include "sched/scheduler_property_util.h"

namespace allot::sched::proptest {
namespace {

const char* EffectName(core::TaintEffect e) {
  switch (e) {
    case core::TaintEffect::kNoSchedule:
      return "NoSchedule";
    case core::TaintEffect::kPreferNoSchedule:
      return "PreferNoSchedule";
    case core::TaintEffect::kNoExecute:
      return "NoExecute";
  }
  return "?";
}

std::string LabelsText(const core::Labels& l) {
  std::string s = "{";
  for (const auto& [k, v] : l) s += (s.size() > 1 ? "," : "") + k + "=" + v;
  return s + "}";
}
}  // namespace

std::string TaintsText(const std::vector<core::Taint>& ts) {
  std::string s = "[";
  for (const auto& t : ts) {
    s += (s.size() > 1 ? "," : "") + t.key + "=" + t.value + ":" +
         EffectName(t.effect);
  }
  return s + "]";
}

namespace {

std::string TolerationsText(const std::vector<core::Toleration>& ts) {
  std::string s = "[";
  for (const auto& t : ts) {
    s += (s.size() > 1 ? "," : "") +
         (t.key.empty() ? std::string("*") : t.key) +
         (t.op == core::TolerationOperator::kExists ? " Exists"
                                                    : "=" + t.value) +
         (t.effect ? std::string(":") + EffectName(*t.effect) : "");
  }
  return s + "]";
}

}  // namespace

std::string AdmissionText(const core::Admission& a) {
  std::string s = a.cluster_queue;
  for (const auto& psa : a.pod_set_assignments) {
    s += " [" + psa.name + " x" + std::to_string(psa.count) + " {";
    bool first = true;
    for (const auto& [r, f] : psa.flavors) {
      s += (first ? "" : ",") + r + ":" + f;
      first = false;
    }
    s += "}";
    for (const auto& pp : psa.placements) {
      s += " " + pp.node + "(";
      for (size_t i = 0; i < pp.gpus.size(); ++i)
        s += (i ? "," : "") + pp.gpus[i];
      s += ")";
    }
    s += "]";
  }
  return s;
}

std::string EventText(const PreemptionEvent& e) {
  return e.workload + " by " + e.preemptor + " (" + ToString(e.reason) + ")";
}

std::string StateText(const Scheduler& s) {
  std::string out;
  for (const auto& a : s.Admitted())
    out += "A " + a.workload + " " + AdmissionText(a.admission) + "\n";
  for (const auto& p : s.Pending()) {
    out += "P " + p.workload + " @" + p.cluster_queue + " #" +
           std::to_string(p.position) + " " + p.reason + "\n";
  }
  for (const auto& e : s.Preemptions()) out += "E " + EventText(e) + "\n";
  out += "counts " + std::to_string(s.AdmittedCount()) + "/" +
         std::to_string(s.PendingCount()) + "\n";
  return out;
}

std::string CycleText(const CycleResult& r) {
  std::string s =
      "cycle attempts=" + std::to_string(r.attempts) + " admitted=[";
  for (size_t i = 0; i < r.admitted.size(); ++i)
    s += (i ? "," : "") + r.admitted[i];
  s += "] preempted=[";
  for (size_t i = 0; i < r.preempted.size(); ++i)
    s += (i ? "; " : "") + EventText(r.preempted[i]);
  return s + "]";
}

namespace {

std::string QuotaText(const std::vector<core::ResourceGroup>& groups) {
  std::string s;
  for (const auto& g : groups) {
    s += "\n    group {";
    for (size_t i = 0; i < g.covered_resources.size(); ++i)
      s += (i ? "," : "") + g.covered_resources[i];
    s += "}:";
    for (const auto& fq : g.flavors) {
      s += " " + fq.name + "(";
      for (size_t i = 0; i < fq.resources.size(); ++i) {
        const auto& rq = fq.resources[i];
        s += (i ? " " : "") + rq.name + "=" + rq.nominal_quota.ToString();
        if (rq.borrowing_limit) s += " bl=" + rq.borrowing_limit->ToString();
        if (rq.lending_limit) s += " ll=" + rq.lending_limit->ToString();
      }
      s += ")";
    }
  }
  return s;
}

}  // namespace

std::string WorkloadText(const core::Workload& w) {
  std::string s = w.Key() + " queue=" + w.queue_name +
                  " prio=" + std::to_string(w.priority) +
                  " created=" + std::to_string(w.creation_unix_ms);
  for (const auto& ps : w.pod_sets) {
    s += " [" + ps.name + " x" + std::to_string(ps.count);
    if (ps.min_count) s += " min=" + std::to_string(*ps.min_count);
    for (const auto& [r, q] : ps.requests) s += " " + r + "=" + q.ToString();
    if (!ps.node_selector.empty()) s += " sel=" + LabelsText(ps.node_selector);
    if (!ps.tolerations.empty()) s += " tol=" + TolerationsText(ps.tolerations);
    s += "]";
  }
  return s;
}

std::string ConfigText(const core::Config& c) {
  std::ostringstream o;
  o << "fair_sharing=" << c.scheduler.fair_sharing
    << " strategies=" << c.scheduler.preemption_strategies.size() << "\n";
  for (const auto& f : c.flavors) {
    o << "flavor " << f.name << " labels=" << LabelsText(f.node_labels)
      << " taints=" << TaintsText(f.node_taints)
      << " tol=" << TolerationsText(f.tolerations) << "\n";
  }
  for (const auto& co : c.cohorts) {
    o << "cohort " << co.name << " parent=" << co.parent
      << QuotaText(co.resource_groups) << "\n";
  }
  for (const auto& q : c.cluster_queues) {
    o << "cq " << q.name << " cohort=" << q.cohort << " strict="
      << (q.queueing_strategy == core::QueueingStrategy::kStrictFIFO)
      << " within=" << int(q.preemption.within_cluster_queue)
      << " reclaim=" << int(q.preemption.reclaim_within_cohort)
      << " borrow=" << int(q.preemption.borrow_within_cohort) << " threshold="
      << (q.preemption.max_priority_threshold
              ? std::to_string(*q.preemption.max_priority_threshold)
              : "-")
      << " whenCanBorrow=" << int(q.flavor_fungibility.when_can_borrow)
      << " whenCanPreempt=" << int(q.flavor_fungibility.when_can_preempt)
      << " weight=" << q.fair_weight_milli << " stop=" << int(q.stop_policy)
      << " nsSelector="
      << (q.namespace_selector ? LabelsText(q.namespace_selector->match_labels)
                               : "none")
      << QuotaText(q.resource_groups) << "\n";
  }
  for (const auto& lq : c.local_queues)
    o << "lq " << lq.ns << "/" << lq.name << " -> " << lq.cluster_queue << "\n";
  for (const auto& n : c.nodes) {
    o << "node " << n.name << " labels=" << LabelsText(n.labels)
      << " taints=" << TaintsText(n.taints)
      << (n.unschedulable ? " CORDONED" : "") << " cpu=" << n.cpu.ToString()
      << " mem=" << n.memory.ToString() << " gpus:";
    for (const auto& g : n.gpus) {
      o << " " << g.uuid << (g.healthy ? "" : "(unhealthy)");
      if (!g.mig.empty()) {
        o << "{";
        for (size_t i = 0; i < g.mig.size(); ++i)
          o << (i ? "," : "") << g.mig[i].profile;
        o << "}";
      }
    }
    o << "\n";
  }
  for (const auto& w : c.workloads)
    o << "initial workload " << WorkloadText(w) << "\n";
  return o.str();
}

}  // namespace allot::sched::proptest
