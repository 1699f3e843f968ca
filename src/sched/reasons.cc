// Pending reasons: sentences a user can act on.
#include <algorithm>

#include "sched/scheduler_internal.h"

namespace allot::sched {

std::string Scheduler::Impl::Describe(const std::string& resource,
                                      int64_t milli) const {
  Quantity q = Quantity::FromMilli(milli);
  if (resource == core::kCpuResource || resource == core::kMemoryResource ||
      milli % 1000 != 0) {
    return q.ToString() + " " + resource;
  }
  return std::to_string(milli / 1000) + " " + resource;
}

// "needs 8 nvidia.com/gpu of flavor h100; ClusterQueue team-a has 2 unused
// and may borrow 0 more (cohort research has 0 unused)"
std::string Scheduler::Impl::QuotaShortReason(int32_t cq_idx, int32_t fr,
                                              int64_t need) const {
  const CQ& cq = cqs[cq_idx];
  const std::string& res = resources[FrResource(fr)];
  auto amount = [&](int64_t m) {
    std::string s = Describe(res, m);
    return s.substr(0, s.rfind(' '));  // Just the number.
  };
  int64_t unused = std::max<int64_t>(
      0, quota->Subtree(cq.node, fr) - quota->Usage(cq.node, fr));
  int64_t avail = quota->Available(cq.node, fr);
  std::string s = "needs " + Describe(res, need) + " of flavor " +
                  flavors[FrFlavor(fr)].name + "; ClusterQueue " +
                  cq.spec.name + " has " + amount(unused) + " unused";
  if (quota->HasParent(cq.node)) {
    int32_t parent = quota->Parent(cq.node);
    s += " and may borrow " + amount(std::max<int64_t>(0, avail - unused)) +
         " more (cohort " + node_cohort_name[parent] + " has " +
         amount(quota->Available(parent, fr)) + " unused)";
  }
  return s;
}

std::string Scheduler::Impl::PreemptionNote(int32_t cq_idx, Mode mode) const {
  if (mode != Mode::kPreempt) return "";
  const CQ& cq = cqs[cq_idx];
  const auto& pol = cq.spec.preemption;
  bool can_preempt =
      pol.within_cluster_queue != core::WithinClusterQueue::kNever ||
      pol.reclaim_within_cohort != core::ReclaimWithinCohort::kNever ||
      pol.borrow_within_cohort != core::BorrowWithinCohortPolicy::kNever;
  if (!can_preempt)
    return "; ClusterQueue " + cq.spec.name + " does not preempt";
  return "; no set of workloads that ClusterQueue " + cq.spec.name +
         "'s preemption policy allows it to preempt would make room";
}

std::string Scheduler::Impl::ReasonNow(WlIdx w) const {
  const Wl& wl = wls[w];
  if (wl.cq < 0) return wl.reason;
  const CQ& cq = cqs[wl.cq];
  if (cq.spec.stop_policy != core::StopPolicy::kNone) return wl.reason;
  const std::vector<int32_t>& counts = FullCounts(w);
  Assignment a = Assign(w, counts, /*quota_only=*/false, /*explain=*/true);
  if (a.mode == Mode::kFit) return "";
  return a.reason + PreemptionNote(wl.cq, a.mode);
}

}  // namespace allot::sched
