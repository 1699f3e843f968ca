// Scheduler benchmarks at cluster scale (see bench/cluster_gen.h and
// bench/RESULTS.md).
//
//   allot_bench quiescence [--scale 1.0] [--reps 3] [--seed 42] [--no-fork]
//   [--trace]
//       Per rep, in a fresh child process (so that peak RSS is per rep):
//       generate the cluster, Scheduler::Create, RunUntilQuiescent. Reports
//       the times, cycles, admitted / pending / preempted counts, admissions
//       per second (admitted / quiescence time) and peak RSS, then medians.
//       --trace runs RunCycle in a loop instead, and prints per-cycle stats.
//   allot_bench incremental [--scale 1.0] [--trials 200] [--seed 42]
//                           [--phase arrival|finish|both]
//       Reaches quiescence once, then times (a) AddWorkload(new) + RunCycle
//       and (b) RemoveWorkload(an admitted one) + RunCycle, each followed by
//       an untimed return to quiescence (whose time is reported too).
//   allot_bench all [--scale 1.0]
//       quiescence --reps 3, then incremental.
//   allot_bench [--benchmark_...]
//       Google Benchmark microbenchmarks at a small scale (0.05).
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "cluster_gen.h"
#include "sched/scheduler.h"

namespace allot::bench {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// CPU time of this process (user + system), seconds: less sensitive than
// wall time to other jobs sharing the machine's cores.
double ProcessCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

// Peak resident set of this process, MiB.
double PeakRssMiB() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_maxrss) / 1024.0;  // ru_maxrss is KiB on Linux.
}

// Current resident set, MiB.
double CurrentRssMiB() {
  std::ifstream f("/proc/self/statm");
  long pages_total = 0, pages_rss = 0;
  f >> pages_total >> pages_rss;
  return double(pages_rss) * double(sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t idx = size_t(std::ceil(p / 100.0 * double(v.size()))) - 1;
  return v[std::min(idx, v.size() - 1)];
}

struct Args {
  std::string mode;
  double scale = 1.0;
  int reps = 3;
  int trials = 200;
  uint64_t seed = 42;
  bool fork = true;
  bool trace = false;
  std::string phase = "both";  // incremental: arrival, finish or both.
};

bool ParseArgs(int argc, char** argv, Args* a) {
  a->mode = argv[1];
  for (int i = 2; i < argc; ++i) {
    std::string s = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", s.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (s == "--scale") {
      a->scale = std::atof(next());
    } else if (s == "--reps") {
      a->reps = std::atoi(next());
    } else if (s == "--trials") {
      a->trials = std::atoi(next());
    } else if (s == "--seed") {
      a->seed = std::strtoull(next(), nullptr, 10);
    } else if (s == "--no-fork") {
      a->fork = false;
    } else if (s == "--phase") {
      a->phase = next();
    } else if (s == "--trace") {
      a->trace = true;
    } else {
      std::fprintf(stderr, "unknown flag %s\n", s.c_str());
      return false;
    }
  }
  return a->scale > 0 && a->reps > 0 && a->trials > 0;
}

void PrintCluster(const ClusterSpec& spec, const GeneratedCluster& g) {
  std::printf(
      "cluster: scale %.3g seed %llu: %zu nodes, %lld GPUs in %zu flavors, %zu "
      "ClusterQueues "
      "in %d leaf cohorts (+%d parent cohorts), %zu workloads requesting %lld "
      "GPUs\n",
      spec.scale, (unsigned long long)spec.seed, g.config.nodes.size(),
      (long long)g.total_gpus, g.config.flavors.size(),
      g.config.cluster_queues.size(), g.leaf_cohorts, g.parent_cohorts,
      g.config.workloads.size(), (long long)g.requested_gpus);
}

// ---------------------------------------------------------------------------
// quiescence

struct RepResult {
  double gen_s = 0;
  double create_s = 0;
  double quiesce_s = 0;
  double quiesce_cpu_s = 0;
  int64_t cycles = 0;
  int64_t attempts = 0;  // Only with --trace.
  int64_t admitted = 0;
  int64_t admitted_gpus = 0;
  int64_t pending = 0;
  int64_t preemptions = 0;
  double rss_after_gen_mib = 0;
  double rss_after_create_mib = 0;
  double rss_after_quiesce_mib = 0;
  double peak_rss_mib = 0;
  int ok = 0;
};

