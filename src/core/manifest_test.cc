// Manifests that parse: every kind, JSON bodies, Kueue workloads, Jobs.
#include "core/manifest.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace allot::core {
namespace {

// One of every kind, as a platform team would write them.
constexpr char kGoodManifest[] = R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata:
  name: h100
  uid: 1234          # Kubernetes bookkeeping is ignored.
spec:
  nodeLabels:
    gpu.nvidia.com/model: H100
    location: onprem
  nodeTaints:
  - {key: dedicated, value: gpu, effect: NoSchedule}
  tolerations:
  - {key: spot, operator: Exists, effect: NoExecute}
  price:
    nvidia.com/gpu: "2.5"
    cpu: 0.000125
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: cpu-only}
---
apiVersion: kueue.x-k8s.io/v1alpha1
kind: Cohort
metadata: {name: research}
spec:
  parentName: org
  fairSharing: {weight: "2"}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: h100
      resources:
      - {name: nvidia.com/gpu, nominalQuota: 4}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: team-a-cq}
spec:
  cohort: research
  namespaceSelector:
    matchLabels: {tier: gold}
    matchExpressions:
    - {key: team, operator: In, values: [a, b]}
  queueingStrategy: StrictFIFO
  stopPolicy: Hold
  fairSharing: {weight: 500m}
  preemption:
    withinClusterQueue: LowerPriority
    reclaimWithinCohort: Any
    borrowWithinCohort: {policy: LowerPriority, maxPriorityThreshold: 100}
  flavorFungibility: {whenCanBorrow: TryNextFlavor, whenCanPreempt: Preempt}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: h100
      resources:
      - {name: nvidia.com/gpu, nominalQuota: 8, borrowingLimit: 4, lendingLimit: 2}
  - coveredResources: [cpu, memory]
    flavors:
    - name: cpu-only
      resources:
      - {name: cpu, nominalQuota: 64}
      - {name: memory, nominalQuota: 256Gi}
status:
  pendingWorkloads: 3    # Ignored: Kueue writes it.
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team-b-cq}
spec:
  cohortName: research
  namespaceSelector: {}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: lq, namespace: team-a}
spec: {clusterQueue: team-a-cq}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: lq}
spec: {clusterQueue: team-b-cq}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: WorkloadPriorityClass
metadata: {name: high}
value: 1000
description: "production training"
---
apiVersion: v1
kind: Namespace
metadata:
  name: team-a
  labels: {tier: gold, team: a}
---
apiVersion: allot.dev/v1
kind: SchedulerConfig
fairSharing:
  enable: true
  preemptionStrategies: [LessThanInitialShare]
---
apiVersion: allot.dev/v1
kind: Node
metadata:
  name: gpu-1
  labels: {gpu.nvidia.com/model: H100}
spec:
  unschedulable: false
  taints: [{key: dedicated, value: gpu, effect: NoSchedule}]
status:
  capacity: {cpu: "96", memory: 1Ti}
  gpus:
  - {uuid: GPU-a, product: NVIDIA H100 80GB HBM3, memory: 80Gi}
  - uuid: GPU-b
    product: NVIDIA H100 80GB HBM3
    memory: 80Gi
    health: Unhealthy
    mig:
    - {uuid: MIG-b1, profile: 3g.40gb}
    - {uuid: MIG-b2, profile: 3g.40gb}
---
# An empty document is skipped.
---
apiVersion: allot.dev/v1
kind: Workload
metadata:
  name: train
  namespace: team-a
  creationTimestamp: "2026-01-01T00:00:01.5Z"
spec:
  queueName: lq
  priorityClassName: high
  podSets:
  - name: workers
    count: 4
    minCount: 2
    template:
      resources:
        requests: {nvidia.com/gpu: 1, cpu: 500m, memory: 0}
      nodeSelector: {location: onprem}
      tolerations: [{key: dedicated, operator: Equal, value: gpu}]
status:
  admission:
    clusterQueue: team-a-cq
    podSetAssignments:
    - name: workers
      count: 2
      flavors: {nvidia.com/gpu: h100, cpu: cpu-only}
      placements:
      - {node: gpu-1, gpus: [GPU-a]}
      - {node: gpu-1, gpus: [MIG-b1]}
---
apiVersion: allot.dev/v1
kind: Workload
metadata: {name: notebook}
spec:
  queueName: lq
  priority: -5
  podSets:
  - template: {resources: {requests: {nvidia.com/mig-3g.40gb: 1}}}
)";

