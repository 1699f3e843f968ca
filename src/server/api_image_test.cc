// The admin image catalogue through `allot serve`: cluster-admins write
// allot.dev/v1 Images, every person reads them; a tenant's
// allot.dev/allowed-images and allot.dev/default-image annotations decide
// what its workloads run, resolved when a workload is created or applied
// (so the stored workload names the exact reference); the catalogue is
// kept across kill -9.
#include <gtest/gtest.h>

#include <string>

#include "server/test_server.h"
#include "testing/builders.h"

namespace allot::server {
namespace {

using testing::TestServer;
namespace json = boost::json;
namespace b = allot::testing;

const char kPytorch[] = "nvcr.io/nvidia/pytorch:24.01-py3";
const char kJupyter[] = "quay.io/jupyter/scipy-notebook:2024-01";

std::string Image(const std::string& name, const std::string& ref, const std::string& desc) {
  return "apiVersion: allot.dev/v1\nkind: Image\nmetadata: {name: " + name +
         "}\nspec: {image: \"" + ref + "\", description: \"" + desc + "\"}\n---\n";
}

std::string Cluster() {
  return Image("pytorch", kPytorch, "PyTorch 2.2, CUDA 12.3, NCCL") +
         Image("jupyter", kJupyter, "Jupyter with SciPy") +
         Image("tf", "nvcr.io/nvidia/tensorflow:24.01-tf2-py3", "TensorFlow 2") +
         "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team\n  annotations:\n"
         "    allot.dev/allowed-images: \"pytorch, jupyter\"\n"
         "    allot.dev/default-image: pytorch\n---\n" +
         b::FlavorSpec("f1", "") + b::GpuCq("cq", "", "f1", "nominalQuota: 8") +
         b::LocalQueue("team", "q", "cq");
}

// An allot.dev/v1 Workload in tenant team with one pod set running `image`
// ("" for none).
std::string Workload(const std::string& name, const std::string& image) {
  return "apiVersion: allot.dev/v1\nkind: Workload\nmetadata: {name: " + name +
         ", namespace: team}\nspec:\n  queueName: q\n  podSets:\n  - name: main\n    count: 1\n"
         "    template: {" + (image.empty() ? "" : "image: \"" + image + "\", ") +
         "resources: {requests: {nvidia.com/gpu: 1}}}\n";
}

std::string StoredImage(TestServer& srv, const std::string& name) {
  int code = 0;
  json::value w = srv.Json("GET", "/api/v1/workloads/team/" + name, "", &code);
  if (code != 200) return "(HTTP " + std::to_string(code) + ")";
  return std::string(
      w.at("spec").at("podSets").as_array()[0].at("template").at("image").as_string());
}

TEST(ApiImage, CatalogueResolvesAndRestrictsImages) {
  auto srv = TestServer::StartWith(Cluster());
  ASSERT_NE(srv, nullptr);
  const std::string member = srv->NewToken("alice", "member", "team");

  // A catalogue name is stored as its reference, through create and apply.
  net::Response r = srv->Call(member, "POST", "/api/v1/workloads", Workload("named", "pytorch"));
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(StoredImage(*srv, "named"), kPytorch);
  r = srv->Call(member, "POST", "/api/v1/apply", Workload("applied", "jupyter"));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(StoredImage(*srv, "applied"), kJupyter);
  // Applying the same document again changes nothing.
  r = srv->Call(member, "POST", "/api/v1/apply", Workload("applied", "jupyter"));
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find("unchanged"), std::string::npos) << r.body;

  // No image: the tenant's default.
  r = srv->Call(member, "POST", "/api/v1/workloads", Workload("plain", ""));
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(StoredImage(*srv, "plain"), kPytorch);

  // Outside the allow list: 403 naming the allowed images and the pod set;
  // nothing stored.
  for (const char* image : {"tf", "alpine:3"}) {
    for (const char* path : {"/api/v1/workloads", "/api/v1/apply"}) {
      r = srv->Call(member, "POST", path, Workload("refused", image));
      EXPECT_EQ(r.status, 403) << path << " " << image << ": " << r.body;
      EXPECT_NE(r.body.find("use one of: jupyter, pytorch"), std::string::npos) << r.body;
      EXPECT_NE(r.body.find("podSets[main].image"), std::string::npos) << r.body;
    }
  }
  EXPECT_EQ(StoredImage(*srv, "refused"), "(HTTP 404)");

  // Members read the catalogue but may not write it.
  r = srv->Call(member, "GET", "/api/v1/images");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find(kPytorch), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("PyTorch 2.2, CUDA 12.3, NCCL"), std::string::npos) << r.body;
  r = srv->Call(member, "POST", "/api/v1/images", Image("mine", "busybox", ""));
  EXPECT_EQ(r.status, 403) << r.body;
  r = srv->Call(member, "POST", "/api/v1/apply", Image("mine", "busybox", ""));
  EXPECT_EQ(r.status, 403) << r.body;

  // A bad reference is refused, naming the field.
  r = srv->Admin("POST", "/api/v1/images", Image("bad", "has space", ""));
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("spec.image"), std::string::npos) << r.body;

  // The catalogue survives kill -9.
  int code = 0;
  json::value before = srv->Json("GET", "/api/v1/images/pytorch", "", &code);
  ASSERT_EQ(code, 200);
  srv->Kill9();
  ASSERT_TRUE(srv->Restart()) << srv->Log();
  json::value after = srv->Json("GET", "/api/v1/images/pytorch", "", &code);
  ASSERT_EQ(code, 200);
  EXPECT_EQ(json::serialize(after.at("spec")), json::serialize(before.at("spec")));
  json::value list = srv->Json("GET", "/api/v1/images", "", &code);
  EXPECT_EQ(list.at("items").as_array().size(), 3u) << json::serialize(list);

  // Deleting the default Image is allowed; the next submission that needs
  // it says what is wrong.
  srv->Json("DELETE", "/api/v1/images/pytorch", "", &code);
  EXPECT_EQ(code, 200);
  r = srv->Call(member, "POST", "/api/v1/workloads", Workload("after", ""));
  EXPECT_EQ(r.status, 409) << r.body;
  EXPECT_NE(r.body.find("allot.dev/default-image"), std::string::npos) << r.body;
}

}  // namespace
}  // namespace allot::server