RepResult RunQuiescenceRep(const Args& args, bool print_cluster) {
  RepResult r;
  ClusterSpec spec;
  spec.scale = args.scale;
  spec.seed = args.seed;
  auto t0 = Clock::now();
  auto gen = std::make_unique<GeneratedCluster>(GenerateCluster(spec));
  auto t1 = Clock::now();
  r.gen_s = Seconds(t0, t1);
  r.rss_after_gen_mib = CurrentRssMiB();
  if (print_cluster) {
    PrintCluster(spec, *gen);
    std::fflush(stdout);
  }
  auto created = sched::Scheduler::Create(gen->config);
  auto t2 = Clock::now();
  r.create_s = Seconds(t1, t2);
  if (!created.ok()) {
    std::fprintf(stderr, "Scheduler::Create failed: %s\n",
                 created.status().message().c_str());
    return r;
  }
  std::unique_ptr<sched::Scheduler> s = std::move(created).value();
  r.rss_after_create_mib = CurrentRssMiB();

  auto t3 = Clock::now();
  double cpu3 = ProcessCpuSeconds();
  if (args.trace) {
    std::printf("%6s %7s %8s %8s %10s %10s %10s %10s\n", "cycle", "heads",
                "admitted", "preempt", "ms", "pending", "cum_ms", "cum_adm");
    double cum_ms = 0;
    int64_t cum_adm = 0;
    for (;;) {
      auto c0 = Clock::now();
      sched::CycleResult cr = s->RunCycle();
      double ms = Seconds(c0, Clock::now()) * 1e3;
      if (cr.attempts == 0) break;
      ++r.cycles;
      r.attempts += cr.attempts;
      cum_ms += ms;
      cum_adm += int64_t(cr.admitted.size());
      if (r.cycles <= 20 || r.cycles % 25 == 0) {
        std::printf("%6lld %7d %8zu %8zu %10.2f %10zu %10.1f %10lld\n",
                    (long long)r.cycles, cr.attempts, cr.admitted.size(),
                    cr.preempted.size(), ms, s->PendingCount(), cum_ms,
                    (long long)cum_adm);
      }
    }
  } else {
    r.cycles = s->RunUntilQuiescent();
  }
  auto t4 = Clock::now();
  r.quiesce_cpu_s = ProcessCpuSeconds() - cpu3;
  r.quiesce_s = Seconds(t3, t4);
  r.admitted = int64_t(s->AdmittedCount());
  r.pending = int64_t(s->PendingCount());
  r.preemptions = int64_t(s->Preemptions().size());
  r.rss_after_quiesce_mib = CurrentRssMiB();
  // ru_maxrss (the kernel's high-water mark) can lag the current RSS.
  r.peak_rss_mib = std::max(PeakRssMiB(), r.rss_after_quiesce_mib);
  for (const auto& a : s->Admitted()) {
    for (const auto& psa : a.admission.pod_set_assignments) {
      for (const auto& pp : psa.placements)
        r.admitted_gpus += int64_t(pp.gpus.size());
    }
  }
  r.ok = 1;
  return r;
}

void PrintRep(int rep, const RepResult& r) {
  std::printf(
      "rep %d: generate %.3f s, Create %.3f s, quiescence %.3f s (CPU %.3f s) "
      "in %lld cycles%s; "
      "admitted %lld (%lld GPUs), pending %lld, preemptions %lld; %.0f "
      "admissions/s; "
      "RSS after gen %.0f MiB, after Create %.0f MiB, after quiescence %.0f "
      "MiB, "
      "peak %.0f MiB\n",
      rep, r.gen_s, r.create_s, r.quiesce_s, r.quiesce_cpu_s,
      (long long)r.cycles,
      r.attempts ? (" (" + std::to_string(r.attempts) + " heads tried)").c_str()
                 : "",
      (long long)r.admitted, (long long)r.admitted_gpus, (long long)r.pending,
      (long long)r.preemptions,
      r.quiesce_s > 0 ? double(r.admitted) / r.quiesce_s : 0.0,
      r.rss_after_gen_mib, r.rss_after_create_mib, r.rss_after_quiesce_mib,
      r.peak_rss_mib);
  std::fflush(stdout);
}

