// allot.dev/v1 Notebook (docs/notebooks.md) and pod set ports: what a
// Notebook becomes, and the errors of both.
#include <gtest/gtest.h>

#include <boost/json/serialize.hpp>

#include <string>

#include "core/manifest.h"
#include "core/manifest_encode.h"
#include "core/parking_annotations.h"

namespace allot::core {
namespace {

Status Parse(const std::string& yaml, Config* c) { return ParseManifests(yaml, "nb.yaml", c); }

TEST(ManifestNotebookTest, ANotebookIsAWorkloadOfTypeNotebookThatRunsJupyter) {
  Config c;
  ASSERT_TRUE(Parse(R"(
apiVersion: allot.dev/v1
kind: Notebook
metadata: {name: nb, namespace: team-a}
spec:
  queueName: q
  gpus: 2
  resources: {requests: {cpu: "2", memory: 8Gi}}
  maxAge: 24h
  workingDir: /data/nb
)",
                    &c)
                  .ok());
  ASSERT_EQ(c.workloads.size(), 1u);
  const Workload& w = c.workloads[0];
  EXPECT_EQ(w.Key(), "team-a/nb");
  EXPECT_EQ(w.type, "notebook");
  EXPECT_EQ(w.queue_name, "q");
  // No idleAfter: its ClusterQueue's applies, else the server's hour.
  EXPECT_FALSE(w.annotations.count(kIdleAfterKey));
  EXPECT_EQ(w.idle_after_seconds, -1);
  EXPECT_EQ(w.annotations.at(kIdleSignalKey), "activity");
  EXPECT_EQ(w.max_execution_seconds, 86400);
  ASSERT_EQ(w.pod_sets.size(), 1u);
  const PodSet& ps = w.pod_sets[0];
  EXPECT_EQ(ps.name, "notebook");
  EXPECT_EQ(ps.count, 1);
  EXPECT_EQ(ps.port, 8888);
  EXPECT_EQ(ps.requests.at("nvidia.com/gpu"), Quantity::FromUnits(2));
  EXPECT_EQ(ps.requests.at("cpu"), Quantity::FromUnits(2));
  ASSERT_EQ(ps.command.size(), 3u);
  EXPECT_EQ(ps.command[0], "sh");
  EXPECT_NE(ps.command[2].find("jupyter-notebook"), std::string::npos);
  EXPECT_NE(ps.command[2].find("--port=\"$PORT\""), std::string::npos);
  ASSERT_GE(ps.env.size(), 2u);
  EXPECT_EQ(ps.env[0], (std::pair<std::string, std::string>{"ALLOT_NOTEBOOK", "nb"}));
  EXPECT_EQ(ps.env[1], (std::pair<std::string, std::string>{"ALLOT_NOTEBOOK_DIR", "/data/nb"}));

  // Read back as the Workload it became (what `get` shows): the same.
  Config again;
  const std::string text = boost::json::serialize(EncodeWorkload(w));
  ASSERT_TRUE(Parse(text, &again).ok()) << text;
  ASSERT_EQ(again.workloads.size(), 1u);
  EXPECT_EQ(again.workloads[0].pod_sets, w.pod_sets);
  EXPECT_EQ(again.workloads[0].type, "notebook");
}

TEST(ManifestNotebookTest, MigIdleAfterAndOwnAnnotations) {
  Config c;
  ASSERT_TRUE(Parse(R"(
apiVersion: allot.dev/v1
kind: Notebook
metadata: {name: nb, namespace: team-a, annotations: {allot.dev/idle-after: 5m}}
spec: {queueName: q, mig: 1g.10gb, idleAfter: 0s}
)",
                    &c)
                  .ok());
  const Workload& w = c.workloads.at(0);
  // Its own annotation wins over spec.idleAfter.
  EXPECT_EQ(w.annotations.at(kIdleAfterKey), "5m");
  EXPECT_EQ(w.pod_sets.at(0).requests.at("nvidia.com/mig-1g.10gb"), Quantity::FromUnits(1));
  EXPECT_FALSE(w.pod_sets.at(0).requests.count("nvidia.com/gpu"));
}

TEST(ManifestNotebookTest, ErrorsNameTheField) {
  struct Case {
    const char* spec;
    const char* want;
  } cases[] = {
      {"{queueName: q, gpus: 1, mig: 1g.10gb}", "spec.mig: give gpus or mig, not both"},
      {"{queueName: q, mig: big}", "spec.mig: not a MIG profile such as 1g.10gb"},
      {"{queueName: q, gpus: -1}", "spec.gpus: must be 0 to 64"},
      {"{queueName: q, idleAfter: soon}", "spec.idleAfter"},
      {"{queueName: q, maxAge: 0s}", "spec.maxAge: must be longer than 0s"},
      {"{queueName: q, podSets: []}", "spec.podSets"},
  };
  for (const Case& k : cases) {
    Config c;
    Status s = Parse(std::string("apiVersion: allot.dev/v1\nkind: Notebook\nmetadata: {name: nb}\n"
                                 "spec: ") +
                         k.spec + "\n",
                     &c);
    EXPECT_FALSE(s.ok()) << k.spec;
    EXPECT_NE(s.message().find(k.want), std::string::npos) << k.spec << ": " << s.message();
    EXPECT_TRUE(c.workloads.empty());
  }
  Config c;
  Status s = Parse("apiVersion: allot.dev/v1\nkind: Notebook\nmetadata: {generateName: nb-}\n"
                   "spec: {queueName: q}\n",
                   &c);
  EXPECT_NE(s.message().find("a Notebook needs a name"), std::string::npos) << s.message();
}

TEST(ManifestNotebookTest, APodSetsPortFromTheCompactTemplateOrTheFirstContainer) {
  Config c;
  ASSERT_TRUE(Parse(R"(
apiVersion: allot.dev/v1
kind: Workload
metadata: {name: w}
spec:
  queueName: q
  podSets:
  - template: {command: [srv], port: 8080}
---
apiVersion: batch/v1
kind: Job
metadata: {name: j, labels: {kueue.x-k8s.io/queue-name: q}}
spec:
  template:
    spec:
      containers:
      - name: c
        image: img
        ports: [{containerPort: 9000}, {containerPort: 9001}]
)",
                    &c)
                  .ok());
  ASSERT_EQ(c.workloads.size(), 2u);
  EXPECT_EQ(c.workloads[0].pod_sets.at(0).port, 8080);
  EXPECT_EQ(c.workloads[1].pod_sets.at(0).port, 9000);
  for (const char* bad : {"port: 0", "port: 70000", "port: http"}) {
    Config e;
    Status s = Parse(std::string("apiVersion: allot.dev/v1\nkind: Workload\nmetadata: {name: w}\n"
                                 "spec: {queueName: q, podSets: [{template: {") +
                         bad + "}}]}\n",
                     &e);
    EXPECT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.message().find("port"), std::string::npos) << s.message();
  }
}

}  // namespace
}  // namespace allot::core
