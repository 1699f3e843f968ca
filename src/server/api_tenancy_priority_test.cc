// Tenants and priorities against a real `allot serve` (tenancy_test_util.h):
// the priority policy a tenant or LocalQueue sets binds its members, and a
// preemption across tenants names no one to the preempted tenant.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "server/tenancy_test_util.h"

namespace allot::server {
namespace {

using namespace testing;  // The tenancy fixture: tenancy_test_util.h.
namespace json = boost::json;

// ---- Priority policy ---------------------------------------------------------

// Members may not outrank others at will: a literal priority is the
// cluster-admin's unless allowed, a tenant or LocalQueue may list the
// classes its members may name and a default, and only a cluster-admin
// sets that policy. A refusal is a 403 naming what is allowed, and stores
// nothing.
TEST_F(ApiTenancy, PriorityPolicyBindsMembers) {
  const Who& tadmin = who_[1];
  const Who& member = who_[2];
  ASSERT_EQ(member.name(), "member@t1");
  ASSERT_EQ(srv_->Admin("POST", "/api/v1/apply", R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: WorkloadPriorityClass
metadata: {name: pc2}
value: 1000
)").status, 200);
  auto wl = [](const std::string& name, const std::string& extra) -> std::string {
    return allot::testing::WorkloadJson("t1/" + name).Spec(extra);
  };
  auto refused = [&](const std::string& desc, const net::Response& r, const std::string& field,
                     const std::string& says, const std::string& name) {
    EXPECT_EQ(r.status, 403) << desc << ": " << r.body;
    EXPECT_EQ(Str(Parse(r.body), {"error", "field"}), field) << desc << ": " << r.body;
    EXPECT_NE(r.body.find(says), std::string::npos) << desc << ": " << r.body;
    EXPECT_EQ(srv_->Admin("GET", "/api/v1/workloads/t1/" + name).status, 404) << desc;
  };
  // No policy: any class, but a literal priority is a cluster-admin's.
  refused("literal", srv_->Call(member.token, "POST", "/api/v1/workloads",
                              wl("lit", R"("priority":2147483647,)")),
          "spec.priority", "a literal spec.priority is for cluster-admins only", "lit");
  EXPECT_EQ(srv_->Call(member.token, "POST", "/api/v1/workloads",
                     wl("any", R"("priorityClassName":"pc2",)")).status, 201);
  net::Response r = srv_->Admin("POST", "/api/v1/workloads", wl("adm", R"("priority":5000,)"));
  EXPECT_EQ(r.status, 201) << r.body;

  // The tenant allows pc1 only, by default.
  r = srv_->Admin("POST", "/api/v1/apply", R"(
apiVersion: v1
kind: Namespace
metadata:
  name: t1
  annotations: {allot.dev/priority-classes: "pc1", allot.dev/default-priority-class: pc1}
)");
  ASSERT_EQ(r.status, 200) << r.body;
  refused("class", srv_->Call(member.token, "POST", "/api/v1/workloads",
                            wl("vip", R"("priorityClassName":"pc2",)")),
          "spec.priorityClassName", "is not allowed in LocalQueue t1/q", "vip");
  r = srv_->Call(member.token, "POST", "/api/v1/workloads", wl("vip", R"("priorityClassName":"pc2",)"));
  EXPECT_NE(r.body.find("allowed: pc1"), std::string::npos) << r.body;
  r = srv_->Call(member.token, "POST", "/api/v1/workloads", wl("plain", ""));
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(Str(Parse(r.body), {"spec", "priorityClassName"}), "pc1") << r.body;
  EXPECT_EQ(json::serialize(Parse(r.body).at("status").at("priority")), "100") << r.body;

  // A tenant-admin may not widen its LocalQueue's policy; a cluster-admin may.
  const std::string lq_literal = R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata:
  name: q
  namespace: t1
  annotations: {allot.dev/allow-literal-priority: "true"}
spec: {clusterQueue: cq1}
)";
  r = srv_->Call(tadmin.token, "POST", "/api/v1/apply", lq_literal);
  EXPECT_EQ(r.status, 403) << r.body;
  EXPECT_NE(r.body.find("only a cluster-admin may set the priority policy"), std::string::npos)
      << r.body;
  refused("literal, still", srv_->Call(member.token, "POST", "/api/v1/workloads",
                                     wl("lit", R"("priority":7,)")),
          "spec.priority", "cluster-admins only", "lit");
  ASSERT_EQ(srv_->Admin("POST", "/api/v1/apply", lq_literal).status, 200);
  r = srv_->Call(member.token, "POST", "/api/v1/workloads", wl("lit", R"("priority":7,)"));
  EXPECT_EQ(r.status, 201) << r.body;
  // A tenant-admin's change that keeps the policy is its to make.
  r = srv_->Call(tadmin.token, "POST", "/api/v1/apply", lq_literal);
  EXPECT_EQ(r.status, 200) << r.body;

  // The policy is stored with the objects: it holds after a restart.
  ASSERT_TRUE(srv_->Restart()) << srv_->Log();
  refused("class, after a restart", srv_->Call(member.token, "POST", "/api/v1/workloads",
                                             wl("vip", R"("priorityClassName":"pc2",)")),
          "spec.priorityClassName", "is not allowed in LocalQueue t1/q", "vip");
  r = srv_->Call(member.token, "POST", "/api/v1/workloads", wl("lit2", R"("priority":7,)"));
  EXPECT_EQ(r.status, 201) << r.body;

  // A policy that does not parse is refused where it is written.
  r = srv_->Admin("POST", "/api/v1/apply", R"(
apiVersion: v1
kind: Namespace
metadata:
  name: t2
  annotations: {allot.dev/allow-literal-priority: "yes"}
)");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find(R"(allow-literal-priority: must be \"true\" or \"false\", not 'yes')"),
            std::string::npos)
      << r.body;

