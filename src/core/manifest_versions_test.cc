// Kueue's API versions: kueue.x-k8s.io/v1beta2 and v1beta1 read to the same
// objects, each with its own spellings (a spelling of the other version is
// an error that gives this one's), and the encoder writes either.
//
// The renames are Kueue's (apis/kueue/v1beta1/*_conversion.go at
// kubernetes-sigs/kueue ff69552): ClusterQueue spec.cohort -> cohortName
// (Convert_v1beta1_ClusterQueueSpec_To_v1beta2_ClusterQueueSpec), the
// flavorFungibility values Borrow and Preempt -> MayStopSearch (same
// function), Workload spec.priorityClassName and priorityClassSource ->
// priorityClassRef (Convert_v1beta1_WorkloadSpec_To_v1beta2_WorkloadSpec);
// Cohort's parent became parentName when the kind left v1alpha1.
#include <gtest/gtest.h>

#include <boost/json/serialize.hpp>
#include <string>
#include <vector>

#include "core/manifest.h"
#include "core/manifest_encode.h"

namespace allot::core {
namespace {

namespace json = boost::json;

// The same cluster in each version; VERSION and the spellings differ.
std::string Cluster(const std::string& version) {
  const bool v2 = version == "v1beta2";
  std::string api = "apiVersion: kueue.x-k8s.io/" + version + "\n";
  return api + R"(kind: ResourceFlavor
metadata: {name: h100}
spec:
  nodeLabels: {gpu: h100}
  nodeTaints: [{key: dedicated, value: gpu, effect: NoSchedule}]
  tolerations: [{key: spot, operator: Exists}]
---
)" + api + R"(kind: Cohort
metadata: {name: research}
spec: {parentName: org, fairSharing: {weight: "2"}}
---
)" + api + R"(kind: ClusterQueue
metadata: {name: cq}
spec:
  )" + (v2 ? "cohortName" : "cohort") + R"(: research
  namespaceSelector: {}
  queueingStrategy: StrictFIFO
  flavorFungibility: {whenCanBorrow: TryNextFlavor, whenCanPreempt: )" +
         (v2 ? "MayStopSearch" : "Preempt") + R"(}
  preemption: {withinClusterQueue: LowerPriority, reclaimWithinCohort: Any}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: h100
      resources: [{name: nvidia.com/gpu, nominalQuota: 8, borrowingLimit: 2}]
---
)" + api + R"(kind: LocalQueue
metadata: {name: lq, namespace: team-a}
spec: {clusterQueue: cq}
---
)" + api + R"(kind: WorkloadPriorityClass
metadata: {name: high}
value: 1000
---
)" + api + R"(kind: Workload
metadata: {name: w, namespace: team-a}
spec:
  queueName: lq
  )" + (v2 ? "priorityClassRef: {group: kueue.x-k8s.io, kind: "
             "WorkloadPriorityClass, name: high}"
           : "priorityClassName: high\n  priorityClassSource: "
             "kueue.x-k8s.io/workloadpriorityclass") + R"(
  podSets:
  - count: 2
    template:
      spec:
        containers: [{name: c, resources: {requests: {nvidia.com/gpu: 1}}}]
)";
}

Config Parse(const std::string& text) {
  Config c;
  Status s = ParseManifests(text, "test.yaml", &c);
  EXPECT_TRUE(s.ok()) << s.message();
  return c;
}

// Both versions read to the same objects (operator== ignores the source).
TEST(ManifestVersionsTest, BothVersionsReadAlike) {
  Config v1 = Parse(Cluster("v1beta1"));
  Config v2 = Parse(Cluster("v1beta2"));
  ASSERT_EQ(v2.cluster_queues.size(), 1u);
  EXPECT_EQ(v2.cluster_queues[0].cohort, "research");
  EXPECT_EQ(v2.cluster_queues[0].flavor_fungibility.when_can_preempt,
            FungibilityPolicy::kMayStopSearch);
  EXPECT_EQ(v2.cohorts[0].parent, "org");
  EXPECT_EQ(v2.workloads[0].priority_class_name, "high");
  EXPECT_TRUE(v1 == v2);
}

// A Kubernetes PriorityClass is no WorkloadPriorityClass: the literal
// priority stays, in either version's spelling.
TEST(ManifestVersionsTest, PodPriorityClassKeepsTheLiteralPriority) {
  const std::string tail = R"(
  queueName: lq
  priority: 7
  podSets: [{count: 1, template: {spec: {containers: [{name: c}]}}}]
)";
  for (const std::string& text :
       {std::string(R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: w}
spec:
  priorityClassRef: {group: scheduling.k8s.io, kind: PriorityClass, name: system-node-critical})") +
            tail,
        std::string(R"(apiVersion: kueue.x-k8s.io/v1beta1
kind: Workload
metadata: {name: w}
spec:
  priorityClassName: system-node-critical
  priorityClassSource: scheduling.k8s.io/priorityclass)") +
            tail}) {
    Config c = Parse(text);
    ASSERT_EQ(c.workloads.size(), 1u);
    EXPECT_EQ(c.workloads[0].priority_class_name, "");
    EXPECT_EQ(c.workloads[0].priority, 7);
  }
}

