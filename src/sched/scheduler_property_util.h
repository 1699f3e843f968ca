// Shared by the scheduler's property tests: text forms, stats, the oracle.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/model.h"
#include "sched/random_cluster.h"
#include "sched/scheduler.h"

namespace allot::sched::proptest {

using FR = std::pair<std::string, std::string>;  // (flavor, resource).

// Coverage counters, printed with ALLOT_PROP_STATS=1.
struct Stats {
  int64_t checks = 0, admitted = 0, pending = 0, partial = 0, borrowing = 0,
          preemptions = 0;
  int64_t liveness_candidates = 0, mig_pods = 0, same_cycle_churn = 0,
          victims_checked = 0;
  std::map<std::string, int64_t> reasons;
};
// Defined in scheduler_property_test.cc.
Stats& stats();

// Text forms (scheduler_property_text_test.cc), for determinism checks and
// failure reports.
std::string TaintsText(const std::vector<core::Taint>& ts);
std::string AdmissionText(const core::Admission& a);
std::string EventText(const PreemptionEvent& e);
std::string StateText(const Scheduler& s);
std::string CycleText(const CycleResult& r);
std::string WorkloadText(const core::Workload& w);
std::string ConfigText(const core::Config& c);

// Defined in scheduler_property_oracle_test.cc.
bool FlavorEligible(const core::PodSet& ps, const core::ResourceFlavor& f);

// ---------------------------------------------------------------------------
// The oracle: what the config alone says about any valid state.

class Oracle {
 public:
  explicit Oracle(const core::Config& config) : config_(config) { Index(); }

  void Add(const core::Workload& w) {
    live_[w.Key()] = w;
    arrival_[w.Key()] = next_arrival_++;
  }
  void Remove(const std::string& key) { live_.erase(key); }
  bool Live(const std::string& key) const { return live_.count(key) > 0; }

  // Checks the whole public state; appends "[tag] message" errors.
  void CheckState(const Scheduler& s, std::vector<std::string>* errors);
  // Checks the events added to Preemptions() since the last call and, for
  // a single RunCycle (`cycle` set), its result against the state before it
  // (`admitted_before`, `pending_before`, and the oracle's view from the
  // last CheckState: call this before CheckState on the new state).
  void CheckNewPreemptions(const Scheduler& s,
                           const std::set<std::string>* admitted_before,
                           const std::vector<PendingWorkload>* pending_before,
                           const CycleResult* cycle,
                           std::vector<std::string>* errors);
  // After RunUntilQuiescent (and CheckState on that state).
  void CheckLiveness(const Scheduler& s,
                     std::vector<std::string>* errors) const;
  // For a single-pod-set workload requesting one device resource: a text
  // saying why it fits as is (quota by Kueue's arithmetic in its first
  // eligible flavor, free healthy devices on eligible nodes) in the state of
  // the last CheckState; nullopt when it does not or the check does not apply.
  struct FitQuery {
    bool allow_borrowing = true;
    bool at_min_count = false;  // Its pod set's minCount pods only.
    bool evict_lower_in_cq =
        false;  // Without what it may preempt in its ClusterQueue.
  };
  std::optional<std::string> FitsNow(const core::Workload& w,
                                     const FitQuery& query) const;
  // After a cycle with a single head that preempted (and CheckState on the
  // new state): every victim was needed, i.e. putting it back as it was
  // (same placement, same quota) next to the preemptor would break quota or
  // share a device or exceed a node.
  void CheckVictimsNeeded(const std::vector<AdmittedWorkload>& admitted_before,
                          const CycleResult& cycle,
                          std::vector<std::string>* errors) const;
  std::vector<core::Workload> LiveInArrivalOrder() const {
    std::vector<core::Workload> out;
    for (const auto& [k, w] : live_) out.push_back(w);
    std::sort(out.begin(), out.end(), [&](const auto& a, const auto& b) {
      return arrival_.at(a.Key()) < arrival_.at(b.Key());
    });
    return out;
  }

 private:
  struct Dev {
    std::string node;
    std::string resource;  // nvidia.com/gpu or nvidia.com/mig-<profile>.
    bool healthy = true;
    bool partitioned = false;  // A whole GPU that has MIG slices.
  };
  struct QNode {
    std::string name;
    bool is_cq = false;
    int parent = -1;
    std::vector<int> children;
    std::map<FR, core::ResourceQuota> quota;
    std::map<FR, int64_t> subtree;
  };
  using Usage = std::vector<std::map<FR, int64_t>>;  // Per quota node.

