// Property tests of Scheduler::UpdateNode / RemoveNode / EvictWorkload on
// random clusters (random_cluster.h).
//
// For each seed, a random cluster runs a random sequence of workload
// arrivals and finishes, cycles, and node changes: an update (labels,
// taints, cordon, GPU health, MIG layout, capacity; MutateNode), a removal,
// or a new node. Each change is made as the server makes it: the update is
// tried; if it is refused (FailedPrecondition), it must have changed
// nothing, and the workloads on the node are evicted (EvictWorkload) before
// it is made again; a removal first evicts what the node holds. Then:
//  [rebuild]  the scheduler must decide as one rebuilt by Create from the
//             same nodes and live workloads (in arrival order, admitted ones
//             with their admissions): the same admitted workloads and
//             placements, pending set, positions, reasons and set-aside flags, and
//             after RunUntilQuiescent on both, the same admissions,
//             placements, pending set and new preemptions;
//  [error]    a refused change leaves Admitted(), Pending() and
//             Preemptions() as they were.
// Knobs: ALLOT_PROP_SEEDS (default 120), ALLOT_PROP_SEED (one seed).
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "core/model.h"
#include "sched/random_cluster.h"
#include "sched/scheduler.h"

namespace allot::sched {
namespace {

using proptest::RandomCluster;
using proptest::RandomClusterOptions;

std::string AdmissionText(const core::Admission& a) {
  std::string s = a.cluster_queue;
  for (const auto& psa : a.pod_set_assignments) {
    s += " [" + psa.name + " x" + std::to_string(psa.count);
    for (const auto& [r, f] : psa.flavors) s += " " + r + ":" + f;
    for (const auto& pp : psa.placements) {
      s += " " + pp.node + "(";
      for (const auto& g : pp.gpus) s += g + ",";
      s += ")";
    }
    s += "]";
  }
  return s;
}

// The decisions: admissions with placements, pending keys with their
// queue positions, set-aside flags and reasons.
std::string Decisions(const Scheduler& s) {
  std::string out;
  for (const auto& a : s.Admitted())
    out += "A " + a.workload + " " + AdmissionText(a.admission) + "\n";
  for (const auto& p : s.Pending()) {
    out += "P " + p.workload + " " + p.cluster_queue + " #" +
           std::to_string(p.position) +
           (s.IsInadmissible(p.workload) ? " set-aside" : "") + " " + p.reason + "\n";
  }
  out += "counts " + std::to_string(s.AdmittedCount()) + "/" +
         std::to_string(s.PendingCount()) + "\n";
  return out;
}

std::string EventsSince(const Scheduler& s, size_t from) {
  std::string out;
  const auto& ev = s.Preemptions();
  for (size_t i = from; i < ev.size(); ++i) {
    out += "E " + ev[i].workload + " by " + ev[i].preemptor + " (" +
           ToString(ev[i].reason) + ")\n";
  }
  return out;
}

struct Run {
  RandomCluster rc;
  std::unique_ptr<Scheduler> s;
  std::vector<core::Node> nodes;        // In node order.
  std::vector<core::Workload> live;     // In arrival order.
  int64_t now = 1000;
  int32_t next_node = 0;
  std::vector<std::string> errors;

  Run(uint64_t seed, RandomClusterOptions o) : rc(seed, o) {
    auto created = Scheduler::Create(rc.config());
    if (!created.ok()) {
      errors.push_back("[create] " + created.status().ToString());
      return;
    }
    s = std::move(*created);
    nodes = rc.config().nodes;
    live = rc.config().workloads;
  }

  // Create from the current nodes and workloads.
  std::unique_ptr<Scheduler> Rebuild() {
    core::Config c = rc.config();
    c.nodes = nodes;
    c.workloads = live;
    std::map<std::string, core::Admission> adm;
    for (const auto& a : s->Admitted()) adm[a.workload] = a.admission;
    for (auto& w : c.workloads) {
      auto it = adm.find(w.Key());
      w.admission.reset();
      if (it != adm.end()) w.admission = it->second;
    }
    auto created = Scheduler::Create(c);
    if (!created.ok()) {
      errors.push_back("[rebuild] Create failed: " + created.status().ToString());
      return nullptr;
    }
    return std::move(*created);
  }

