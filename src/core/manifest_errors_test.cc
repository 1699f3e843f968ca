// Manifests that fail: bad inputs with their fields and messages, edge cases.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/manifest.h"

namespace allot::core {
namespace {

// Prefix of every test document below.
constexpr char kFlavor[] = R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: h100}
)";
constexpr char kCq[] = R"(
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: team-a-cq}
spec:
  resourceGroups:
  - coveredResources: [nvidia.com/gpu, cpu]
    flavors:
    - name: h100
      resources:
      - {name: nvidia.com/gpu, nominalQuota: 8}
      - {name: cpu, nominalQuota: 8}
---
apiVersion: allot.dev/v1
kind: Node
metadata: {name: gpu-1}
status:
  gpus: [{uuid: GPU-1}, {uuid: GPU-2}]
)";
// An admitted workload; its document index is 3.
std::string AdmittedWorkload(const std::string& name,
                             const std::string& assignment) {
  return R"(
---
apiVersion: allot.dev/v1
kind: Workload
metadata: {name: )" +
         name + R"(}
spec:
  queueName: lq
  podSets:
  - name: main
    count: 2
    template: {resources: {requests: {nvidia.com/gpu: 1}}}
status:
  admission:
    clusterQueue: team-a-cq
    podSetAssignments:
    - name: main
)" + assignment;
}

struct BadCase {
  std::string name;
  std::string yaml;
  std::string message;  // Expected fragment of the message.
  std::string field;    // Expected Status::field().
};

// Each case is wrong in one way; the message must say where and what.
TEST(ManifestTest, BadInputs) {
  const std::string base = std::string(kFlavor) + kCq;
  const std::vector<BadCase> cases = {
      {"kind Allot does not run",
       "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n",
       "bad.yaml: document 0 (Pod p, v1): Allot does not run this kind; it "
       "runs kueue.x-k8s.io/v1beta2 and v1beta1: ResourceFlavor, Topology, "
       "ClusterQueue, Cohort, LocalQueue, WorkloadPriorityClass, Workload; "
       "kueue.x-k8s.io/v1alpha1: Topology, Cohort; v1: Namespace; "
       "batch/v1: Job; "
       "allot.dev/v1: SchedulerConfig, Node, NodePool, Image, Workload, Notebook (allot apply "
       "--skip-unsupported applies the other documents)",
       "kind"},
      {"wrong apiVersion",
       "apiVersion: kueue.x-k8s.io/v1\nkind: ClusterQueue\nmetadata: {name: "
       "x}\n",
       "bad.yaml: document 0: apiVersion: unknown apiVersion "
       "kueue.x-k8s.io/v1 for kind ClusterQueue (Allot reads it in "
       "kueue.x-k8s.io/v1beta2, kueue.x-k8s.io/v1beta1)",
       "apiVersion"},
      {"unknown spec field", base + "---\n" + R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: b}
spec: {cohrt: x}
)",
       "bad.yaml: document 3 (ClusterQueue b): spec.cohrt: unknown field "
       "\"cohrt\" (expected one of: cohort, namespaceSelector,",
       "spec.cohrt"},
      {"bad pool order", R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: b, annotations: {allot.dev/pool-order: "cloud,mars"}}
spec: {}
)",
       "allot.dev/pool-order: 'cloud,mars': give locations in the order wanted",
       "metadata.annotations.allot.dev/pool-order"},
      {"unknown nested field", R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: b}
spec:
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: f, resources: [{name: cpu, nominalQuota: 1, max: 2}]}]
)",
       "spec.resourceGroups[0].flavors[0].resources[0].max: unknown field",
       "spec.resourceGroups[0].flavors[0].resources[0].max"},
      {"unknown top-level field",
       "apiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueue\nmetadata: "
       "{name: q}\nspecs: {}\n",
       "(LocalQueue default/q): specs: unknown field", "specs"},
      {"malformed quantity", R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: team-a-cq}
