// Property tests of sched::Scheduler on random clusters (random_cluster.h).
//
// For each seed, a random config and a random sequence of calls
// (RunCycle, RunUntilQuiescent, AddWorkload, RemoveWorkload, plus
// duplicate adds and removals of missing keys that must change nothing) are
// generated up front. The calls are then run on a Scheduler and, after
// EVERY call, its public state (Admitted(), Pending(), Preemptions(),
// AdmittedCount(), PendingCount()) is checked against an oracle built from
// the config alone:
//  [device]   no GPU or MIG slice UUID is held by two pods;
//  [node]     every pod is on an existing, schedulable node that matches the
//             node labels of every flavor assigned to its pod set and the pod
//             set's nodeSelector, whose NoSchedule/NoExecute taints the pod's
//             tolerations plus the flavors' tolerations tolerate; it holds
//             exactly the devices it requests, of the right kind (MIG slices
//             of the requested profile, never a MIG-partitioned whole GPU),
//             all healthy and on that node; per-node CPU and memory sums fit;
//  [flavor]   each requested resource has one flavor, listed in the
//             ClusterQueue's resource group for it, whose nodeTaints the pod
//             set tolerates and whose labels its nodeSelector does not
//             contradict;
//  [count]    placements.size() == admitted count, within [minCount, count];
//  [quota]    usage recomputed from Admitted() with Kueue's hierarchical
//             cohort arithmetic (subtree quota, guaranteed = subtree -
//             lendingLimit): every root uses at most its subtree quota, every
//             node at most subtree + borrowingLimit; per cohort tree, total
//             usage <= total nominal quota, total usage plus every lender's
//             unused guaranteed part <= total nominal quota, and no
//             ClusterQueue borrows more than the others could lend;
//  [pending]  every pending workload has a reason and its ClusterQueue;
//             positions per ClusterQueue are 1..n in queue order (priority,
//             creation time, arrival); "waiting behind K" names the head
//             (of the same tenant; another tenant's is not named);
//  [count]    admitted + pending == the workloads added, no key twice;
//  [policy]   every preemption matches the preemptor's ClusterQueue policy
//             (withinClusterQueue, reclaimWithinCohort, borrowWithinCohort
//             with its priority threshold, fair sharing), victims were
//             admitted and preemptors admitted in that cycle, the event log
//             only grows;
//  [api]      calls that must fail (duplicate key, missing key) fail and
//             change nothing; RunUntilQuiescent terminates and a cycle after
//             it changes nothing;
//  [liveness] after RunUntilQuiescent, no pending single-pod-set workload
//             requesting only devices (BestEffortFIFO, or the head of a
//             StrictFIFO queue) whose first eligible flavor has the quota
//             (Kueue's available()) and whose pods (all, or minCount) the
//             free healthy devices of that flavor's eligible nodes take -
//             also after preempting everything withinClusterQueue lets it
//             preempt there;
//  [roundtrip] Create() from the final state (admitted workloads with their
//             admissions and placements) restores every admission exactly,
//             and the restored scheduler keeps every invariant;
//  [order]    at most one admission per ClusterQueue per cycle; a StrictFIFO
//             queue admits its first workload or nothing;
//  [minimal]  after a cycle with a single head that preempted, every victim
//             was needed: with it back as it was, something would not fit;
//  [policy]   (also) a lone head that fits as is preempts nobody, and
//             victims in other ClusterQueues come from borrowing ones;
//  [drain]    removing every workload leaves no trace: the drained
//             scheduler then decides like a fresh one on new workloads;
//  [determinism] replaying the same calls on a second Scheduler gives the
//             same cycle results and the same final state, byte for byte.
//
// A failure reports the seed, the step, the invariant and a shrunk
// reproduction (config and calls). Environment knobs: ALLOT_PROP_SEEDS (the
// number of seeds, default 200 for RandomClusters and 2/5 of it for the
// other suites), ALLOT_PROP_SEED (run that one seed), ALLOT_PROP_TRACE (print
// the state after every call of the shrunk reproduction),
// ALLOT_PROP_SINGLE_TREE (every ClusterQueue in one cohort tree),
// ALLOT_PROP_STATS (print coverage counters).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/model.h"
#include "sched/random_cluster.h"
#include "sched/scheduler.h"
#include "sched/scheduler_property_util.h"

