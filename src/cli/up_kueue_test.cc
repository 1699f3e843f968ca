// Kueue's manifests against `allot up`, through the CLI as a Kueue user
// would use it: the quick-start (a LocalQueue and a Job in the namespace
// default, v1beta2), Jobs with metadata.generateName, a file with kinds
// Allot does not run, and `allot get -o yaml` in both API versions applied
// back. The manifests are ours (examples/kueue/), written to mirror
// Kueue's; each says which.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "cli/up_fixture.h"

namespace allot::cli {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

std::string Example(const std::string& file) {
  return std::string(ALLOT_SOURCE_DIR) + "/examples/kueue/" + file;
}

class UpKueueTest : public testing::UpFixture {
 protected:
  // `allot up` whose node offers 16 CPUs and 64Gi, whatever the host has
  // (Kueue's quick-start asks for 3 CPUs).
  void StartBig() { Start({"--cpus", "16", "--memory", "64Gi"}); }

  // `allot ARGS` against the server, as the admin.
  Ran Cli(std::vector<std::string> args) {
    args.insert(args.begin() + 1, {"--server", url_});
    return Allot(std::move(args), token_);
  }
};

// Done means (issue 16): the quick-start's setup, then its Job, and the Job
// is admitted and placed, in the tenant default that always exists.
TEST_F(UpKueueTest, QuickStartIsAdmittedAndPlaced) {
  StartBig();
  Ran out = Cli({"apply", "-f", Example("quick-start-setup.yaml")});
  ASSERT_EQ(out.code, 0) << out.err;
  EXPECT_NE(out.out.find("ClusterQueue shared created"), std::string::npos) << out.out;
  EXPECT_NE(out.out.find("LocalQueue default/user-queue created"), std::string::npos)
      << out.out;
  out = Cli({"apply", "-f", Example("quick-start-job.yaml")});
  ASSERT_EQ(out.code, 0) << out.err;
  EXPECT_NE(out.out.find("Workload default/hello-queue created"), std::string::npos)
      << out.out;
  json::value w = WaitFor("default/hello-queue", [](const json::value& w) {
    return State(w) == "Running" || State(w) == "Succeeded";
  });
  const json::value& psa = w.at("status").at("admission").at("podSetAssignments").at(0);
  EXPECT_EQ(psa.at("count").as_int64(), 3);
  EXPECT_EQ(psa.at("placements").as_array().size(), 3u) << json::serialize(w);
  // allot up runs processes: the image is not used, and the log says so
  // before the command's own output.
  const std::string want =
      "allot agent: image registry.k8s.io/e2e-test-images/agnhost:2.53 not used: this node "
      "runs processes and ignores images (--ignore-images); the command runs on the host\n"
      "admitted by the queue\n";
  std::string log;
  allot::testing::WaitFor(
      [&] {
        log = Cli({"logs", "hello-queue"}).out;
        return log.find(want) != std::string::npos;
      },
      std::chrono::seconds(20), std::chrono::milliseconds(100));
  EXPECT_NE(log.find(want), std::string::npos) << log;
  // The tenant default is built in: it cannot be deleted.
  out = Cli({"delete", "tenant", "default"});
  EXPECT_NE(out.code, 0);
  EXPECT_NE(out.err.find("tenant default always exists"), std::string::npos) << out.err;
}

// A Workload with spec.active: false is held out of its queue (Suspended)
// while the quota it would fit stays free for others.
TEST_F(UpKueueTest, InactiveWorkloadIsHeld) {
  StartBig();
  ASSERT_EQ(Cli({"apply", "-f", Example("quick-start-setup.yaml")}).code, 0);
  int code = 0;
  json::value r = Call("POST", "/api/v1/apply", R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: held, namespace: default}
spec:
  queueName: user-queue
  active: false
  podSets:
  - count: 1
    template:
      spec:
        containers: [{name: c, command: [sleep, "30"], resources: {requests: {cpu: 1}}}]
)",
                       &code);
  ASSERT_EQ(code, 200) << json::serialize(r);
  json::value w = Get("/api/v1/workloads/default/held", &code);
  ASSERT_EQ(code, 200);
  EXPECT_EQ(State(w), "Suspended") << json::serialize(w);
  EXPECT_FALSE(w.at("status").as_object().contains("admission"));
  EXPECT_EQ(w.at("spec").at("active"), json::value(false));
  ASSERT_EQ(Cli({"apply", "-f", Example("quick-start-job.yaml")}).code, 0);
  WaitFor("default/hello-queue", [](const json::value& w) {
    return State(w) == "Running" || State(w) == "Succeeded";
  });
  EXPECT_EQ(State(Get("/api/v1/workloads/default/held", &code)), "Suspended");
  Ran del = Cli({"delete", "workload", "held", "-t", "default"});
  EXPECT_EQ(del.code, 0) << del.err;
}

