#include "cli/dry_run.h"

#include <boost/json.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <ostream>

#include "core/generate_name.h"
#include "core/manifest.h"
#include "core/model.h"
#include "core/status.h"
#include "sched/scheduler.h"

namespace allot::cli {
namespace {

namespace json = boost::json;

// Far more cycles than any manifest needs: each productive cycle admits or
// evicts something, so hitting this means the scheduler is cycling.
constexpr int32_t kMaxCycles = 100000;

json::object PlacementJson(const core::PodPlacement& p) {
  json::object o;
  o["node"] = p.node;
  json::array gpus;
  for (const std::string& uuid : p.gpus) gpus.emplace_back(uuid);
  o["gpus"] = std::move(gpus);
  return o;
}

json::object PodSetJson(const core::PodSetAssignment& psa) {
  json::object o;
  o["name"] = psa.name;
  o["count"] = psa.count;
  json::object flavors;  // std::map order: sorted by resource name.
  for (const auto& [resource, flavor] : psa.flavors) flavors[resource] = flavor;
  o["flavors"] = std::move(flavors);
  json::array placements;
  for (const core::PodPlacement& p : psa.placements) {
    placements.emplace_back(PlacementJson(p));
  }
  o["placements"] = std::move(placements);
  return o;
}

json::object AdmittedJson(const sched::AdmittedWorkload& a) {
  json::object o;
  o["workload"] = a.workload;
  o["clusterQueue"] = a.admission.cluster_queue;
  json::array pod_sets;
  for (const core::PodSetAssignment& psa : a.admission.pod_set_assignments) {
    pod_sets.emplace_back(PodSetJson(psa));
  }
  o["podSets"] = std::move(pod_sets);
  return o;
}

json::object PreemptedJson(const sched::PreemptionEvent& e) {
  json::object o;
  o["workload"] = e.workload;
  o["preemptor"] = e.preemptor;
  o["reason"] = sched::ToString(e.reason);
  return o;
}

json::object PendingJson(const sched::PendingWorkload& p) {
  json::object o;
  o["workload"] = p.workload;
  o["clusterQueue"] = p.cluster_queue;
  o["position"] = p.position;
  o["reason"] = p.reason;
  return o;
}

// Workloads with spec.active: false, held out of the scheduler (as Kueue
// holds them), with their ClusterQueue; `evicted` when they came admitted.
struct Inactive {
  sched::PendingWorkload pending;
  bool evicted = false;
};

// Takes the inactive workloads out of `config`, sorted by key.
std::vector<Inactive> TakeInactive(core::Config* config) {
  std::map<std::string, std::string> cq_of;  // "ns/lq" -> ClusterQueue
  for (const core::LocalQueue& q : config->local_queues) {
    cq_of[q.ns + "/" + q.name] = q.cluster_queue;
  }
  std::vector<Inactive> out;
  std::vector<core::Workload> active;
  for (core::Workload& w : config->workloads) {
    if (w.active) {
      active.push_back(std::move(w));
      continue;
    }
    Inactive& i = out.emplace_back();
    i.pending.workload = w.Key();
    auto cq = cq_of.find(w.ns + "/" + w.queue_name);
    i.pending.cluster_queue = cq == cq_of.end() ? "" : cq->second;
    i.pending.reason = "inactive (spec.active is false): held out of its queue";
    i.evicted = w.admission.has_value();
  }
  config->workloads = std::move(active);
  std::sort(out.begin(), out.end(), [](const Inactive& a, const Inactive& b) {
    return a.pending.workload < b.pending.workload;
  });
  return out;
}

// Builds the output document. boost::json::object keeps insertion order, so
// keys come out exactly in the documented order.
json::value ResultJson(const sched::Scheduler& scheduler,
                       const std::vector<Inactive>& inactive) {
  json::array admitted;
  for (const sched::AdmittedWorkload& a : scheduler.Admitted()) {
    admitted.emplace_back(AdmittedJson(a));
  }
  json::array preempted;
  // Evicted before scheduling: Kueue's reason for a deactivated workload.
  for (const Inactive& i : inactive) {
    if (!i.evicted) continue;
    json::object o;
    o["workload"] = i.pending.workload;
    o["preemptor"] = "";
    o["reason"] = "InactiveWorkload";
    preempted.emplace_back(std::move(o));
  }
  for (const sched::PreemptionEvent& e : scheduler.Preemptions()) {
    preempted.emplace_back(PreemptedJson(e));
  }
  // Pending() is sorted by workload key; the inactive ones merge in.
  std::vector<sched::PendingWorkload> pending = scheduler.Pending();
  for (const Inactive& i : inactive) pending.push_back(i.pending);
  std::stable_sort(pending.begin(), pending.end(),
                   [](const auto& a, const auto& b) { return a.workload < b.workload; });
  json::array pending_json;
  for (const sched::PendingWorkload& p : pending) {
    pending_json.emplace_back(PendingJson(p));
  }
  json::object root;
  root["admitted"] = std::move(admitted);
  root["preempted"] = std::move(preempted);
  root["pending"] = std::move(pending_json);
  return root;
}

int Fail(const Status& status, std::ostream& err) {
  err << "allot: " << status.message() << "\n";
  return kExitUsage;
}

}  // namespace

int RunDryRun(const std::vector<std::string>& files, std::ostream& out,
              std::ostream& err) {
  if (files.empty()) {
    return Fail(Status::InvalidArgument("no input files (use -f FILE)"), err);
  }
  core::Config config;
  for (const std::string& file : files) {
    Status s = core::LoadManifestFile(file, &config);
    if (!s.ok()) return Fail(s, err);
  }
  // Names for metadata.generateName, from a fixed seed: the same files give
  // the same output.
  if (Status s = core::GenerateNames(&config, nullptr, core::SeededRandom(0));
      !s.ok()) {
    return Fail(s, err);
  }
  if (Status s = core::ValidateConfig(&config); !s.ok()) return Fail(s, err);
  const std::vector<Inactive> inactive = TakeInactive(&config);

  Result<std::unique_ptr<sched::Scheduler>> created =
      sched::Scheduler::Create(config);
  if (!created.ok()) return Fail(created.status(), err);
  sched::Scheduler& scheduler = **created;

  int32_t cycles = scheduler.RunUntilQuiescent(kMaxCycles);
  if (cycles >= kMaxCycles) {
    err << "allot: warning: the scheduler did not settle after " << kMaxCycles
        << " cycles; the result below is where it stopped\n";
  }
  out << json::serialize(ResultJson(scheduler, inactive)) << "\n";
  out.flush();
  return kExitOk;
}

}  // namespace allot::cli