  void EvictOn(const std::string& node) {
    for (const auto& a : s->Admitted()) {
      bool here = false;
      for (const auto& psa : a.admission.pod_set_assignments)
        for (const auto& pp : psa.placements) here |= pp.node == node;
      if (!here) continue;
      Status st = s->EvictWorkload(a.workload);
      if (!st.ok()) errors.push_back("[api] EvictWorkload: " + st.ToString());
    }
  }

  // A refused change must leave everything as it was.
  void CheckUnchanged(const std::string& before, size_t events,
                      const std::string& what) {
    if (Decisions(*s) != before || s->Preemptions().size() != events) {
      errors.push_back("[error] refused " + what + " changed the state:\n--- before ---\n" +
                       before + "--- after ---\n" + Decisions(*s));
    }
  }

  void NodeChange() {
    // A rebuild forgets what Create cannot be told (the order admissions
    // were made in, which orders victims of equal priority; eviction
    // history): start from a rebuilt scheduler, so that only the change
    // itself is compared.
    if (std::unique_ptr<Scheduler> r = Rebuild()) s = std::move(r);
    const int32_t kind = nodes.size() <= 1 ? 2 : rc.Uniform(0, 5);
    if (kind <= 3) {  // Update.
      size_t i = size_t(rc.Uniform(0, int32_t(nodes.size()) - 1));
      core::Node n = rc.MutateNode(nodes[i]);
      if (rc.Coin(0.2)) EvictOn(n.name);  // Drained up front.
      std::string before = Decisions(*s);
      size_t events = s->Preemptions().size();
      Status st = s->UpdateNode(n);
      if (st.code() == StatusCode::kFailedPrecondition) {
        CheckUnchanged(before, events, "UpdateNode(" + n.name + ")");
        EvictOn(n.name);
        st = s->UpdateNode(n);
      }
      if (!st.ok()) {
        errors.push_back("[api] UpdateNode(" + n.name + ") after evicting: " +
                         st.ToString());
        return;
      }
      nodes[i] = n;
    } else if (kind == 4) {  // Remove.
      size_t i = size_t(rc.Uniform(0, int32_t(nodes.size()) - 1));
      const std::string name = nodes[i].name;
      std::string before = Decisions(*s);
      size_t events = s->Preemptions().size();
      Status st = s->RemoveNode(name);
      if (st.code() == StatusCode::kFailedPrecondition) {
        CheckUnchanged(before, events, "RemoveNode(" + name + ")");
        EvictOn(name);
        st = s->RemoveNode(name);
      }
      if (!st.ok()) {
        errors.push_back("[api] RemoveNode(" + name + "): " + st.ToString());
        return;
      }
      nodes.erase(nodes.begin() + long(i));
    } else {  // Add.
      const core::Node& like = rc.Pick(nodes.empty() ? rc.config().nodes : nodes);
      core::Node n = rc.NewNode(like, "new" + std::to_string(next_node++));
      Status st = s->AddNode(n);
      if (!st.ok()) {
        errors.push_back("[api] AddNode(" + n.name + "): " + st.ToString());
        return;
      }
      nodes.push_back(n);
    }
    CompareWithRebuild();
  }

  void CompareWithRebuild() {
    std::unique_ptr<Scheduler> r = Rebuild();
    if (!r) return;
    std::string a = Decisions(*s), b = Decisions(*r);
    if (a != b) {
      errors.push_back("[rebuild] right after the change:\n--- incremental ---\n" +
                       a + "--- rebuilt ---\n" + b);
      return;
    }
    const size_t events = s->Preemptions().size();
    s->RunUntilQuiescent();
    r->RunUntilQuiescent();
    a = Decisions(*s) + EventsSince(*s, events);
    b = Decisions(*r) + EventsSince(*r, 0);
    if (a != b) {
      errors.push_back("[rebuild] after RunUntilQuiescent:\n--- incremental ---\n" +
                       a + "--- rebuilt ---\n" + b);
    }
  }

