// What a workload runs: labels, annotations, type, command, args, env and
// workingDir of every workload kind, and their errors.
#include <gtest/gtest.h>

#include <boost/json/serialize.hpp>

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "core/manifest.h"
#include "core/manifest_encode.h"
#include "core/parking_annotations.h"

namespace allot::core {
namespace {

using Env = std::vector<std::pair<std::string, std::string>>;
using Strings = std::vector<std::string>;

Workload ParseOne(const std::string& yaml) {
  Config c;
  Status s = ParseManifests(yaml, "w.yaml", &c);
  EXPECT_TRUE(s.ok()) << s.message();
  if (c.workloads.size() != 1) {
    ADD_FAILURE() << "want one workload, got " << c.workloads.size();
    return Workload();
  }
  return c.workloads[0];
}

// The compact template carries the fields directly; an env entry without a
// value has the empty value; annotations are kept verbatim.
TEST(ManifestWorkloadTest, AllotWorkloadRunFields) {
  Workload w = ParseOne(R"(
apiVersion: allot.dev/v1
kind: Workload
metadata:
  name: serve
  namespace: team-a
  labels: {app: chat, allot.dev/workload-type: notebook}
  annotations: {owner: "alice@example.com", note: "a: b"}
spec:
  queueName: lq
  type: inference
  podSets:
  - template:
      resources: {requests: {nvidia.com/gpu: 1}}
      command: [python, -m, server]
      args: ["--port", 8080]
      env:
      - {name: MODEL, value: llama}
      - {name: EMPTY}
      - {name: MODEL, value: again}
      workingDir: /srv
)");
  EXPECT_EQ(w.labels,
            (Labels{{"app", "chat"}, {"allot.dev/workload-type", "notebook"}}));
  EXPECT_EQ(w.annotations.at("owner"), "alice@example.com");
  EXPECT_EQ(w.annotations.at("note"), "a: b");
  // spec.type decides for allot.dev/v1; the label is not read.
  EXPECT_EQ(w.type, "inference");
  const PodSet& ps = w.pod_sets[0];
  EXPECT_EQ(ps.command, (Strings{"python", "-m", "server"}));
  EXPECT_EQ(ps.args, (Strings{"--port", "8080"}));
  // Order and repeats are kept (Kubernetes: the last one wins).
  EXPECT_EQ(ps.env,
            (Env{{"MODEL", "llama"}, {"EMPTY", ""}, {"MODEL", "again"}}));
  EXPECT_EQ(ps.working_dir, "/srv");
}

TEST(ManifestWorkloadTest, DefaultsAreEmptyAndBatch) {
  Workload w = ParseOne(R"(
apiVersion: allot.dev/v1
kind: Workload
metadata: {name: w}
spec: {queueName: lq, podSets: [{template: {}}]}
)");
  EXPECT_EQ(w.type, "batch");
  EXPECT_TRUE(w.labels.empty());
  EXPECT_TRUE(w.annotations.empty());
  const PodSet& ps = w.pod_sets[0];
  EXPECT_TRUE(ps.command.empty());
  EXPECT_TRUE(ps.args.empty());
  EXPECT_TRUE(ps.env.empty());
  EXPECT_EQ(ps.working_dir, "");
}

// A full PodSpec: only the first container says what runs; the others
// count for their resources only (and so may carry nothing that would
// run); env entries with valueFrom name a Secret's key.
TEST(ManifestWorkloadTest, KueueWorkloadReadsFirstContainer) {
  Workload w = ParseOne(R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: Workload
metadata:
  name: pytorch
  labels: {allot.dev/workload-type: training}
  annotations: {kueue.x-k8s.io/something: "x"}
spec:
  queueName: lq
  podSets:
  - name: main
    count: 1
    template:
      spec:
        containers:
        - name: trainer
          image: pytorch
          command: [torchrun]
          args: [--nnodes=2, train.py]
          workingDir: /workspace
          env:
          - {name: EPOCHS, value: "3"}
          - name: TOKEN
            valueFrom: {secretKeyRef: {name: hub, key: token}}
          - {name: NO_VALUE}
        - name: sidecar
          resources: {requests: {cpu: 500m}}
)");
  EXPECT_EQ(w.type, "training");
  EXPECT_EQ(w.annotations.at("kueue.x-k8s.io/something"), "x");
  const PodSet& ps = w.pod_sets[0];
  EXPECT_EQ(ps.command, Strings{"torchrun"});
  EXPECT_EQ(ps.args, (Strings{"--nnodes=2", "train.py"}));
  EXPECT_EQ(ps.env, (Env{{"EPOCHS", "3"}, {"NO_VALUE", ""}}));
  EXPECT_EQ(ps.env_secrets,
            (std::vector<SecretEnvVar>{{"TOKEN", {"hub", "token", false}}}));
  EXPECT_EQ(ps.working_dir, "/workspace");
  EXPECT_EQ(ps.requests, (ResourceList{{"cpu", Quantity::FromMilli(500)}}));
}

// A Job keeps its labels (the queue label too) and annotations; without
// the type label it is a batch workload.
TEST(ManifestWorkloadTest, JobKeepsMetadataAndTypeLabel) {
  constexpr char kJob[] = R"(
apiVersion: batch/v1
kind: Job
metadata:
  name: eval
  labels: {kueue.x-k8s.io/queue-name: lq%s}
  annotations: {kueue.x-k8s.io/job-min-parallelism: "1"}
spec:
  parallelism: 2
  template:
    spec:
      containers:
      - {name: c, command: [sh, -c], args: [echo hi], env: [{name: A, value: b}]}
)";
  char buf[1024];
  std::snprintf(buf, sizeof buf, kJob, "");
  Workload w = ParseOne(buf);
  EXPECT_EQ(w.type, "batch");
  EXPECT_EQ(w.labels, (Labels{{"kueue.x-k8s.io/queue-name", "lq"}}));
  EXPECT_EQ(w.annotations,
            (Labels{{"kueue.x-k8s.io/job-min-parallelism", "1"}}));
  EXPECT_EQ(w.pod_sets[0].min_count, 1);
  EXPECT_EQ(w.pod_sets[0].command, (Strings{"sh", "-c"}));
  EXPECT_EQ(w.pod_sets[0].args, Strings{"echo hi"});
  EXPECT_EQ(w.pod_sets[0].env, (Env{{"A", "b"}}));

