// The controllers as the server runs them, in process (server/harness.h):
// State, the runner and a real SQLite store on a fake clock. Each
// controller's own decisions are tables in src/ctrl/*_test.cc; here, that
// their actions reach the state, the store and the audit log, and survive
// a restart.
#include <gtest/gtest.h>

#include "server/harness.h"
#include "testing/builders.h"

namespace allot::server {
namespace {

using testing::Harness;

// ClusterQueue "limited" lets workloads that set no limit of their own run
// 1h30m; "open" sets none. One node of 4 GPUs.
std::string Cluster() {
  namespace b = allot::testing;
  return b::Namespace("t1") + b::Flavor("f1", "") + R"(apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata:
  name: limited
  annotations: {allot.dev/max-run-duration: 1h30m}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: f1, resources: [{name: nvidia.com/gpu, nominalQuota: 2}]}]
---
)" + b::GpuCq("open", "", "f1", "nominalQuota: 2") +
         b::LocalQueue("t1", "limited", "limited") + b::LocalQueue("t1", "open", "open") +
         b::Node("n1", "", "32", "256Gi", b::Uuids("G-", 4));
}

std::string Workload(const std::string& name, const std::string& queue,
                     const std::string& limit = "") {
  return "apiVersion: allot.dev/v1\nkind: Workload\nmetadata: {name: " + name +
         ", namespace: t1}\nspec:\n  queueName: " + queue + "\n" +
         (limit.empty() ? "" : "  maximumExecutionTimeSeconds: " + limit + "\n") +
         "  podSets: [{count: 1, template: {resources: {requests: {nvidia.com/gpu: 1}}}}]\n";
}

constexpr int64_t kMin = 60 * 1000;

// Agent node a1's report: `gpus` H100s GPU-a1-0.., no samples.
AgentReport AgentNode(int gpus) {
  AgentReport r;
  r.node.name = "a1";
  r.node.cpu = Quantity::FromUnits(32);
  r.node.memory = Quantity::FromUnits(int64_t(256) << 30);
  for (int i = 0; i < gpus; ++i) {
    core::Gpu g;
    g.uuid = "GPU-a1-" + std::to_string(i);
    g.product = "H100-80GB";
    g.memory = Quantity::FromUnits(int64_t(80) << 30);
    r.node.gpus.push_back(g);
  }
  r.address = "a1";
  return r;
}

TEST(ControllersInProcess, ClusterQueueMaxRunDurationFailsWorkloadsThatSetNone) {
  Harness h;
  ASSERT_TRUE(h.Apply(Cluster()).ok());
  ASSERT_TRUE(h.Apply(Workload("dflt", "limited")).ok());
  ASSERT_TRUE(h.Apply(Workload("own", "limited", "7200")).ok());  // Its own: 2 h.
  ASSERT_TRUE(h.Apply(Workload("free", "open")).ok());
  const int64_t admitted = h.now();
  EXPECT_EQ(h.WorkloadState("t1/dflt"), "Admitted");
  EXPECT_EQ(h.next_wake(), admitted + 1000) << "a new admission wakes the deadlines controller";
  h.Advance(1000);
  EXPECT_EQ(h.next_wake(), admitted + 90 * kMin) << "then it sleeps until the first deadline";

  h.Advance(90 * kMin - 1001);
  EXPECT_EQ(h.WorkloadState("t1/dflt"), "Admitted") << "one millisecond before its deadline";
  h.Advance(1);
  EXPECT_EQ(h.WorkloadState("t1/dflt"), "Failed");
  EXPECT_EQ(h.Reason("t1/dflt", "Finished"), "MaximumExecutionTimeExceeded");
  EXPECT_EQ(h.WorkloadState("t1/own"), "Admitted") << "its own limit wins over the queue's";
  // Audited as the controller, not as a cluster-admin.
  const store::AuditRow last = h.AuditLog().back();
  EXPECT_EQ(last.principal, "controller:deadlines");
  EXPECT_EQ(last.tenant, "t1");
  EXPECT_EQ(last.verb, "fail");
  EXPECT_EQ(last.object, "Workload t1/dflt");
  // The quota is free again: a workload waiting for it is admitted.
  ASSERT_TRUE(h.Apply(Workload("next", "limited")).ok());
  ASSERT_TRUE(h.Apply(Workload("next2", "limited")).ok());
  EXPECT_EQ(h.WorkloadState("t1/next"), "Admitted");
  EXPECT_EQ(h.WorkloadState("t1/next2"), "Pending") << "2 GPUs of quota: own + next";

  // The deadline survives a restart: it counts from the stored reservation.
  h.Restart(h.now() + 10 * kMin);
  h.Advance(20 * kMin);
  EXPECT_EQ(h.WorkloadState("t1/own"), "Failed");
  EXPECT_EQ(h.WorkloadState("t1/free"), "Admitted");
  h.Advance(24 * 60 * kMin);
  EXPECT_EQ(h.WorkloadState("t1/free"), "Admitted") << "no limit anywhere";
}