int Quiescence(const Args& args) {
  std::vector<RepResult> results;
  for (int rep = 0; rep < args.reps; ++rep) {
    RepResult r;
    if (args.fork) {
      int fds[2];
      if (pipe(fds) != 0) {
        std::perror("pipe");
        return 1;
      }
      std::fflush(stdout);
      std::fflush(stderr);
      pid_t pid = fork();
      if (pid < 0) {
        std::perror("fork");
        return 1;
      }
      if (pid == 0) {
        close(fds[0]);
        RepResult cr = RunQuiescenceRep(args, rep == 0);
        ssize_t n = write(fds[1], &cr, sizeof(cr));
        (void)n;
        close(fds[1]);
        std::fflush(stdout);
        _exit(cr.ok ? 0 : 1);
      }
      close(fds[1]);
      ssize_t n = read(fds[0], &r, sizeof(r));
      close(fds[0]);
      int status = 0;
      waitpid(pid, &status, 0);
      if (n != ssize_t(sizeof(r)) || !WIFEXITED(status) ||
          WEXITSTATUS(status) != 0) {
        std::fprintf(stderr, "rep %d: child failed (status %d)\n", rep, status);
        return 1;
      }
    } else {
      r = RunQuiescenceRep(args, rep == 0);
      if (!r.ok) return 1;
    }
    PrintRep(rep, r);
    results.push_back(r);
  }
  auto med = [&](auto field) {
    std::vector<double> v;
    for (const auto& r : results) v.push_back(double(field(r)));
    return Median(v);
  };
  std::printf(
      "quiescence median of %d: generate %.3f s, Create %.3f s, quiescence "
      "%.3f s (CPU %.3f s), "
      "cycles %.0f, admitted %.0f, pending %.0f, preemptions %.0f, %.0f "
      "admissions/s "
      "(%.0f per CPU second), "
      "peak RSS %.0f MiB (after Create %.0f MiB, after quiescence %.0f MiB)\n",
      int(results.size()), med([](const RepResult& r) { return r.gen_s; }),
      med([](const RepResult& r) { return r.create_s; }),
      med([](const RepResult& r) { return r.quiesce_s; }),
      med([](const RepResult& r) { return r.quiesce_cpu_s; }),
      med([](const RepResult& r) { return r.cycles; }),
      med([](const RepResult& r) { return r.admitted; }),
      med([](const RepResult& r) { return r.pending; }),
      med([](const RepResult& r) { return r.preemptions; }),
      med([](const RepResult& r) { return double(r.admitted) / r.quiesce_s; }),
      med([](const RepResult& r) {
        return double(r.admitted) / r.quiesce_cpu_s;
      }),
      med([](const RepResult& r) { return r.peak_rss_mib; }),
      med([](const RepResult& r) { return r.rss_after_create_mib; }),
      med([](const RepResult& r) { return r.rss_after_quiesce_mib; }));
  std::fflush(stdout);
  return 0;
}

// ---------------------------------------------------------------------------
// incremental

// Keeps the set of admitted keys in step with the scheduler's decisions.
class AdmittedSet {
 public:
  void Add(const std::string& k) {
    if (pos_.emplace(k, keys_.size()).second) keys_.push_back(k);
  }
  void Remove(const std::string& k) {
    auto it = pos_.find(k);
    if (it == pos_.end()) return;
    size_t i = it->second;
    pos_.erase(it);
    if (i + 1 != keys_.size()) {
      keys_[i] = std::move(keys_.back());
      pos_[keys_[i]] = i;
    }
    keys_.pop_back();
  }
  void Apply(const sched::CycleResult& r) {
    for (const auto& p : r.preempted) Remove(p.workload);
    for (const auto& k : r.admitted) Add(k);
  }
  size_t size() const { return keys_.size(); }
  const std::string& at(size_t i) const { return keys_[i]; }

 private:
  std::vector<std::string> keys_;
  std::unordered_map<std::string, size_t> pos_;
};