  std::snprintf(buf, sizeof buf, kJob, ", allot.dev/workload-type: notebook");
  EXPECT_EQ(ParseOne(buf).type, "notebook");
}

struct BadCase {
  std::string name;
  std::string yaml;
  std::string message;  // Expected fragment of the message.
  std::string field;    // Expected Status::field().
};

std::string AllotWorkload(const std::string& spec_extra,
                          const std::string& template_extra) {
  return R"(
apiVersion: allot.dev/v1
kind: Workload
metadata: {name: w}
spec:
  queueName: lq
)" + spec_extra +
         R"(
  podSets:
  - template:
)" + template_extra +
         "\n";
}

std::string KueueWorkload(const std::string& labels,
                          const std::string& container_extra) {
  return R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: Workload
metadata: {name: w, labels: {)" +
         labels + R"(}}
spec:
  queueName: lq
  podSets:
  - name: main
    count: 1
    template:
      spec:
        containers:
        - name: c
)" + container_extra +
         "\n";
}

TEST(ManifestWorkloadTest, BadRunFields) {
  const std::vector<BadCase> cases = {
      {"unknown type", AllotWorkload("  type: service", "      {}"),
       "(Workload default/w): spec.type: unknown value \"service\" (expected "
       "one of: batch, training, inference, notebook)",
       "spec.type"},
      {"type not a string", AllotWorkload("  type: [batch]", "      {}"),
       "spec.type: expected a string", "spec.type"},
      {"bad type label",
       KueueWorkload("allot.dev/workload-type: web", "          image: x"),
       "metadata.labels[allot.dev/workload-type]: unknown value \"web\"",
       "metadata.labels[allot.dev/workload-type]"},
      {"bad type label on a Job", R"(
apiVersion: batch/v1
kind: Job
metadata:
  name: j
  labels: {kueue.x-k8s.io/queue-name: lq, allot.dev/workload-type: Batch}
spec: {template: {spec: {containers: [{name: c}]}}}
)",
       "(Job default/j): metadata.labels[allot.dev/workload-type]: unknown "
       "value \"Batch\"",
       "metadata.labels[allot.dev/workload-type]"},
      {"bad pull policy", AllotWorkload("", "      image: busybox\n      imagePullPolicy: Sometimes"),
       "spec.podSets[0].template.imagePullPolicy: must be Always, IfNotPresent or Never, got "
       "\"Sometimes\"",
       "spec.podSets[0].template.imagePullPolicy"},
      {"empty image", AllotWorkload("", "      image: \"\""),
       "spec.podSets[0].template.image: is empty", "spec.podSets[0].template.image"},
      {"command not a list", AllotWorkload("", "      command: python"),
       "spec.podSets[0].template.command: expected a list",
       "spec.podSets[0].template.command"},
      {"args item not a string", AllotWorkload("", "      args: [a, {b: c}]"),
       "spec.podSets[0].template.args[1]: expected a string",
       "spec.podSets[0].template.args[1]"},
      {"env not a list", AllotWorkload("", "      env: {A: b}"),
       "spec.podSets[0].template.env: expected a list",
       "spec.podSets[0].template.env"},
      {"env without name", AllotWorkload("", "      env: [{value: b}]"),
       "spec.podSets[0].template.env[0].name: required field is missing",
       "spec.podSets[0].template.env[0].name"},
      {"env with empty name",
       AllotWorkload("", "      env: [{name: A}, {name: \"\", value: b}]"),
       "spec.podSets[0].template.env[1].name: must not be empty",
       "spec.podSets[0].template.env[1].name"},
      {"env value not a string",
       AllotWorkload("", "      env: [{name: A, value: [1]}]"),
       "spec.podSets[0].template.env[0].value: expected a string",
       "spec.podSets[0].template.env[0].value"},
      {"unknown valueFrom source in the compact template",
       AllotWorkload("", "      env: [{name: A, valueFrom: {x: y}}]"),
       "spec.podSets[0].template.env[0].valueFrom.x: unknown field",
       "spec.podSets[0].template.env[0].valueFrom.x"},
      {"workingDir not a string", AllotWorkload("", "      workingDir: [a]"),
       "spec.podSets[0].template.workingDir: expected a string",
       "spec.podSets[0].template.workingDir"},
      {"container command not a list",
       KueueWorkload("", "          command: {a: b}"),
       "spec.podSets[0].template.spec.containers[0].command: expected a list",
       "spec.podSets[0].template.spec.containers[0].command"},
      {"container env without name",
       KueueWorkload("", "          env: [{valueFrom: {}}]"),
       "spec.podSets[0].template.spec.containers[0].env[0].name: required",
       "spec.podSets[0].template.spec.containers[0].env[0].name"},
      {"container env unknown field",
       KueueWorkload("", "          env: [{name: A, vaule: b}]"),
       "containers[0].env[0].vaule: unknown field",
       "spec.podSets[0].template.spec.containers[0].env[0].vaule"},
      {"annotation not a string", R"(
apiVersion: allot.dev/v1
kind: Workload
metadata: {name: w, annotations: {a: {b: c}}}
spec: {queueName: lq, podSets: [{template: {}}]}
)",
       "metadata.annotations[a]: expected a string", "metadata.annotations[a]"},
  };
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.name);
    Config config;
    Status s = ParseManifests(c.yaml, "bad.yaml", &config);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find(c.message), std::string::npos) << s.message();
    EXPECT_EQ(s.field(), c.field);
  }
}

}  // namespace
}  // namespace allot::core

