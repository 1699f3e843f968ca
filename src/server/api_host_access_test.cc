// What of the host a tenant's pods may use, as a cluster-admin allows it
// per tenant with annotations (core/host_paths.h): host directories
// (allot.dev/host-paths) and the host's network (allot.dev/host-network).
// Checked when a workload is created or applied: refused with 403 naming
// the annotation and the pod set, and nothing stored.
#include <gtest/gtest.h>

#include <string>

#include "server/test_server.h"
#include "testing/builders.h"

namespace allot::server {
namespace {

using testing::TestServer;
namespace json = boost::json;
namespace b = allot::testing;

std::string Cluster() {
  return std::string(
             "apiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n---\n"
             "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: hpc\n  annotations:\n"
             "    allot.dev/host-network: \"true\"\n"
             "    allot.dev/host-paths: \"/datasets\"\n---\n") +
         b::FlavorSpec("f1", "") + b::GpuCq("cq", "", "f1", "nominalQuota: 8") +
         b::LocalQueue("team", "q", "cq") + b::LocalQueue("hpc", "q", "cq");
}

// A Workload in `ns` whose pod set asks for what `extra` says.
std::string Workload(const std::string& ns, const std::string& name, const std::string& extra) {
  return "apiVersion: allot.dev/v1\nkind: Workload\nmetadata: {name: " + name +
         ", namespace: " + ns + "}\nspec:\n  queueName: q\n  podSets:\n  - name: main\n"
         "    count: 1\n    template: {image: \"busybox:1\", " + extra +
         "resources: {requests: {nvidia.com/gpu: 1}}}\n";
}

const char kHostNetwork[] = "hostNetwork: true, ";
const char kHostPath[] =
    "volumes: [{name: d, hostPath: {path: /datasets/imagenet}}], "
    "volumeMounts: [{name: d, mountPath: /data}], ";

TEST(ApiHostAccess, HostNetworkAndHostPathsOnlyForTenantsAllowedThem) {
  auto srv = TestServer::StartWith(Cluster());
  ASSERT_NE(srv, nullptr);
  const std::string team = srv->NewToken("alice", "member", "team");
  const std::string hpc = srv->NewToken("bob", "member", "hpc");

  for (const char* verb : {"/api/v1/workloads", "/api/v1/apply"}) {
    SCOPED_TRACE(verb);
    net::Response r = srv->Call(team, "POST", verb, Workload("team", "net", kHostNetwork));
    EXPECT_EQ(r.status, 403) << r.body;
    EXPECT_NE(r.body.find("allot.dev/host-network: \\\"true\\\""), std::string::npos) << r.body;
    EXPECT_NE(r.body.find("podSets[main]"), std::string::npos) << r.body;
    r = srv->Call(team, "POST", verb, Workload("team", "data", kHostPath));
    EXPECT_EQ(r.status, 403) << r.body;
    EXPECT_NE(r.body.find("allot.dev/host-paths"), std::string::npos) << r.body;
    EXPECT_NE(r.body.find("podSets[main].volumes[d]"), std::string::npos) << r.body;
  }
  int code = 0;
  srv->Json("GET", "/api/v1/workloads/team/net", "", &code);
  EXPECT_EQ(code, 404) << "a refused workload is not stored";

  // The tenant the admin allowed: both, and hostNetwork is kept.
  net::Response r = srv->Call(hpc, "POST", "/api/v1/workloads",
                              Workload("hpc", "nccl", std::string(kHostNetwork) + kHostPath));
  ASSERT_EQ(r.status, 201) << r.body;
  json::value w = srv->Json("GET", "/api/v1/workloads/hpc/nccl", "", &code);
  ASSERT_EQ(code, 200);
  const json::object& t = w.at("spec").at("podSets").as_array()[0].at("template").as_object();
  EXPECT_EQ(t.if_contains("hostNetwork") ? t.at("hostNetwork").as_bool() : false, true)
      << json::serialize(t);
}

}  // namespace
}  // namespace allot::server
