// Helpers for the scheduler's scenario tests (scheduler*_test.cc).
//
// A scenario is a cluster written as manifests (YAML, the same documents a
// user would write), run to quiescence through the public Scheduler API, and
// an expected outcome: which workloads end up admitted, which evictions
// happened (victim, preemptor and Kueue's reason), and which workloads stay
// pending with a reason containing a given substring. Lists are compared
// sorted, so a scenario states a set, not an order.
//
// The YAML builders of the documents that every scenario repeats (flavors,
// nodes, local queues, workloads) live in testing/builders.h, shared by all
// test binaries; ClusterQueues and Cohorts are written out in each test so
// that the quota under test is visible there.
//
// Test-only; header-only so each test file stays self-contained.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/manifest.h"
#include "sched/scheduler.h"
#include "testing/builders.h"

namespace allot::sched::testing {

// The shared builders (testing/builders.h), under this namespace's names as
// before, so scenario files and the server and cli tests that use
// sched::testing keep reading the same.
using allot::testing::Flavor;
using allot::testing::GpuCq;
using allot::testing::GpuNodes;
using allot::testing::LocalQueue;
using allot::testing::Namespace;
using allot::testing::PriorityClass;
using allot::testing::Wl;
using allot::testing::operator+;

// ---------------------------------------------------------------------------
// Building and observing a scheduler.

// Parses, validates and builds. A failure names the file "scenario.yaml".
inline Result<std::unique_ptr<Scheduler>> BuildScheduler(
    const std::string& yaml) {
  core::Config config;
  Status st = core::ParseManifests(yaml, "scenario.yaml", &config);
  if (!st.ok()) return st;
  st = core::ValidateConfig(&config);
  if (!st.ok()) return st;
  return Scheduler::Create(config);
}

// "victim by preemptor: Reason".
inline std::string Describe(const PreemptionEvent& e) {
  return e.workload + " by " + e.preemptor + ": " + ToString(e.reason);
}

struct Outcome {
  std::vector<std::string> admitted;  // Keys, sorted.
  std::map<std::string, std::vector<std::string>>
      flavors;                         // Key -> every flavor given.
  std::vector<std::string> preempted;  // Describe(), sorted.
  std::vector<std::pair<std::string, std::string>>
      pending;  // (key, reason), sorted.
};

inline Outcome Observe(const Scheduler& s) {
  Outcome o;
  for (const AdmittedWorkload& a : s.Admitted()) {
    o.admitted.push_back(a.workload);
    for (const core::PodSetAssignment& psa : a.admission.pod_set_assignments) {
      for (const auto& [r, f] : psa.flavors) o.flavors[a.workload].push_back(f);
    }
  }
  for (const PreemptionEvent& e : s.Preemptions())
    o.preempted.push_back(Describe(e));
  for (const PendingWorkload& p : s.Pending())
    o.pending.emplace_back(p.workload, p.reason);
  std::sort(o.admitted.begin(), o.admitted.end());
  std::sort(o.preempted.begin(), o.preempted.end());
  std::sort(o.pending.begin(), o.pending.end());
  return o;
}

struct Scenario {
  std::string name;
  std::string yaml;
  std::vector<std::string> admitted;   // Keys.
  std::vector<std::string> preempted;  // "victim by preemptor: Reason".
  // (key, substring of its pending reason; "" checks only that it pends).
  std::vector<std::pair<std::string, std::string>> pending;
  // (key, flavor): every resource of every pod set of that admitted
  // workload got this flavor. Optional.
  std::vector<std::pair<std::string, std::string>> flavors = {};
};

inline std::vector<std::string> Sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// Compares an outcome with what `sc` expects (the caller adds the trace).
inline void ExpectOutcome(const Scenario& sc, const Outcome& got) {
  EXPECT_EQ(got.admitted, Sorted(sc.admitted)) << "admitted";
  EXPECT_EQ(got.preempted, Sorted(sc.preempted)) << "preempted";
  std::vector<std::string> got_keys, want_keys;
  for (const auto& [k, r] : got.pending) got_keys.push_back(k);
  for (const auto& [k, r] : sc.pending) want_keys.push_back(k);
  // A key may be listed more than once, to check several substrings.
  want_keys = Sorted(want_keys);
  want_keys.erase(std::unique(want_keys.begin(), want_keys.end()),
                  want_keys.end());
  EXPECT_EQ(got_keys, Sorted(want_keys)) << "pending";
  for (const auto& [key, flavor] : sc.flavors) {
    auto it = got.flavors.find(key);
    if (it == got.flavors.end()) {
      ADD_FAILURE() << key << " has no flavors (not admitted?)";
      continue;
    }
    for (const std::string& f : it->second)
      EXPECT_EQ(f, flavor) << key << " flavor";
  }
  for (const auto& [key, want] : sc.pending) {
    for (const auto& [k, reason] : got.pending) {
      if (k == key) {
        EXPECT_NE(reason.find(want), std::string::npos)
            << key << ": reason \"" << reason << "\" lacks \"" << want << "\"";
      }
    }
  }
}

// Builds `sc`, runs it until quiescent and checks the outcome.
inline void RunScenario(const Scenario& sc) {
  SCOPED_TRACE("scenario: " + sc.name);
  auto s = BuildScheduler(sc.yaml);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  (*s)->RunUntilQuiescent();
  ExpectOutcome(sc, Observe(**s));
}

}  // namespace allot::sched::testing