struct BadCase {
  std::string name;
  std::string yaml;
  std::string message;  // Expected fragment.
  std::string field;
};

// A spelling of the other version names the field and this version's
// spelling.
TEST(ManifestVersionsTest, OtherVersionsSpellingIsAnError) {
  const std::vector<BadCase> cases = {
      {"v1beta1 cohort in v1beta2", R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec: {cohort: research}
)",
       "document 0 (ClusterQueue cq): spec.cohort: field \"cohort\" is "
       "kueue.x-k8s.io/v1beta1's spelling; kueue.x-k8s.io/v1beta2 spells it "
       "cohortName",
       "spec.cohort"},
      {"v1beta2 cohortName in v1beta1", R"(apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec: {cohortName: research}
)",
       "spec.cohortName: field \"cohortName\" is kueue.x-k8s.io/v1beta2's "
       "spelling; kueue.x-k8s.io/v1beta1 spells it cohort",
       "spec.cohortName"},
      {"v1alpha1 parent in v1beta2", R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: c}
spec: {parent: org}
)",
       "spec.parent: field \"parent\" is kueue.x-k8s.io/v1alpha1 and v1beta1's "
       "spelling; kueue.x-k8s.io/v1beta2 spells it parentName",
       "spec.parent"},
      {"v1beta1 fungibility value in v1beta2",
       R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec: {flavorFungibility: {whenCanBorrow: Borrow}}
)",
       "spec.flavorFungibility.whenCanBorrow: value \"Borrow\" is "
       "kueue.x-k8s.io/v1beta1's; kueue.x-k8s.io/v1beta2 spells it "
       "MayStopSearch",
       "spec.flavorFungibility.whenCanBorrow"},
      {"unknown fungibility value in v1beta2",
       R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec: {flavorFungibility: {whenCanPreempt: Sometimes}}
)",
       "unknown value \"Sometimes\" (expected one of: MayStopSearch, "
       "TryNextFlavor)",
       "spec.flavorFungibility.whenCanPreempt"},
      {"v1beta1 priorityClassName in v1beta2",
       R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: w}
spec: {queueName: q, priorityClassName: high, podSets: []}
)",
       "spec.priorityClassName: field \"priorityClassName\" is "
       "kueue.x-k8s.io/v1beta1's spelling; kueue.x-k8s.io/v1beta2 spells it "
       "priorityClassRef.name",
       "spec.priorityClassName"},
      {"v1beta2 priorityClassRef in v1beta1",
       R"(apiVersion: kueue.x-k8s.io/v1beta1
kind: Workload
metadata: {name: w}
spec: {queueName: q, priorityClassRef: {name: high}, podSets: []}
)",
       "spec.priorityClassRef: field \"priorityClassRef\" is "
       "kueue.x-k8s.io/v1beta2's spelling; kueue.x-k8s.io/v1beta1 spells it "
       "priorityClassName and priorityClassSource",
       "spec.priorityClassRef"},
      {"priorityClassRef kind of the other group",
       R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: w}
spec:
  queueName: q
  priorityClassRef: {group: kueue.x-k8s.io, kind: PriorityClass, name: high}
  podSets: [{count: 1, template: {spec: {containers: [{name: c}]}}}]
)",
       "kind \"PriorityClass\" does not go with group kueue.x-k8s.io",
       "spec.priorityClassRef.kind"},
      {"priorityClassRef without a name", R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: w}
spec:
  queueName: q
  priorityClassRef: {group: kueue.x-k8s.io, kind: WorkloadPriorityClass}
  podSets: [{count: 1, template: {spec: {containers: [{name: c}]}}}]
)",
       "required field is missing", "spec.priorityClassRef.name"},
  };
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.name);
    Config config;
    Status s = ParseManifests(c.yaml, "bad.yaml", &config);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find(c.message), std::string::npos) << s.message();
    EXPECT_EQ(s.field(), c.field);
  }
}

