// Scheduler: parking (docs/parking.md). A parked workload keeps its
// admission and its quota but not its devices; resume places it again
// without queueing; it survives a rebuild and is preempted as any other.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/manifest.h"
#include "sched/scheduler.h"
#include "sched/scheduler_test_util.h"
#include "sched/test_util.h"

namespace allot::sched {
namespace {

using testing::GpuCq;
using testing::GpuNodes;
using testing::kH100;
using testing::Wl;

std::vector<std::string> AdmittedKeys(const Scheduler& s) {
  std::vector<std::string> out;
  for (const auto& a : s.Admitted()) out.push_back(a.workload);
  return out;
}

// The first quota cell of ClusterQueue `cq` (a copy: the status is a
// temporary).
QuotaUsage Cell(const Scheduler& s, const std::string& cq) {
  return s.GetClusterQueueStatus(cq)->quota.at(0);
}

int64_t Usage(const Scheduler& s, const std::string& cq) { return Cell(s, cq).usage_milli; }

// One node of 8 GPUs; team-a/a1 holds them all. team-b/b1 waits for
// devices (its quota is free), team-a/a2 for quota.
const std::string kOneNode = kH100 + GpuNodes("h", 1, "H100-80GB") +
                             GpuCq("team-a-cq", "", "h100", "nominalQuota: 8") +
                             GpuCq("team-b-cq", "", "h100", "nominalQuota: 8");

TEST(SchedulerParkingTest, AParkedWorkloadKeepsItsQuotaAndGivesItsDevicesBack) {
  auto s = testing::BuildScheduler(kOneNode + Wl("team-a/a1").Gpus(8).Admitted("team-a-cq", "h100") +
                                   Wl("team-a/a2").Created(1).Gpus(8) +
                                   Wl("team-b/b1").Created(2).Gpus(8));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  Scheduler& sched = **s;
  sched.RunUntilQuiescent();
  ASSERT_EQ(AdmittedKeys(sched), std::vector<std::string>{"team-a/a1"});

  EXPECT_EQ(sched.ParkWorkload("team-a/nope").code(), StatusCode::kNotFound);
  EXPECT_EQ(sched.ParkWorkload("team-b/b1").code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(sched.ParkWorkload("team-a/a1").ok());
  EXPECT_EQ(sched.ParkWorkload("team-a/a1").code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(sched.IsParked("team-a/a1"));
  std::optional<core::Admission> adm = sched.AdmissionOf("team-a/a1");
  ASSERT_TRUE(adm.has_value());
  EXPECT_TRUE(adm->parked);
  EXPECT_EQ(adm->cluster_queue, "team-a-cq");
  EXPECT_TRUE(adm->pod_set_assignments.at(0).placements.empty());
  EXPECT_EQ(adm->pod_set_assignments.at(0).flavors.at("nvidia.com/gpu"), "h100");

  // b1 gets the devices (within its own quota); a2 still waits: a1's
  // quota is kept.
  sched.RunUntilQuiescent();
  EXPECT_EQ(AdmittedKeys(sched), (std::vector<std::string>{"team-a/a1", "team-b/b1"}));
  EXPECT_EQ(Usage(sched, "team-a-cq"), 8000);
  EXPECT_NE(sched.Explain("team-a/a2")->reason.find("team-a-cq has 0 unused"), std::string::npos)
      << sched.Explain("team-a/a2")->reason;

  // No device free: the resume is refused, saying why, and changes nothing.
  Status r = sched.ResumeWorkload("team-a/a1");
  EXPECT_EQ(r.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.message().find("no free devices"), std::string::npos) << r.ToString();
  EXPECT_TRUE(sched.IsParked("team-a/a1"));
  EXPECT_EQ(sched.ResumeWorkload("team-b/b1").code(), StatusCode::kFailedPrecondition);

  // Once they are free, it runs again at once, on all 8, not from a queue.
  ASSERT_TRUE(sched.RemoveWorkload("team-b/b1").ok());
  ASSERT_TRUE(sched.ResumeWorkload("team-a/a1").ok());
  EXPECT_FALSE(sched.IsParked("team-a/a1"));
  adm = sched.AdmissionOf("team-a/a1");
  EXPECT_FALSE(adm->parked);
  ASSERT_EQ(adm->pod_set_assignments.at(0).placements.size(), 1u);
  EXPECT_EQ(adm->pod_set_assignments.at(0).placements[0].gpus.size(), 8u);
  sched.RunUntilQuiescent();
  EXPECT_EQ(AdmittedKeys(sched), std::vector<std::string>{"team-a/a1"});
  EXPECT_EQ(sched.PendingCount(), 1u);  // a2.
  // Finishing a parked workload frees its quota.
  ASSERT_TRUE(sched.ParkWorkload("team-a/a1").ok());
  ASSERT_TRUE(sched.RemoveWorkload("team-a/a1").ok());
  sched.RunUntilQuiescent();
  EXPECT_EQ(AdmittedKeys(sched), std::vector<std::string>{"team-a/a2"});
}

TEST(SchedulerParkingTest, ARebuildKeepsItParkedAndPreemptionTakesItsQuota) {
  core::Config cfg;
  ASSERT_TRUE(core::ParseManifests(
                  kH100 + GpuNodes("h", 1, "H100-80GB") +
                      GpuCq("team-a-cq", "", "h100", "nominalQuota: 8",
                            "  preemption: {withinClusterQueue: LowerPriority}\n") +
                      Wl("team-a/low").Gpus(8).Admitted("team-a-cq", "h100").Yaml(),
                  "t.yaml", &cfg)
                  .ok());
  ASSERT_TRUE(core::ValidateConfig(&cfg).ok());
  cfg.workloads.at(0).admission->parked = true;
  auto s = Scheduler::Create(cfg);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  Scheduler& sched = **s;
  EXPECT_TRUE(sched.IsParked("team-a/low"));
  EXPECT_EQ(Usage(sched, "team-a-cq"), 8000);
  // A higher priority in its ClusterQueue preempts it (its quota; it holds
  // no devices) and runs on the free devices.
  core::Config more;
  ASSERT_TRUE(core::ParseManifests(Wl("team-a/high").Priority(100).Created(1).Gpus(8).Yaml(),
                                   "m.yaml", &more)
                  .ok());
  ASSERT_TRUE(sched.AddWorkload(more.workloads.at(0)).ok());
  CycleResult r = sched.RunCycle();
  EXPECT_EQ(r.admitted, std::vector<std::string>{"team-a/high"});
  ASSERT_EQ(r.preempted.size(), 1u);
  EXPECT_EQ(r.preempted[0].workload, "team-a/low");
  EXPECT_FALSE(sched.IsParked("team-a/low"));
  EXPECT_FALSE(sched.AdmissionOf("team-a/low").has_value());
  EXPECT_EQ(sched.AdmissionOf("team-a/high")->pod_set_assignments.at(0).placements.size(), 1u);
  EXPECT_EQ(Usage(sched, "team-a-cq"), 8000);
  // A placement with a parked flag is a contradiction Create refuses.
  cfg.workloads.at(0).admission->pod_set_assignments.at(0).placements.push_back(
      {"h-0", {"GPU-h-0-0"}});
  EXPECT_FALSE(Scheduler::Create(cfg).ok());
}

core::Workload Parse(const std::string& yaml) {
  core::Config c;
  Status st = core::ParseManifests(yaml, "w.yaml", &c);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return c.workloads.at(0);
}

// One node of 8 GPUs; team-a's quota is all 8, team-b's none, both in one
// cohort. team-a/a1 holds the 8 and parks.
const std::string kLending = kH100 + GpuNodes("h", 1, "H100-80GB") +
                             GpuCq("team-a-cq", "all", "h100", "nominalQuota: 8") +
                             GpuCq("team-b-cq", "all", "h100", "nominalQuota: 0");

TEST(SchedulerParkingTest, ParkedCapacityIsLentToPreemptibleWorkloadsAndTakenBackOnResume) {
  auto s = testing::BuildScheduler(kLending + Wl("team-a/a1").Gpus(8).Admitted("team-a-cq", "h100") +
                                   Wl("team-b/plain").Created(1).Gpus(4) +
                                   Wl("team-b/spot").Created(2).Gpus(4).Preemptible() +
                                   Wl("team-b/spot-big").Created(3).Gpus(6).Preemptible());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  Scheduler& sched = **s;
  sched.RunUntilQuiescent();
  ASSERT_EQ(AdmittedKeys(sched), std::vector<std::string>{"team-a/a1"});
  ASSERT_TRUE(sched.ParkWorkload("team-a/a1").ok());
  sched.RunUntilQuiescent();
  // Only the preemptible one that fits what is parked runs, on its devices,
  // without quota (team-b has none; a1 still holds team-a's).
  EXPECT_EQ(AdmittedKeys(sched), (std::vector<std::string>{"team-a/a1", "team-b/spot"}));
  std::optional<core::Admission> spot = sched.AdmissionOf("team-b/spot");
  ASSERT_TRUE(spot.has_value());
  EXPECT_TRUE(spot->on_parked_capacity);
  EXPECT_EQ(spot->pod_set_assignments.at(0).placements.at(0).gpus.size(), 4u);
  EXPECT_EQ(Cell(sched, "team-a-cq").usage_milli, 8000);
  EXPECT_EQ(Cell(sched, "team-a-cq").parked_milli, 8000);
  EXPECT_EQ(Cell(sched, "team-b-cq").usage_milli, 0);
  EXPECT_EQ(Cell(sched, "team-b-cq").on_parked_milli, 4000);
  EXPECT_EQ(sched.GetClusterQueueStatus("team-b-cq")->admitted, 1);
  EXPECT_EQ(sched.ReclaimGraceSeconds("team-b/spot"), 30);
  EXPECT_EQ(sched.ReclaimGraceSeconds("team-a/a1"), -1);
  // It holds no quota to keep.
  EXPECT_EQ(sched.ParkWorkload("team-b/spot").code(), StatusCode::kFailedPrecondition);

  // The resume takes the devices back at once, from the borrower (4 free
  // are not enough), without queueing; the next cycle reports it.
  ASSERT_TRUE(sched.ResumeWorkload("team-a/a1").ok());
  EXPECT_FALSE(sched.IsParked("team-a/a1"));
  EXPECT_EQ(sched.AdmissionOf("team-a/a1")->pod_set_assignments.at(0).placements.at(0).gpus.size(),
            8u);
  EXPECT_FALSE(sched.AdmissionOf("team-b/spot").has_value());
  CycleResult r = sched.RunCycle();
  ASSERT_EQ(r.preempted.size(), 1u);
  EXPECT_EQ(r.preempted[0].workload, "team-b/spot");
  EXPECT_EQ(r.preempted[0].preemptor, "team-a/a1");
  EXPECT_EQ(r.preempted[0].reason, PreemptionReason::kParkedCapacityReclaim);
  EXPECT_TRUE(sched.RunCycle().preempted.empty());  // Reported once.
  EXPECT_EQ(Cell(sched, "team-b-cq").on_parked_milli, 0);
  EXPECT_EQ(Cell(sched, "team-a-cq").parked_milli, 0);
}

// Parked in part (a RayCluster's workers, its head kept): the workers'
// devices go back and are lent, the head keeps its GPUs, the quota of all
// stays; a rebuild keeps it so; a node update revalidates only the head;
// the resume places the workers again, taking them from the borrower.
TEST(SchedulerParkingTest, ParkingInPartKeepsTheHeadRunningAndLendsTheWorkers) {
  const std::string ray = Wl("team-a/ray").Gpus(2).PodSet("workers").Count(3).Gpus(2).Admitted(
      "team-a-cq", "h100");
  auto s = testing::BuildScheduler(kLending + ray +
                                   Wl("team-b/spot-big").Created(2).Gpus(8).Preemptible() +
                                   Wl("team-b/spot").Created(3).Gpus(6).Preemptible());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  Scheduler& sched = **s;
  sched.RunUntilQuiescent();
  ASSERT_EQ(AdmittedKeys(sched), std::vector<std::string>{"team-a/ray"});
  const std::vector<std::string> head =
      sched.AdmissionOf("team-a/ray")->pod_set_assignments.at(0).placements.at(0).gpus;
  ASSERT_EQ(head.size(), 2u);

  Status bad = sched.ParkWorkload("team-a/ray", {"workerz"});
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("no pod set workerz (its pod sets: main, workers)"),
            std::string::npos)
      << bad.ToString();
  EXPECT_FALSE(sched.IsParked("team-a/ray"));
  ASSERT_TRUE(sched.ParkWorkload("team-a/ray", {"workers"}).ok());
  EXPECT_TRUE(sched.IsParked("team-a/ray"));
  std::optional<core::Admission> adm = sched.AdmissionOf("team-a/ray");
  ASSERT_TRUE(adm.has_value());
  EXPECT_TRUE(adm->parked);
  EXPECT_EQ(adm->pod_set_assignments.at(0).placements.at(0).gpus, head);
  EXPECT_TRUE(adm->pod_set_assignments.at(1).placements.empty());
  EXPECT_EQ(Cell(sched, "team-a-cq").usage_milli, 8000);
  EXPECT_EQ(Cell(sched, "team-a-cq").parked_milli, 6000);  // The workers' only.

  // 6 GPUs are lent: the 8-GPU borrower does not fit, the 6-GPU one does.
  sched.RunUntilQuiescent();
  EXPECT_EQ(AdmittedKeys(sched), (std::vector<std::string>{"team-a/ray", "team-b/spot"}));
  EXPECT_EQ(Cell(sched, "team-b-cq").on_parked_milli, 6000);

  // A rebuild from what it reports keeps it parked in part.
  core::Config cfg;
  ASSERT_TRUE(core::ParseManifests(kLending + ray, "t.yaml", &cfg).ok());
  ASSERT_TRUE(core::ValidateConfig(&cfg).ok());
  cfg.workloads.at(0).admission = adm;
  auto again = Scheduler::Create(cfg);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE((*again)->IsParked("team-a/ray"));
  EXPECT_EQ((*again)->AdmissionOf("team-a/ray")->pod_set_assignments.at(0).placements.at(0).gpus,
            head);
  EXPECT_EQ(Cell(**again, "team-a-cq").parked_milli, 6000);

  // The node may change under the head (its placement alone is checked).
  ASSERT_TRUE(sched.UpdateNode(cfg.nodes.at(0)).ok());

  // The resume evicts the borrower and places the workers; the head stays.
  ASSERT_TRUE(sched.ResumeWorkload("team-a/ray").ok());
  EXPECT_FALSE(sched.IsParked("team-a/ray"));
  adm = sched.AdmissionOf("team-a/ray");
  EXPECT_FALSE(adm->parked);
  EXPECT_EQ(adm->pod_set_assignments.at(0).placements.at(0).gpus, head);
  ASSERT_EQ(adm->pod_set_assignments.at(1).placements.size(), 3u);
  CycleResult r = sched.RunCycle();
  ASSERT_EQ(r.preempted.size(), 1u);
  EXPECT_EQ(r.preempted[0].workload, "team-b/spot");
  EXPECT_EQ(r.preempted[0].reason, PreemptionReason::kParkedCapacityReclaim);
  EXPECT_EQ(Cell(sched, "team-a-cq").parked_milli, 0);
  EXPECT_EQ(Cell(sched, "team-b-cq").on_parked_milli, 0);
  // Parking all of it still works after.
  ASSERT_TRUE(sched.ParkWorkload("team-a/ray").ok());
  EXPECT_EQ(Cell(sched, "team-a-cq").parked_milli, 8000);
  EXPECT_TRUE(sched.AdmissionOf("team-a/ray")->pod_set_assignments.at(0).placements.empty());
}

TEST(SchedulerParkingTest, BorrowersGoWhenTheParkedQuotaGoes) {
  auto s = testing::BuildScheduler(kLending + Wl("team-a/a1").Gpus(8).Admitted("team-a-cq", "h100") +
                                   Wl("team-b/spot").Created(2).Gpus(8).Preemptible());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  Scheduler& sched = **s;
  ASSERT_TRUE(sched.ParkWorkload("team-a/a1").ok());
  sched.RunUntilQuiescent();
  ASSERT_TRUE(sched.AdmissionOf("team-b/spot")->on_parked_capacity);
  // A rebuild keeps it on parked capacity.
  core::Config cfg;
  ASSERT_TRUE(core::ParseManifests(kLending, "base.yaml", &cfg).ok());
  for (const char* k : {"team-a/a1", "team-b/spot"}) {
    cfg.workloads.push_back(Parse(k == std::string("team-a/a1")
                                      ? Wl(k).Gpus(8).Yaml()
                                      : Wl(k).Created(2).Gpus(8).Preemptible().Yaml()));
    cfg.workloads.back().admission = sched.AdmissionOf(k);
  }
  ASSERT_TRUE(core::ValidateConfig(&cfg).ok());
  auto again = Scheduler::Create(cfg);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ((*again)->AdmissionOf("team-b/spot"), sched.AdmissionOf("team-b/spot"));
  EXPECT_EQ(Cell(**again, "team-b-cq").on_parked_milli, 8000);
  // Only a preemptible workload may say it runs there.
  cfg.workloads.back().preemptible = false;
  EXPECT_FALSE(Scheduler::Create(cfg).ok());

  // a1 finishes while parked: its quota is free, the borrower is evicted
  // (by nobody) and admitted again, now on quota team-b borrows.
  ASSERT_TRUE(sched.RemoveWorkload("team-a/a1").ok());
  CycleResult r = sched.RunCycle();
  ASSERT_EQ(r.preempted.size(), 1u);
  EXPECT_EQ(r.preempted[0].workload, "team-b/spot");
  EXPECT_EQ(r.preempted[0].preemptor, "");
  sched.RunUntilQuiescent();
  ASSERT_TRUE(sched.AdmissionOf("team-b/spot").has_value());
  EXPECT_FALSE(sched.AdmissionOf("team-b/spot")->on_parked_capacity);
  EXPECT_EQ(Cell(sched, "team-b-cq").usage_milli, 8000);
}

// Quotas add up to more than the fleet (team-a and team-b hold 8 each of
// 8 GPUs): a workload with quota finds the devices held by a borrower of
// parked capacity and takes them back before preempting anyone.
TEST(SchedulerParkingTest, AWorkloadWithQuotaTakesDevicesBackFromBorrowers) {
  auto s = testing::BuildScheduler(kH100 + GpuNodes("h", 1, "H100-80GB") +
                                   GpuCq("team-a-cq", "", "h100", "nominalQuota: 8") +
                                   GpuCq("team-b-cq", "", "h100", "nominalQuota: 8") +
                                   Wl("team-a/a1").Gpus(8).Admitted("team-a-cq", "h100") +
                                   Wl("team-a/spot").Created(1).Gpus(8).Preemptible());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  Scheduler& sched = **s;
  ASSERT_TRUE(sched.ParkWorkload("team-a/a1").ok());
  sched.RunUntilQuiescent();
  ASSERT_TRUE(sched.AdmissionOf("team-a/spot")->on_parked_capacity);
  ASSERT_TRUE(sched.AddWorkload(Parse(Wl("team-b/b1").Created(2).Gpus(8))).ok());
  CycleResult r = sched.RunCycle();
  EXPECT_EQ(r.admitted, std::vector<std::string>{"team-b/b1"});
  ASSERT_EQ(r.preempted.size(), 1u);
  EXPECT_EQ(r.preempted[0].workload, "team-a/spot");
  EXPECT_EQ(r.preempted[0].reason, PreemptionReason::kParkedCapacityReclaim);
  // a1's resume waits now: its quota is kept, the devices are team-b's.
  EXPECT_EQ(sched.ResumeWorkload("team-a/a1").code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(sched.IsParked("team-a/a1"));
}

// Random sequences of submissions (a third of them preemptible, half
// with a second pod set "workers"), removals, parks (in part, the workers
// only, for two thirds of those with workers), resumes, node failures and
// recoveries, and cycles on two nodes
// shared by three ClusterQueues of one cohort (borrowing and preemption
// on): after every step no device is held twice, a parked workload holds
// quota and no device of its parked pod sets, all those of the others,
// every other admitted one all its devices, usage is
// what the admissions (parked ones included, those on parked capacity not)
// add up to, only preemptible workloads run on parked capacity and never
// more than is parked, a resume never leaves its workload unadmitted, a
// node failure leaves wholly parked workloads parked, and a rebuild from the
// admissions (parked and parked-capacity flags included) gives back the
// same.
TEST(SchedulerParkingTest, RandomSequencesKeepTheInvariants) {
  const std::string preempt =
      "  preemption: {withinClusterQueue: LowerPriority, reclaimWithinCohort: Any}\n";
  const std::string base = kH100 + GpuNodes("h", 2, "H100-80GB") +
                           GpuCq("team-0-cq", "all", "h100", "nominalQuota: 6", preempt) +
                           GpuCq("team-1-cq", "all", "h100", "nominalQuota: 6", preempt) +
                           GpuCq("team-2-cq", "all", "h100", "nominalQuota: 4", preempt);
  int lent_steps = 0;  // Steps that ended with a workload on parked capacity.
  int node_changes = 0;
  int part_parks = 0;  // Parks of the workers only.
  for (uint32_t seed = 1; seed <= 30; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    auto pick = [&](int n) { return int(rng() % uint32_t(n)); };
    auto s = testing::BuildScheduler(base);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    Scheduler& sched = **s;
    std::map<std::string, int> gpus;  // Live workloads: key -> GPUs per pod x pods.
    std::map<std::string, std::map<std::string, int>> per_pod;  // key -> pod set -> GPUs.
    std::set<std::string> preemptible;
    core::Config nodes_cfg;
    ASSERT_TRUE(core::ParseManifests(base, "base.yaml", &nodes_cfg).ok());
    std::vector<core::Node> nodes = nodes_cfg.nodes;
    ASSERT_EQ(nodes.size(), 2u);
    core::Config all;  // Every workload added, for the rebuild.
    for (int step = 0; step < 120; ++step) {
      const int op = pick(10);
      std::vector<std::string> live;
      for (const auto& [k, g] : gpus) live.push_back(k);
      if (op < 3 || live.empty()) {
        const int q = pick(3), n = 1 + pick(4), pods = 1 + pick(2);
        const std::string key = "team-" + std::to_string(q) + "/w" + std::to_string(step);
        Wl spec = Wl(key).Priority(pick(3) * 10).Created(step).Count(pods).Gpus(n);
        per_pod[key]["main"] = n;
        int worker_gpus = 0;
        if (pick(2) == 0) {
          const int wn = 1 + pick(2), wp = 1 + pick(2);
          spec.PodSet("workers").Count(wp).Gpus(wn);
          per_pod[key]["workers"] = wn;
          worker_gpus = wn * wp;
        }
        if (pick(3) == 0) {
          spec.Preemptible();
          preemptible.insert(key);
        }
        core::Config c;
        ASSERT_TRUE(core::ParseManifests(spec.Yaml(), "w.yaml", &c).ok());
        ASSERT_TRUE(sched.AddWorkload(c.workloads.at(0)).ok());
        all.workloads.push_back(c.workloads[0]);
        gpus[key] = n * pods + worker_gpus;

      } else if (op < 4) {
        const std::string k = live[size_t(pick(int(live.size())))];
        ASSERT_TRUE(sched.RemoveWorkload(k).ok());
        gpus.erase(k);
      } else if (op < 6) {
        const std::string k = live[size_t(pick(int(live.size())))];
        const bool admitted = sched.AdmissionOf(k).has_value() && !sched.IsParked(k) &&
                              !sched.AdmissionOf(k)->on_parked_capacity;
        const bool in_part = per_pod[k].count("workers") && pick(3) != 0;
        const bool ok = sched.ParkWorkload(k, in_part ? std::vector<std::string>{"workers"}
                                                      : std::vector<std::string>{})
                            .ok();
        EXPECT_EQ(ok, admitted) << k;
        part_parks += ok && in_part;
      } else if (op == 8 && pick(3) == 0) {
        // A node fails (what runs there is evicted first, as the server
        // does) or comes back.
        core::Node& n = nodes[size_t(pick(2))];
        std::vector<std::string> parked_now;  // Wholly: no pod on any node.
        for (const std::string& k : live) {
          if (!sched.IsParked(k)) continue;
          bool placed = false;
          const std::optional<core::Admission> adm = sched.AdmissionOf(k);
          for (const auto& psa : adm->pod_set_assignments) {
            placed = placed || !psa.placements.empty();
          }
          if (!placed) parked_now.push_back(k);
        }
        if (!n.unschedulable) {
          for (const AdmittedWorkload& a : sched.Admitted()) {
            bool here = false;
            for (const auto& psa : a.admission.pod_set_assignments) {
              for (const auto& pl : psa.placements) here = here || pl.node == n.name;
            }
            if (here) {
              ASSERT_TRUE(sched.EvictWorkload(a.workload).ok()) << a.workload;
            }
          }
        }
        n.unschedulable = !n.unschedulable;
        ASSERT_TRUE(sched.UpdateNode(n).ok()) << n.name;
        ++node_changes;
        for (const std::string& k : parked_now) EXPECT_TRUE(sched.IsParked(k)) << k;
      } else if (op < 8) {
        const std::string k = live[size_t(pick(int(live.size())))];
        const bool parked = sched.IsParked(k);
        Status r = sched.ResumeWorkload(k);
        if (!parked) {
          EXPECT_FALSE(r.ok()) << k;
        } else {
          // Resumed or not, a parked workload keeps its admission.
          EXPECT_TRUE(sched.AdmissionOf(k).has_value()) << k;
        }
        if (r.ok()) {
          EXPECT_FALSE(sched.IsParked(k)) << k;
        }
      } else {
        sched.RunCycle();
      }
      // The invariants.
      std::set<std::string> held;
      std::map<std::string, int64_t> usage;
      int64_t lent = 0, parked = 0;
      for (const AdmittedWorkload& a : sched.Admitted()) {
        // On parked capacity: preemptible, and outside the quota.
        if (a.admission.on_parked_capacity) {
          EXPECT_TRUE(preemptible.count(a.workload)) << a.workload;
          lent += 1000 * gpus.at(a.workload);
        } else {
          usage[a.admission.cluster_queue] += 1000 * gpus.at(a.workload);
        }
        EXPECT_EQ(a.admission.parked, sched.IsParked(a.workload));
        int devices = 0, placed_gpus = 0, parked_here = 0;
        for (const core::PodSetAssignment& psa : a.admission.pod_set_assignments) {
          const int want = psa.count * per_pod.at(a.workload).at(psa.name);
          if (psa.placements.empty()) {
            // Only a parked workload has a pod set without devices.
            EXPECT_TRUE(a.admission.parked) << a.workload << " " << psa.name;
            parked_here += want;
          } else {
            EXPECT_EQ(int(psa.placements.size()), psa.count) << a.workload << " " << psa.name;
            placed_gpus += want;
          }
          for (const core::PodPlacement& pl : psa.placements) {
            for (const std::string& g : pl.gpus) {
              ++devices;
              EXPECT_TRUE(held.insert(g).second) << g << " held twice, step " << step;
            }
          }
        }
        EXPECT_EQ(devices, placed_gpus) << a.workload << ", step " << step;
        if (a.admission.parked) {
          EXPECT_GT(parked_here, 0) << a.workload;
          parked += 1000 * parked_here;
        }
      }
      int64_t lent_cells = 0, parked_cells = 0;
      for (const char* q : {"team-0-cq", "team-1-cq", "team-2-cq"}) {
        EXPECT_EQ(Usage(sched, q), usage[q]) << q << ", step " << step;
        lent_cells += Cell(sched, q).on_parked_milli;
        parked_cells += Cell(sched, q).parked_milli;
      }
      // What runs on parked capacity never exceeds what is parked.
      EXPECT_EQ(lent_cells, lent) << "step " << step;
      EXPECT_EQ(parked_cells, parked) << "step " << step;
      EXPECT_LE(lent, parked) << "step " << step;
      if (lent > 0) ++lent_steps;
      EXPECT_LE(held.size(), 16u);
      if (HasFailure()) return;
    }
    // A rebuild from these admissions gives back the same.
    core::Config cfg;
    ASSERT_TRUE(core::ParseManifests(base, "base.yaml", &cfg).ok());
    cfg.nodes = nodes;  // As they are now (one may be down).
    for (const core::Workload& w : all.workloads) {
      if (!gpus.count(w.Key())) continue;
      cfg.workloads.push_back(w);
      if (auto adm = sched.AdmissionOf(w.Key())) cfg.workloads.back().admission = *adm;
    }
    ASSERT_TRUE(core::ValidateConfig(&cfg).ok());
    auto again = Scheduler::Create(cfg);
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    for (const auto& [k, g] : gpus) {
      EXPECT_EQ((*again)->IsParked(k), sched.IsParked(k)) << k;
      EXPECT_EQ((*again)->AdmissionOf(k), sched.AdmissionOf(k)) << k;
    }
  }
  EXPECT_GT(lent_steps, 100);  // The sequences do lend...
  EXPECT_GT(node_changes, 50);  // ...and lose nodes...
  EXPECT_GT(part_parks, 20);    // ...and park workers only.
}

}  // namespace
}  // namespace allot::sched
