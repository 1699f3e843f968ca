// examples/kueue/: our manifests written from Kueue's v1beta2 API reference,
// one per idiom of Kueue's site/static/examples, each run through `allot
// schedule --dry-run` (with nodes.yaml, the nodes Kueue's examples assume)
// and checked against what its header comment says happens.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli/dry_run.h"

namespace allot::cli {
namespace {

namespace json = boost::json;

std::string Example(const std::string& file) {
  return std::string(ALLOT_SOURCE_DIR) + "/examples/kueue/" + file;
}

// The dry-run's JSON of nodes.yaml and `files`; fails the test on an error.
json::object DryRun(const std::vector<std::string>& files) {
  std::vector<std::string> paths = {Example("nodes.yaml")};
  for (const std::string& f : files) paths.push_back(Example(f));
  std::ostringstream out, err;
  int rc = RunDryRun(paths, out, err);
  EXPECT_EQ(rc, kExitOk) << err.str();
  if (rc != kExitOk) return {};
  return json::parse(out.str()).as_object();
}

// workload -> its admitted pod sets, for the checks below.
const json::object* Admitted(const json::object& r, const std::string& key) {
  for (const json::value& a : r.at("admitted").as_array()) {
    if (a.at("workload").as_string() == key) return &a.as_object();
  }
  return nullptr;
}

std::string FlavorOf(const json::object& admitted, const char* resource) {
  const json::object& ps = admitted.at("podSets").as_array()[0].as_object();
  return std::string(ps.at("flavors").at(resource).as_string());
}

int64_t CountOf(const json::object& admitted) {
  return admitted.at("podSets").as_array()[0].at("count").as_int64();
}

std::string NodeOf(const json::object& admitted) {
  const json::object& ps = admitted.at("podSets").as_array()[0].as_object();
  return std::string(ps.at("placements").as_array()[0].at("node").as_string());
}

// Kueue's quick-start: three pods of 1 CPU fit the 9 CPUs of quota, in the
// namespace default.
TEST(KueueExamplesTest, QuickStart) {
  json::object r = DryRun({"quick-start-setup.yaml", "quick-start-job.yaml"});
  const json::object* job = Admitted(r, "default/hello-queue");
  ASSERT_NE(job, nullptr) << json::serialize(r);
  EXPECT_EQ(CountOf(*job), 3);
  EXPECT_EQ(FlavorOf(*job, "cpu"), "any-node");
  EXPECT_TRUE(r.at("pending").as_array().empty()) << json::serialize(r);
}

// nodeTaints keep a flavor from workloads that do not tolerate them;
// a flavor's tolerations are its pods'.
TEST(KueueExamplesTest, FlavorsWithTaintsAndTolerations) {
  json::object r = DryRun({"flavors-taints-tolerations.yaml"});
  const json::object* plain = Admitted(r, "default/plain");
  const json::object* tolerant = Admitted(r, "default/tolerant");
  const json::object* cheap = Admitted(r, "default/cheap");
  ASSERT_TRUE(plain && tolerant && cheap) << json::serialize(r);
  EXPECT_EQ(FlavorOf(*plain, "cpu"), "on-demand");
  EXPECT_EQ(NodeOf(*plain), "cpu-01");
  EXPECT_EQ(FlavorOf(*tolerant, "cpu"), "spot");
  EXPECT_EQ(NodeOf(*tolerant), "spot-01");
  EXPECT_EQ(FlavorOf(*cheap, "cpu"), "spot-tolerated");
  EXPECT_EQ(NodeOf(*cheap), "spot-01");
}

// team-a borrows team-b's idle quota; each ClusterQueue selects its team
// by kubernetes.io/metadata.name, which no document gives.
TEST(KueueExamplesTest, CohortSharesQuota) {
  json::object r = DryRun({"cohort-shared-quota.yaml"});
  const json::object* train = Admitted(r, "team-a/train");
  const json::object* eval = Admitted(r, "team-b/eval");
  ASSERT_TRUE(train && eval) << json::serialize(r);
  EXPECT_EQ(CountOf(*train), 3);  // 6 GPUs: 4 of its own, 2 borrowed.
  EXPECT_EQ(train->at("clusterQueue").as_string(), "team-a-cq");
  EXPECT_EQ(eval->at("clusterQueue").as_string(), "team-b-cq");
  EXPECT_TRUE(r.at("pending").as_array().empty()) << json::serialize(r);
}

// The urgent Job preempts the low-priority Workload holding the quota.
TEST(KueueExamplesTest, PriorityClassesPreempt) {
  json::object r = DryRun({"priority-classes.yaml"});
  ASSERT_NE(Admitted(r, "ml/hotfix-eval"), nullptr) << json::serialize(r);
  EXPECT_EQ(Admitted(r, "ml/sweep"), nullptr);
  const json::array& preempted = r.at("preempted").as_array();
  ASSERT_EQ(preempted.size(), 1u) << json::serialize(r);
  EXPECT_EQ(preempted[0].at("workload").as_string(), "ml/sweep");
  EXPECT_EQ(preempted[0].at("preemptor").as_string(), "ml/hotfix-eval");
  EXPECT_EQ(preempted[0].at("reason").as_string(), "InClusterQueue");
}

// 20 pods, at least 5, room for 9: admitted with 9.
TEST(KueueExamplesTest, PartialAdmission) {
  json::object r = DryRun({"partial-admission.yaml"});
  const json::object* job = Admitted(r, "default/render-frames");
  ASSERT_NE(job, nullptr) << json::serialize(r);
  EXPECT_EQ(CountOf(*job), 9);
}

// Two Jobs with the same generateName get two names from it, the same ones
// on every run (the dry-run's fixed seed).
TEST(KueueExamplesTest, GenerateNameJobs) {
  json::object r = DryRun({"generate-name-jobs.yaml"});
  const json::array& admitted = r.at("admitted").as_array();
  ASSERT_EQ(admitted.size(), 2u) << json::serialize(r);
  std::string a(admitted[0].at("workload").as_string());
  std::string b(admitted[1].at("workload").as_string());
  EXPECT_NE(a, b);
  for (const std::string& key : {a, b}) {
    ASSERT_EQ(key.rfind("default/sample-job-", 0), 0u) << key;
    EXPECT_EQ(key.size(), std::string("default/sample-job-").size() + 5) << key;
  }
  EXPECT_EQ(json::serialize(DryRun({"generate-name-jobs.yaml"})),
            json::serialize(r));
}

// The racks of a pod set's placement ("tas-r1-a" is in r1).
std::set<std::string> RacksOf(const json::object& admitted) {
  std::set<std::string> racks;
  const json::object& ps = admitted.at("podSets").as_array()[0].as_object();
  for (const json::value& p : ps.at("placements").as_array()) {
    racks.insert(std::string(p.at("node").as_string()).substr(4, 2));
  }
  return racks;
}

// Topology-aware scheduling: a required rack is one rack, a preferred one
// too when one fits, and a pod set no rack holds waits.
TEST(KueueExamplesTest, TopologyAwareScheduling) {
  json::object r = DryRun({"topology-aware.yaml"});
  const json::object* required = Admitted(r, "default/rack-required");
  const json::object* preferred = Admitted(r, "default/rack-preferred");
  ASSERT_TRUE(required && preferred) << json::serialize(r);
  EXPECT_EQ(RacksOf(*required), std::set<std::string>{"r1"}) << json::serialize(*required);
  EXPECT_EQ(RacksOf(*preferred), std::set<std::string>{"r2"}) << json::serialize(*preferred);
  EXPECT_EQ(Admitted(r, "default/too-wide"), nullptr);
  const json::array& pending = r.at("pending").as_array();
  ASSERT_EQ(pending.size(), 1u) << json::serialize(r);
  EXPECT_EQ(pending[0].at("workload").as_string(), "default/too-wide");
  EXPECT_NE(std::string(pending[0].at("reason").as_string()).find("cloud.provider.com/topology-rack"),
            std::string::npos)
      << json::serialize(pending[0]);
}

// Kinds Allot does not run: one message that names both documents and
// lists the kinds it runs.
TEST(KueueExamplesTest, UnsupportedKindsGiveOneMessage) {
  std::ostringstream out, err;
  int rc = RunDryRun({Example("nodes.yaml"), Example("quick-start-setup.yaml"),
                      Example("unsupported-kinds.yaml")},
                     out, err);
  EXPECT_EQ(rc, kExitUsage);
  EXPECT_EQ(out.str(), "");
  const std::string msg = err.str();
  EXPECT_NE(msg.find("unsupported-kinds.yaml: documents 0 (Deployment "
                     "default/web, apps/v1), 1 (JobSet default/sleep-, "
                     "jobset.x-k8s.io/v1alpha2): Allot does not run these "
                     "kinds; it runs kueue.x-k8s.io/v1beta2 and v1beta1: "
                     "ResourceFlavor"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("batch/v1: Job"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), msg.size() - 1) << "one line: " << msg;
}

}  // namespace
}  // namespace allot::cli
