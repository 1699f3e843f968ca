// `allot_bench nodes`: the cost of one node change at quiescence, made
// incrementally (Scheduler::UpdateNode, RemoveNode) and by a rebuild
// (Scheduler::Create from the same nodes and workloads, admitted ones with
// their placements), on the generated cluster (cluster_gen.h).
//
// Per trial: UpdateNode adds a label to a random node (its placements are
// moved over and checked again, set-aside workloads requeued); RemoveNode
// takes out a random node after its workloads were evicted (untimed), and
// the node is added back (untimed). Medians and p99 of the timed calls.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "cluster_gen.h"
#include "sched/scheduler.h"

namespace allot::bench {

namespace {

using NcClock = std::chrono::steady_clock;

double Us(NcClock::time_point a, NcClock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

double Pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = size_t(p / 100.0 * double(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

}  // namespace

int NodeChangesMode(double scale, int trials, uint64_t seed) {
  ClusterSpec spec;
  spec.scale = scale;
  spec.seed = seed;
  GeneratedCluster gen = GenerateCluster(spec);
  auto created = sched::Scheduler::Create(gen.config);
  if (!created.ok()) {
    std::fprintf(stderr, "Create failed: %s\n",
                 created.status().message().c_str());
    return 1;
  }
  std::unique_ptr<sched::Scheduler> s = std::move(created).value();
  s->RunUntilQuiescent();
  std::printf("nodes %zu, admitted %zu, pending %zu at quiescence\n",
              gen.config.nodes.size(), s->AdmittedCount(), s->PendingCount());

  // A rebuild at the same state: Create from the nodes and the workloads,
  // admitted ones with their placements.
  core::Config cfg = gen.config;
  {
    std::map<std::string, core::Admission> adm;
    for (auto& a : s->Admitted()) adm[a.workload] = std::move(a.admission);
    for (auto& w : cfg.workloads) {
      auto it = adm.find(w.Key());
      if (it != adm.end()) w.admission = it->second;
    }
  }
  std::vector<double> rebuild_ms;
  for (int r = 0; r < 3; ++r) {
    auto t0 = NcClock::now();
    auto again = sched::Scheduler::Create(cfg);
    auto t1 = NcClock::now();
    if (!again.ok()) {
      std::fprintf(stderr, "rebuild failed: %s\n",
                   again.status().message().c_str());
      return 1;
    }
    rebuild_ms.push_back(Us(t0, t1) / 1000);
  }
  cfg = core::Config{};

  std::mt19937_64 rng(seed + 99);
  std::vector<core::Node>& nodes = gen.config.nodes;
  auto pick = [&]() {
    return size_t(std::uniform_int_distribution<size_t>(0, nodes.size() - 1)(rng));
  };
  std::vector<double> update_us, remove_us;
  for (int i = 0; i < trials; ++i) {
    core::Node& n = nodes[pick()];
    n.labels["bench.allot.dev/trial"] = std::to_string(i);
    auto t0 = NcClock::now();
    Status st = s->UpdateNode(n);
    auto t1 = NcClock::now();
    if (!st.ok()) {
      std::fprintf(stderr, "UpdateNode: %s\n", st.message().c_str());
      return 1;
    }
    update_us.push_back(Us(t0, t1));
    s->RunUntilQuiescent();  // Untimed: what the requeue retries.
  }
  for (int i = 0; i < trials; ++i) {
    size_t k = pick();
    const core::Node n = nodes[k];
    for (const auto& a : s->Admitted()) {
      for (const auto& psa : a.admission.pod_set_assignments) {
        bool here = std::any_of(psa.placements.begin(), psa.placements.end(),
                                [&](const auto& p) { return p.node == n.name; });
        if (here) {
          (void)s->EvictWorkload(a.workload);
          break;
        }
      }
    }
    auto t0 = NcClock::now();
    Status st = s->RemoveNode(n.name);
    auto t1 = NcClock::now();
    if (!st.ok()) {
      std::fprintf(stderr, "RemoveNode: %s\n", st.message().c_str());
      return 1;
    }
    remove_us.push_back(Us(t0, t1));
    if (Status back = s->AddNode(n); !back.ok()) {
      std::fprintf(stderr, "AddNode: %s\n", back.message().c_str());
      return 1;
    }
    s->RunUntilQuiescent();
  }
  std::printf(
      "rebuild (Create with placements) median %.1f ms (3 reps)\n"
      "UpdateNode: %d trials: median %.1f us, p99 %.1f us\n"
      "RemoveNode: %d trials: median %.1f us, p99 %.1f us\n",
      Pct(rebuild_ms, 50), trials, Pct(update_us, 50), Pct(update_us, 99),
      trials, Pct(remove_us, 50), Pct(remove_us, 99));
  return 0;
}

}  // namespace allot::bench