spec:
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: a
      resources: [{name: nvidia.com/gpu, nominalQuota: 1}]
    - name: b
      resources: [{name: nvidia.com/gpu, nominalQuota: 12x}]
)",
       "bad.yaml: document 0 (ClusterQueue team-a-cq): "
       "spec.resourceGroups[0].flavors[1].resources[0].nominalQuota: "
       "malformed quantity \"12x\": unknown suffix \"x\"",
       "spec.resourceGroups[0].flavors[1].resources[0].nominalQuota"},
      {"negative quota", R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: Cohort
metadata: {name: c}
spec:
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: f, resources: [{name: cpu, nominalQuota: "-1"}]}]
)",
       "nominalQuota: must not be negative, got -1",
       "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota"},
      {"lendingLimit over nominal", R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: c}
spec:
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: f, resources: [{name: cpu, nominalQuota: 2, lendingLimit: 3}]}]
)",
       "lendingLimit 3 exceeds nominalQuota 2",
       "spec.resourceGroups[0].flavors[0].resources[0].lendingLimit"},
      {"resource not covered", R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: c}
spec:
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: f, resources: [{name: memory, nominalQuota: 1}]}]
)",
       "resource memory is not in coveredResources",
       "spec.resourceGroups[0].flavors[0].resources[0].name"},
      {"resource missing from flavor", R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: c}
spec:
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors: [{name: f, resources: [{name: cpu, nominalQuota: 1}]}]
)",
       "missing resource memory",
       "spec.resourceGroups[0].flavors[0].resources"},
      {"resource in two groups", R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: c}
spec:
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: f, resources: [{name: cpu, nominalQuota: 1}]}]
  - coveredResources: [cpu]
    flavors: [{name: g, resources: [{name: cpu, nominalQuota: 1}]}]
)",
       "resource cpu is already covered by resourceGroups[0]",
       "spec.resourceGroups[1].coveredResources[0]"},
      {"flavor in two groups", R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: c}
spec:
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: f, resources: [{name: cpu, nominalQuota: 1}]}]
  - coveredResources: [memory]
    flavors: [{name: f, resources: [{name: memory, nominalQuota: 1}]}]
)",
       "flavor f already appears in resourceGroups[0]",
       "spec.resourceGroups[1].flavors[0].name"},
      {"bad enum",
       "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: "
       "{name: c}\nspec: {queueingStrategy: FIFO}\n",
       "unknown value \"FIFO\" (expected one of: BestEffortFIFO, StrictFIFO)",
       "spec.queueingStrategy"},
      {"bad price",
       std::string(kFlavor) +
           "spec: {price: {nvidia.com/gpu: \"2.1234567\"}}\n",
       "malformed price \"2.1234567\"", "spec.price[nvidia.com/gpu]"},
      {"negative price",
       std::string(kFlavor) + "spec: {price: {nvidia.com/gpu: -2}}\n",
       "price must not be negative", "spec.price[nvidia.com/gpu]"},
      {"fractional GPU request", R"(
apiVersion: allot.dev/v1
kind: Workload
metadata: {name: w}
spec:
  queueName: q
  podSets: [{template: {resources: {requests: {nvidia.com/gpu: 500m}}}}]
)",
       "nvidia.com/gpu must be a whole number, got 500m",
       "spec.podSets[0].template.resources.requests[nvidia.com/gpu]"},
      {"empty queueName",
       "apiVersion: allot.dev/v1\nkind: Workload\nmetadata: {name: w}\nspec: "
       "{queueName: \"\", podSets: [{template: {}}]}\n",
       "(Workload default/w): spec.queueName: must not be empty",
       "spec.queueName"},
      {"job without queue label", R"(
apiVersion: batch/v1
kind: Job
metadata: {name: j, labels: {app: x}}
spec: {template: {spec: {containers: []}}}
)",
       "batch/v1 Job j has no kueue.x-k8s.io/queue-name label",
       "metadata.labels"},
      {"bad timestamp",
       "apiVersion: allot.dev/v1\nkind: Workload\nmetadata: {name: w, "
       "creationTimestamp: yesterday}\nspec: {queueName: q, podSets: "
       "[{template: {}}]}\n",
       "malformed timestamp \"yesterday\"", "metadata.creationTimestamp"},
      {"missing name", "apiVersion: v1\nkind: Namespace\nmetadata: {}\n",
       "bad.yaml: document 0 (Namespace): metadata.name: required field is "
       "missing",
       "metadata.name"},
      {"priority given twice",
       "apiVersion: allot.dev/v1\nkind: Workload\nmetadata: {name: w}\nspec: "
       "{queueName: q, priorityClassName: high, priority: 3, podSets: "
       "[{template: {}}]}\n",
       "give priorityClassName or priority, not both", "spec.priority"},
      {"two SchedulerConfigs",
       "apiVersion: allot.dev/v1\nkind: SchedulerConfig\n---\napiVersion: "
       "allot.dev/v1\nkind: SchedulerConfig\n",
       "document 1 (SchedulerConfig): a second SchedulerConfig", ""},
      {"toleration value with Exists",
       std::string(kFlavor) +
           "spec: {tolerations: [{key: a, operator: Exists, value: b}]}\n",
       "must be empty when operator is Exists", "spec.tolerations[0].value"},
      {"unknown metadata field",
       "apiVersion: v1\nkind: Namespace\nmetadata: {name: n, lables: {}}\n",
       "(Namespace n): metadata.lables: unknown field", "metadata.lables"},
      {"yaml syntax", "kind: [unclosed\n", "bad.yaml: YAML error at line", ""},
      {"duplicate names", base + kCq,
       "bad.yaml: document 3 (ClusterQueue team-a-cq): metadata.name: "
       "duplicate ClusterQueue name team-a-cq (first in document 1)",
       "metadata.name"},
      {"LocalQueue naming missing ClusterQueue", R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: lq, namespace: team-a}