namespace allot::sched::proptest {

Stats& stats() {
  static Stats s;
  return s;
}

namespace {

constexpr int32_t kMaxCycles = 5000;
constexpr size_t kMaxLive = 30;

// ---------------------------------------------------------------------------
// Calls and runs.

struct Op {
  enum Kind { kCycle, kQuiescent, kAdd, kRemove } kind = kCycle;
  core::Workload w;  // kAdd.
  std::string key;   // kRemove.
};

std::string OpText(const Op& op) {
  switch (op.kind) {
    case Op::kCycle:
      return "RunCycle()";
    case Op::kQuiescent:
      return "RunUntilQuiescent()";
    case Op::kAdd:
      return "AddWorkload(" + WorkloadText(op.w) + ")";
    case Op::kRemove:
      return "RemoveWorkload(" + op.key + ")";
  }
  return "?";
}

// The calls depend only on which workloads are live, not on the scheduler.
std::vector<Op> GenerateOps(RandomCluster& rc, int32_t steps) {
  std::vector<Op> ops;
  std::vector<core::Workload> live = rc.config().workloads;
  for (int32_t step = 0; step < steps; ++step) {
    const int32_t r = rc.Uniform(0, 99);
    if (r < 40) {
      ops.push_back({Op::kCycle, {}, ""});
    } else if (r < 50) {
      ops.push_back({Op::kQuiescent, {}, ""});
    } else if (r < 75) {
      int32_t k = rc.Uniform(1, 3);
      for (int32_t i = 0; i < k && live.size() < kMaxLive; ++i) {
        if (!live.empty() && rc.Coin(0.04)) {
          ops.push_back(
              {Op::kAdd, rc.Pick(live), ""});  // A duplicate: must fail.
          continue;
        }
        core::Workload w = rc.NextWorkload(int64_t(step) * 10);
        live.push_back(w);
        ops.push_back({Op::kAdd, w, ""});
      }
    } else {
      int32_t k = rc.Uniform(1, 3);
      for (int32_t i = 0; i < k && !live.empty(); ++i) {
        if (rc.Coin(0.04)) {
          ops.push_back(
              {Op::kRemove, {}, "team-0/no-such-workload"});  // Must fail.
          continue;
        }
        size_t idx = size_t(rc.Uniform(0, int32_t(live.size()) - 1));
        ops.push_back({Op::kRemove, {}, live[idx].Key()});
        live.erase(live.begin() + long(idx));
      }
    }
  }
  ops.push_back({Op::kQuiescent, {}, ""});
  return ops;
}

struct RunResult {
  std::string error;  // Empty: every invariant held.
  std::string tag;    // "[quota]", ... of the first error.
  int step = -2;      // Failing op index; -1: right after Create.
  std::vector<std::string> trace;
  std::string final_state;
};

// Create() from the current state (live workloads in arrival order, the
// admitted ones with their admissions and placements) must accept it and
// keep every admission as is; the restored scheduler then satisfies every
// invariant, also after RunUntilQuiescent.
void RoundTrip(const core::Config& config, const Oracle& oracle,
               const Scheduler& s, std::vector<std::string>* errors) {
  core::Config c2 = config;
  c2.workloads = oracle.LiveInArrivalOrder();
  const std::vector<AdmittedWorkload> admitted = s.Admitted();
  std::map<std::string, const core::Admission*> adm;
  for (const auto& a : admitted) adm[a.workload] = &a.admission;
  for (auto& w : c2.workloads) {
    auto it = adm.find(w.Key());
    if (it != adm.end()) w.admission = *it->second;
  }
  auto created = Scheduler::Create(c2);
  if (!created.ok()) {
    errors->push_back("[roundtrip] Create from the admitted state failed: " +
                      created.status().ToString());
    return;
  }
  Scheduler& s2 = **created;
  const std::vector<AdmittedWorkload> again = s2.Admitted();
  if (again.size() != admitted.size()) {
    errors->push_back("[roundtrip] " + std::to_string(admitted.size()) +
                      " admitted workloads restored as " +
                      std::to_string(again.size()));
    return;
  }
  for (size_t i = 0; i < again.size(); ++i) {
    if (again[i].workload != admitted[i].workload ||
        AdmissionText(again[i].admission) !=
            AdmissionText(admitted[i].admission)) {
      errors->push_back("[roundtrip] " + admitted[i].workload + " " +
                        AdmissionText(admitted[i].admission) + " restored as " +
                        again[i].workload + " " +
                        AdmissionText(again[i].admission));
      return;
    }
  }
  std::vector<std::string> errs;
  Oracle o2(c2);
  for (const auto& w : c2.workloads) o2.Add(w);
  o2.CheckState(s2, &errs);
  int32_t n = s2.RunUntilQuiescent(kMaxCycles);
  if (n >= kMaxCycles) errs.push_back("[api] RunUntilQuiescent did not settle");
  o2.CheckNewPreemptions(s2, nullptr, nullptr, nullptr, &errs);
  o2.CheckState(s2, &errs);
  if (errs.empty()) o2.CheckLiveness(s2, &errs);
  for (const auto& e : errs)
    errors->push_back("[roundtrip] after restoring: " + e);
}

// Set while Report replays the shrunk reproduction with ALLOT_PROP_TRACE:
// RunOps then prints the state after every call.
bool g_trace = false;

// Removing every workload must leave no trace: the drained scheduler then
// decides exactly like a fresh one on the same new workloads (the ones the
// run added last, renamed).
void DrainAndCompare(const core::Config& config, const Oracle& oracle,
                     Scheduler& s, std::vector<std::string>* errors) {
  std::vector<core::Workload> live = oracle.LiveInArrivalOrder();
  for (const auto& w : live) {
    Status st = s.RemoveWorkload(w.Key());
    if (!st.ok())
      errors->push_back("[drain] RemoveWorkload(" + w.Key() +
                        ") failed: " + st.ToString());
  }
  if (s.AdmittedCount() != 0 || s.PendingCount() != 0 ||
      !s.Admitted().empty() || !s.Pending().empty()) {
    errors->push_back("[drain] workloads left after removing all:\n" +
                      StateText(s));
    return;
  }
  core::Config empty = config;
  empty.workloads.clear();
  auto created = Scheduler::Create(empty);
  if (!created.ok()) return;
  Scheduler& fresh = **created;
  const size_t drained_events = s.Preemptions().size();
  std::vector<core::Workload> probes;
  for (size_t i = live.size() > 8 ? live.size() - 8 : 0; i < live.size(); ++i) {
    core::Workload w = live[i];
    w.name = "probe-" + w.name;
    w.admission.reset();
    probes.push_back(w);
  }
  std::string a, b;
  for (const auto& w : probes) {
    a += s.AddWorkload(w).ToString() + "\n";
    b += fresh.AddWorkload(w).ToString() + "\n";
  }
  for (int round = 0; round < 3; ++round) {
    a += CycleText(s.RunCycle()) + "\n";
    b += CycleText(fresh.RunCycle()) + "\n";
  }
  a += std::to_string(s.RunUntilQuiescent(kMaxCycles)) + "\n";
  b += std::to_string(fresh.RunUntilQuiescent(kMaxCycles)) + "\n";
  for (const auto& x : s.Admitted())
    a += "A " + x.workload + " " + AdmissionText(x.admission) + "\n";
  for (const auto& x : fresh.Admitted())
    b += "A " + x.workload + " " + AdmissionText(x.admission) + "\n";
  for (const auto& x : s.Pending())
    a += "P " + x.workload + " #" + std::to_string(x.position) + " " +
         x.reason + "\n";
  for (const auto& x : fresh.Pending())
    b += "P " + x.workload + " #" + std::to_string(x.position) + " " +
         x.reason + "\n";
  for (size_t i = drained_events; i < s.Preemptions().size(); ++i)
    a += "E " + EventText(s.Preemptions()[i]) + "\n";
  for (const auto& e : fresh.Preemptions()) b += "E " + EventText(e) + "\n";
  if (a != b) {
    errors->push_back(
        "[drain] after removing every workload, the scheduler decides "
        "differently from a fresh one "
        "on the same new workloads:\n--- drained ---\n" +
        a + "--- fresh ---\n" + b);
  }
}

RunResult RunOps(const core::Config& config, const std::vector<Op>& ops,
                 bool check) {
  RunResult out;
  auto created = Scheduler::Create(config);
  if (!created.ok()) {
    out.error =
        "[create] Scheduler::Create failed: " + created.status().ToString();
    out.tag = "[create]";
    out.step = -1;
    return out;
  }
  Scheduler& s = **created;
  Oracle oracle(config);
  for (const auto& w : config.workloads) oracle.Add(w);
  std::vector<std::string> errors;
  auto failed = [&](int step) {
    if (errors.empty()) return false;
    out.tag = errors[0].substr(0, errors[0].find(']') + 1);
    out.step = step;
    for (size_t i = 0; i < errors.size() && i < 6; ++i)
      out.error += errors[i] + "\n";
    if (errors.size() > 6)
      out.error += "... " + std::to_string(errors.size() - 6) + " more\n";
    return true;
  };
  if (check) oracle.CheckState(s, &errors);
  if (failed(-1)) return out;
  for (size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    switch (op.kind) {
      case Op::kCycle: {
        std::set<std::string> before;
        std::vector<AdmittedWorkload> admitted_before;
        std::vector<PendingWorkload> pending_before;
        if (check) {
          admitted_before = s.Admitted();
          for (const auto& a : admitted_before) before.insert(a.workload);
          pending_before = s.Pending();
        }
        CycleResult cr = s.RunCycle();
        out.trace.push_back(CycleText(cr));
        if (check) {
          oracle.CheckNewPreemptions(s, &before, &pending_before, &cr, &errors);
          oracle.CheckState(s, &errors);
          if (errors.empty())
            oracle.CheckVictimsNeeded(admitted_before, cr, &errors);
        }
        break;
      }
      case Op::kQuiescent: {
        int32_t n = s.RunUntilQuiescent(kMaxCycles);
        CycleResult extra = s.RunCycle();
        out.trace.push_back("quiescent after " + std::to_string(n) + "; " +
                            CycleText(extra));
        if (check) {
          if (n >= kMaxCycles)
            errors.push_back("[api] RunUntilQuiescent did not settle in " +
                             std::to_string(n) + " cycles");
          if (extra.Changed())
            errors.push_back(
                "[api] a cycle after RunUntilQuiescent changed something: " +
                CycleText(extra));
          oracle.CheckNewPreemptions(s, nullptr, nullptr, nullptr, &errors);
          oracle.CheckState(s, &errors);
          if (errors.empty()) oracle.CheckLiveness(s, &errors);
        }
        break;
      }
      case Op::kAdd: {
        const bool dup = oracle.Live(op.w.Key());
        const std::string before = check && dup ? StateText(s) : "";
        Status st = s.AddWorkload(op.w);
        out.trace.push_back("add " + op.w.Key() + ": " + st.ToString());
        if (dup) {
          if (st.ok())
            errors.push_back("[api] adding duplicate key " + op.w.Key() +
                             " succeeded");
          if (check && StateText(s) != before)
            errors.push_back("[api] a failed AddWorkload changed the state");
        } else {
          if (!st.ok())
            errors.push_back("[api] AddWorkload(" + op.w.Key() +
                             ") failed: " + st.ToString());
          oracle.Add(op.w);
        }
        if (check) oracle.CheckState(s, &errors);
        break;
      }
      case Op::kRemove: {
        const bool live = oracle.Live(op.key);
        const std::string before = check && !live ? StateText(s) : "";
        Status st = s.RemoveWorkload(op.key);
        out.trace.push_back("remove " + op.key + ": " + st.ToString());
        if (!live) {
          if (st.code() != StatusCode::kNotFound)
            errors.push_back("[api] removing missing key " + op.key + " gave " +
                             st.ToString());
          if (check && StateText(s) != before)
            errors.push_back("[api] a failed RemoveWorkload changed the state");
        } else {
          if (!st.ok())
            errors.push_back("[api] RemoveWorkload(" + op.key +
                             ") failed: " + st.ToString());
          oracle.Remove(op.key);
        }
        if (check) oracle.CheckState(s, &errors);
        break;
      }
    }
    if (g_trace) {
      std::printf("after %s => %s\n%s\n", OpText(op).c_str(),
                  out.trace.back().c_str(), StateText(s).c_str());
    }
    if (failed(int(i))) return out;
  }
  if (check) RoundTrip(config, oracle, s, &errors);
  if (failed(int(ops.size()))) return out;
  out.final_state = StateText(s);
  if (check) DrainAndCompare(config, oracle, s, &errors);
  if (failed(int(ops.size()))) return out;
  return out;
}

// Greedy shrinking: drops calls, initial workloads, nodes, ClusterQueues
// (with their LocalQueues) and pod sets while the run still fails with the
// same invariant.
void Shrink(core::Config* config, std::vector<Op>* ops,
            const std::string& tag) {
  auto fails = [&](const core::Config& c, std::vector<Op>* o) {
    RunResult r = RunOps(c, *o, true);
    if (r.error.empty() || r.tag != tag) return false;
    if (r.step >= 0 && size_t(r.step) + 1 < o->size())
      o->resize(size_t(r.step) + 1);
    return true;
  };
  {
    std::vector<Op> o = *ops;
    if (!fails(*config, &o)) return;
    *ops = o;
  }
  for (int round = 0; round < 4; ++round) {
    bool progress = false;
    for (size_t i = ops->size(); i-- > 0;) {
      if (i >= ops->size()) continue;
      std::vector<Op> o = *ops;
      o.erase(o.begin() + long(i));
      if (fails(*config, &o)) {
        *ops = o;
        progress = true;
      }
    }
    auto try_config = [&](const std::function<bool(core::Config*)>& edit) {
      core::Config c = *config;
      if (!edit(&c)) return;
      std::vector<Op> o = *ops;
      if (fails(c, &o)) {
        *config = c;
        *ops = o;
        progress = true;
      }
    };
    for (size_t i = config->workloads.size(); i-- > 0;) {
      try_config([&](core::Config* c) {
        if (i >= c->workloads.size()) return false;
        c->workloads.erase(c->workloads.begin() + long(i));
        return true;
      });
    }
    for (size_t i = config->nodes.size(); i-- > 0;) {
      try_config([&](core::Config* c) {
        if (i >= c->nodes.size()) return false;
        c->nodes.erase(c->nodes.begin() + long(i));
        return true;
      });
    }
    for (size_t i = config->cluster_queues.size(); i-- > 0;) {
      try_config([&](core::Config* c) {
        if (i >= c->cluster_queues.size()) return false;
        std::string name = c->cluster_queues[i].name;
        c->cluster_queues.erase(c->cluster_queues.begin() + long(i));
        std::erase_if(c->local_queues, [&](const core::LocalQueue& lq) {
          return lq.cluster_queue == name;
        });
        return true;
      });
    }
    try_config([](core::Config* c) {
      if (!c->scheduler.fair_sharing) return false;
      c->scheduler.fair_sharing = false;
      return true;
    });
    // Fewer GPUs per node.
    for (size_t i = 0; i < config->nodes.size(); ++i) {
      for (size_t g = config->nodes[i].gpus.size(); g-- > 1;) {
        try_config([&](core::Config* c) {
          if (i >= c->nodes.size() || g >= c->nodes[i].gpus.size())
            return false;
          c->nodes[i].gpus.erase(c->nodes[i].gpus.begin() + long(g));
          return true;
        });
      }
    }
    if (!progress) break;
  }
}

std::string Report(uint64_t seed, const char* suite, const core::Config& config,
                   const std::vector<Op>& ops, const RunResult& r) {
  std::string s = std::string(suite) + " seed " + std::to_string(seed) +
                  " fails at step " + std::to_string(r.step) +
                  (r.step >= 0 && size_t(r.step) < ops.size()
                       ? " (" + OpText(ops[size_t(r.step)]) + ")"
                       : "") +
                  ":\n" + r.error;
  core::Config c = config;
  std::vector<Op> o = ops;
  Shrink(&c, &o, r.tag);
  if (std::getenv("ALLOT_PROP_TRACE")) {
    // Expand RunUntilQuiescent into single cycles for the trace.
    std::vector<Op> expanded;
    for (const Op& op : o) {
      if (op.kind != Op::kQuiescent) {
        expanded.push_back(op);
        continue;
      }
      for (int k = 0; k < 8; ++k) expanded.push_back({Op::kCycle, {}, ""});
      expanded.push_back(op);
    }
    g_trace = true;
    RunOps(c, expanded, true);
    g_trace = false;
  }
  RunResult again = RunOps(c, o, true);
  s += "\nShrunk reproduction (" + std::to_string(o.size()) +
       " calls) fails with:\n" + again.error + "--- config ---\n" +
       ConfigText(c) + "--- calls ---\n";
  for (size_t i = 0; i < o.size(); ++i) {
    s += std::to_string(i) + ": " + OpText(o[i]);
    if (i < again.trace.size()) s += "  => " + again.trace[i];
    s += "\n";
  }
  return s;
}

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

// Runs `seeds` seeds; reports the first few failures in full.
void RunSeeds(const char* suite, int seeds, int32_t steps,
              RandomClusterOptions options) {
  if (EnvInt("ALLOT_PROP_SINGLE_TREE", 0)) options.single_tree = true;
  int first = 0;
  if (const char* one = std::getenv("ALLOT_PROP_SEED"); one && *one) {
    first = std::atoi(one);
    seeds = first + 1;
  }
  int failures = 0;
  std::map<std::string, std::vector<int>> by_tag;
  for (int seed = first; seed < seeds; ++seed) {
    RandomCluster rc(uint64_t(seed), options);
    std::vector<Op> ops = GenerateOps(rc, steps);
    RunResult r = RunOps(rc.config(), ops, /*check=*/true);
    if (!r.error.empty()) {
      ++failures;
      by_tag[r.tag].push_back(seed);
      if (by_tag[r.tag].size() == 1)
        ADD_FAILURE() << Report(uint64_t(seed), suite, rc.config(), ops, r);
      continue;
    }
    RunResult replay = RunOps(rc.config(), ops, /*check=*/false);
    if (replay.trace != r.trace || replay.final_state != r.final_state) {
      ++failures;
      size_t i = 0;
      while (i < r.trace.size() && i < replay.trace.size() &&
             r.trace[i] == replay.trace[i])
        ++i;
      ADD_FAILURE() << "[determinism] " << suite << " seed " << seed
                    << ": the replay differs at call " << i << " ("
                    << (i < ops.size() ? OpText(ops[i]) : "final state")
                    << ")\nfirst:  "
                    << (i < r.trace.size() ? r.trace[i] : r.final_state)
                    << "\nreplay: "
                    << (i < replay.trace.size() ? replay.trace[i]
                                                : replay.final_state);
    }
  }
  std::string summary;
  for (const auto& [tag, list] : by_tag) {
    summary += "\n  " + tag + " " + std::to_string(list.size()) + " seeds:";
    for (size_t i = 0; i < list.size() && i < 20; ++i)
      summary += " " + std::to_string(list[i]);
  }
  if (EnvInt("ALLOT_PROP_STATS", 0)) {
    Stats& st = stats();
    std::printf(
        "%s: checks=%lld admitted=%lld pending=%lld partial=%lld "
        "borrowing=%lld preemptions=%lld "
        "liveness_candidates=%lld mig_devices=%lld "
        "admitted_and_preempted_in_one_cycle=%lld victims_checked=%lld\n",
        suite, (long long)st.checks, (long long)st.admitted,
        (long long)st.pending, (long long)st.partial, (long long)st.borrowing,
        (long long)st.preemptions, (long long)st.liveness_candidates,
        (long long)st.mig_pods, (long long)st.same_cycle_churn,
        (long long)st.victims_checked);
    for (const auto& [r, n] : st.reasons)
      std::printf("  %s: %lld\n", r.c_str(), (long long)n);
    st = Stats{};
  }
  EXPECT_EQ(failures, 0) << suite
                         << ": failing seeds by first invariant broken:"
                         << summary;
}

TEST(SchedulerProperty, RandomClusters) {
  RunSeeds("RandomClusters", EnvInt("ALLOT_PROP_SEEDS", 200), 40,
           RandomClusterOptions{});
}

// Huge quotas everywhere: only placement binds, so the liveness check
// applies to nearly every pending workload.
TEST(SchedulerProperty, QuotaFreeClusters) {
  RandomClusterOptions o;
  o.quota_free = true;
  RunSeeds("QuotaFreeClusters", EnvInt("ALLOT_PROP_SEEDS", 200) * 2 / 5, 40, o);
}

// Small clusters with many workloads: heavy contention and preemption.
TEST(SchedulerProperty, ContendedClusters) {
  RandomClusterOptions o;
  o.min_nodes = 2;
  o.max_nodes = 4;
  o.max_cluster_queues = 4;
  o.initial_workloads = 12;
  RunSeeds("ContendedClusters", EnvInt("ALLOT_PROP_SEEDS", 200) * 2 / 5, 50, o);
}

// Plenty of whole GPUs: quota binds, so borrowing, lending limits,
// reclamation and priority preemption are exercised.
TEST(SchedulerProperty, QuotaBoundClusters) {
  RandomClusterOptions o;
  o.ample_nodes = true;
  o.initial_workloads = 10;
  RunSeeds("QuotaBoundClusters", EnvInt("ALLOT_PROP_SEEDS", 200) * 2 / 5, 50,
           o);
}

// Preemption everywhere: spread priorities, permissive policies, small
// workloads on plenty of whole GPUs.
TEST(SchedulerProperty, PreemptionHeavyClusters) {
  RandomClusterOptions o;
  o.ample_nodes = true;
  o.preemption_heavy = true;
  o.initial_workloads = 10;
  RunSeeds("PreemptionHeavyClusters", EnvInt("ALLOT_PROP_SEEDS", 200) * 2 / 5,
           50, o);
}

// The generator itself: configs are valid for Create, and deterministic.
TEST(SchedulerProperty, GeneratorIsDeterministic) {
  for (uint64_t seed = 0; seed < 20; ++seed) {
    RandomCluster a(seed), b(seed);
    EXPECT_EQ(ConfigText(a.config()), ConfigText(b.config()));
    EXPECT_EQ(WorkloadText(a.NextWorkload(5)), WorkloadText(b.NextWorkload(5)));
    auto created = Scheduler::Create(a.config());
    EXPECT_TRUE(created.ok())
        << "seed " << seed << ": " << created.status().ToString();
  }
}

}  // namespace
}  // namespace allot::sched::proptest
