// Kueue's topology-aware scheduling in manifests: the Topology kind, a
// ResourceFlavor's topologyName, a pod template's podset-*-topology
// annotations and a pod set's topologyRequest (Kueue's
// apis/kueue/v1beta2/topology_types.go and workload_types.go,
// PodSetTopologyRequest), read, checked and written back.
#include <gtest/gtest.h>

#include <boost/json/serialize.hpp>
#include <string>

#include "core/manifest.h"
#include "core/manifest_encode.h"

namespace allot::core {
namespace {

namespace json = boost::json;

const char kTopology[] = R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: Topology
metadata: {name: dc}
spec:
  levels:
  - nodeLabel: example.com/block
  - nodeLabel: example.com/rack
  - nodeLabel: kubernetes.io/hostname
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: tas}
spec: {topologyName: dc}
)";

// A Job whose pod template carries ANNOTATIONS (YAML flow mapping body).
std::string Job(const std::string& annotations) {
  return R"(apiVersion: batch/v1
kind: Job
metadata: {name: j, labels: {kueue.x-k8s.io/queue-name: q}}
spec:
  parallelism: 4
  template:
    metadata: {annotations: {)" +
         annotations + R"(}}
    spec:
      containers: [{name: c, resources: {requests: {cpu: "1"}}}]
)";
}

Status ParseAndValidate(const std::string& text, Config* c) {
  Status s = ParseManifests(text, "t.yaml", c);
  if (!s.ok()) return s;
  return ValidateConfig(c);
}

TEST(ManifestTopologyTest, TopologyAndFlavorRead) {
  for (const char* version : {"v1alpha1", "v1beta1", "v1beta2"}) {
    SCOPED_TRACE(version);
    std::string text = kTopology;
    text.replace(text.find("v1beta2"), 7, version);
    Config c;
    ASSERT_TRUE(ParseAndValidate(text, &c).ok());
    ASSERT_EQ(c.topologies.size(), 1u);
    EXPECT_EQ(c.topologies[0].name, "dc");
    EXPECT_EQ(c.topologies[0].levels,
              (std::vector<std::string>{"example.com/block", "example.com/rack",
                                        "kubernetes.io/hostname"}));
    EXPECT_EQ(c.flavors[0].topology_name, "dc");
  }
}

// Kueue's CEL rules on levels, and a flavor naming no Topology.
TEST(ManifestTopologyTest, BadTopologiesAreErrors) {
  struct Case {
    std::string text, want;
  } cases[] = {
      {"apiVersion: kueue.x-k8s.io/v1beta2\nkind: Topology\nmetadata: {name: t}\n"
       "spec: {levels: [{nodeLabel: kubernetes.io/hostname}, {nodeLabel: rack}]}\n",
       "spec.levels[0].nodeLabel: kubernetes.io/hostname can only be the lowest"},
      {"apiVersion: kueue.x-k8s.io/v1beta2\nkind: Topology\nmetadata: {name: t}\n"
       "spec: {levels: [{nodeLabel: rack}, {nodeLabel: rack}]}\n",
       "spec.levels[1].nodeLabel: level \"rack\" is listed twice"},
      {"apiVersion: kueue.x-k8s.io/v1beta2\nkind: Topology\nmetadata: {name: t}\n"
       "spec: {levels: []}\n",
       "spec.levels: must list 1 to 16 levels, got 0"},
      {"apiVersion: kueue.x-k8s.io/v1beta2\nkind: Topology\nmetadata: {name: t}\n"
       "spec: {levels: [{nodeLabel: rack, weight: 2}]}\n",
       "weight"},
      {"apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: f}\n"
       "spec: {topologyName: nowhere}\n",
       "Topology nowhere does not exist"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    Config config;
    Status s = ParseAndValidate(c.text, &config);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find(c.want), std::string::npos) << s.message();
  }
}

TEST(ManifestTopologyTest, PodTemplateAnnotations) {
  // The topology request of a Job whose pod template has `annotation`.
  auto topology = [](const std::string& annotation) {
    Config c;
    Status s = ParseManifests(Job(annotation), "t.yaml", &c);
    EXPECT_TRUE(s.ok()) << s.message();
    return s.ok() ? c.workloads[0].pod_sets[0].topology : TopologyRequest{};
  };
  EXPECT_EQ(topology("kueue.x-k8s.io/podset-required-topology: example.com/rack").required,
            "example.com/rack");
  EXPECT_EQ(topology("kueue.x-k8s.io/podset-preferred-topology: example.com/block").preferred,
            "example.com/block");
  EXPECT_TRUE(topology("kueue.x-k8s.io/podset-unconstrained-topology: \"true\"").unconstrained);
  EXPECT_TRUE(topology("other: x").empty());
}

