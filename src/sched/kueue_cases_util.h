// Builders for the scenarios translated from Kueue's own unit tests
// (kueue_*_test.cc): ClusterQueues and Cohorts with any resources, flavors,
// limits and policies, written as the YAML a user would apply, and a runner
// that builds the scheduler, runs it to quiescence and checks the outcome
// (admitted where, preempted whom with which reason, pending).
//
// Conventions, so that a case reads like Kueue's:
//  - a ClusterQueue "q" gets LocalQueue q/q, so its workloads are "q/<name>"
//    (Wl("q/in")); Kueue's underscores become dashes ("q_borrowing" is
//    "q-borrowing"), as names are DNS labels here;
//  - flavors select every node (no nodeLabels) unless a case says
//    otherwise, and the nodes (Nodes()) are far larger than any quota, so
//    placement never decides: only quota does, as in Kueue without TAS;
//  - Kueue's unit tests of one function (GetTargets, Assign) stop after it;
//    these run whole cycles to quiescence, and each case says where the end
//    state goes further than the Kueue test and why.
//
// Test-only, header-only.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <iostream>
#include <ostream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/manifest.h"
#include "sched/test_util.h"

namespace allot::sched::kueue_cases {

using testing::Wl;

// The quotas of one flavor in a resource group:
//   Fq("default").R("cpu", "2").R("memory", "4Gi", /*borrow=*/"", "2Gi")
// An empty limit is unset.
class Fq {
 public:
  explicit Fq(std::string flavor) : flavor_(std::move(flavor)) {}
  Fq& R(const std::string& resource, const std::string& nominal,
        const std::string& borrowing_limit = "",
        const std::string& lending_limit = "") {
    resources_.push_back({resource, nominal, borrowing_limit, lending_limit});
    return *this;
  }
  const std::string& flavor() const { return flavor_; }
  std::vector<std::string> Resources() const {
    std::vector<std::string> out;
    for (const auto& r : resources_) out.push_back(r.name);
    return out;
  }
  std::string Yaml(const std::string& indent) const {
    std::string out = indent + "- name: " + flavor_ + "\n" + indent +
                      "  resources:\n";
    for (const auto& r : resources_) {
      out += indent + "  - {name: " + r.name + ", nominalQuota: \"" +
             r.nominal + "\"";
      if (!r.borrowing.empty())
        out += ", borrowingLimit: \"" + r.borrowing + "\"";
      if (!r.lending.empty()) out += ", lendingLimit: \"" + r.lending + "\"";
      out += "}\n";
    }
    return out;
  }