namespace allot::core {
namespace {

// A Job whose pod template's spec is `pod_spec` (indented by 6 spaces).
std::string JobWith(const std::string& pod_spec) {
  return "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\n  labels: "
         "{kueue.x-k8s.io/queue-name: q}\nspec:\n  template:\n    spec:\n" +
         pod_spec;
}

// The first container's image and pull policy are kept (the container
// runtime runs them), on a Job and on an allot.dev/v1 template.
TEST(ManifestWorkloadTest, ImagesAreKept) {
  Workload job = ParseOne(R"(
apiVersion: batch/v1
kind: Job
metadata: {name: j, labels: {kueue.x-k8s.io/queue-name: lq}}
spec:
  template:
    spec:
      containers:
      - {name: c, image: "nvcr.io/nvidia/pytorch:24.01-py3", imagePullPolicy: IfNotPresent}
      - {name: side, resources: {requests: {cpu: 1}}}
)");
  ASSERT_EQ(job.pod_sets.size(), 1u);
  EXPECT_EQ(job.pod_sets[0].image, "nvcr.io/nvidia/pytorch:24.01-py3");
  EXPECT_EQ(job.pod_sets[0].image_pull_policy, "IfNotPresent");
  Workload own = ParseOne(AllotWorkload("", "      image: 127.0.0.1:5000/tiny:1"));
  ASSERT_EQ(own.pod_sets.size(), 1u);
  EXPECT_EQ(own.pod_sets[0].image, "127.0.0.1:5000/tiny:1");
  EXPECT_EQ(own.pod_sets[0].image_pull_policy, "");
}

// Required node affinity that a nodeSelector can say joins the pod set's
// nodeSelector (and so picks flavors and nodes); preferred terms are not
// read.
TEST(ManifestWorkloadTest, NodeAffinityJoinsTheNodeSelector) {
  Workload w = ParseOne(JobWith(R"(      nodeSelector: {zone: a}
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
            - matchExpressions:
              - {key: gpu-model, operator: In, values: [h100]}
              - {key: zone, operator: In, values: [a]}
          preferredDuringSchedulingIgnoredDuringExecution:
          - weight: 1
            preference: {matchExpressions: [{key: x, operator: Exists}]}
      containers: [{name: c}]
)"));
  EXPECT_EQ(w.pod_sets[0].node_selector,
            (Labels{{"gpu-model", "h100"}, {"zone", "a"}}));
}

// What Allot cannot honour, or Kubernetes refuses, is an error naming it.
TEST(ManifestWorkloadTest, AffinityAndLimitsErrors) {
  struct Case {
    std::string spec, message, field;
  };
  const std::string req =
      "      affinity:\n        nodeAffinity:\n          "
      "requiredDuringSchedulingIgnoredDuringExecution:\n            "
      "nodeSelectorTerms:\n";
  const std::vector<Case> cases = {
      {req + "            - matchExpressions: [{key: a, operator: NotIn, "
             "values: [x]}]\n      containers: [{name: c}]\n",
       "operator NotIn with 1 value(s) is not supported yet",
       "spec.template.spec.affinity.nodeAffinity."
       "requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]."
       "matchExpressions[0]"},
      {req + "            - matchExpressions: [{key: a, operator: In, values: "
             "[x]}]\n            - matchExpressions: [{key: b, operator: In, "
             "values: [y]}]\n      containers: [{name: c}]\n",
       "more than one node selector term",
       "spec.template.spec.affinity.nodeAffinity."
       "requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"},
      {"      nodeSelector: {a: y}\n" + req +
           "            - matchExpressions: [{key: a, operator: In, values: "
           "[x]}]\n      containers: [{name: c}]\n",
       "conflicts with nodeSelector a: y",
       "spec.template.spec.affinity.nodeAffinity."
       "requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]."
       "matchExpressions[0]"},
      {"      containers:\n      - name: c\n        resources: {requests: "
       "{cpu: 2}, limits: {cpu: 1}}\n",
       "request 2 is above the limit 1 (resources.limits[cpu])",
       "spec.template.spec.containers[0].resources.requests[cpu]"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.spec);
    Config config;
    Status s = ParseManifests(JobWith(c.spec), "j.yaml", &config);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find(c.message), std::string::npos) << s.message();
    EXPECT_EQ(s.field(), c.field);
  }
}

// Parking's annotations (docs/parking.md): allot.dev/preemptible on a
// workload or a WorkloadPriorityClass, allot.dev/reclaim-grace on a
// ClusterQueue; a bad value is an error naming the annotation; the class's
// flag survives an encode and parse.
TEST(ManifestWorkloadTest, PreemptibleAndReclaimGraceAnnotations) {
  const std::string wl =
      "apiVersion: allot.dev/v1\nkind: Workload\nmetadata: {name: w, namespace: t, "
      "annotations: {allot.dev/preemptible: \"VALUE\"}}\nspec:\n  queueName: q\n  podSets:\n"
      "  - template: {resources: {requests: {nvidia.com/gpu: 1}}}\n";
  auto with = [&](const std::string& v) {
    std::string y = wl;
    y.replace(y.find("VALUE"), 5, v);
    return y;
  };
  EXPECT_TRUE(ParseOne(with("true")).preemptible);
  EXPECT_FALSE(ParseOne(with("false")).preemptible);
  Config c;
  Status s = ParseManifests(with("yes"), "w.yaml", &c);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("allot.dev/preemptible: \"yes\" is neither"), std::string::npos)
      << s.message();

