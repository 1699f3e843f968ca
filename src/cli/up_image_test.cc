// The image catalogue from the command line: `allot get images` shows a
// cluster-admin's Images, and `allot submit --image NAME` passes the name
// through for the server to resolve (the stored workload names the
// reference; a name outside the tenant's allow list is refused).
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <fstream>
#include <string>
#include <vector>

#include "cli/up_fixture.h"

namespace allot::cli {
namespace {

namespace json = boost::json;

class UpImageTest : public testing::UpFixture {
 protected:
  Ran Cli(std::vector<std::string> args) {
    args.insert(args.begin() + 1, {"--server", url_});
    return Allot(std::move(args), token_);
  }
};

TEST_F(UpImageTest, GetImagesAndSubmitByName) {
  Start({});
  const std::string file = dir_ + "/catalogue.yaml";
  std::ofstream(file) << R"(apiVersion: allot.dev/v1
kind: Image
metadata: {name: pytorch}
spec: {image: "nvcr.io/nvidia/pytorch:24.01-py3", description: "PyTorch 2.2, CUDA 12.3"}
---
apiVersion: allot.dev/v1
kind: Image
metadata: {name: tf}
spec: {image: "nvcr.io/nvidia/tensorflow:24.01-tf2-py3"}
---
apiVersion: v1
kind: Namespace
metadata:
  name: team
  annotations: {allot.dev/allowed-images: pytorch}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: any}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: any, resources: [{name: nvidia.com/gpu, nominalQuota: 0}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: q, namespace: team}
spec: {clusterQueue: cq}
)";
  Ran out = Cli({"apply", "-f", file});
  ASSERT_EQ(out.code, 0) << out.err;

  for (const char* kind : {"images", "image", "img"}) {
    out = Cli({"get", kind});
    ASSERT_EQ(out.code, 0) << out.err;
    EXPECT_NE(out.out.find("DESCRIPTION"), std::string::npos) << out.out;
    EXPECT_NE(out.out.find("nvcr.io/nvidia/pytorch:24.01-py3"), std::string::npos) << out.out;
    EXPECT_NE(out.out.find("PyTorch 2.2, CUDA 12.3"), std::string::npos) << out.out;
  }

  // Pending (the queue has no quota): only the stored spec matters here.
  out = Cli({"submit", "--name", "t", "-t", "team", "-q", "q", "--gpus", "1", "--image",
             "pytorch", "--", "true"});
  ASSERT_EQ(out.code, 0) << out.err;
  int code = 0;
  json::value w = Get("/api/v1/workloads/team/t", &code);
  ASSERT_EQ(code, 200);
  EXPECT_EQ(w.at("spec").at("podSets").at(0).at("template").at("image").as_string(),
            "nvcr.io/nvidia/pytorch:24.01-py3");

  out = Cli({"submit", "--name", "u", "-t", "team", "-q", "q", "--gpus", "1", "--image", "tf",
             "--", "true"});
  EXPECT_NE(out.code, 0);
  EXPECT_NE(out.err.find("use one of: pytorch"), std::string::npos) << out.err;
}

}  // namespace
}  // namespace allot::cli
