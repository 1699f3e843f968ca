// RunDryRun end to end on temporary files: exit codes, and the promise that
// nothing reaches stdout on error. Scheduling answers themselves are tested
// in tests/e2e/cases and src/sched.
#include "cli/dry_run.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "testing/temp_dir.h"

namespace allot::cli {
namespace {


// A temporary directory, removed with its files at the end of the test.
class DryRunTest : public allot::testing::TempDirTest {
 protected:
  int Run(const std::vector<std::string>& files) {
    out_.str("");
    err_.str("");
    return RunDryRun(files, out_, err_);
  }

  std::ostringstream out_;
  std::ostringstream err_;
};

constexpr char kQueues[] = R"(apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata:
  name: h100
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata:
  name: cq
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: ["nvidia.com/gpu"]
    flavors:
    - name: h100
      resources:
      - name: nvidia.com/gpu
        nominalQuota: 8
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata:
  name: lq
  namespace: team-a
spec:
  clusterQueue: cq
)";

constexpr char kWorkload[] = R"(apiVersion: kueue.x-k8s.io/v1beta1
kind: Workload
metadata:
  name: train
  namespace: team-a
spec:
  queueName: lq
  podSets:
  - name: main
    count: 1
    template:
      spec:
        containers:
        - name: c
          resources:
            requests:
              nvidia.com/gpu: 1
)";

constexpr char kNode[] = R"(apiVersion: allot.dev/v1
kind: Node
metadata: {name: gpu-01}
status:
  capacity: {cpu: 8, memory: 64Gi}
  gpus: [{uuid: GPU-0}, {uuid: GPU-1}, {uuid: GPU-2}]
)";

TEST_F(DryRunTest, AdmitsAndPrintsOneJsonLine) {
  // One pod of 1 GPU, 8 GPUs of quota, a node with 3 free GPUs: admitted on
  // the lowest-index GPU. Keys come out in the documented order.
  EXPECT_EQ(Run({Write("q.yaml", kQueues), Write("n.yaml", kNode),
                 Write("w.yaml", kWorkload)}),
            kExitOk)
      << err_.str();
  EXPECT_EQ(out_.str(),
            R"({"admitted":[{"workload":"team-a/train","clusterQueue":"cq",)"
            R"("podSets":[{"name":"main","count":1,)"
            R"("flavors":{"nvidia.com/gpu":"h100"},)"
            R"("placements":[{"node":"gpu-01","gpus":["GPU-0"]}]}]}],)"
            R"("preempted":[],"pending":[]})"
            "\n");
  EXPECT_EQ(err_.str(), "");
}

TEST_F(DryRunTest, SchedulerCreateErrorPrintsNothing) {
  // The admitted pod is placed on GPU-0 but requests 2 GPUs: the config is
  // valid, the scheduler rejects it when it is built.
  std::string admitted = std::string(kWorkload) + R"(status:
  admission:
    clusterQueue: cq
    podSetAssignments:
    - name: main
      flavors: {nvidia.com/gpu: h100}
      placements:
      - {node: gpu-01, gpus: [GPU-0]}
)";
  size_t pos = admitted.find("nvidia.com/gpu: 1");
  ASSERT_NE(pos, std::string::npos);
  admitted.replace(pos, 17, "nvidia.com/gpu: 2");
  EXPECT_EQ(Run({Write("q.yaml", kQueues), Write("n.yaml", kNode),
                 Write("w.yaml", admitted)}),
            kExitUsage);
  EXPECT_EQ(out_.str(), "");
  EXPECT_EQ(err_.str().rfind("allot: ", 0), 0u) << err_.str();
}