  const std::string cls =
      "apiVersion: kueue.x-k8s.io/v1beta1\nkind: WorkloadPriorityClass\n"
      "metadata: {name: spot, annotations: {allot.dev/preemptible: \"true\"}}\nvalue: 5\n";
  Config pc;
  ASSERT_TRUE(ParseManifests(cls, "c.yaml", &pc).ok());
  ASSERT_EQ(pc.priority_classes.size(), 1u);
  EXPECT_TRUE(pc.priority_classes[0].preemptible);
  Config again;
  ASSERT_TRUE(ParseManifests(boost::json::serialize(EncodePriorityClass(pc.priority_classes[0])),
                             "e.json", &again)
                  .ok());
  EXPECT_EQ(again.priority_classes.at(0), pc.priority_classes[0]);

  const std::string cq =
      "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\n"
      "metadata: {name: cq, annotations: {allot.dev/reclaim-grace: GRACE}}\n"
      "spec:\n  namespaceSelector: {}\n  resourceGroups: []\n";
  auto grace = [&](const std::string& v, Config* out) {
    std::string y = cq;
    y.replace(y.find("GRACE"), 5, v);
    return ParseManifests(y, "cq.yaml", out);
  };
  Config q;
  ASSERT_TRUE(grace("2m", &q).ok());
  EXPECT_EQ(q.cluster_queues.at(0).reclaim_grace_seconds, 120);
  Config dflt;
  ASSERT_TRUE(ParseManifests("apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\n"
                             "metadata: {name: cq}\nspec: {namespaceSelector: {}}\n",
                             "cq.yaml", &dflt)
                  .ok());
  EXPECT_EQ(dflt.cluster_queues.at(0).reclaim_grace_seconds, 30);
  Config bad;
  s = grace("soon", &bad);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("allot.dev/reclaim-grace"), std::string::npos) << s.message();
}