Config ParseGood() {
  Config config;
  Status s = ParseManifests(kGoodManifest, "good.yaml", &config);
  EXPECT_TRUE(s.ok()) << s.message();
  s = ValidateConfig(&config);
  EXPECT_TRUE(s.ok()) << s.message();
  return config;
}

Quantity Q(const char* text) { return *Quantity::Parse(text); }

// A JSON body (an API client's usual form) takes the fast path and must read
// exactly like the same document in YAML, errors included.
TEST(ManifestTest, JsonBodyReadsLikeYaml) {
  const std::string json =
      R"({"apiVersion":"allot.dev/v1","kind":"Workload","metadata":)"
      R"({"name":"w","namespace":"t","labels":{"a":"1"}},"spec":{"queueName":)"
      R"("q","priority":7,"podSets":[{"count":2,"minCount":1,"template":)"
      R"({"resources":{"requests":{"nvidia.com/gpu":4,"cpu":1.5,"memory":"8Gi"}},)"
      R"("command":["python","x.py"],"env":[{"name":"K","value":"V"}]}}]}})";
  const std::string yaml = R"(
apiVersion: allot.dev/v1
kind: Workload
metadata: {name: w, namespace: t, labels: {a: "1"}}
spec:
  queueName: q
  priority: 7
  podSets:
  - count: 2
    minCount: 1
    template:
      resources: {requests: {nvidia.com/gpu: 4, cpu: 1.5, memory: 8Gi}}
      command: [python, x.py]
      env: [{name: K, value: V}]
)";
  Config a, b;
  ASSERT_TRUE(ParseManifests(json, "body", &a).ok());
  ASSERT_TRUE(ParseManifests(yaml, "body", &b).ok());
  ASSERT_EQ(a.workloads.size(), 1u);
  EXPECT_EQ(a.workloads, b.workloads);
  EXPECT_EQ(a.workloads[0].pod_sets[0].requests.at("cpu").milli(), 1500);

  // Errors name the same field either way.
  Config c;
  Status bad = ParseManifests(
      R"({"apiVersion":"allot.dev/v1","kind":"Workload","metadata":{"name":"w"},)"
      R"("spec":{"queueName":"q","podSets":[{"count":"two"}]}})",
      "body", &c);
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.field(), "spec.podSets[0].count");
  // A key given twice is an error in JSON as in YAML.
  Status dup = ParseManifests(
      R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"a","name":"b"}})",
      "body", &c);
  EXPECT_FALSE(dup.ok());
  EXPECT_NE(dup.message().find("given twice"), std::string::npos) << dup.message();
  // Absurd totals are refused before any arithmetic can overflow.
  Status huge = ParseManifests(
      R"({"apiVersion":"allot.dev/v1","kind":"Workload","metadata":{"name":"w"},)"
      R"("spec":{"queueName":"q","podSets":[{"count":2,"template":{"resources":)"
      R"({"requests":{"nvidia.com/gpu":"4699982712012801"}}}}]}})",
      "body", &c);
  EXPECT_FALSE(huge.ok());
  EXPECT_NE(huge.message().find("at most 4096"), std::string::npos) << huge.message();
  Status total = ParseManifests(
      R"({"apiVersion":"allot.dev/v1","kind":"Workload","metadata":{"name":"w"},)"
      R"("spec":{"queueName":"q","podSets":[{"count":2000000000,"template":)"
      R"({"resources":{"requests":{"memory":"1Pi"}}}}]}})",
      "body", &c);
  EXPECT_FALSE(total.ok());
  EXPECT_NE(total.message().find("absurdly large"), std::string::npos) << total.message();
  // Malformed JSON falls back to the YAML reader, which says where.
  Status syntax = ParseManifests(R"({"apiVersion": "v1", "kind": )", "body", &c);
  EXPECT_FALSE(syntax.ok());
  EXPECT_NE(syntax.message().find("YAML error at line 1"), std::string::npos)
      << syntax.message();
}

