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

int64_t Usage(const Scheduler& s, const std::string& cq) {
  return s.GetClusterQueueStatus(cq)->quota.at(0).usage_milli;
}

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

// Random sequences of submissions, removals, parks, resumes and cycles on
// two nodes shared by three ClusterQueues of one cohort (borrowing and
// preemption on): after every step no device is held twice, a parked
// workload holds quota and no device, every other admitted one all its
// devices, usage is what the admissions (parked ones included) add up to,
// a resume never leaves its workload unadmitted, and a rebuild from the
// admissions (parked flags included) gives back the same.
TEST(SchedulerParkingTest, RandomSequencesKeepTheInvariants) {
  const std::string preempt =
      "  preemption: {withinClusterQueue: LowerPriority, reclaimWithinCohort: Any}\n";
  const std::string base = kH100 + GpuNodes("h", 2, "H100-80GB") +
                           GpuCq("team-0-cq", "all", "h100", "nominalQuota: 6", preempt) +
                           GpuCq("team-1-cq", "all", "h100", "nominalQuota: 6", preempt) +
                           GpuCq("team-2-cq", "all", "h100", "nominalQuota: 4", preempt);
  for (uint32_t seed = 1; seed <= 30; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    auto pick = [&](int n) { return int(rng() % uint32_t(n)); };
    auto s = testing::BuildScheduler(base);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    Scheduler& sched = **s;
    std::map<std::string, int> gpus;  // Live workloads: key -> GPUs per pod x pods.
    core::Config all;  // Every workload added, for the rebuild.
    for (int step = 0; step < 120; ++step) {
      const int op = pick(10);
      std::vector<std::string> live;
      for (const auto& [k, g] : gpus) live.push_back(k);
      if (op < 3 || live.empty()) {
        const int q = pick(3), n = 1 + pick(4), pods = 1 + pick(2);
        const std::string key = "team-" + std::to_string(q) + "/w" + std::to_string(step);
        core::Config c;
        ASSERT_TRUE(core::ParseManifests(Wl(key)
                                             .Priority(pick(3) * 10)
                                             .Created(step)
                                             .Count(pods)
                                             .Gpus(n)
                                             .Yaml(),
                                         "w.yaml", &c)
                        .ok());
        ASSERT_TRUE(sched.AddWorkload(c.workloads.at(0)).ok());
        all.workloads.push_back(c.workloads[0]);
        gpus[key] = n * pods;

      } else if (op < 4) {
        const std::string k = live[size_t(pick(int(live.size())))];
        ASSERT_TRUE(sched.RemoveWorkload(k).ok());
        gpus.erase(k);
      } else if (op < 6) {
        const std::string k = live[size_t(pick(int(live.size())))];
        const bool admitted = sched.AdmissionOf(k).has_value() && !sched.IsParked(k);
        EXPECT_EQ(sched.ParkWorkload(k).ok(), admitted) << k;
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
      for (const AdmittedWorkload& a : sched.Admitted()) {
        usage[a.admission.cluster_queue] += 1000 * gpus.at(a.workload);
        EXPECT_EQ(a.admission.parked, sched.IsParked(a.workload));
        size_t pods = 0, devices = 0;
        for (const core::PodSetAssignment& psa : a.admission.pod_set_assignments) {
          for (const core::PodPlacement& pl : psa.placements) {
            ++pods;
            for (const std::string& g : pl.gpus) {
              ++devices;
              EXPECT_TRUE(held.insert(g).second) << g << " held twice, step " << step;
            }
          }
        }
        if (a.admission.parked) {
          EXPECT_EQ(pods, 0u) << a.workload;
        } else {
          EXPECT_EQ(int(devices), gpus.at(a.workload)) << a.workload << ", step " << step;
        }
      }
      for (const char* q : {"team-0-cq", "team-1-cq", "team-2-cq"}) {
        EXPECT_EQ(Usage(sched, q), usage[q]) << q << ", step " << step;
      }
      EXPECT_LE(held.size(), 16u);
      if (HasFailure()) return;
    }
    // A rebuild from these admissions gives back the same.
    core::Config cfg;
    ASSERT_TRUE(core::ParseManifests(base, "base.yaml", &cfg).ok());
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
}

}  // namespace
}  // namespace allot::sched