 private:
  struct Res {
    std::string name, nominal, borrowing, lending;
  };
  std::string flavor_;
  std::vector<Res> resources_;
};

// resourceGroups (at two spaces of indentation), one group per entry.
inline std::string GroupsYaml(const std::vector<std::vector<Fq>>& groups) {
  if (groups.empty()) return "";
  std::string out = "  resourceGroups:\n";
  for (const auto& g : groups) {
    out += "  - coveredResources: [";
    std::vector<std::string> res = g.front().Resources();
    for (size_t i = 0; i < res.size(); ++i) out += (i ? ", " : "") + res[i];
    out += "]\n    flavors:\n";
    for (const Fq& f : g) out += f.Yaml("    ");
  }
  return out;
}

// A ClusterQueue selecting every namespace, with LocalQueue <name>/q.
class Cq {
 public:
  explicit Cq(std::string name) : name_(std::move(name)) {}
  Cq& Cohort(const std::string& c) {
    cohort_ = c;
    return *this;
  }
  // One resource group per call, flavors in the order tried.
  Cq& Group(std::vector<Fq> flavors) {
    groups_.push_back(std::move(flavors));
    return *this;
  }
  // preemption: withinClusterQueue and reclaimWithinCohort ("" leaves one
  // unset, i.e. Never).
  Cq& Preempt(const std::string& within, const std::string& reclaim) {
    within_ = within;
    reclaim_ = reclaim;
    return *this;
  }
  // borrowWithinCohort: {policy: LowerPriority, maxPriorityThreshold}.
  Cq& BorrowWithinCohort(std::optional<int> max_priority_threshold) {
    borrow_ = true;
    threshold_ = max_priority_threshold;
    return *this;
  }
  // flavorFungibility as a flow mapping, e.g. "{whenCanBorrow: TryNextFlavor}".
  Cq& Fungibility(const std::string& flow) {
    fungibility_ = flow;
    return *this;
  }
  Cq& Weight(const std::string& w) {
    weight_ = w;
    return *this;
  }
  Cq& StrictFifo() {
    strict_ = true;
    return *this;
  }
  std::string Yaml() const {
    std::string out =
        "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\n"
        "metadata: {name: " + name_ + "}\nspec:\n";
    if (!cohort_.empty()) out += "  cohort: " + cohort_ + "\n";
    out += "  namespaceSelector: {}\n";
    if (strict_) out += "  queueingStrategy: StrictFIFO\n";
    if (!within_.empty() || !reclaim_.empty() || borrow_) {
      out += "  preemption:\n";
      if (!within_.empty()) out += "    withinClusterQueue: " + within_ + "\n";
      if (!reclaim_.empty())
        out += "    reclaimWithinCohort: " + reclaim_ + "\n";
      if (borrow_) {
        out += "    borrowWithinCohort: {policy: LowerPriority";
        if (threshold_)
          out += ", maxPriorityThreshold: " + std::to_string(*threshold_);
        out += "}\n";
      }
    }
    if (!fungibility_.empty())
      out += "  flavorFungibility: " + fungibility_ + "\n";
    if (!weight_.empty()) out += "  fairSharing: {weight: " + weight_ + "}\n";
    out += GroupsYaml(groups_) + "---\n";
    return out + testing::LocalQueue(name_, "q", name_);
  }
  operator std::string() const { return Yaml(); }  // NOLINT: YAML sums.

 private:
  std::string name_, cohort_, within_, reclaim_, fungibility_, weight_;
  bool borrow_ = false;
  bool strict_ = false;
  std::optional<int> threshold_;
  std::vector<std::vector<Fq>> groups_;
};

// A Cohort, under `parent` when given, with quota of its own when grouped.
class Co {
 public:
  explicit Co(std::string name) : name_(std::move(name)) {}
  Co& Parent(const std::string& p) {
    parent_ = p;
    return *this;
  }
  Co& Group(std::vector<Fq> flavors) {
    groups_.push_back(std::move(flavors));
    return *this;
  }
  Co& Weight(const std::string& w) {
    weight_ = w;
    return *this;
  }
  std::string Yaml() const {
    std::string out =
        "apiVersion: kueue.x-k8s.io/v1beta1\nkind: Cohort\nmetadata: {name: " +
        name_ + "}\n";
    if (parent_.empty() && groups_.empty() && weight_.empty())
      return out + "---\n";
    out += "spec:\n";
    if (!parent_.empty()) out += "  parentName: " + parent_ + "\n";
    if (!weight_.empty()) out += "  fairSharing: {weight: " + weight_ + "}\n";
    return out + GroupsYaml(groups_) + "---\n";
  }
  operator std::string() const { return Yaml(); }  // NOLINT: YAML sums.