// Findings of the fuzzers (tests/fuzz): each must be a clear error.
TEST(ManifestTest, FuzzFindingsAreClearErrors) {
  Config c;
  // Invalid UTF-8 would be stored and then stop the server from loading.
  Status utf8 = ParseManifests(
      "apiVersion: v1\nkind: Namespace\nmetadata: {name: x, labels: {a: caf\xe9}}\n",
      "f", &c);
  EXPECT_NE(utf8.message().find("line 3: the text is not valid UTF-8"),
            std::string::npos) << utf8.message();
  // yaml-cpp 0.7 loops forever on a stray comma after a flow collection;
  // each is an error that says where (manifest_limits_test.cc runs these
  // under a memory cap).
  for (std::string_view hang : std::initializer_list<std::string_view>{"{},", "[],", "---\n  {\"a\": 1},  \n", "\"x\",",
                           ",", "a: \"b\", c\n", "- [1],\n",
                           "!,", "&a ,", "... ,", std::string_view("\0,", 2)}) {
    Status s = ParseManifests(std::string(hang), "f", &c);
    EXPECT_FALSE(s.ok()) << hang;
    EXPECT_NE(s.message().find("f: "), std::string::npos) << hang << ": " << s.message();
    EXPECT_NE(s.message().find("line "), std::string::npos) << hang << ": " << s.message();
  }
  // Commas that are text stay fine: plain scalars, quoted, flow, block text.
  Config ok;
  Status fine = ParseManifests(
      "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: x\n"
      "  annotations:\n    a: \"1,2\"\n    b: '3,'\n"
      "    note: a, b, c\n    script: |\n      echo \"a\", b\n      ,\n"
      "    list: \"[x],\"\n",
      "f", &ok);
  EXPECT_TRUE(fine.ok()) << fine.message();
  // A pod set of zero pods was admitted without a flavor.
  Status zero = ParseManifests(
      "apiVersion: allot.dev/v1\nkind: Workload\nmetadata: {name: w}\n"
      "spec: {queueName: q, podSets: [{count: 0}]}\n",
      "f", &c);
  EXPECT_EQ(zero.field(), "spec.podSets[0].count") << zero.message();
  EXPECT_TRUE(c.workloads.empty());
}

TEST(ManifestTest, GoodFileFlavorsAndCohorts) {
  Config c = ParseGood();
  ASSERT_EQ(c.flavors.size(), 2u);
  const ResourceFlavor& f = c.flavors[0];
  EXPECT_EQ(f.name, "h100");
  EXPECT_EQ(f.node_labels.at("location"), "onprem");
  ASSERT_EQ(f.node_taints.size(), 1u);
  EXPECT_EQ(f.node_taints[0].effect, TaintEffect::kNoSchedule);
  ASSERT_EQ(f.tolerations.size(), 1u);
  EXPECT_EQ(f.tolerations[0].op, TolerationOperator::kExists);
  EXPECT_EQ(f.tolerations[0].effect, TaintEffect::kNoExecute);
  EXPECT_EQ(f.price_micros_per_hour.at("nvidia.com/gpu"), 2500000);
  EXPECT_EQ(f.price_micros_per_hour.at("cpu"), 125);
  EXPECT_EQ(f.source.file, "good.yaml");
  EXPECT_EQ(f.source.doc_index, 0);
  EXPECT_EQ(f.source.kind, "ResourceFlavor");

  ASSERT_EQ(c.cohorts.size(), 1u);
  EXPECT_EQ(c.cohorts[0].parent, "org");  // Implicit: declared nowhere.
  EXPECT_EQ(c.cohorts[0].fair_weight_milli, 2000);
  ASSERT_EQ(c.cohorts[0].resource_groups.size(), 1u);
  EXPECT_EQ(
      c.cohorts[0].resource_groups[0].flavors[0].resources[0].nominal_quota,
      Q("4"));
}