TEST(ControllersInProcess, ARestartedServerRunsControllersFromItsFirstTurn) {
  Harness h;
  ASSERT_TRUE(h.Apply(Cluster()).ok());
  ASSERT_TRUE(h.Apply(Workload("w", "limited")).ok());
  // The server is down past the deadline: the first turn after the start
  // fails the workload.
  h.Restart(h.now() + 2 * 60 * kMin);
  EXPECT_EQ(h.next_wake(), 0);
  h.Turn();
  EXPECT_EQ(h.WorkloadState("t1/w"), "Failed");
}

// A pod failure whose workload leaves in the same turn is dropped with it:
// a workload made again under the name fails with its own pod's words.
TEST(ControllersInProcess, AFailureOfAWorkloadThatLeftDoesNotStandForTheNextOne) {
  Harness h;
  std::string cluster = Cluster();
  cluster.erase(cluster.find("---\napiVersion: allot.dev/v1\nkind: Node"));
  ASSERT_TRUE(h.Apply(cluster).ok());
  AgentReport node;
  node.node.name = "a1";
  node.node.cpu = Quantity::FromUnits(32);
  node.node.memory = Quantity::FromUnits(int64_t(256) << 30);
  node.node.gpus.push_back({"GPU-1", "H100", Quantity::FromUnits(int64_t(80) << 30), true, {}});
  ASSERT_TRUE(h.Sync(node).ok());
  auto failed = [&](int code) {
    std::vector<DesiredPod> pods = h.state().DesiredPods("a1");
    EXPECT_EQ(pods.size(), 1u);
    AgentReport r = node;
    r.pods.push_back({pods.empty() ? "" : pods[0].id, true, code, 0, false, "", ""});
    return r;
  };

  ASSERT_TRUE(h.Apply(Workload("w", "open")).ok());
  AgentReport first = failed(3);
  h.Turn([&](State& st, Txn& txn) {
    ASSERT_TRUE(st.AgentSync(first, &txn).ok());
    ASSERT_TRUE(st.Delete(Harness::kAdmin, Kind::kWorkload, "t1/w", false, &txn).ok());
  });
  EXPECT_EQ(h.WorkloadState("t1/w"), "(none)");

  ASSERT_TRUE(h.Apply(Workload("w", "open")).ok());
  ASSERT_EQ(h.WorkloadState("t1/w"), "Admitted");
  ASSERT_TRUE(h.Sync(failed(7)).ok());
  EXPECT_EQ(h.WorkloadState("t1/w"), "Failed");
  const WorkloadRecord* rec = h.state().FindWorkload("t1/w");
  ASSERT_NE(rec, nullptr);
  std::string message;
  for (const Condition& c : rec->conditions) {
    if (c.type == "Finished") message = c.message;
  }
  EXPECT_NE(message.find("exited with code 7"), std::string::npos) << message;
}

TEST(ControllersInProcess, ABadMaxRunDurationIsRefusedAndChangesNothing) {
  Harness h;
  ASSERT_TRUE(h.Apply(Cluster()).ok());
  for (const char* bad : {"90", "1.5h", "-1h", "0s", "30m1h", "forever"}) {
    std::string text = Cluster();
    const std::string v = "max-run-duration: 1h30m";
    text.replace(text.find(v), v.size(), std::string("max-run-duration: \"") + bad + "\"");
    Status s = h.Apply(text);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(s.message().find("allot.dev/max-run-duration"), std::string::npos) << s.message();
    EXPECT_EQ(s.field(), "metadata.annotations.allot.dev/max-run-duration") << bad;
  }
  // The stored queue still has its 1h30m.
  auto cq = h.state().Get(Harness::kAdminReader, Kind::kClusterQueue, "limited");
  ASSERT_TRUE(cq.ok());
  EXPECT_EQ(cq->at("metadata").at("annotations").at("allot.dev/max-run-duration").as_string(),
            "1h30m");
}


