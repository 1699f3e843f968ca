// `allot_bench parking`: parking and resuming at the scheduler-bench
// scale (cluster_gen.h), in the scheduling core alone (docs/parking.md).
//
// Per trial, on a fresh scheduler at quiescence: park 1,000 admitted
// workloads at once (every k-th of the admitted, by key), timed as one
// batch and per call; the cycles to quiescence after it (pending work
// with quota of its own may take the freed devices), timed; then resume
// the 1,000, each timed: a resume that finds no free device is refused
// (it would wait), and is counted. Medians over the trials; the p50 and
// p99 of one call over all of them. Twice per trial: as generated, and
// with every 4th workload preemptible, so that pending ones run on the
// parked capacity after the park and each resume evicts them first.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "cluster_gen.h"
#include "sched/scheduler.h"

namespace allot::bench {

namespace {

using PkClock = std::chrono::steady_clock;

double PkUs(PkClock::time_point a, PkClock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

double PkPct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(p * double(v.size())))];
}

}  // namespace

namespace {

// One variant's figures over the trials.
struct PkFigures {
  std::vector<double> batch_park_ms, cycles_ms, batch_resume_ms, park_us, resume_us;
  std::vector<double> waiting, lent, reclaimed;
  size_t parked_n = 0, admitted_n = 0, pending_n = 0;
};

// One trial on a fresh scheduler built from `config`; false on an error.
bool PkTrial(const core::Config& config, PkFigures* f) {
  auto created = sched::Scheduler::Create(config);
  if (!created.ok()) {
    std::fprintf(stderr, "Create failed: %s\n", created.status().message().c_str());
    return false;
  }
  std::unique_ptr<sched::Scheduler> s = std::move(created).value();
  s->RunUntilQuiescent();
  f->admitted_n = s->AdmittedCount();
  f->pending_n = s->PendingCount();
  std::vector<std::string> keys;
  for (const auto& a : s->Admitted()) keys.push_back(a.workload);
  const size_t want = std::min<size_t>(1000, keys.size());
  const size_t step = std::max<size_t>(1, keys.size() / std::max<size_t>(1, want));
  std::vector<std::string> chosen;
  for (size_t i = 0; i < keys.size() && chosen.size() < want; i += step) chosen.push_back(keys[i]);
  f->parked_n = chosen.size();

  auto t0 = PkClock::now();
  for (const std::string& k : chosen) {
    auto c0 = PkClock::now();
    Status st = s->ParkWorkload(k);
    f->park_us.push_back(PkUs(c0, PkClock::now()));
    if (!st.ok()) {
      std::fprintf(stderr, "park %s: %s\n", k.c_str(), st.message().c_str());
      return false;
    }
  }
  auto t1 = PkClock::now();
  f->batch_park_ms.push_back(PkUs(t0, t1) / 1000);
  s->RunUntilQuiescent();
  auto t2 = PkClock::now();
  f->cycles_ms.push_back(PkUs(t1, t2) / 1000);
  size_t lent = 0;
  for (const auto& a : s->Admitted()) lent += a.admission.on_parked_capacity;
  f->lent.push_back(double(lent));
  const size_t events_before = s->Preemptions().size();
  size_t refused = 0;
  auto t3 = PkClock::now();
  for (const std::string& k : chosen) {
    auto c0 = PkClock::now();
    Status st = s->ResumeWorkload(k);
    f->resume_us.push_back(PkUs(c0, PkClock::now()));
    refused += !st.ok();
  }
  f->batch_resume_ms.push_back(PkUs(t3, PkClock::now()) / 1000);
  f->waiting.push_back(double(refused));
  f->reclaimed.push_back(double(s->Preemptions().size() - events_before));
  return true;
}

void PkReport(const char* title, const PkFigures& f) {
  std::printf("%s:\n", title);
  std::printf("  park all at once: %.2f ms (median); one park p50 %.1f us, p99 %.1f us\n",
              PkPct(f.batch_park_ms, 0.5), PkPct(f.park_us, 0.5), PkPct(f.park_us, 0.99));
  std::printf("  cycles to quiescence after: %.2f ms (median); then on parked capacity: %.0f "
              "(median)\n",
              PkPct(f.cycles_ms, 0.5), PkPct(f.lent, 0.5));
  std::printf("  resume all: %.2f ms (median); one resume p50 %.1f us, p99 %.1f us; borrowers "
              "evicted: %.0f; refused (no free device, would wait): %.0f (medians)\n",
              PkPct(f.batch_resume_ms, 0.5), PkPct(f.resume_us, 0.5), PkPct(f.resume_us, 0.99),
              PkPct(f.reclaimed, 0.5), PkPct(f.waiting, 0.5));
}

}  // namespace

int ParkingMode(double scale, int trials, uint64_t seed) {
  ClusterSpec spec;
  spec.scale = scale;
  spec.seed = seed;
  GeneratedCluster gen = GenerateCluster(spec);
  // The same cluster with every 4th workload preemptible: after the park,
  // the pending ones among them run on the parked capacity; every resume
  // then evicts what it needs of them.
  core::Config lending = gen.config;
  for (size_t i = 0; i < lending.workloads.size(); i += 4) lending.workloads[i].preemptible = true;
  PkFigures plain, lend;
  for (int t = 0; t < std::max(1, trials); ++t) {
    if (!PkTrial(gen.config, &plain) || !PkTrial(lending, &lend)) return 1;
  }
  std::printf("nodes %zu, admitted %zu, pending %zu at quiescence; %zu parked per trial, %d "
              "trial(s)\n",
              gen.config.nodes.size(), plain.admitted_n, plain.pending_n, plain.parked_n,
              std::max(1, trials));
  PkReport("no preemptible workload", plain);
  PkReport("every 4th workload preemptible (lending)", lend);
  return 0;
}

}  // namespace allot::bench