TEST(ManifestTest, GoodFileClusterQueues) {
  Config c = ParseGood();
  ASSERT_EQ(c.cluster_queues.size(), 2u);
  const ClusterQueue& a = c.cluster_queues[0];
  EXPECT_EQ(a.cohort, "research");
  ASSERT_TRUE(a.namespace_selector.has_value());
  EXPECT_EQ(a.namespace_selector->match_labels.at("tier"), "gold");
  ASSERT_EQ(a.namespace_selector->match_expressions.size(), 1u);
  EXPECT_EQ(a.namespace_selector->match_expressions[0].values,
            (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(a.queueing_strategy, QueueingStrategy::kStrictFIFO);
  EXPECT_EQ(a.stop_policy, StopPolicy::kHold);
  EXPECT_EQ(a.fair_weight_milli, 500);
  EXPECT_EQ(a.preemption.within_cluster_queue,
            WithinClusterQueue::kLowerPriority);
  EXPECT_EQ(a.preemption.reclaim_within_cohort, ReclaimWithinCohort::kAny);
  EXPECT_EQ(a.preemption.borrow_within_cohort,
            BorrowWithinCohortPolicy::kLowerPriority);
  EXPECT_EQ(a.preemption.max_priority_threshold, 100);
  EXPECT_EQ(a.flavor_fungibility.when_can_borrow,
            FungibilityPolicy::kTryNextFlavor);
  // The pre-v0.9 value Preempt means MayStopSearch.
  EXPECT_EQ(a.flavor_fungibility.when_can_preempt,
            FungibilityPolicy::kMayStopSearch);
  ASSERT_EQ(a.resource_groups.size(), 2u);
  const ResourceQuota& gpu = a.resource_groups[0].flavors[0].resources[0];
  EXPECT_EQ(gpu.nominal_quota, Q("8"));
  EXPECT_EQ(gpu.borrowing_limit, Q("4"));
  EXPECT_EQ(gpu.lending_limit, Q("2"));
  EXPECT_EQ(a.resource_groups[1].covered_resources,
            (std::vector<std::string>{"cpu", "memory"}));
  EXPECT_EQ(a.resource_groups[1].flavors[0].resources[1].nominal_quota,
            Q("256Gi"));
  EXPECT_FALSE(a.resource_groups[1].flavors[0].resources[1].lending_limit);

  const ClusterQueue& b = c.cluster_queues[1];
  EXPECT_EQ(b.cohort, "research");                // From v1beta2 cohortName.
  ASSERT_TRUE(b.namespace_selector.has_value());  // {} matches everything.
  EXPECT_TRUE(b.namespace_selector->match_labels.empty());
  EXPECT_EQ(b.queueing_strategy, QueueingStrategy::kBestEffortFIFO);
  EXPECT_EQ(b.fair_weight_milli, 1000);
}

TEST(ManifestTest, GoodFileQueuesClassesNamespacesConfig) {
  Config c = ParseGood();
  ASSERT_EQ(c.local_queues.size(), 2u);
  EXPECT_EQ(c.local_queues[0].ns, "team-a");
  EXPECT_EQ(c.local_queues[0].cluster_queue, "team-a-cq");
  EXPECT_EQ(c.local_queues[1].ns, "default");
  ASSERT_EQ(c.priority_classes.size(), 1u);
  EXPECT_EQ(c.priority_classes[0].value, 1000);
  // team-a as declared, with the label Kubernetes sets; "default" (used by
  // a LocalQueue, declared by nothing) added by ValidateConfig.
  ASSERT_EQ(c.namespaces.size(), 2u);
  EXPECT_EQ(c.namespaces[0].labels,
            (Labels{{"team", "a"}, {"tier", "gold"},
                    {"kubernetes.io/metadata.name", "team-a"}}));
  EXPECT_EQ(c.namespaces[1].name, "default");
  EXPECT_EQ(c.namespaces[1].labels,
            (Labels{{"kubernetes.io/metadata.name", "default"}}));
  EXPECT_TRUE(c.scheduler.fair_sharing);
  EXPECT_EQ(c.scheduler.preemption_strategies,
            (std::vector<FairSharingStrategy>{
                FairSharingStrategy::kLessThanInitialShare}));
}

TEST(ManifestTest, GoodFileNodes) {
  Config c = ParseGood();
  ASSERT_EQ(c.nodes.size(), 1u);
  const Node& n = c.nodes[0];
  EXPECT_EQ(n.labels.at("gpu.nvidia.com/model"), "H100");
  EXPECT_EQ(n.taints.size(), 1u);
  EXPECT_EQ(n.cpu, Q("96"));
  EXPECT_EQ(n.memory, Q("1Ti"));
  ASSERT_EQ(n.gpus.size(), 2u);
  EXPECT_TRUE(n.gpus[0].healthy);
  EXPECT_EQ(n.gpus[0].memory, Q("80Gi"));
  EXPECT_FALSE(n.gpus[1].healthy);
  ASSERT_EQ(n.gpus[1].mig.size(), 2u);
  EXPECT_EQ(n.gpus[1].mig[1].uuid, "MIG-b2");
  EXPECT_EQ(n.gpus[1].mig[1].profile, "3g.40gb");
}

TEST(ManifestTest, GoodFileWorkloads) {
  Config c = ParseGood();
  ASSERT_EQ(c.workloads.size(), 2u);
  const Workload& w = c.workloads[0];
  EXPECT_EQ(w.Key(), "team-a/train");
  EXPECT_EQ(w.queue_name, "lq");
  EXPECT_EQ(w.priority, 1000);  // Resolved from WorkloadPriorityClass high.
  EXPECT_EQ(w.creation_unix_ms, 1767225601500);  // 2026-01-01T00:00:01.5Z.
  EXPECT_EQ(w.source.doc_index, 12);             // Empty documents still count.
  ASSERT_EQ(w.pod_sets.size(), 1u);
  const PodSet& ps = w.pod_sets[0];
  EXPECT_EQ(ps.count, 4);
  EXPECT_EQ(ps.min_count, 2);
  // memory: 0 is dropped.
  EXPECT_EQ(ps.requests,
            (ResourceList{{"cpu", Q("500m")}, {"nvidia.com/gpu", Q("1")}}));
  EXPECT_EQ(ps.node_selector.at("location"), "onprem");
  ASSERT_EQ(ps.tolerations.size(), 1u);
  ASSERT_TRUE(w.admission.has_value());
  EXPECT_EQ(w.admission->cluster_queue, "team-a-cq");
  const PodSetAssignment& psa = w.admission->pod_set_assignments[0];
  EXPECT_EQ(psa.count, 2);
  EXPECT_EQ(psa.flavors.at("nvidia.com/gpu"), "h100");
  ASSERT_EQ(psa.placements.size(), 2u);
  EXPECT_EQ(psa.placements[1].gpus, std::vector<std::string>{"MIG-b1"});

  const Workload& nb = c.workloads[1];
  EXPECT_EQ(nb.Key(), "default/notebook");
  EXPECT_EQ(nb.priority, -5);
  EXPECT_EQ(nb.creation_unix_ms, 0);
  EXPECT_EQ(nb.pod_sets[0].name, "main");
  EXPECT_EQ(nb.pod_sets[0].count, 1);
  EXPECT_FALSE(nb.admission.has_value());
}

// Kubernetes pod requests: containers sum (a GPU given only as a limit is
// requested at its limit); an init container needs max(its request, the
// sum) — here cpu max(3, 1+0.5) = 3; overhead is added on top.
TEST(ManifestTest, KueueWorkloadSumsContainers) {
  constexpr char kYaml[] = R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: Workload
metadata:
  name: pytorch
  namespace: ml
  creationTimestamp: "2026-01-01T02:00:00+02:00"
  resourceVersion: "77"
spec:
  queueName: lq
  priorityClassName: high
  priority: 1000
  priorityClassSource: kueue.x-k8s.io/workloadpriorityclass
  maximumExecutionTimeSeconds: 3600
  podSets:
  - name: main
    count: 2
    template:
      metadata: {labels: {app: x}}
      spec:
        restartPolicy: Never
        containers:
        - name: trainer
          image: pytorch:latest
          command: [python, train.py]
          resources:
            requests: {cpu: "1", memory: 4Gi}
            limits: {nvidia.com/gpu: 2, memory: 8Gi}
        - name: logger
          resources: {requests: {cpu: 500m, memory: 1Gi}}
        initContainers:
        - name: fetch
          resources: {requests: {cpu: "3", memory: 1Gi}}
        overhead: {memory: 100Mi}
        nodeSelector: {location: cloud}
        tolerations: [{key: nvidia.com/gpu, operator: Exists}]
status:
  conditions: [{type: QuotaReserved, status: "True"}]
  admission:
    clusterQueue: cq
    podSetAssignments:
    - name: main
      flavors: {nvidia.com/gpu: h100}
      resourceUsage: {nvidia.com/gpu: "4"}
)";
  Config c;
  Status s = ParseManifests(kYaml, "wl.yaml", &c);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(c.workloads.size(), 1u);
  const Workload& w = c.workloads[0];
  EXPECT_EQ(w.Key(), "ml/pytorch");
  EXPECT_EQ(w.priority_class_name, "high");
  EXPECT_EQ(w.creation_unix_ms, 1767225600000);  // 2026-01-01T00:00:00Z.
  EXPECT_EQ(w.max_execution_seconds, 3600);
  const PodSet& ps = w.pod_sets[0];
  EXPECT_EQ(ps.requests, (ResourceList{{"cpu", Q("3")},
                                       {"memory", Q("5220Mi")},
                                       {"nvidia.com/gpu", Q("2")}}));
  EXPECT_EQ(ps.node_selector.at("location"), "cloud");
  EXPECT_EQ(ps.tolerations.size(), 1u);
  // No count: the whole pod set is admitted.
  EXPECT_EQ(w.admission->pod_set_assignments[0].count, 2);
}

// Sidecars (init containers with restartPolicy: Always) keep running, so
// they add to the containers and to every later init container.
TEST(ManifestTest, KueueWorkloadSidecarsAdd) {
  constexpr char kYaml[] = R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: Workload
metadata: {name: w}
spec:
  queueName: lq
  podSets:
  - name: main
    count: 1
    template:
      spec:
        initContainers:
        - {name: proxy, restartPolicy: Always, resources: {requests: {cpu: "1"}}}
        - {name: setup, resources: {requests: {cpu: "4"}}}
        containers:
        - {name: app, resources: {requests: {cpu: "2"}}}
)";
  Config c;
  ASSERT_TRUE(ParseManifests(kYaml, "wl.yaml", &c).ok());
  // max(app 2 + proxy 1, setup 4 + proxy 1) = 5.
  EXPECT_EQ(c.workloads[0].pod_sets[0].requests.at("cpu"), Q("5"));
}