  void Step() {
    const int32_t x = rc.Uniform(0, 9);
    if (x <= 2) {
      core::Workload w = rc.NextWorkload(now += 100);
      if (s->AddWorkload(w).ok()) live.push_back(w);
    } else if (x <= 4 && !live.empty()) {
      size_t i = size_t(rc.Uniform(0, int32_t(live.size()) - 1));
      Status st = s->RemoveWorkload(live[i].Key());
      if (!st.ok()) errors.push_back("[api] RemoveWorkload: " + st.ToString());
      live.erase(live.begin() + long(i));
    } else if (x <= 6) {
      s->RunCycle();
    } else {
      NodeChange();
    }
  }
};

int32_t EnvInt(const char* name, int32_t def) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : def;
}

void RunSeeds(RandomClusterOptions o, uint64_t salt) {
  int32_t seeds = EnvInt("ALLOT_PROP_SEEDS", 120);
  int32_t only = EnvInt("ALLOT_PROP_SEED", -1);
  for (int32_t seed = 0; seed < seeds; ++seed) {
    if (only >= 0 && seed != only) continue;
    Run run(uint64_t(seed) * 1000003 + salt, o);
    if (!run.s) {
      ADD_FAILURE() << "seed " << seed << ": " << run.errors[0];
      continue;
    }
    run.s->RunUntilQuiescent();
    int step = 0;
    for (; step < 60 && run.errors.empty(); ++step) run.Step();
    if (!run.errors.empty()) {
      ADD_FAILURE() << "seed " << seed << " step " << step - 1 << ": "
                    << run.errors[0];
    }
  }
}

TEST(SchedulerNodeChanges, RandomClusters) { RunSeeds({}, 1); }

TEST(SchedulerNodeChanges, PreemptionHeavyClusters) {
  RandomClusterOptions o;
  o.preemption_heavy = true;
  RunSeeds(o, 2);
}

TEST(SchedulerNodeChanges, AmpleNodeClusters) {
  RandomClusterOptions o;
  o.ample_nodes = true;
  RunSeeds(o, 3);
}

// Node changes and evictions leave their requeue for the next cycle
// (each ClusterQueue is settled when next touched, or when a cycle starts).
// That must be unobservable: two schedulers of the same random cluster get
// the same random calls (arrivals, finishes, cycles, updates, removals,
// additions of nodes, evictions), one of them settled at once after each
// call (TEST_SettleAll, as the requeue was eager before); after every call
// both must answer alike: admissions with placements, pending workloads
// with positions, reasons and set-aside flags, ClusterQueue statuses,
// preemptions.
class Lockstep {
 public:
  Lockstep(uint64_t seed, RandomClusterOptions o) : rc_(seed, o) {
    for (auto* s : {&lazy_, &eager_}) {
      auto created = Scheduler::Create(rc_.config());
      if (created.ok()) *s = std::move(*created);
    }
    nodes_ = rc_.config().nodes;
    for (const auto& w : rc_.config().workloads) live_.push_back(w.Key());
  }
  bool ok() const { return lazy_ && eager_; }

  // Runs one random call on both; returns what differs ("" when nothing).
  std::string Step() {
    std::string what;
    const int32_t x = rc_.Uniform(0, 11);
    if (x <= 2) {
      core::Workload w = rc_.NextWorkload(now_ += 100);
      what = "add " + w.Key();
      if (Both([&](Scheduler& s) { return s.AddWorkload(w); }).ok()) {
        live_.push_back(w.Key());
      }
    } else if (x <= 3 && !live_.empty()) {
      size_t i = size_t(rc_.Uniform(0, int32_t(live_.size()) - 1));
      what = "remove " + live_[i];
      (void)Both([&](Scheduler& s) { return s.RemoveWorkload(live_[i]); });
      live_.erase(live_.begin() + long(i));
    } else if (x <= 5) {
      what = "cycle";
      std::string a = CycleText(lazy_->RunCycle());
      std::string b = CycleText(eager_->RunCycle());
      if (a != b) return "cycle decided " + a + " vs " + b;
    } else if (x <= 6) {
      what = "quiesce";
      lazy_->RunUntilQuiescent();
      eager_->RunUntilQuiescent();
    } else if (x <= 7 && !lazy_->Admitted().empty()) {
      const auto admitted = lazy_->Admitted();
      const std::string key =
          admitted[size_t(rc_.Uniform(0, int32_t(admitted.size()) - 1))]
              .workload;
      what = "evict " + key;
      (void)Both([&](Scheduler& s) { return s.EvictWorkload(key); });
    } else if (x <= 9 && !nodes_.empty()) {
      size_t i = size_t(rc_.Uniform(0, int32_t(nodes_.size()) - 1));
      core::Node n = rc_.MutateNode(nodes_[i]);
      what = "update " + n.name;
      if (Both([&](Scheduler& s) { return s.UpdateNode(n); }).ok())
        nodes_[i] = n;
    } else if (x <= 10 && nodes_.size() > 1) {
      size_t i = size_t(rc_.Uniform(0, int32_t(nodes_.size()) - 1));
      what = "remove node " + nodes_[i].name;
      if (Both([&](Scheduler& s) {
            return s.RemoveNode(nodes_[i].name);
          }).ok()) {
        nodes_.erase(nodes_.begin() + long(i));
      }
    } else if (!nodes_.empty()) {
      core::Node n =
          rc_.NewNode(rc_.Pick(nodes_), "new" + std::to_string(next_node_++));
      what = "add node " + n.name;
      if (Both([&](Scheduler& s) { return s.AddNode(n); }).ok())
        nodes_.push_back(n);
    }
    eager_->TEST_SettleAll();
    std::string a = State(*lazy_), b = State(*eager_);
    if (a != b) return what + ":\n--- lazy ---\n" + a + "--- eager ---\n" + b;
    return "";
  }