// Runs cycles until none tries a head; returns the number of cycles.
int64_t Quiesce(sched::Scheduler* s, AdmittedSet* admitted) {
  int64_t n = 0;
  for (;;) {
    sched::CycleResult r = s->RunCycle();
    admitted->Apply(r);
    if (r.attempts == 0) return n;
    ++n;
  }
}

struct Incremental {
  std::vector<double> cycle_us;      // The timed call + RunCycle, wall.
  std::vector<double> cycle_cpu_us;  // The same, CPU time of the process.
  std::vector<double> requiesce_ms;  // Untimed part, reported.
  std::vector<double> requiesce_cycles;
  int64_t admitted_in_cycle = 0;
  int64_t preempted_in_cycle = 0;
  int64_t heads_in_cycle = 0;
};

void PrintIncremental(const char* what, const Incremental& inc) {
  std::printf(
      "%s: %zu trials: call+RunCycle median %.1f us, p99 %.1f us, max %.1f us "
      "(CPU: median %.1f us, p99 %.1f us); heads tried per timed cycle %.1f "
      "avg, "
      "admitted %lld, preempted %lld in the timed cycles; back to quiescence "
      "(untimed) "
      "median %.2f ms / %.0f cycles, p99 %.2f ms\n",
      what, inc.cycle_us.size(), Median(inc.cycle_us),
      Percentile(inc.cycle_us, 99), Percentile(inc.cycle_us, 100),
      Median(inc.cycle_cpu_us), Percentile(inc.cycle_cpu_us, 99),
      inc.cycle_us.empty()
          ? 0.0
          : double(inc.heads_in_cycle) / double(inc.cycle_us.size()),
      (long long)inc.admitted_in_cycle, (long long)inc.preempted_in_cycle,
      Median(inc.requiesce_ms), Median(inc.requiesce_cycles),
      Percentile(inc.requiesce_ms, 99));
  std::fflush(stdout);
}

// The timed regions, as functions of their own so that a profiler can
// collect them alone (valgrind --toggle-collect='*TimedArrival*').
__attribute__((noinline)) sched::CycleResult TimedArrival(
    sched::Scheduler* s, const core::Workload& w, Status* st) {
  *st = s->AddWorkload(w);
  return s->RunCycle();
}
__attribute__((noinline)) sched::CycleResult TimedFinish(sched::Scheduler* s,
                                                         const std::string& key,
                                                         Status* st) {
  *st = s->RemoveWorkload(key);
  return s->RunCycle();
}

double ThreadCpuUs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e6 + double(ts.tv_nsec) * 1e-3;
}