spec: {clusterQueue: nope}
)",
       "bad.yaml: document 0 (LocalQueue team-a/lq): spec.clusterQueue: "
       "ClusterQueue nope does not exist",
       "spec.clusterQueue"},
      {"ClusterQueue naming missing flavor", std::string(R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: c}
spec:
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: a100, resources: [{name: cpu, nominalQuota: 1}]}]
)"),
       "ResourceFlavor a100 does not exist",
       "spec.resourceGroups[0].flavors[0].name"},
      {"missing priority class", R"(
apiVersion: allot.dev/v1
kind: Workload
metadata: {name: w}
spec: {queueName: q, priorityClassName: urgent, podSets: [{template: {}}]}
)",
       "(Workload default/w): spec.priorityClassName: WorkloadPriorityClass "
       "urgent does not exist",
       "spec.priorityClassName"},
      {"cohort cycle", R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: Cohort
metadata: {name: a}
spec: {parent: b}
---
apiVersion: kueue.x-k8s.io/v1alpha1
kind: Cohort
metadata: {name: b}
spec: {parentName: a}
)",
       "bad.yaml: document 0 (Cohort a): spec.parentName: cohort cycle: a -> "
       "b -> a",
       "spec.parentName"},
      {"flavor not listed in admission",
       base +
           "---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\n"
           "metadata: {name: h200}\n" +
           AdmittedWorkload("w", "      flavors: {nvidia.com/gpu: h200}\n"),
       "bad.yaml: document 4 (Workload default/w): "
       "status.admission.podSetAssignments[0].flavors[nvidia.com/gpu]: flavor "
       "h200 is not listed in ClusterQueue team-a-cq's resource group for "
       "nvidia.com/gpu",
       "status.admission.podSetAssignments[0].flavors[nvidia.com/gpu]"},
      {"admission count out of range",
       base + AdmittedWorkload("w",
                               "      count: 1\n      flavors: "
                               "{nvidia.com/gpu: h100}\n"),
       "count 1 is outside [2, 2]",
       "status.admission.podSetAssignments[0].count"},
      {"placement on missing node",
       base + AdmittedWorkload("w", R"(      flavors: {nvidia.com/gpu: h100}
      placements: [{node: gpu-1, gpus: [GPU-1]}, {node: gpu-99, gpus: [GPU-2]}]
)"),
       "node gpu-99 does not exist",
       "status.admission.podSetAssignments[0].placements[1].node"},
      {"wrong number of placements",
       base + AdmittedWorkload("w", R"(      flavors: {nvidia.com/gpu: h100}
      placements: [{node: gpu-1, gpus: [GPU-1]}]
)"),
       "1 placements for 2 admitted pods",
       "status.admission.podSetAssignments[0].placements"},
      {"GPU given twice in placements",
       base + AdmittedWorkload("a", R"(      flavors: {nvidia.com/gpu: h100}
      placements: [{node: gpu-1, gpus: [GPU-1]}, {node: gpu-1, gpus: [GPU-2]}]
)") + AdmittedWorkload("b", R"(      flavors: {nvidia.com/gpu: h100}
      placements: [{node: gpu-1, gpus: [GPU-3]}, {node: gpu-1, gpus: [GPU-2]}]
)"),
       "(Workload default/b): "
       "status.admission.podSetAssignments[0].placements[1].gpus[0]: GPU "
       "GPU-2 is assigned twice (first to default/a pod set main pod 1)",
       "status.admission.podSetAssignments[0].placements[1].gpus[0]"},
      {"GPU declared by two nodes", base + R"(
---
apiVersion: allot.dev/v1
kind: Node
metadata: {name: gpu-2}
status: {gpus: [{uuid: GPU-9, mig: [{uuid: GPU-1, profile: 1g.10gb}]}]}
)",
       "(Node gpu-2): status.gpus[0].mig[0].uuid: GPU GPU-1 is declared twice "
       "(first on node gpu-1)",
       "status.gpus[0].mig[0].uuid"},
      {"admission naming missing ClusterQueue",
       AdmittedWorkload("w", "      flavors: {}\n"),
       "ClusterQueue team-a-cq does not exist",
       "status.admission.clusterQueue"},
  };
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.name);
    Config config;
    Status s = ParseManifests(c.yaml, "bad.yaml", &config);
    if (s.ok()) s = ValidateConfig(&config);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find(c.message), std::string::npos) << s.message();
    EXPECT_EQ(s.field(), c.field);
  }
}

