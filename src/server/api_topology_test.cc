// Topology-aware scheduling through `allot serve`: examples/kueue's
// topology-aware.yaml applied as it is, the Topology kind stored and kept
// across kill -9, guarded while a flavor names it, and a flavor naming a
// Topology that does not exist refused.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "server/test_server.h"
#include "testing/process.h"

namespace allot::server {
namespace {

using testing::TestServer;
namespace json = boost::json;

// An examples/kueue file (found from this file's path, as the build
// compiles it by its absolute path).
std::string Example(const std::string& file) {
  std::string root = __FILE__;
  root.resize(root.rfind("/src/server/"));
  return allot::testing::ReadFile(root + "/examples/kueue/" + file);
}

// The racks of a workload's placements (nodes.yaml names its tas-* nodes
// tas-RACK-X).
std::set<std::string> Racks(const json::value& w) {
  std::set<std::string> racks;
  const json::array& ps = w.at("status").at("admission").at("podSetAssignments").as_array();
  for (const json::value& p : ps[0].at("placements").as_array()) {
    racks.insert(std::string(p.at("node").as_string()).substr(4, 2));
  }
  return racks;
}

bool IsAdmitted(const json::value& w) {
  return w.at("status").at("state").as_string() == "Admitted";
}

TEST(ApiTopology, RequiredRackOverTheApiAndKill9) {
  auto srv = TestServer::StartWith(Example("nodes.yaml") + "---\n" + Example("topology-aware.yaml"));
  ASSERT_NE(srv, nullptr);
  json::value req = srv->WaitForWorkload("default/rack-required", IsAdmitted);
  json::value pref = srv->WaitForWorkload("default/rack-preferred", IsAdmitted);
  EXPECT_EQ(Racks(req), std::set<std::string>{"r1"}) << json::serialize(req);
  EXPECT_EQ(Racks(pref), std::set<std::string>{"r2"}) << json::serialize(pref);
  int code = 0;
  json::value wide = srv->Json("GET", "/api/v1/workloads/default/too-wide", "", &code);
  ASSERT_EQ(code, 200);
  EXPECT_EQ(wide.at("status").at("state").as_string(), "Pending") << json::serialize(wide);

  json::value topo = srv->Json("GET", "/api/v1/topologies/default", "", &code);
  ASSERT_EQ(code, 200) << json::serialize(topo);
  EXPECT_EQ(topo.at("spec").at("levels").as_array().size(), 3u) << json::serialize(topo);

  // A flavor names it: deleting it is refused, and changes nothing.
  json::value del = srv->Json("DELETE", "/api/v1/topologies/default", "", &code);
  EXPECT_EQ(code, 409) << json::serialize(del);
  EXPECT_NE(json::serialize(del).find("in use by ResourceFlavor tas-flavor"), std::string::npos)
      << json::serialize(del);

  // A flavor naming a Topology that does not exist is refused.
  net::Response bad = srv->Admin("POST", "/api/v1/apply",
                                 "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\n"
                                 "metadata: {name: lost}\nspec: {topologyName: nowhere}\n");
  EXPECT_EQ(bad.status, 400) << bad.body;
  EXPECT_NE(bad.body.find("Topology nowhere does not exist"), std::string::npos) << bad.body;
  srv->Json("GET", "/api/v1/resourceflavors/lost", "", &code);
  EXPECT_EQ(code, 404);

  srv->Kill9();
  ASSERT_TRUE(srv->Restart()) << srv->Log();
  json::value again = srv->Json("GET", "/api/v1/topologies/default", "", &code);
  ASSERT_EQ(code, 200);
  EXPECT_EQ(json::serialize(again.at("spec")), json::serialize(topo.at("spec")));
  json::value req2 = srv->Json("GET", "/api/v1/workloads/default/rack-required", "", &code);
  EXPECT_EQ(json::serialize(req2.at("status").at("admission")),
            json::serialize(req.at("status").at("admission")));

  // One that no flavor names goes.
  ASSERT_TRUE(srv->Apply("apiVersion: kueue.x-k8s.io/v1beta2\nkind: Topology\n"
                         "metadata: {name: spare}\n"
                         "spec: {levels: [{nodeLabel: kubernetes.io/hostname}]}\n"));
  srv->Json("DELETE", "/api/v1/topologies/spare", "", &code);
  EXPECT_EQ(code, 200);
  srv->Json("GET", "/api/v1/topologies/spare", "", &code);
  EXPECT_EQ(code, 404);
}

}  // namespace
}  // namespace allot::server