  // A default the policy does not allow: an apply is refused whole, as a
  // create is (it was checked without the default, then failed submitting).
  ASSERT_EQ(srv_->Admin("POST", "/api/v1/apply", R"(
apiVersion: v1
kind: Namespace
metadata:
  name: t1
  annotations: {allot.dev/priority-classes: "pc1", allot.dev/default-priority-class: pc2}
)").status, 200);
  refused("default not allowed, by apply",
          srv_->Call(member.token, "POST", "/api/v1/apply", wl("dflt", "")),
          "spec.priorityClassName", "is not allowed in LocalQueue t1/q", "dflt");
  refused("default not allowed", srv_->Call(member.token, "POST", "/api/v1/workloads", wl("dflt", "")),
          "spec.priorityClassName", "is not allowed in LocalQueue t1/q", "dflt");
}

// ---- Preemption across tenants names no one ------------------------------------

// t1's high-priority workload preempts t2's in a shared ClusterQueue: t2's
// readers learn that a higher-priority workload of another tenant in that
// ClusterQueue took its place, never its name, in a get, a list or a watch;
// a cluster-admin reads the name in the condition's detail.
TEST_F(ApiTenancy, PreemptionAcrossTenantsNamesNoOne) {
  namespace b = allot::testing;
  const std::string shared =
      b::GpuCq("cqp", "", "f1", "nominalQuota: 1",
               "  preemption: {withinClusterQueue: LowerPriority}\n") +
      b::LocalQueue("t1", "p", "cqp") + b::LocalQueue("t2", "p", "cqp");
  ASSERT_EQ(srv_->Admin("POST", "/api/v1/apply", shared).status, 200);
  auto wl = [](const std::string& ns, const std::string& name,
               const std::string& extra) -> std::string {
    return allot::testing::WorkloadJson(ns + "/" + name).Queue("p").Spec(extra);
  };
  const Who& viewer2 = who_[6];  // viewer@t2
  ASSERT_EQ(viewer2.name(), "viewer@t2");
  ASSERT_EQ(srv_->Admin("POST", "/api/v1/workloads", wl("t2", "low", "")).status, 201);
  std::vector<std::unique_ptr<RawWatch>> ws;
  ws.push_back(std::make_unique<RawWatch>(srv_->port(), viewer2.token, "/api/v1/workloads?watch=1"));
  PumpAll(ws, 150, 5000);
  net::Response high = srv_->Admin("POST", "/api/v1/workloads",
                                 wl("t1", "vip", R"("priorityClassName":"pc1",)"));
  ASSERT_EQ(high.status, 201) << high.body;
  ASSERT_EQ(Str(Parse(high.body), {"status", "state"}), "Admitted") << high.body;
  PumpAll(ws, 200, 5000);

  const std::string kShown =
      "preempted by a higher-priority workload of another tenant in ClusterQueue cqp";
  net::Response got = srv_->Call(viewer2.token, "GET", "/api/v1/workloads/t2/low");
  net::Response list = srv_->Call(viewer2.token, "GET", "/api/v1/workloads");
  ASSERT_EQ(got.status, 200) << got.body;
  ASSERT_EQ(list.status, 200) << list.body;
  const std::string watched = ws[0]->Body();
  for (const auto& [what, body] : {std::pair<std::string, std::string>{"get", got.body},
                                   {"list", list.body},
                                   {"watch", watched}}) {
    EXPECT_EQ(body.find("vip"), std::string::npos) << what << " names t1's workload: " << body;
    EXPECT_EQ(body.find("\"detail\""), std::string::npos) << what << ": " << body;
    EXPECT_NE(body.find(kShown), std::string::npos) << what << ": " << body;
  }
  // The admin's view of the same workload names the preemptor.
  net::Response admin = srv_->Admin("GET", "/api/v1/workloads/t2/low");
  std::string detail;
  const json::value admin_obj = Parse(admin.body);
  for (const json::value& c : admin_obj.at("status").at("conditions").as_array()) {
    if (Str(c, {"type"}) == "Preempted") detail = Str(c, {"detail"});
  }
  EXPECT_EQ(detail, "preempted by t1/vip") << admin.body;
}

}  // namespace
}  // namespace allot::server