// allot.dev/park-pod-sets names the pod sets a park stops (a RayCluster's
// workers); a name the workload lacks, an empty one or one named twice is
// an error naming the annotation.
TEST(ManifestWorkloadTest, ParkPodSetsAnnotation) {
  const std::string wl =
      "apiVersion: allot.dev/v1\nkind: Workload\nmetadata: {name: w, namespace: t, "
      "annotations: {allot.dev/park-pod-sets: \"VALUE\"}}\nspec:\n  queueName: q\n  podSets:\n"
      "  - {name: head, template: {resources: {requests: {nvidia.com/gpu: 1}}}}\n"
      "  - {name: workers, count: 2, template: {resources: {requests: {nvidia.com/gpu: 1}}}}\n"
      "  - {name: extra, template: {resources: {requests: {nvidia.com/gpu: 1}}}}\n";
  auto with = [&](const std::string& v) {
    std::string y = wl;
    y.replace(y.find("VALUE"), 5, v);
    return y;
  };
  Result<std::vector<std::string>> sets = ParkPodSets(ParseOne(with("workers, extra")));
  ASSERT_TRUE(sets.ok()) << sets.status().ToString();
  EXPECT_EQ(*sets, (std::vector<std::string>{"workers", "extra"}));
  for (const auto& [value, why] :
       std::vector<std::pair<std::string, std::string>>{
           {"workerz", "has no pod set workerz (its pod sets: head, workers, extra)"},
           {"workers,,extra", "has an empty pod set name"},
           {"workers,workers", "pod set workers is named twice"}}) {
    Config c;
    Status s = ParseManifests(with(value), "w.yaml", &c);
    EXPECT_FALSE(s.ok()) << value;
    EXPECT_NE(s.message().find("allot.dev/park-pod-sets"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(why), std::string::npos) << s.message();
  }
  Workload none;
  EXPECT_TRUE(ParkPodSets(none)->empty());
  EXPECT_FALSE(*ActivitySignal(none));
  // The custom idle signal: "activity", or an error naming the annotation.
  std::string signal = with("workers");
  signal.replace(signal.find("}}"), 2, ", allot.dev/idle-signal: SIGNAL}}");
  auto sig = [&](const std::string& v) {
    std::string y = signal;
    y.replace(y.find("SIGNAL"), 6, v);
    return y;
  };
  EXPECT_TRUE(*ActivitySignal(ParseOne(sig("activity"))));
  Config c;
  Status s = ParseManifests(sig("gpu"), "w.yaml", &c);
  EXPECT_NE(s.message().find("allot.dev/idle-signal: \"gpu\" is not a signal"), std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace allot::core
