// `allot_bench nodes`: the cost of one node change at quiescence, made
// incrementally (Scheduler::UpdateNode, RemoveNode) and by a rebuild
// (Scheduler::Create from the same nodes and workloads, admitted ones with
// their placements), on the generated cluster (cluster_gen.h).
//
// Per trial: UpdateNode adds a label to a random node (its placements are
// moved over and checked again, set-aside workloads requeued); RemoveNode
// takes out a random node after its workloads were evicted (untimed), and
// the node is added back (untimed). Medians and p99 of the timed calls,
// in wall time and in the thread's CPU time (which a busy machine's other
// processes do not inflate); and of the first RunCycle after each change,
// which pays for whatever the change left to do lazily (the set-aside
// workloads' requeue) and tries the heads again. The cycles back to
// quiescence are untimed; their decisions are summed in the last line
// (identical before and after a change to how node changes are made).
#include <time.h>

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

double CpuUs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e6 + double(ts.tv_nsec) / 1e3;
}

// One timed call: wall and CPU microseconds.
struct Timed {
  std::vector<double> wall, cpu;
  template <typename F>
  auto Run(F f) {
    const double c0 = CpuUs();
    const auto t0 = NcClock::now();
    auto r = f();
    const auto t1 = NcClock::now();
    cpu.push_back(CpuUs() - c0);
    wall.push_back(Us(t0, t1));
    return r;
  }
};

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
  Timed update, remove, update_cycle, remove_cycle;
  // Cycles run after the changes (all of them, timed or not).
  int64_t cycles = 0;
  auto quiesce = [&](Timed* first) {
    first->Run([&] { return s->RunCycle(); });
    cycles += 1 + s->RunUntilQuiescent();
  };
  for (int i = 0; i < trials; ++i) {
    core::Node& n = nodes[pick()];
    n.labels["bench.allot.dev/trial"] = std::to_string(i);
    Status st = update.Run([&] { return s->UpdateNode(n); });
    if (!st.ok()) {
      std::fprintf(stderr, "UpdateNode: %s\n", st.message().c_str());
      return 1;
    }
    quiesce(&update_cycle);  // What the requeue retries.
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
    Status st = remove.Run([&] { return s->RemoveNode(n.name); });
    if (!st.ok()) {
      std::fprintf(stderr, "RemoveNode: %s\n", st.message().c_str());
      return 1;
    }
    quiesce(&remove_cycle);
    if (Status back = s->AddNode(n); !back.ok()) {
      std::fprintf(stderr, "AddNode: %s\n", back.message().c_str());
      return 1;
    }
    s->RunUntilQuiescent();
  }
  auto line = [&](const char* what, const Timed& t) {
    std::printf("%s: %d trials: median %.1f us, p99 %.1f us (CPU: median %.1f us, p99 %.1f us)\n",
                what, trials, Pct(t.wall, 50), Pct(t.wall, 99), Pct(t.cpu, 50),
                Pct(t.cpu, 99));
  };
  std::printf("rebuild (Create with placements) median %.1f ms (3 reps)\n",
              Pct(rebuild_ms, 50));
  line("UpdateNode", update);
  line("RemoveNode", remove);
  line("first RunCycle after UpdateNode", update_cycle);
  line("first RunCycle after RemoveNode", remove_cycle);
  // The decisions, in one line: the admitted set with its placements
  // (FNV-1a over keys, nodes and devices) and the counts.
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](const std::string& x) {
    for (unsigned char c : x) h = (h ^ c) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull;
  };
  for (const auto& a : s->Admitted()) {
    mix(a.workload);
    for (const auto& psa : a.admission.pod_set_assignments) {
      for (const auto& pp : psa.placements) {
        mix(pp.node);
        for (const auto& g : pp.gpus) mix(g);
      }
    }
  }
  std::printf(
      "decisions after the changes: %lld cycles, %zu preemptions in all; "
      "admitted %zu, pending %zu, placements hash %016llx\n",
      (long long)cycles, s->Preemptions().size(), s->AdmittedCount(),
      s->PendingCount(), (unsigned long long)h);
  return 0;
}

}  // namespace allot::bench