// The idle policy end to end in process: an agent's node, its GPU samples
// on the fake clock, ClusterQueue "idle" parking after 30 min of idleness.
// A busy sample starts the idle time again; the park is the controller's,
// audited as such; the workload keeps its quota; a bad annotation is
// refused naming it.
// Notebooks (docs/notebooks.md): parked after their ClusterQueue's idle
// time, or an hour when it has none; a resume starts their idle time again,
// and activity they report holds it off.
TEST(ControllersInProcess, ANotebookIsParkedAfterItsQueuesIdleTimeOrAnHour) {
  namespace b = allot::testing;
  ctrl::Options slow;
  slow.node_timeout_ms = 24 * 60 * kMin;
  Harness h(slow);
  ASSERT_TRUE(h.Apply(b::Namespace("t1") + b::Flavor("f1", "") +
                      b::GpuCq("plain", "", "f1", "nominalQuota: 1") + R"(apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata:
  name: idle
  annotations: {allot.dev/idle-after: 30m}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: f1, resources: [{name: nvidia.com/gpu, nominalQuota: 1}]}]
---
)" + b::LocalQueue("t1", "plain", "plain") + b::LocalQueue("t1", "idle", "idle"))
                  .ok());
  AgentReport r = AgentNode(2);
  ASSERT_TRUE(h.Sync(r).ok());
  for (const char* q : {"plain", "idle"}) {
    ASSERT_TRUE(h.Apply(std::string("apiVersion: allot.dev/v1\nkind: Notebook\nmetadata: {name: nb-") +
                        q + ", namespace: t1}\nspec: {queueName: " + q + ", gpus: 1}\n")
                    .ok());
  }
  AgentReport idle = r;
  for (int i = 0; i < 2; ++i) idle.gpu_samples.push_back({"GPU-a1-" + std::to_string(i), i, 0});
  ASSERT_TRUE(h.Sync(idle).ok());
  h.Advance(31 * kMin);
  EXPECT_EQ(h.WorkloadState("t1/nb-idle"), "Parked") << "its ClusterQueue's 30 minutes";
  EXPECT_EQ(h.WorkloadState("t1/nb-plain"), "Admitted") << "an hour, by default";
  h.Advance(30 * kMin);
  EXPECT_EQ(h.WorkloadState("t1/nb-plain"), "Parked");
  // Resumed hours after it was admitted: its idle time starts again.
  h.Advance(120 * kMin);
  std::string result;
  h.Turn([&](State& st, Txn& txn) {
    ASSERT_TRUE(st.ResumeWorkload(Actor::System("test"), "t1/nb-plain", &txn, &result).ok());
  });
  ASSERT_TRUE(h.Sync(idle).ok());
  ASSERT_EQ(h.WorkloadState("t1/nb-plain"), "Admitted");
  h.Advance(50 * kMin);
  ASSERT_EQ(h.WorkloadState("t1/nb-plain"), "Admitted") << "resumed 50 minutes ago";
  h.Turn([&](State& st, Txn& txn) { ASSERT_TRUE(st.ReportActivity("t1/nb-plain", txn.now_unix_ms).ok()); });
  h.Advance(59 * kMin);
  EXPECT_EQ(h.WorkloadState("t1/nb-plain"), "Admitted") << "active 59 minutes ago";
  h.Advance(2 * kMin);
  EXPECT_EQ(h.WorkloadState("t1/nb-plain"), "Parked");
}

// A ClusterQueue whose admin chose allot.dev/idle-action: Stop: an idle
// workload is parked and stopped at once, its quota freed for the queue.
TEST(ControllersInProcess, AnIdleActionOfStopFreesTheQuota) {
  namespace b = allot::testing;
  ctrl::Options slow;
  slow.node_timeout_ms = 24 * 60 * kMin;
  Harness h(slow);
  const auto cq = [](const std::string& action) {
    return b::Namespace("t1") + b::Flavor("f1", "") + R"(apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata:
  name: idle
  annotations: {allot.dev/idle-after: 30m, allot.dev/idle-action: )" + action + R"(}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: f1, resources: [{name: nvidia.com/gpu, nominalQuota: 1}]}]