TEST_F(DryRunTest, QueuesOnlyGiveEmptyResult) {
  // No workloads: nothing to admit, preempt or keep pending.
  EXPECT_EQ(Run({Write("q.yaml", kQueues)}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(), "{\"admitted\":[],\"preempted\":[],\"pending\":[]}\n");
  EXPECT_EQ(err_.str(), "");
}

TEST_F(DryRunTest, FilesAreMergedInOrder) {
  // The workload is in a second file; with no nodes it cannot be placed, so
  // it must show up as pending in cq (and the run still succeeds).
  EXPECT_EQ(Run({Write("q.yaml", kQueues), Write("w.yaml", kWorkload)}),
            kExitOk)
      << err_.str();
  EXPECT_NE(out_.str().find(
                R"("pending":[{"workload":"team-a/train","clusterQueue":"cq")"),
            std::string::npos)
      << out_.str();
  EXPECT_EQ(out_.str().back(), '\n');
}

TEST_F(DryRunTest, MissingFileIsAnErrorAndPrintsNothing) {
  std::string missing = Path("nope.yaml");
  EXPECT_EQ(Run({missing}), kExitUsage);
  EXPECT_EQ(out_.str(), "");
  EXPECT_EQ(err_.str().rfind("allot: ", 0), 0u) << err_.str();
  EXPECT_NE(err_.str().find("nope.yaml"), std::string::npos) << err_.str();
}

TEST_F(DryRunTest, UnknownKindIsAnErrorAndPrintsNothing) {
  std::string bad = Write("bad.yaml", std::string(kQueues) + R"(---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueueFancy
metadata:
  name: x
)");
  EXPECT_EQ(Run({bad}), kExitUsage);
  EXPECT_EQ(out_.str(), "");
  EXPECT_NE(err_.str().find("bad.yaml: document 3"), std::string::npos)
      << err_.str();
  EXPECT_EQ(err_.str().back(), '\n');
}

TEST_F(DryRunTest, ValidationErrorPrintsNothing) {
  // A LocalQueue naming a ClusterQueue that does not exist.
  std::string bad = Write("bad.yaml", R"(apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata:
  name: lq
  namespace: team-a
spec:
  clusterQueue: missing-cq
)");
  EXPECT_EQ(Run({bad}), kExitUsage);
  EXPECT_EQ(out_.str(), "");
  EXPECT_NE(err_.str().find("missing-cq"), std::string::npos) << err_.str();
}

TEST_F(DryRunTest, NoFilesIsAnError) {
  EXPECT_EQ(Run({}), kExitUsage);
  EXPECT_EQ(out_.str(), "");
  EXPECT_NE(err_.str(), "");
}

}  // namespace
}  // namespace allot::cli

namespace allot::cli {
namespace {

// spec.active: false holds a workload out of its queue; an admitted one is
// evicted first (Kueue's reason InactiveWorkload) and its GPUs go to the
// next: here the active workload that waited behind it.
TEST_F(DryRunTest, InactiveWorkloadsAreHeld) {
  std::string held = std::string(kWorkload) + "  active: false\n";
  std::string admitted_held = held;
  admitted_held.replace(admitted_held.find("name: train"), 11, "name: old");
  admitted_held.replace(admitted_held.find("nvidia.com/gpu: 1"), 17,
                        "nvidia.com/gpu: 3");
  admitted_held += R"(status:
  admission:
    clusterQueue: cq
    podSetAssignments:
    - name: main
      flavors: {nvidia.com/gpu: h100}
)";
  std::string waiting = kWorkload;
  waiting.replace(waiting.find("name: train"), 11, "name: next");
  waiting.replace(waiting.find("nvidia.com/gpu: 1"), 17, "nvidia.com/gpu: 3");
  ASSERT_EQ(Run({Write("q.yaml", kQueues), Write("n.yaml", kNode),
                 Write("w.yaml", held + "---\n" + admitted_held + "---\n" + waiting)}),
            kExitOk)
      << err_.str();
  const std::string out = out_.str();
  EXPECT_NE(out.find(R"("admitted":[{"workload":"team-a/next")"), std::string::npos) << out;
  EXPECT_NE(out.find(R"("preempted":[{"workload":"team-a/old","preemptor":"","reason":"InactiveWorkload"}])"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find(R"("pending":[{"workload":"team-a/old","clusterQueue":"cq","position":0,)"
                     R"("reason":"inactive (spec.active is false): held out of its queue"},)"
                     R"({"workload":"team-a/train")"),
            std::string::npos)
      << out;
}

}  // namespace
}  // namespace allot::cli