int IncrementalMode(const Args& args) {
  ClusterSpec spec;
  spec.scale = args.scale;
  spec.seed = args.seed;
  GeneratedCluster gen = GenerateCluster(spec);
  PrintCluster(spec, gen);
  auto created = sched::Scheduler::Create(gen.config);
  if (!created.ok()) {
    std::fprintf(stderr, "Scheduler::Create failed: %s\n",
                 created.status().message().c_str());
    return 1;
  }
  std::unique_ptr<sched::Scheduler> s = std::move(created).value();
  gen.config = core::Config{};  // Free the input.
  AdmittedSet admitted;
  auto t0 = Clock::now();
  int64_t cycles = Quiesce(s.get(), &admitted);
  std::printf(
      "initial quiescence: %.3f s, %lld cycles, admitted %zu, pending %zu\n",
      Seconds(t0, Clock::now()), (long long)cycles, s->AdmittedCount(),
      s->PendingCount());
  std::fflush(stdout);

  WorkloadDrawer drawer(spec, args.seed * 7919 + 1);
  std::mt19937_64 rng(args.seed + 12345);
  int64_t next_ms =
      kBaseCreationMs + int64_t(spec.Workloads()) * kCreationStepMs;

  auto record = [&](Incremental* inc, Clock::time_point a0,
                    Clock::time_point a1, double cpu0, double cpu1,
                    const sched::CycleResult& r) {
    inc->cycle_us.push_back(Seconds(a0, a1) * 1e6);
    inc->cycle_cpu_us.push_back(cpu1 - cpu0);
    inc->admitted_in_cycle += int64_t(r.admitted.size());
    inc->preempted_in_cycle += int64_t(r.preempted.size());
    inc->heads_in_cycle += r.attempts;
    admitted.Apply(r);
    auto q0 = Clock::now();
    int64_t n = Quiesce(s.get(), &admitted);
    inc->requiesce_ms.push_back(Seconds(q0, Clock::now()) * 1e3);
    inc->requiesce_cycles.push_back(double(n));
  };

  // (a) one workload arrives.
  if (args.phase != "finish") {
    Incremental add;
    for (int i = 0; i < args.trials; ++i) {
      core::Workload w = drawer.Draw("inc-" + std::to_string(i), next_ms);
      next_ms += kCreationStepMs;
      Status st;
      double cpu0 = ThreadCpuUs();
      auto a0 = Clock::now();
      sched::CycleResult r = TimedArrival(s.get(), w, &st);
      auto a1 = Clock::now();
      double cpu1 = ThreadCpuUs();
      if (!st.ok()) {
        std::fprintf(stderr, "AddWorkload failed: %s\n", st.message().c_str());
        return 1;
      }
      record(&add, a0, a1, cpu0, cpu1, r);
    }
    PrintIncremental("arrival (AddWorkload + RunCycle)", add);
  }

  // (b) one admitted workload finishes.
  if (args.phase != "arrival") {
    Incremental rem;
    for (int i = 0; i < args.trials && admitted.size() > 0; ++i) {
      std::string key = admitted.at(
          std::uniform_int_distribution<size_t>(0, admitted.size() - 1)(rng));
      Status st;
      double cpu0 = ThreadCpuUs();
      auto a0 = Clock::now();
      sched::CycleResult r = TimedFinish(s.get(), key, &st);
      auto a1 = Clock::now();
      double cpu1 = ThreadCpuUs();
      if (!st.ok()) {
        std::fprintf(stderr, "RemoveWorkload(%s) failed: %s\n", key.c_str(),
                     st.message().c_str());
        return 1;
      }
      admitted.Remove(key);
      record(&rem, a0, a1, cpu0, cpu1, r);
    }
    PrintIncremental("finish (RemoveWorkload + RunCycle)", rem);
  }
  std::printf("peak RSS %.0f MiB\n", PeakRssMiB());
  std::fflush(stdout);
  return 0;
}

// ---------------------------------------------------------------------------
// Google Benchmark microbenchmarks (small scale).

constexpr double kMicroScale = 0.05;

struct MicroState {
  std::unique_ptr<sched::Scheduler> s;
  AdmittedSet admitted;
  std::unique_ptr<WorkloadDrawer> drawer;
  std::mt19937_64 rng{7};
  int64_t next_ms = 0;
  int64_t next_name = 0;
};

// A quiescent cluster at kMicroScale, one per benchmark (`which`).
MicroState* Micro(int which) {
  static MicroState* states[2] = {nullptr, nullptr};
  MicroState*& m = states[which];
  if (m == nullptr) {
    auto* st = new MicroState();
    ClusterSpec spec;
    spec.scale = kMicroScale;
    GeneratedCluster gen = GenerateCluster(spec);
    st->s = std::move(sched::Scheduler::Create(gen.config)).value();
    Quiesce(st->s.get(), &st->admitted);
    st->drawer = std::make_unique<WorkloadDrawer>(spec, 99);
    st->next_ms = kBaseCreationMs + int64_t(spec.Workloads()) * kCreationStepMs;
    m = st;
  }
  return m;
}

void BM_Quiescence(benchmark::State& state) {
  ClusterSpec spec;
  spec.scale = kMicroScale;
  GeneratedCluster gen = GenerateCluster(spec);
  int64_t admitted = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto s = std::move(sched::Scheduler::Create(gen.config)).value();
    state.ResumeTiming();
    s->RunUntilQuiescent();
    admitted += int64_t(s->AdmittedCount());
    state.PauseTiming();
    s.reset();
    state.ResumeTiming();
  }
  state.counters["admissions/s"] =
      benchmark::Counter(double(admitted), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Quiescence)->Unit(benchmark::kMillisecond);

