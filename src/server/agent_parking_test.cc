// Parking end to end (docs/parking.md), with a real `allot serve` and a
// real agent running real pod processes on simulated GPUs
// (agent_test_util.h): a parked workload's processes end and its GPUs go
// to another tenant's job while its quota stays; a resume that finds no
// free GPU waits, and the workload runs again, as a new attempt, as soon
// as they are free, without going through its queue; a server restart
// keeps it parked; who may park is who may delete; parked in part, its
// head runs on.
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "server/agent_test_util.h"

namespace allot::server {
namespace {

using namespace testing;  // The agents' fixture: agent_test_util.h.
namespace json = boost::json;

// AgentWorkload's one-pod workload in `tenant`, of priority class `cls`.
std::string InTenant(const std::string& tenant, const std::string& name, int gpus,
                     const std::string& script, const std::string& cls = "") {
  json::value w = json::parse(AgentWorkload(name, 1, gpus, script));
  w.at("metadata").as_object()["namespace"] = tenant;
  if (!cls.empty()) w.at("spec").as_object()["priorityClassName"] = cls;
  return json::serialize(w);
}

std::string Usage(TestServer& srv, const std::string& cq) {
  int code = 0;
  json::value v = srv.Json("GET", "/api/v1/clusterqueues/" + cq, "", &code);
  return std::string(
      v.at("status").at("flavorsUsage").at(0).at("resources").at(0).at("total").as_string());
}

json::value As(TestServer& srv, const std::string& token, const std::string& method,
               const std::string& target, int* code) {
  net::Response r = srv.Call(token, method, target);
  *code = r.status;
  boost::system::error_code ec;
  json::value v = json::parse(r.body, ec);
  return ec ? json::value() : v;
}

std::string ParkedCondition(const json::value& w) {
  for (const json::value& c : w.at("status").at("conditions").as_array()) {
    if (c.at("type").as_string() == "Parked") {
      return std::string(c.at("status").as_string()) + " " +
             std::string(c.at("reason").as_string()) + ": " +
             std::string(c.at("message").as_string());
    }
  }
  return "";
}

// Parking in part (allot.dev/park-pod-sets: a RayCluster's workers, its
// head kept): the workers' processes end and their GPUs go back, the
// head's process runs on; the resume starts the workers again under new
// pod names and never restarts the head; kill -9 and a restart keep that.
// An annotation naming a pod set the workload lacks is refused.
TEST_F(AgentTest, ParkingInPartStopsTheWorkersAndKeepsTheHeadRunning) {
  auto n1 = StartReadyAgent("n1", "4xH100-80GB");
  json::value w = json::parse(AgentWorkload("ray", 1, 1, "sleep 300 & echo PID=$!; wait"));
  json::array& sets = w.at("spec").at("podSets").as_array();
  json::value workers = sets.at(0);
  workers.as_object()["name"] = "workers";
  workers.as_object()["count"] = 2;
  sets.push_back(workers);
  json::object& notes = w.at("metadata").at("annotations").as_object();
  int code = 0;
  notes["allot.dev/park-pod-sets"] = "workerz";
  json::value bad = srv_->Json("POST", "/api/v1/workloads", json::serialize(w), &code);
  EXPECT_EQ(code, 400) << json::serialize(bad);
  EXPECT_NE(json::serialize(bad).find("has no pod set workerz (its pod sets: main, workers)"),
            std::string::npos)
      << json::serialize(bad);
  notes["allot.dev/park-pod-sets"] = "workers";
  srv_->Json("POST", "/api/v1/workloads", json::serialize(w), &code);
  ASSERT_EQ(code, 201);
  json::value v = WaitFor("ray", [](const json::value& x) { return State(x) == "Running"; });
  ASSERT_EQ(State(v), "Running");
  const pid_t head = WaitPodPid(*n1, "team-a/ray/a1/main/0");
  const pid_t w0 = WaitPodPid(*n1, "team-a/ray/a1/workers/0");
  const pid_t w1 = WaitPodPid(*n1, "team-a/ray/a1/workers/1");
  ASSERT_TRUE(Alive(head) && Alive(w0) && Alive(w1));

  srv_->Json("POST", "/api/v1/workloads/team-a/ray/park", "", &code);
  ASSERT_EQ(code, 200);
  EXPECT_TRUE(WaitDead(w0));
  EXPECT_TRUE(WaitDead(w1));
  EXPECT_TRUE(Alive(head));
  v = srv_->Json("GET", "/api/v1/workloads/team-a/ray", "", &code);
  EXPECT_EQ(State(v), "Parked");
  EXPECT_NE(ParkedCondition(v).find("the pods of workers are stopped and their devices given "
                                    "back, main runs on"),
            std::string::npos)
      << ParkedCondition(v);
  const json::array& psas = v.at("status").at("admission").at("podSetAssignments").as_array();
  EXPECT_EQ(psas.at(0).at("placements").as_array().size(), 1u);
  EXPECT_FALSE(psas.at(1).as_object().contains("placements") &&
               !psas.at(1).at("placements").as_array().empty());
  EXPECT_EQ(Usage(*srv_, "cq-a"), "3");  // The quota of all stays.
  const std::string metrics = srv_->Call(srv_->admin_token(), "GET", "/metrics").body;
  EXPECT_NE(metrics.find("allot_parked_gpus{cluster_queue=\"cq-a\"} 2"), std::string::npos)
      << metrics;
  // Accounting: while parked in part the head's GPU is used (charged) and
  // the workers' two are reserved, both growing.
  auto usage = [&] {
    json::value u = srv_->Json("GET", "/api/v1/usage?by=workload", "", &code);
    return u.at("items").at(0);
  };
  const json::value u1 = usage();
  allot::testing::WaitFor([&] { return usage().at("reservedGpuMs").as_int64() >
                                       u1.at("reservedGpuMs").as_int64() + 100; },
                          std::chrono::seconds(5));
  const json::value u2 = usage();
  EXPECT_GT(u2.at("reservedGpuMs").as_int64(), u1.at("reservedGpuMs").as_int64());
  EXPECT_GT(u2.at("gpuMs").as_int64(), u1.at("gpuMs").as_int64());
  EXPECT_GT(u2.at("reservedGpuMs").as_int64() - u1.at("reservedGpuMs").as_int64(),
            u2.at("gpuMs").as_int64() - u1.at("gpuMs").as_int64());

  // The resume starts the workers again, as new pods; the head runs on.
  json::value r = srv_->Json("POST", "/api/v1/workloads/team-a/ray/resume", "", &code);
  ASSERT_EQ(code, 200) << json::serialize(r);
  EXPECT_EQ(r.at("result").as_string(), "resumed");
  const pid_t w0b = WaitPodPid(*n1, "team-a/ray/a1r1/workers/0");
  ASSERT_TRUE(Alive(w0b));
  v = WaitFor("ray", [](const json::value& x) { return State(x) == "Running"; });
  ASSERT_EQ(State(v), "Running") << json::serialize(v);
  EXPECT_EQ(v.at("status").at("attempt").as_int64(), 1);
  EXPECT_EQ(v.at("status").at("podSetGenerations").at("workers").as_int64(), 1);
  EXPECT_TRUE(Alive(head));
  EXPECT_EQ(PodPid(*n1, "team-a/ray/a1/main/0"), head);

  // kill -9 and a restart: the same pods run on.
  srv_->Kill9();
  ASSERT_TRUE(srv_->Restart()) << srv_->Log();
  v = WaitFor("ray", [](const json::value& x) { return State(x) == "Running"; });
  EXPECT_EQ(v.at("status").at("podSetGenerations").at("workers").as_int64(), 1);
  // The agent reports its pods again: the three of this attempt, none new.
  v = WaitFor("ray", [](const json::value& x) {
    const json::value* n = x.at("status").as_object().if_contains("podsRunning");
    return n != nullptr && n->as_int64() == 3;
  });
  EXPECT_EQ(v.at("status").at("podsRunning").as_int64(), 3) << json::serialize(v);
  EXPECT_TRUE(Alive(head));
  EXPECT_TRUE(Alive(w0b));
  EXPECT_EQ(PodPid(*n1, "team-a/ray/a1/main/0"), head);
}

TEST_F(AgentTest, AParkedWorkloadGivesItsGpusBackKeepsItsQuotaAndResumesFirst) {
  namespace b = allot::testing;
  ASSERT_TRUE(srv_->Apply(b::Namespace("team-b") + b::GpuCq("cq-b", "", "sim", "nominalQuota: 8") +
                          b::LocalQueue("team-b", "q", "cq-b")));
  auto n1 = StartReadyAgent("n1", "2xH100-80GB");
  json::value w;
  ASSERT_NO_FATAL_FAILURE(RunSleeper("idle", 2, &w));
  const pid_t first = WaitPodPid(*n1, PodId(w, 0));
  ASSERT_TRUE(Alive(first));

  int code = 0;
  json::value r = srv_->Json("POST", "/api/v1/workloads/team-a/idle/park", "", &code);
  ASSERT_EQ(code, 200) << json::serialize(r);
  EXPECT_EQ(r.at("result").as_string(), "parked");
  EXPECT_TRUE(WaitDead(first)) << n1->Output();
  w = srv_->Json("GET", "/api/v1/workloads/team-a/idle", "", &code);
  EXPECT_EQ(State(w), "Parked");
  EXPECT_NE(ParkedCondition(w).find("True UserRequest: parked by admin"), std::string::npos)
      << ParkedCondition(w);
  const json::value* placements = w.at("status").at("admission").at("podSetAssignments").at(0)
                                     .as_object().if_contains("placements");
  EXPECT_TRUE(placements == nullptr || placements->as_array().empty()) << json::serialize(w);
  EXPECT_EQ(Usage(*srv_, "cq-a"), "2");  // Its quota is kept...
  // ...and parking twice, or a pending workload, is refused saying why.
  srv_->Json("POST", "/api/v1/workloads/team-a/idle:park", "", &code);
  EXPECT_EQ(code, 409);

  // Its GPUs go to team-b's job (within team-b's own quota).
  srv_->Json("POST", "/api/v1/workloads", InTenant("team-b", "borrower", 2, "sleep 300 & echo PID=$!; wait"),
             &code);
  ASSERT_EQ(code, 201);
  json::value bw = srv_->WaitForWorkload(
      "team-b/borrower", [](const json::value& v) { return State(v) == "Running"; });
  ASSERT_EQ(State(bw), "Running") << json::serialize(bw);

  // No GPU is free: the resume waits, saying why, and the workload stays
  // parked (not queued).
  r = srv_->Json("POST", "/api/v1/workloads/team-a/idle/resume", "", &code);
  ASSERT_EQ(code, 200) << json::serialize(r);
  EXPECT_EQ(r.at("result").as_string(), "waiting");
  EXPECT_NE(std::string(r.at("message").as_string()).find("no free devices"), std::string::npos)
      << json::serialize(r);
  w = srv_->Json("GET", "/api/v1/workloads/team-a/idle", "", &code);
  EXPECT_EQ(State(w), "Parked");

  // A server restart keeps it parked and its resume waiting.
  srv_->Kill9();
  ASSERT_TRUE(srv_->Restart()) << srv_->Log();
  w = srv_->Json("GET", "/api/v1/workloads/team-a/idle", "", &code);
  EXPECT_EQ(State(w), "Parked") << json::serialize(w);
  EXPECT_EQ(Usage(*srv_, "cq-a"), "2");

  // The borrower ends: the parked workload runs again at once, as a new
  // attempt with a new process.
  srv_->Json("DELETE", "/api/v1/workloads/team-b/borrower", "", &code);
  ASSERT_EQ(code, 200);
  w = WaitFor("idle", [](const json::value& v) { return State(v) == "Running"; });
  ASSERT_EQ(State(w), "Running") << json::serialize(w);
  EXPECT_EQ(w.at("status").at("attempt").as_int64(), 2);
  EXPECT_NE(ParkedCondition(w).find("False Resumed: resumed: placed again on 2 device(s) on n1"),
            std::string::npos)
      << ParkedCondition(w);
  const pid_t second = WaitPodPid(*n1, PodId(w, 0));
  EXPECT_TRUE(Alive(second));
  EXPECT_NE(second, first);
  const std::string metrics = srv_->Call(srv_->admin_token(), "GET", "/metrics").body;
  // (Counters start again with the server: the park was before its restart.)
  EXPECT_NE(metrics.find("allot_resumes_total{cluster_queue=\"cq-a\"} 1"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("allot_resume_latency_seconds_count{cluster_queue=\"cq-a\"} 1"),
            std::string::npos);
  EXPECT_NE(metrics.find("allot_parked_workloads{cluster_queue=\"cq-a\"} 0"), std::string::npos);
  srv_->Json("DELETE", "/api/v1/workloads/team-a/idle", "", &code);
  EXPECT_TRUE(WaitDead(second));
}

TEST_F(AgentTest, WhoMayDeleteAWorkloadMayParkItAndNothingElse) {
  auto n1 = StartReadyAgent("n1", "2xH100-80GB");
  json::value w;
  ASSERT_NO_FATAL_FAILURE(RunSleeper("mine", 1, &w));
  const std::string viewer = srv_->NewToken("v", "viewer", "team-a");
  const std::string member = srv_->NewToken("m", "member", "team-a");
  const std::string other = srv_->NewToken("o", "member", "default");
  int code = 0;
  const std::string park = "/api/v1/workloads/team-a/mine/park";
  As(*srv_, viewer, "POST", park, &code);
  EXPECT_EQ(code, 403);
  As(*srv_, other, "POST", park, &code);
  EXPECT_EQ(code, 404);  // Another tenant's workload does not exist for it.
  As(*srv_, member, "GET", park, &code);
  EXPECT_EQ(code, 405);
  json::value r = As(*srv_, member, "POST", park, &code);
  EXPECT_EQ(code, 200) << json::serialize(r);
  r = As(*srv_, member, "POST", "/api/v1/workloads/team-a/mine/resume", &code);
  EXPECT_EQ(code, 200) << json::serialize(r);
  EXPECT_EQ(r.at("result").as_string(), "resumed");
  // A workload that was never admitted has no quota to keep.
  srv_->Json("POST", "/api/v1/workloads", AgentWorkload("huge", 1, 64, "true"), &code);
  ASSERT_EQ(code, 201);
  r = As(*srv_, member, "POST", "/api/v1/workloads/team-a/huge/park", &code);
  EXPECT_EQ(code, 409);
  EXPECT_NE(json::serialize(r).find("only an admitted workload can be parked"),
            std::string::npos)
      << json::serialize(r);
  // The audit trail has both.
  json::value audit = srv_->Json("GET", "/api/v1/audit?verb=park", "", &code);
  EXPECT_NE(json::serialize(audit).find("Workload team-a/mine"), std::string::npos)
      << json::serialize(audit);
  // Activity (a custom idle signal) may be reported by the same people.
  const std::string activity = "/api/v1/workloads/team-a/mine:activity";
  r = As(*srv_, viewer, "POST", activity, &code);
  EXPECT_EQ(code, 403);
  EXPECT_NE(json::serialize(r).find("may not report the activity of Workload team-a/mine"),
            std::string::npos)
      << json::serialize(r);
  As(*srv_, other, "POST", activity, &code);
  EXPECT_EQ(code, 404);
  r = As(*srv_, member, "POST", activity, &code);
  ASSERT_EQ(code, 200) << json::serialize(r);
  const int64_t at = r.at("lastActivityUnixMs").as_int64();
  EXPECT_EQ(srv_->Json("GET", "/api/v1/workloads/team-a/mine", "", &code)
                .at("status").at("lastActivityUnixMs").as_int64(),
            at);
}

// A parked workload keeps its quota only as long as no higher priority in
// its ClusterQueue needs it: preempted, it is Suspended (not queued: an
// idle workload should not start again by itself) until resumed, which
// puts it back in its queue.
TEST_F(AgentTest, APreemptedParkedWorkloadIsSuspendedUntilResumed) {
  namespace b = allot::testing;
  ASSERT_TRUE(srv_->Apply(b::Namespace("team-p") +
                          b::GpuCq("cq-p", "", "sim", "nominalQuota: 2",
                                   "  preemption: {withinClusterQueue: LowerPriority}\n") +
                          b::LocalQueue("team-p", "q", "cq-p") + b::PriorityClass("high", 100)));
  auto n1 = StartReadyAgent("n1", "2xH100-80GB");

  int code = 0;
  srv_->Json("POST", "/api/v1/workloads", InTenant("team-p", "low", 2, "sleep 300"), &code);
  ASSERT_EQ(code, 201);
  json::value w = srv_->WaitForWorkload("team-p/low", [](const json::value& v) {
    return State(v) == "Running";
  });
  ASSERT_EQ(State(w), "Running");
  srv_->Json("POST", "/api/v1/workloads/team-p/low/park", "", &code);
  ASSERT_EQ(code, 200);
  srv_->Json("POST", "/api/v1/workloads", InTenant("team-p", "urgent", 2, "sleep 300", "high"), &code);
  ASSERT_EQ(code, 201);
  json::value u = srv_->WaitForWorkload("team-p/urgent", [](const json::value& v) {
    return State(v) == "Running";
  });
  EXPECT_EQ(State(u), "Running") << json::serialize(u);
  w = srv_->Json("GET", "/api/v1/workloads/team-p/low", "", &code);
  EXPECT_EQ(State(w), "Suspended") << json::serialize(w);
  EXPECT_NE(ParkedCondition(w).find("False Preempted: its quota was taken while it was parked"),
            std::string::npos)
      << ParkedCondition(w);
  json::value r = srv_->Json("POST", "/api/v1/workloads/team-p/low/resume", "", &code);
  ASSERT_EQ(code, 200) << json::serialize(r);
  EXPECT_EQ(r.at("result").as_string(), "queued");
  w = srv_->Json("GET", "/api/v1/workloads/team-p/low", "", &code);
  EXPECT_EQ(State(w), "Pending") << json::serialize(w);
}

// Lending: team-a's parked workload lends its 2 GPUs to a preemptible
// workload of team-b (its priority class says so; team-b has no quota of
// its own). A server restart keeps the lending. The resume takes them
// back at once: the borrower, which ignores SIGTERM and asks for a 60 s
// grace, is killed within cq-a's 1 s reclaim grace, and the owner runs on
// the released GPUs without ever going back to its queue.
TEST_F(AgentTest, ParkedGpusAreLentToAPreemptibleJobAndTakenBackOnResume) {
  namespace b = allot::testing;
  ASSERT_TRUE(srv_->Apply(
      "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\n"
      "metadata: {name: cq-a, annotations: {allot.dev/reclaim-grace: 1s}}\n"
      "spec:\n  cohort: all\n  namespaceSelector: {}\n  resourceGroups:\n"
      "  - coveredResources: [nvidia.com/gpu]\n    flavors:\n"
      "    - name: sim\n      resources: [{name: nvidia.com/gpu, nominalQuota: 2}]\n---\n" +
      b::Namespace("team-b") + b::GpuCq("cq-b", "all", "sim", "nominalQuota: 0") +
      b::LocalQueue("team-b", "q", "cq-b") +
      "apiVersion: kueue.x-k8s.io/v1beta1\nkind: WorkloadPriorityClass\n"
      "metadata: {name: spot, annotations: {allot.dev/preemptible: \"true\"}}\nvalue: 0\n---\n"));
  auto n1 = StartReadyAgent("n1", "2xH100-80GB");
  json::value w;
  ASSERT_NO_FATAL_FAILURE(RunSleeper("idle", 2, &w));
  const pid_t first = WaitPodPid(*n1, PodId(w, 0));
  int code = 0;
  srv_->Json("POST", "/api/v1/workloads/team-a/idle/park", "", &code);
  ASSERT_EQ(code, 200);
  EXPECT_TRUE(WaitDead(first));

  // A plain team-b job waits (no quota anywhere); the preemptible one runs.
  srv_->Json("POST", "/api/v1/workloads", InTenant("team-b", "plain", 2, "sleep 300"), &code);
  ASSERT_EQ(code, 201);
  json::value spot = json::parse(
      InTenant("team-b", "spot", 2, "trap '' TERM; sleep 300 & echo PID=$!; wait", "spot"));
  spot.at("metadata").at("annotations").as_object()["allot.dev/termination-grace-period"] = "60s";
  srv_->Json("POST", "/api/v1/workloads", json::serialize(spot), &code);
  ASSERT_EQ(code, 201);
  json::value sw = srv_->WaitForWorkload("team-b/spot",
                                         [](const json::value& v) { return State(v) == "Running"; });
  ASSERT_EQ(State(sw), "Running") << json::serialize(sw);
  EXPECT_TRUE(sw.at("status").at("onParkedCapacity").as_bool());
  EXPECT_EQ(sw.at("metadata").at("annotations").at("allot.dev/preemptible").as_string(), "true");
  EXPECT_EQ(State(srv_->Json("GET", "/api/v1/workloads/team-b/plain", "", &code)), "Pending");
  const pid_t borrower = WaitPodPid(*n1, PodId(sw, 0));
  // It holds no quota to keep: parking it is refused, saying why.
  json::value refused = srv_->Json("POST", "/api/v1/workloads/team-b/spot/park", "", &code);
  EXPECT_EQ(code, 409) << json::serialize(refused);
  json::value cqb = srv_->Json("GET", "/api/v1/clusterqueues/cq-b", "", &code);
  const json::value& cell = cqb.at("status").at("flavorsUsage").at(0).at("resources").at(0);
  EXPECT_EQ(cell.at("total").as_string(), "0");
  EXPECT_EQ(cell.at("onParkedCapacity").as_string(), "2");
  std::string metrics = srv_->Call(srv_->admin_token(), "GET", "/metrics").body;
  EXPECT_NE(metrics.find("allot_parked_lent_gpus{cluster_queue=\"cq-b\"} 2"), std::string::npos)
      << metrics;

  // kill -9 and restart: still parked, still lent, the same pods.
  srv_->Kill9();
  ASSERT_TRUE(srv_->Restart()) << srv_->Log();
  sw = srv_->Json("GET", "/api/v1/workloads/team-b/spot", "", &code);
  EXPECT_EQ(State(sw), "Running") << json::serialize(sw);
  EXPECT_TRUE(sw.at("status").at("onParkedCapacity").as_bool());
  EXPECT_EQ(sw.at("status").at("attempt").as_int64(), 1);
  EXPECT_EQ(State(srv_->Json("GET", "/api/v1/workloads/team-a/idle", "", &code)), "Parked");

  json::value r = srv_->Json("POST", "/api/v1/workloads/team-a/idle/resume", "", &code);
  ASSERT_EQ(code, 200) << json::serialize(r);
  EXPECT_EQ(r.at("result").as_string(), "resumed") << json::serialize(r);
  // Killed after the 1 s reclaim grace, not the 60 s it asked for.
  EXPECT_TRUE(WaitDead(borrower)) << n1->Output();
  w = WaitFor("idle", [](const json::value& v) { return State(v) == "Running"; });
  ASSERT_EQ(State(w), "Running") << json::serialize(w);
  EXPECT_EQ(w.at("status").at("attempt").as_int64(), 2);
  for (const json::value& c : w.at("status").at("conditions").as_array()) {
    if (c.at("type").as_string() == "QuotaReserved") {
      EXPECT_EQ(c.at("status").as_string(), "True") << json::serialize(c);  // Never queued.
    }
  }
  const pid_t second = WaitPodPid(*n1, PodId(w, 0));
  EXPECT_TRUE(Alive(second));
  sw = srv_->Json("GET", "/api/v1/workloads/team-b/spot", "", &code);
  EXPECT_EQ(State(sw), "Requeued") << json::serialize(sw);  // Back in its queue.
  std::string evicted;
  for (const json::value& c : sw.at("status").at("conditions").as_array()) {
    if (c.at("type").as_string() == "Evicted") evicted = std::string(c.at("message").as_string());
  }
  EXPECT_NE(evicted.find("the parked capacity it ran on was taken back by a workload of another "
                         "tenant in ClusterQueue cq-a (ParkedCapacityReclaim)"),
            std::string::npos)
      << evicted;
  metrics = srv_->Call(srv_->admin_token(), "GET", "/metrics").body;
  EXPECT_NE(metrics.find("allot_parked_reclaims_total{cluster_queue=\"cq-b\"} 1"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("allot_parked_lent_gpus{cluster_queue=\"cq-b\"} 0"), std::string::npos);
  srv_->Json("DELETE", "/api/v1/workloads/team-a/idle", "", &code);
  EXPECT_TRUE(WaitDead(second));
}

// The idle policy with real processes on simulated GPUs, whose
// utilization follows what runs: a pod that sleeps leaves its GPUs idle
// and its workload is parked after its idle-after; one that computes is
// not; one with a custom activity signal only once its reports stop.
TEST_F(AgentTest, TheIdlePolicyParksAWorkloadWhosePodsSleep) {
  auto n1 = StartReadyAgent("n1", "4xH100-80GB", {"--sample-seconds", "1"});
  int code = 0;
  for (auto [name, script] : {std::pair{"quiet", "sleep 300"},
                              std::pair{"busy", "while :; do :; done"},
                              std::pair{"chatty", "sleep 300"}}) {
    json::value w = json::parse(AgentWorkload(name, 1, 1, script));
    json::object& notes = w.at("metadata").at("annotations").as_object();
    notes["allot.dev/idle-after"] = "2s";
    // Idle GPUs, but a custom signal that reports activity (below).
    if (std::string(name) == "chatty") notes["allot.dev/idle-signal"] = "activity";
    srv_->Json("POST", "/api/v1/workloads", json::serialize(w), &code);
    ASSERT_EQ(code, 201);
  }
  // chatty reports activity every poll while quiet goes idle and parks.
  json::value quiet = WaitFor("quiet", [&](const json::value& v) {
    srv_->Json("POST", "/api/v1/workloads/team-a/chatty/activity", "", &code);
    return State(v) == "Parked";
  });
  ASSERT_EQ(State(quiet), "Parked") << json::serialize(quiet);
  EXPECT_NE(ParkedCondition(quiet).find("True Idle: parked by the idle policy"), std::string::npos)
      << ParkedCondition(quiet);
  json::value busy = srv_->Json("GET", "/api/v1/workloads/team-a/busy", "", &code);
  EXPECT_EQ(State(busy), "Running") << json::serialize(busy);
  EXPECT_EQ(State(srv_->Json("GET", "/api/v1/workloads/team-a/chatty", "", &code)), "Running");
  // Once its reports stop, its idle GPUs park it too.
  json::value chatty = WaitFor("chatty", [](const json::value& v) { return State(v) == "Parked"; });
  ASSERT_EQ(State(chatty), "Parked") << json::serialize(chatty);
  EXPECT_NE(ParkedCondition(chatty).find("reported no activity for 2s"), std::string::npos)
      << ParkedCondition(chatty);
  const std::string metrics = srv_->Call(srv_->admin_token(), "GET", "/metrics").body;
  EXPECT_NE(metrics.find("allot_parks_total{cluster_queue=\"cq-a\",reason=\"Idle\"} 2"),
            std::string::npos)
      << metrics;
  srv_->Json("DELETE", "/api/v1/workloads/team-a/busy", "", &code);
}

// Resume on demand (the hook routers use): a wake resumes a parked
// workload and answers once it runs; a wake of a running one answers at
// once; one that cannot run in time is a 504 saying where it stands; and
// only the wake that resumed is audited.
TEST_F(AgentTest, AWakeResumesAParkedWorkloadAndAnswersOnceItRuns) {
  auto n1 = StartReadyAgent("n1", "2xH100-80GB");
  json::value w;
  ASSERT_NO_FATAL_FAILURE(RunSleeper("nb", 2, &w));
  int code = 0;
  srv_->Json("POST", "/api/v1/workloads/team-a/nb/park", "", &code);
  ASSERT_EQ(code, 200);
  json::value r = srv_->Json("POST", "/api/v1/workloads/team-a/nb:wake?timeoutSeconds=30", "", &code);
  ASSERT_EQ(code, 200) << json::serialize(r);
  EXPECT_EQ(r.at("state").as_string(), "Running");
  EXPECT_GT(r.at("waitedMs").as_int64(), 0);
  w = srv_->Json("GET", "/api/v1/workloads/team-a/nb", "", &code);
  EXPECT_EQ(State(w), "Running");
  EXPECT_EQ(w.at("status").at("attempt").as_int64(), 2);
  r = srv_->Json("POST", "/api/v1/workloads/team-a/nb/wake", "", &code);
  ASSERT_EQ(code, 200) << json::serialize(r);
  EXPECT_EQ(r.at("waitedMs").as_int64(), 0);

  // Parked again, its GPUs taken: the wake times out, saying why.
  srv_->Json("POST", "/api/v1/workloads/team-a/nb/park", "", &code);
  ASSERT_EQ(code, 200);
  ASSERT_NO_FATAL_FAILURE(RunSleeper("other", 2, &w));
  for (int i = 0; i < 2; ++i) {
    r = srv_->Json("POST", "/api/v1/workloads/team-a/nb/wake?timeoutSeconds=1", "", &code);
    EXPECT_EQ(code, 504) << json::serialize(r);
    EXPECT_NE(std::string(r.at("error").at("message").as_string()).find("no free devices"),
              std::string::npos)
        << json::serialize(r);
  }
  srv_->Json("POST", "/api/v1/workloads/team-a/nb/wake?timeoutSeconds=601", "", &code);
  EXPECT_EQ(code, 400);
  int resumes = 0;
  json::value audit = srv_->Json("GET", "/api/v1/audit?limit=1000", "", &code);
  for (const json::value& row : audit.at("items").as_array()) {
    resumes += row.at("verb").as_string() == "resume" &&
               row.at("object").as_string() == "Workload team-a/nb";
  }
  EXPECT_EQ(resumes, 2);  // One per wake that resumed, not one per wait.
  // The other one ends: the waiting resume runs it; a wake sees it run.
  srv_->Json("DELETE", "/api/v1/workloads/team-a/other", "", &code);
  r = srv_->Json("POST", "/api/v1/workloads/team-a/nb/wake?timeoutSeconds=30", "", &code);
  EXPECT_EQ(code, 200) << json::serialize(r);
}

// Kueue's spec.active: false on an admitted workload parks it (Allot keeps
// its quota where Kueue would evict it), true resumes it; the same apply
// again changes nothing.
TEST_F(AgentTest, KueuesSpecActiveParksAndResumes) {
  auto n1 = StartReadyAgent("n1", "2xH100-80GB");
  const std::string script = "sleep 300 & echo PID=$!; wait";
  int code = 0;
  srv_->Json("POST", "/api/v1/workloads", AgentWorkload("flip", 1, 1, script), &code);
  ASSERT_EQ(code, 201);
  json::value w = WaitFor("flip", [](const json::value& v) { return State(v) == "Running"; });
  ASSERT_EQ(State(w), "Running");
  const pid_t first = WaitPodPid(*n1, PodId(w, 0));
  auto apply = [&](bool active) {
    net::Response r = srv_->Admin("POST", "/api/v1/apply",
                                  AgentWorkload("flip", 1, 1, script, {{"active", active}}));
    EXPECT_EQ(r.status, 200) << r.body;
    return json::parse(r.body).at("results").at(0).at("action").as_string();
  };
  EXPECT_EQ(apply(false), "configured");
  w = srv_->Json("GET", "/api/v1/workloads/team-a/flip", "", &code);
  EXPECT_EQ(State(w), "Parked");
  EXPECT_NE(ParkedCondition(w).find("True Inactive: spec.active set to false by admin"),
            std::string::npos)
      << ParkedCondition(w);
  EXPECT_EQ(w.at("spec").at("active").as_bool(), false);
  EXPECT_TRUE(WaitDead(first));
  EXPECT_EQ(apply(false), "unchanged");
  EXPECT_EQ(apply(true), "configured");
  w = WaitFor("flip", [](const json::value& v) { return State(v) == "Running"; });
  EXPECT_EQ(State(w), "Running");
  EXPECT_EQ(w.at("status").at("attempt").as_int64(), 2);
  EXPECT_EQ(apply(true), "unchanged");
  srv_->Json("DELETE", "/api/v1/workloads/team-a/flip", "", &code);
}

}  // namespace
}  // namespace allot::server