// The server names generateName objects; applying the file again makes new
// ones, as `kubectl create` does.
TEST_F(UpKueueTest, GenerateNameMakesNewObjectsEachTime) {
  StartBig();
  ASSERT_EQ(Cli({"apply", "-f", Example("generate-name-jobs.yaml")}).code, 0);
  Ran again = Cli({"apply", "-f", Example("generate-name-jobs.yaml")});
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_NE(again.out.find("ClusterQueue batch unchanged"), std::string::npos) << again.out;
  int code = 0;
  json::value list = Get("/api/v1/workloads?tenant=default", &code);
  ASSERT_EQ(code, 200);
  std::set<std::string> names;
  const std::regex generated("sample-job-[bcdfghjklmnpqrstvwxz2456789]{5}");
  for (const json::value& w : list.at("items").as_array()) {
    std::string name(w.at("metadata").at("name").as_string());
    EXPECT_TRUE(std::regex_match(name, generated)) << name;
    EXPECT_EQ(w.at("metadata").at("generateName").as_string(), "sample-job-");
    names.insert(name);
  }
  EXPECT_EQ(names.size(), 4u) << json::serialize(list);
  // The second apply says the two names it made.
  int said = 0;
  for (const std::string& n : names) {
    said += again.out.find("Workload default/" + n + " created") != std::string::npos;
  }
  EXPECT_EQ(said, 2) << again.out;
}

// Kinds Allot does not run: refused whole with one message, or skipped.
TEST_F(UpKueueTest, UnsupportedKindsAreRefusedOrSkipped) {
  StartBig();
  ASSERT_EQ(Cli({"apply", "-f", Example("quick-start-setup.yaml")}).code, 0);
  Ran out = Cli({"apply", "-f", Example("unsupported-kinds.yaml")});
  EXPECT_EQ(out.code, 1);
  EXPECT_NE(out.err.find("documents 0 (Deployment default/web, apps/v1), 1 (JobSet "
                         "default/sleep-, jobset.x-k8s.io/v1alpha2): Allot does not "
                         "run these kinds"),
            std::string::npos)
      << out.err;
  int code = 0;
  Get("/api/v1/workloads/default/batch-step", &code);
  EXPECT_EQ(code, 404);  // Nothing applied.
  out = Cli({"apply", "--skip-unsupported", "-f", Example("unsupported-kinds.yaml")});
  ASSERT_EQ(out.code, 0) << out.err;
  EXPECT_NE(out.out.find("Workload default/batch-step created"), std::string::npos) << out.out;
  EXPECT_NE(out.out.find("Deployment default/web skipped (apps/v1, document 0"),
            std::string::npos)
      << out.out;
  EXPECT_NE(out.out.find("JobSet default/sleep- skipped (jobset.x-k8s.io/v1alpha2, "
                         "document 1"),
            std::string::npos)
      << out.out;
}

// What `allot get -o yaml` prints applies again unchanged, in both Kueue
// API versions (and the default is v1beta2).
TEST_F(UpKueueTest, GetYamlAppliesBackInBothVersions) {
  StartBig();
  ASSERT_EQ(Cli({"apply", "-f", Example("quick-start-setup.yaml")}).code, 0);
  ASSERT_EQ(Cli({"apply", "-f", Example("cohort-shared-quota.yaml")}).code, 0);
  const std::vector<std::vector<std::string>> objects = {
      {"clusterqueue", "team-a-cq"}, {"clusterqueue", "shared"},
      {"cohort", "research"},        {"flavor", "h100"},
      {"localqueue", "user-queue"},  {"tenant", "team-a"},
      {"tenant", "default"}};
  for (const char* version : {"", "kueue.x-k8s.io/v1beta2", "v1beta1"}) {
    for (const auto& o : objects) {
      SCOPED_TRACE(std::string(version) + " " + o[0] + " " + o[1]);
      std::vector<std::string> args = {"get", o[0], o[1], "-o", "yaml"};
      if (*version) args.insert(args.end(), {"--api-version", version});
      Ran got = Cli(args);
      ASSERT_EQ(got.code, 0) << got.err;
      if (o[0] != "tenant") {
        const std::string want = std::string(version) == "v1beta1" ? "kueue.x-k8s.io/v1beta1"
                                                                   : "kueue.x-k8s.io/v1beta2";
        EXPECT_NE(got.out.find(want), std::string::npos) << got.out;
      }
      if (o[1] == "team-a-cq") {
        EXPECT_NE(got.out.find(std::string(version) == "v1beta1" ? "  cohort: " : "  cohortName: "),
                  std::string::npos)
            << got.out;
      }
      const std::string file = dir_ + "/got.yaml";
      std::ofstream(file) << got.out;
      Ran back = Cli({"apply", "-f", file});
      ASSERT_EQ(back.code, 0) << back.err << "\n" << got.out;
      EXPECT_NE(back.out.find("unchanged"), std::string::npos) << back.out;
      EXPECT_EQ(back.out.find("configured"), std::string::npos) << back.out;
    }
  }
  Ran bad = Cli({"get", "cq", "shared", "-o", "yaml", "--api-version", "v2"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("expected kueue.x-k8s.io/v1beta2 or kueue.x-k8s.io/v1beta1"),
            std::string::npos)
      << bad.err;
}

}  // namespace
}  // namespace allot::cli