// The encoder's spellings per version; each reads back to the object.
TEST(ManifestVersionsTest, EncoderWritesEachVersionsSpelling) {
  ClusterQueue cq;
  cq.name = "cq";
  cq.cohort = "research";
  EXPECT_EQ(json::serialize(EncodeClusterQueue(cq, KueueVersion::kV1beta1)),
            R"({"apiVersion":"kueue.x-k8s.io/v1beta1","kind":"ClusterQueue",)"
            R"("metadata":{"name":"cq"},"spec":{"cohort":"research"}})");
  EXPECT_EQ(json::serialize(EncodeClusterQueue(cq, KueueVersion::kV1beta2)),
            R"({"apiVersion":"kueue.x-k8s.io/v1beta2","kind":"ClusterQueue",)"
            R"("metadata":{"name":"cq"},"spec":{"cohortName":"research"}})");
  Cohort co;
  co.name = "research";
  co.parent = "org";
  for (KueueVersion v : {KueueVersion::kV1beta1, KueueVersion::kV1beta2}) {
    SCOPED_TRACE(KueueApiVersionOf(v));
    EXPECT_EQ(json::serialize(EncodeCohort(co, v).at("spec")),
              R"({"parentName":"org"})");
    Config back = Parse(json::serialize(EncodeClusterQueue(cq, v)) + "\n---\n" +
                        json::serialize(EncodeCohort(co, v)));
    ASSERT_EQ(back.cluster_queues.size(), 1u);
    EXPECT_TRUE(back.cluster_queues[0] == cq);
    EXPECT_TRUE(back.cohorts[0] == co);
  }
}

// A v1beta1 Cohort written with `parent` (Allot's encoder before v1beta2)
// still reads, so that older stores load.
TEST(ManifestVersionsTest, StoredV1beta1CohortWithParentReads) {
  Config c = Parse(R"(apiVersion: kueue.x-k8s.io/v1beta1
kind: Cohort
metadata: {name: research}
spec: {parent: org}
)");
  ASSERT_EQ(c.cohorts.size(), 1u);
  EXPECT_EQ(c.cohorts[0].parent, "org");
}

TEST(ManifestVersionsTest, ParseKueueVersion) {
  EXPECT_EQ(*ParseKueueVersion("kueue.x-k8s.io/v1beta2"),
            KueueVersion::kV1beta2);
  EXPECT_EQ(*ParseKueueVersion("v1beta1"), KueueVersion::kV1beta1);
  Result<KueueVersion> bad = ParseKueueVersion("kueue.x-k8s.io/v1");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("expected kueue.x-k8s.io/v1beta2"),
            std::string::npos);
}

}  // namespace
}  // namespace allot::core

namespace allot::core {
namespace {

// flavorFungibility.preference (both versions), kept in the model, only
// with both policies TryNextFlavor (Kueue's validation rule).
TEST(ManifestVersionsTest, FungibilityPreference) {
  const std::string head =
      "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: "
      "{name: cq}\nspec:\n  flavorFungibility: ";
  Config c = Parse(head +
                   "{whenCanBorrow: TryNextFlavor, whenCanPreempt: "
                   "TryNextFlavor, preference: PreemptionOverBorrowing}\n");
  ASSERT_EQ(c.cluster_queues.size(), 1u);
  EXPECT_EQ(c.cluster_queues[0].flavor_fungibility.preference,
            FungibilityPreference::kPreemptionOverBorrowing);
  EXPECT_EQ(json::serialize(EncodeClusterQueue(c.cluster_queues[0]).at("spec")),
            R"({"flavorFungibility":{"whenCanBorrow":"TryNextFlavor",)"
            R"("preference":"PreemptionOverBorrowing"}})");
  Config none = Parse(head + "{}\n");
  EXPECT_FALSE(none.cluster_queues[0].flavor_fungibility.preference);
  Config bad;
  Status s = ParseManifests(head + "{preference: BorrowingOverPreemption}\n",
                            "bad.yaml", &bad);
  EXPECT_EQ(s.field(), "spec.flavorFungibility.preference");
  EXPECT_NE(s.message().find("preference can only be set when both "
                             "whenCanBorrow and whenCanPreempt are "
                             "TryNextFlavor"),
            std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace allot::core

namespace allot::core {
namespace {

// spec.active (default true) in both Kueue versions and Allot's Workload.
TEST(ManifestVersionsTest, WorkloadActive) {
  const std::string tail =
      "kind: Workload\nmetadata: {name: w}\nspec:\n  queueName: q\n  active: "
      "false\n  podSets: [{count: 1, template: {spec: {containers: [{name: "
      "c}]}}}]\n";
  for (const char* api : {"kueue.x-k8s.io/v1beta1", "kueue.x-k8s.io/v1beta2"}) {
    Config c = Parse(std::string("apiVersion: ") + api + "\n" + tail);
    ASSERT_EQ(c.workloads.size(), 1u);
    EXPECT_FALSE(c.workloads[0].active) << api;
  }
  Config allot = Parse(
      "apiVersion: allot.dev/v1\nkind: Workload\nmetadata: {name: w}\nspec:\n"
      "  queueName: q\n  active: false\n  podSets: [{count: 1, template: {}}]\n");
  ASSERT_EQ(allot.workloads.size(), 1u);
  EXPECT_FALSE(allot.workloads[0].active);
  EXPECT_EQ(json::serialize(EncodeWorkload(allot.workloads[0]).at("spec").at("active")),
            "false");
  Config dflt = Parse(Cluster("v1beta2"));
  EXPECT_TRUE(dflt.workloads[0].active);
}

}  // namespace
}  // namespace allot::core