 private:
  // Runs f on both; their statuses must agree.
  template <typename F>
  Status Both(F f) {
    Status a = f(*lazy_), b = f(*eager_);
    if (a.code() != b.code())
      errors_ +=
          "statuses differ: " + a.ToString() + " vs " + b.ToString() + "\n";
    return a;
  }

  static std::string CycleText(const CycleResult& r) {
    std::string s = std::to_string(r.attempts) + " tried:";
    for (const auto& k : r.admitted) s += " +" + k;
    for (const auto& e : r.preempted) s += " -" + e.workload;
    return s;
  }

  std::string State(const Scheduler& s) const {
    std::string out = errors_ + Decisions(s) + EventsSince(s, 0);
    for (const auto& cq : rc_.config().cluster_queues) {
      auto st = s.GetClusterQueueStatus(cq.name);
      out += cq.name + " pending " + std::to_string(st->pending) +
             " inadmissible " + std::to_string(st->inadmissible) +
             " admitted " + std::to_string(st->admitted) + "\n";
    }
    for (const auto& [key, p] : s.Explain(live_)) {
      out += "X " + key + " #" + std::to_string(p.position) + " " + p.reason +
             "\n";
    }
    return out;
  }

  RandomCluster rc_;
  std::unique_ptr<Scheduler> lazy_, eager_;
  std::vector<core::Node> nodes_;
  std::vector<std::string> live_;
  std::string errors_;
  int64_t now_ = 1000;
  int32_t next_node_ = 0;
};

void RunLockstep(RandomClusterOptions o, uint64_t salt) {
  int32_t seeds = EnvInt("ALLOT_PROP_SEEDS", 120);
  int32_t only = EnvInt("ALLOT_PROP_SEED", -1);
  for (int32_t seed = 0; seed < seeds; ++seed) {
    if (only >= 0 && seed != only) continue;
    Lockstep run(uint64_t(seed) * 1000003 + salt, o);
    ASSERT_TRUE(run.ok()) << "seed " << seed;
    std::string diff;
    int step = 0;
    for (; step < 80 && diff.empty(); ++step) diff = run.Step();
    EXPECT_EQ(diff, "") << "seed " << seed << " step " << step - 1;
  }
}

TEST(SchedulerNodeChanges, LazyRequeueIsUnobservable) {
  RunLockstep({}, 11);
  RandomClusterOptions heavy;
  heavy.preemption_heavy = true;
  RunLockstep(heavy, 12);
}

// The contract's edges, one each: unknown nodes, stranded placements and a
// UUID another node holds are refused; an eviction requeues.
TEST(SchedulerNodeChanges, RefusalsChangeNothing) {
  RandomCluster rc(7);
  core::Config c = rc.config();
  auto created = Scheduler::Create(c);
  ASSERT_TRUE(created.ok());
  Scheduler& s = **created;
  core::Node ghost = c.nodes[0];
  ghost.name = "ghost";
  EXPECT_EQ(s.UpdateNode(ghost).code(), StatusCode::kNotFound);
  EXPECT_EQ(s.RemoveNode("ghost").code(), StatusCode::kNotFound);
  EXPECT_EQ(s.EvictWorkload("team-0/none").code(), StatusCode::kNotFound);
  if (c.nodes.size() >= 2 && !c.nodes[1].gpus.empty()) {
    core::Node dup = c.nodes[0];
    dup.gpus.push_back(c.nodes[1].gpus[0]);
    EXPECT_EQ(s.UpdateNode(dup).code(), StatusCode::kAlreadyExists);
  }
}

}  // namespace
}  // namespace allot::sched