---
)" + b::LocalQueue("t1", "idle", "idle");
  };
  Status bad = h.Apply(cq("Delete"));
  EXPECT_EQ(bad.field(), "metadata.annotations.allot.dev/idle-action") << bad.message();
  ASSERT_TRUE(h.Apply(cq("Stop")).ok());
  AgentReport r = AgentNode(1);
  ASSERT_TRUE(h.Sync(r).ok());
  ASSERT_TRUE(h.Apply(Workload("nb", "idle")).ok());
  ASSERT_TRUE(h.Apply(Workload("next", "idle")).ok());
  ASSERT_EQ(h.WorkloadState("t1/nb"), "Admitted");
  ASSERT_EQ(h.WorkloadState("t1/next"), "Pending");
  AgentReport idle = r;
  idle.gpu_samples.push_back({"GPU-a1-0", 0, 0});
  ASSERT_TRUE(h.Sync(idle).ok());
  h.Advance(31 * kMin);
  EXPECT_EQ(h.WorkloadState("t1/nb"), "Suspended");
  EXPECT_EQ(h.Reason("t1/nb", "Parked"), "IdleStop");
  EXPECT_EQ(h.WorkloadState("t1/next"), "Admitted") << "the quota went to the next in line";
  EXPECT_EQ(h.AuditLog().back().verb, "stop-parked");
}

TEST(ControllersInProcess, TheIdleParkerParksWhatStayedIdleForItsTime) {
  namespace b = allot::testing;
  // The agent syncs only when the test says: no NotReady on the way.
  ctrl::Options slow;
  slow.node_timeout_ms = 24 * 60 * kMin;
  Harness h(slow);
  ASSERT_TRUE(h.Apply(b::Namespace("t1") + b::Flavor("f1", "") + R"(apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata:
  name: idle
  annotations: {allot.dev/idle-after: 30m, allot.dev/max-parked: 8h}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: f1, resources: [{name: nvidia.com/gpu, nominalQuota: 1}]}]
---
)" + b::LocalQueue("t1", "idle", "idle"))
                  .ok());
  AgentReport r = AgentNode(2);
  ASSERT_TRUE(h.Sync(r).ok());
  ASSERT_TRUE(h.Apply(Workload("nb", "idle")).ok());
  ASSERT_EQ(h.WorkloadState("t1/nb"), "Admitted");
  auto sample = [&](int util) {
    AgentReport s = r;
    for (int i = 0; i < 2; ++i) s.gpu_samples.push_back({"GPU-a1-" + std::to_string(i), i, util});
    ASSERT_TRUE(h.Sync(s).ok());
  };
  sample(0);  // Idle from now...
  h.Advance(20 * kMin);
  sample(90);  // ...but a burst starts it again.
  sample(0);
  h.Advance(29 * kMin);
  EXPECT_EQ(h.WorkloadState("t1/nb"), "Admitted") << "29 minutes idle since the burst";
  h.Advance(2 * kMin);  // The controller looks at least every 30 s.
  EXPECT_EQ(h.WorkloadState("t1/nb"), "Parked");
  EXPECT_EQ(h.Reason("t1/nb", "Parked"), "Idle");
  const store::AuditRow last = h.AuditLog().back();
  EXPECT_EQ(last.principal, "controller:idle-parker");
  EXPECT_EQ(last.verb, "park");
  EXPECT_EQ(last.object, "Workload t1/nb");
  // Its quota is kept: a second workload waits for it.
  ASSERT_TRUE(h.Apply(Workload("other", "idle")).ok());
  EXPECT_EQ(h.WorkloadState("t1/other"), "Pending");
  // Kept for the ClusterQueue's max-parked (8h), then freed: the parked
  // workload is held out of the queue, the waiting one runs.
  h.Advance(8 * 60 * kMin - 2 * kMin);
  EXPECT_EQ(h.WorkloadState("t1/nb"), "Parked");
  h.Advance(2 * kMin);
  EXPECT_EQ(h.WorkloadState("t1/nb"), "Suspended");
  EXPECT_EQ(h.Reason("t1/nb", "Parked"), "MaxParked");
  EXPECT_EQ(h.WorkloadState("t1/other"), "Admitted");
  bool stopped = false;
  for (const store::AuditRow& row : h.AuditLog()) {
    stopped = stopped || (row.principal == "controller:park-limit" && row.verb == "stop-parked" &&
                          row.object == "Workload t1/nb");
  }
  EXPECT_TRUE(stopped);
  // A bad annotation is refused, naming it.
  for (const char* bad : {"0s", "soon", "-5m"}) {
    Status s = h.Apply(R"(apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata:
  name: idle
  annotations: {allot.dev/idle-after: ")" + std::string(bad) + R"("}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: f1, resources: [{name: nvidia.com/gpu, nominalQuota: 2}]}]
)");
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(s.field(), "metadata.annotations.allot.dev/idle-after") << bad << ": " << s.message();
  }
}

}  // namespace
}  // namespace allot::server