TEST(ManifestTest, ErrorLeavesConfigUnchanged) {
  Config config;
  ASSERT_TRUE(ParseManifests(kFlavor, "a.yaml", &config).ok());
  std::string bad = std::string(kFlavor) + "---\nkind: Nope\napiVersion: x\n";
  EXPECT_FALSE(ParseManifests(bad, "b.yaml", &config).ok());
  EXPECT_EQ(config.flavors.size(), 1u);
}

// A duplicate in another file names that file.
TEST(ManifestTest, DuplicateAcrossFilesNamesTheFirstFile) {
  Config config;
  ASSERT_TRUE(ParseManifests(kFlavor, "a.yaml", &config).ok());
  ASSERT_TRUE(ParseManifests(kFlavor, "b.yaml", &config).ok());
  Status s = ValidateConfig(&config);
  EXPECT_EQ(s.message(),
            "b.yaml: document 0 (ResourceFlavor h100): metadata.name: "
            "duplicate ResourceFlavor name h100 (first in a.yaml document 0)");
}

// A LocalQueue that does not exist keeps the workload pending (the
// scheduler says why); undeclared namespaces are implicit.
TEST(ManifestTest, MissingLocalQueueIsNotAnError) {
  Config config;
  ASSERT_TRUE(ParseManifests(R"(
apiVersion: allot.dev/v1
kind: Workload
metadata: {name: w, namespace: nowhere}
spec: {queueName: missing, podSets: [{template: {}}]}
)",
                             "w.yaml", &config)
                  .ok());
  EXPECT_TRUE(ValidateConfig(&config).ok());
}

TEST(ManifestTest, EmptyAndNullDocumentsAreSkipped) {
  Config config;
  Status s = ParseManifests("---\n---\nnull\n---\n# only a comment\n", "e.yaml",
                            &config);
  EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(config.flavors.empty());
}

TEST(ManifestTest, LoadMissingFileIsNotFound) {
  Config config;
  Status s = LoadManifestFile("/nonexistent/manifest.yaml", &config);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("/nonexistent/manifest.yaml"), std::string::npos);
}

}  // namespace
}  // namespace allot::core