  void Index();
  int CohortNode(const std::string& name);
  const core::ClusterQueue* FindCq(const std::string& name) const {
    auto it = cqs_.find(name);
    return it == cqs_.end() ? nullptr : it->second;
  }
  // The ClusterQueue of `w`'s LocalQueue; "" when the LocalQueue is missing.
  std::string CqOf(const core::Workload& w) const {
    auto it = lqs_.find({w.ns, w.queue_name});
    return it == lqs_.end() ? "" : it->second;
  }
  bool Selected(const core::ClusterQueue& cq) const {
    static const core::Labels kNoLabels;
    return cq.namespace_selector && cq.namespace_selector->Matches(kNoLabels);
  }
  // The resource group of `cq` covering `resource`, or null.
  static const core::ResourceGroup* GroupOf(const core::ClusterQueue& cq,
                                            const std::string& resource) {
    for (const auto& g : cq.resource_groups) {
      if (std::find(g.covered_resources.begin(), g.covered_resources.end(),
                    resource) != g.covered_resources.end()) {
        return &g;
      }
    }
    return nullptr;
  }
  int Root(int n) const {
    while (q_[size_t(n)].parent >= 0) n = q_[size_t(n)].parent;
    return n;
  }
  const core::ResourceQuota* Quota(int n, const FR& fr) const {
    auto it = q_[size_t(n)].quota.find(fr);
    return it == q_[size_t(n)].quota.end() ? nullptr : &it->second;
  }
  int64_t Nominal(int n, const FR& fr) const {
    const auto* q = Quota(n, fr);
    return q ? q->nominal_quota.milli() : 0;
  }
  std::optional<int64_t> Bl(int n, const FR& fr) const {
    const auto* q = Quota(n, fr);
    if (!q || !q->borrowing_limit) return std::nullopt;
    return q->borrowing_limit->milli();
  }
  std::optional<int64_t> Ll(int n, const FR& fr) const {
    const auto* q = Quota(n, fr);
    if (!q || !q->lending_limit) return std::nullopt;
    return q->lending_limit->milli();
  }
  int64_t Subtree(int n, const FR& fr) const {
    auto it = q_[size_t(n)].subtree.find(fr);
    return it == q_[size_t(n)].subtree.end() ? 0 : it->second;
  }
  // Kueue: the part of its subtree quota a node never lends.
  int64_t Guaranteed(int n, const FR& fr) const {
    auto ll = Ll(n, fr);
    return ll ? std::max<int64_t>(0, Subtree(n, fr) - *ll) : 0;
  }
  static int64_t Get(const std::map<FR, int64_t>& m, const FR& fr) {
    auto it = m.find(fr);
    return it == m.end() ? 0 : it->second;
  }
  Usage TreeUsage(
      const std::map<std::string, std::map<FR, int64_t>>& cq_usage) const;
  // Kueue's available(): unused guaranteed quota plus what the parent can
  // give, capped by the borrowing limit.
  int64_t Available(int n, const FR& fr, const Usage& u) const;
  void CheckQuota(const std::map<std::string, std::map<FR, int64_t>>& cq_usage,
                  std::vector<std::string>* errors) const;
  bool PolicyAllows(const PreemptionEvent& e, std::string* why) const;

  const core::Config& config_;
  std::map<std::string, const core::ResourceFlavor*> flavors_;
  std::map<std::string, const core::Node*> nodes_;
  std::map<std::string, Dev> devs_;
  std::map<std::string, const core::ClusterQueue*> cqs_;
  std::map<std::pair<std::string, std::string>, std::string> lqs_;
  std::vector<QNode> q_;
  std::vector<int> post_order_;
  std::map<std::string, int> cq_node_, cohort_node_;
  std::set<FR> frs_;

  std::map<std::string, core::Workload> live_;
  std::map<std::string, int64_t> arrival_;
  int64_t next_arrival_ = 0;
  std::vector<std::string> events_;
  // From the last CheckState.
  Usage usage_;
  std::set<std::string> used_devices_;
  std::map<std::string, std::map<FR, int64_t>> cq_usage_;
  std::map<std::string, std::pair<int64_t, int64_t>> node_use_;
  std::vector<AdmittedWorkload> admitted_;
  std::set<std::string> ever_preempted_;
};

}  // namespace allot::sched::proptest