 private:
  std::string name_, parent_, weight_;
  std::vector<std::vector<Fq>> groups_;
};

inline std::string operator+(const std::string& a, const Cq& c) {
  return a + c.Yaml();
}
inline std::string operator+(const std::string& a, const Co& c) {
  return a + c.Yaml();
}
using testing::operator+;

// ResourceFlavors selecting every node.
inline std::string Flavors(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += allot::testing::FlavorSpec(n, "");
  return out;
}

// Four nodes with 1000 CPUs, 16Ti of memory and 64 GPUs each: far more
// than any quota of these cases, so placement never decides.
inline std::string Nodes() {
  std::string out;
  for (int n = 0; n < 4; ++n) {
    const std::string name = "n" + std::to_string(n);
    std::vector<std::string> gpus;
    for (int g = 0; g < 64; ++g)
      gpus.push_back("GPU-" + name + "-" + std::to_string(g));
    out += allot::testing::Node(name, "", "1000", "16Ti", gpus);
  }
  return out;
}

// The flavors and the nodes of a case whose flavors select every node.
inline std::string Base(const std::vector<std::string>& flavors) {
  return Flavors(flavors) + Nodes();
}

inline const std::string kFairSharing =
    "apiVersion: allot.dev/v1\nkind: SchedulerConfig\n"
    "fairSharing: {enable: true}\n---\n";

// One case: where it comes from in Kueue, the cluster, and the end state.
struct Case {
  // "<Kueue test file>: <test case name>".
  std::string source;
  std::string yaml;
  std::vector<std::string> admitted;
  std::vector<std::string> preempted;  // "victim by preemptor: Reason".
  std::vector<std::pair<std::string, std::string>> pending = {};
  std::vector<std::pair<std::string, std::string>> flavors = {};
  // Changes to the parsed config before the scheduler is built, for what
  // the manifests cannot say yet.
  std::function<void(core::Config*)> tweak = nullptr;
};

// Builds the case, runs it to quiescence and checks the outcome.
inline void RunCase(const Case& c) {
  SCOPED_TRACE("Kueue " + c.source);
  // KUEUE_CASE_DUMP=1 prints the manifests and the outcome, to debug a case.
  const bool dump = std::getenv("KUEUE_CASE_DUMP") != nullptr;
  if (dump) std::cout << c.yaml;
  core::Config config;
  Status st = core::ParseManifests(c.yaml, "scenario.yaml", &config);
  ASSERT_TRUE(st.ok()) << st.ToString();
  st = core::ValidateConfig(&config);
  ASSERT_TRUE(st.ok()) << st.ToString();
  if (c.tweak) c.tweak(&config);
  auto s = Scheduler::Create(config);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  (*s)->RunUntilQuiescent();
  if (dump) {
    for (const AdmittedWorkload& a : (*s)->Admitted()) {
      std::cout << "admitted " << a.workload << ":";
      for (const auto& psa : a.admission.pod_set_assignments)
        for (const auto& [r, f] : psa.flavors) std::cout << " " << r << "=" << f;
      std::cout << "\n";
    }
    for (const PreemptionEvent& e : (*s)->Preemptions())
      std::cout << "preempted " << testing::Describe(e) << "\n";
    for (const PendingWorkload& p : (*s)->Pending())
      std::cout << "pending " << p.workload << ": " << p.reason << "\n";
  }
  testing::Scenario sc{c.source, "", c.admitted, c.preempted, c.pending,
                       c.flavors};
  testing::ExpectOutcome(sc, testing::Observe(**s));
}

// gtest prints a case by its source.
inline void PrintTo(const Case& c, std::ostream* os) { *os << c.source; }

// A gtest name from the case's Kueue name: letters and digits, words
// joined in CamelCase ("preempt with hierarchical advantage" ->
// PreemptWithHierarchicalAdvantage), prefixed by its index for uniqueness.
inline std::string CaseName(const ::testing::TestParamInfo<Case>& info) {
  const std::string& s = info.param.source;
  const size_t colon = s.find(": ");
  std::string name;
  bool up = true;
  for (size_t i = colon == std::string::npos ? 0 : colon + 2; i < s.size();
       ++i) {
    const char ch = s[i];
    if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
        (ch >= '0' && ch <= '9')) {
      name += up && ch >= 'a' && ch <= 'z' ? char(ch - 'a' + 'A') : ch;
      up = false;
    } else {
      up = true;
    }
  }
  return "C" + std::to_string(info.index) + "_" + name;
}

class KueueCaseTest : public ::testing::TestWithParam<Case> {};

}  // namespace allot::sched::kueue_cases

// One parameterized test per case of `cases` (a std::vector<Case>), named
// after its Kueue test case: KUEUE_CASES(KueueHierarchicalTest, Cases()).
#define KUEUE_CASES(suite, cases)                                         \
  class suite : public ::allot::sched::kueue_cases::KueueCaseTest {};     \
  TEST_P(suite, Case) { ::allot::sched::kueue_cases::RunCase(GetParam()); } \
  INSTANTIATE_TEST_SUITE_P(Kueue, suite, ::testing::ValuesIn(cases),      \
                           ::allot::sched::kueue_cases::CaseName)

namespace allot::sched::kueue_cases {

}  // namespace allot::sched::kueue_cases