// count = min(parallelism, completions); minCount from the partial
// admission annotation; priority class from the label.
TEST(ManifestTest, BatchJobWithParallelism) {
  constexpr char kYaml[] = R"(
apiVersion: batch/v1
kind: Job
metadata:
  name: sweep
  namespace: team-a
  labels:
    kueue.x-k8s.io/queue-name: lq
    kueue.x-k8s.io/priority-class: high
  annotations:
    kueue.x-k8s.io/job-min-parallelism: "2"
spec:
  parallelism: 6
  completions: 5
  suspend: true
  backoffLimit: 3
  template:
    spec:
      containers:
      - name: c
        image: x
        resources: {limits: {nvidia.com/gpu: 1}, requests: {cpu: 250m}}
      - name: d
        resources: {requests: {cpu: 250m}}
      nodeSelector: {gpu.nvidia.com/model: H100}
      restartPolicy: Never
---
apiVersion: batch/v1
kind: Job
metadata:
  name: single
  labels: {kueue.x-k8s.io/queue-name: lq}
spec:
  template:
    spec:
      containers: [{name: c, resources: {requests: {cpu: "1"}}}]
)";
  Config c;
  Status s = ParseManifests(kYaml, "jobs.yaml", &c);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(c.workloads.size(), 2u);
  const Workload& w = c.workloads[0];
  EXPECT_EQ(w.Key(), "team-a/sweep");
  EXPECT_EQ(w.source.kind, "Job");
  EXPECT_EQ(w.queue_name, "lq");
  EXPECT_EQ(w.priority_class_name, "high");
  EXPECT_EQ(w.backoff_limit, 3);  // Restarts of the whole gang.
  EXPECT_EQ(c.workloads[1].backoff_limit, 0);
  ASSERT_EQ(w.pod_sets.size(), 1u);
  EXPECT_EQ(w.pod_sets[0].name, "main");
  EXPECT_EQ(w.pod_sets[0].count, 5);
  EXPECT_EQ(w.pod_sets[0].min_count, 2);
  EXPECT_EQ(w.pod_sets[0].requests,
            (ResourceList{{"cpu", Q("500m")}, {"nvidia.com/gpu", Q("1")}}));
  EXPECT_EQ(w.pod_sets[0].node_selector.at("gpu.nvidia.com/model"), "H100");
  EXPECT_EQ(c.workloads[1].Key(), "default/single");
  EXPECT_EQ(c.workloads[1].pod_sets[0].count, 1);
}

TEST(ManifestTest, TimestampsAndFileOrder) {
  struct Case {
    const char* ts;
    int64_t ms;
  };
  const std::vector<Case> cases = {
      {"1970-01-01T00:00:00Z", 0},
      {"2026-01-01T00:00:00Z", 1767225600000},
      {"2026-01-01T00:00:00.123456Z", 1767225600123},
      {"2026-01-01T01:30:00+01:30", 1767225600000},
      {"2025-12-31T23:00:00-01:00", 1767225600000},
      {"2024-02-29T00:00:00Z", 1709164800000},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.ts);
    std::string yaml = std::string(R"(
apiVersion: allot.dev/v1
kind: Workload
metadata: {name: w, creationTimestamp: ")") +
                       tc.ts + R"("}
spec: {queueName: q, podSets: [{template: {}}]}
)";
    Config c;
    Status s = ParseManifests(yaml, "t.yaml", &c);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(c.workloads[0].creation_unix_ms, tc.ms);
  }
}

}  // namespace
}  // namespace allot::core