// What Allot reads but cannot honour, or two topologies at once, is an
// error naming the annotation or field.
TEST(ManifestTopologyTest, UnhonouredOrConflictingRequestsAreErrors) {
  struct Case {
    std::string text, want;
  } cases[] = {
      {Job("kueue.x-k8s.io/podset-required-topology: r, "
           "kueue.x-k8s.io/podset-preferred-topology: b"),
       "sets more than one of kueue.x-k8s.io/podset-required-topology"},
      {Job("kueue.x-k8s.io/podset-slice-required-topology: r, "
           "kueue.x-k8s.io/podset-slice-size: \"2\""),
       "does not honour pod set slices or groups; remove "
       "kueue.x-k8s.io/podset-slice-required-topology"},
      {Job("kueue.x-k8s.io/podset-group-name: g"),
       "remove kueue.x-k8s.io/podset-group-name"},
      {R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: w, namespace: default}
spec:
  queueName: q
  podSets:
  - count: 2
    topologyRequest: {required: r, podSetSliceSize: 1}
    template: {spec: {containers: [{name: c}]}}
)",
       "spec.podSets[0].topologyRequest.podSetSliceSize: Allot does not honour "
       "podSetSliceSize"},
      {R"(apiVersion: allot.dev/v1
kind: Workload
metadata: {name: w, namespace: default}
spec:
  queueName: q
  podSets:
  - count: 2
    topologyRequest: {required: r, preferred: b}
    template: {}
)",
       "spec.podSets[0].topologyRequest: sets more than one of required, "
       "preferred and unconstrained"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    Config config;
    Status s = ParseManifests(c.text, "t.yaml", &config);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find(c.want), std::string::npos) << s.message();
  }
}

// A v1beta2 Workload's topologyRequest wins over its template's annotation
// (Kueue's integrations write the field from the annotations); an
// allot.dev/v1 Workload has the field too, and it is written back.
TEST(ManifestTopologyTest, TopologyRequestFieldAndRoundTrip) {
  Config c;
  Status s = ParseManifests(R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: w, namespace: default}
spec:
  queueName: q
  podSets:
  - count: 2
    topologyRequest: {preferred: example.com/rack, podIndexLabel: batch.kubernetes.io/job-completion-index}
    template:
      metadata: {annotations: {kueue.x-k8s.io/podset-required-topology: example.com/block}}
      spec: {containers: [{name: c, resources: {requests: {cpu: "1"}}}]}
)",
                            "t.yaml", &c);
  ASSERT_TRUE(s.ok()) << s.message();
  const TopologyRequest& t = c.workloads[0].pod_sets[0].topology;
  EXPECT_EQ(t.preferred, "example.com/rack");
  EXPECT_EQ(t.required, "");

  // Written as allot.dev/v1 and read back: the same request.
  json::object w = EncodeWorkload(c.workloads[0]);
  EXPECT_EQ(json::serialize(w.at("spec").at("podSets").at(0).at("topologyRequest")),
            R"({"preferred":"example.com/rack"})");
  Config back;
  s = ParseManifests(json::serialize(w), "back.json", &back);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(back.workloads[0].pod_sets[0].topology == t);

  // The Topology and the flavor, in both versions.
  Config tc;
  ASSERT_TRUE(ParseManifests(kTopology, "t.yaml", &tc).ok());
  for (KueueVersion v : {KueueVersion::kV1beta1, KueueVersion::kV1beta2}) {
    SCOPED_TRACE(KueueApiVersionOf(v));
    std::string text = json::serialize(EncodeTopology(tc.topologies[0], v)) +
                       "\n---\n" + json::serialize(EncodeFlavor(tc.flavors[0], v));
    Config again;
    ASSERT_TRUE(ParseAndValidate(text, &again).ok()) << text;
    EXPECT_TRUE(again.topologies[0] == tc.topologies[0]);
    EXPECT_TRUE(again.flavors[0] == tc.flavors[0]);
  }
}

}  // namespace
}  // namespace allot::core