void BM_AddAndCycle(benchmark::State& state) {
  MicroState* m = Micro(0);
  for (auto _ : state) {
    state.PauseTiming();
    core::Workload w =
        m->drawer->Draw("bm-" + std::to_string(m->next_name++), m->next_ms);
    m->next_ms += kCreationStepMs;
    state.ResumeTiming();
    Status st = m->s->AddWorkload(w);
    sched::CycleResult r = m->s->RunCycle();
    state.PauseTiming();
    if (!st.ok()) state.SkipWithError(st.message().c_str());
    m->admitted.Apply(r);
    // Take it out again so that the queues do not grow with iterations.
    (void)m->s->RemoveWorkload(w.Key());
    m->admitted.Remove(w.Key());
    Quiesce(m->s.get(), &m->admitted);
    state.ResumeTiming();
  }
}
BENCHMARK(BM_AddAndCycle)->Unit(benchmark::kMicrosecond);

void BM_RemoveAndCycle(benchmark::State& state) {
  MicroState* m = Micro(1);
  for (auto _ : state) {
    state.PauseTiming();
    if (m->admitted.size() == 0) {
      state.SkipWithError("nothing admitted");
      break;
    }
    std::string key = m->admitted.at(std::uniform_int_distribution<size_t>(
        0, m->admitted.size() - 1)(m->rng));
    state.ResumeTiming();
    Status st = m->s->RemoveWorkload(key);
    sched::CycleResult r = m->s->RunCycle();
    state.PauseTiming();
    if (!st.ok()) state.SkipWithError(st.message().c_str());
    m->admitted.Remove(key);
    m->admitted.Apply(r);
    Quiesce(m->s.get(), &m->admitted);
    // Top the pending queues back up so the cluster stays full.
    core::Workload w =
        m->drawer->Draw("bm-" + std::to_string(m->next_name++), m->next_ms);
    m->next_ms += kCreationStepMs;
    (void)m->s->AddWorkload(w);
    Quiesce(m->s.get(), &m->admitted);
    state.ResumeTiming();
  }
}
BENCHMARK(BM_RemoveAndCycle)->Unit(benchmark::kMicrosecond);

void Usage() {
  std::fprintf(
      stderr,
      "usage: allot_bench quiescence [--scale S] [--reps N] [--seed N] "
      "[--no-fork] "
      "[--trace]\n"
      "       allot_bench incremental [--scale S] [--trials N] [--seed N] "
      "[--phase arrival|finish|both]\n"
      "       allot_bench nodes [--scale S] [--trials N] [--seed N]\n"
      "       allot_bench parking [--scale S] [--trials N] [--seed N]\n"
      "       allot_bench autoscaler [--scale S] [--trials N] [--seed N]\n"
      "       allot_bench all [--scale S]\n"
      "       allot_bench [--benchmark_...]   (Google Benchmark, scale %.2g)\n",
      kMicroScale);
}

}  // namespace
}  // namespace allot::bench

namespace allot::bench {
// node_changes_bench.cc.
int NodeChangesMode(double scale, int trials, uint64_t seed);
// parking_bench.cc.
int ParkingMode(double scale, int trials, uint64_t seed);
// autoscaler_bench.cc.
int AutoscalerMode(double scale, int trials, uint64_t seed);
}  // namespace allot::bench

int main(int argc, char** argv) {
  using namespace allot::bench;
  if (argc >= 2 && argv[1][0] != '-') {
    Args args;
    if (!ParseArgs(argc, argv, &args)) {
      Usage();
      return 2;
    }
    if (args.mode == "quiescence") return Quiescence(args);
    if (args.mode == "incremental") return IncrementalMode(args);
    if (args.mode == "nodes")
      return NodeChangesMode(args.scale, args.trials, args.seed);
    if (args.mode == "parking")
      return ParkingMode(args.scale, args.trials, args.seed);
    if (args.mode == "autoscaler")
      return AutoscalerMode(args.scale, args.trials, args.seed);
    if (args.mode == "all") {
      int rc = Quiescence(args);
      if (rc != 0) return rc;
      return IncrementalMode(args);
    }
    Usage();
    return 2;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
