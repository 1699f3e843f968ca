// The container runtime end to end (agent_test_util.h): a Kubernetes Job
// with an image runs in it on an agent with --runtime container, as an
// unprivileged host id; the same Job on a process agent fails saying why.
// Skipped, saying why, where the host cannot run containers.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <memory>
#include <regex>
#include <string>

#include "server/agent_test_util.h"
#include "testing/oci_image.h"

namespace allot::server {
namespace {

using namespace testing;  // The agents' fixture: agent_test_util.h.
namespace json = boost::json;

std::string Job(const std::string& name, const std::string& image, const std::string& script) {
  return R"({"apiVersion":"batch/v1","kind":"Job","metadata":{"name":")" + name +
         R"(","namespace":"team-a","labels":{"kueue.x-k8s.io/queue-name":"q"}},)"
         R"("spec":{"template":{"spec":{"containers":[{"name":"c","image":")" + image +
         R"(","command":["sh","-c"],"args":[")" + script +
         R"("],"resources":{"requests":{"nvidia.com/gpu":1}}}]}}}})";
}

std::string FinishedMessage(const json::value& w) {
  for (const json::value& c : w.at("status").at("conditions").as_array()) {
    if (c.at("type").as_string() == "Finished") return std::string(c.at("message").as_string());
  }
  return "";
}

TEST_F(AgentTest, AJobWithAnImageRunsInItOnAContainerNode) {
  const std::string why = allot::testing::ContainersUnavailable();
  if (!why.empty()) GTEST_SKIP() << why;
  // Images and bundles where container root can reach them.
  const std::string state = dir_ + "-containers";
  std::filesystem::create_directories(state + "/image");
  struct Remove {
    std::string dir;
    ~Remove() { std::filesystem::remove_all(dir); }
  } remove{state};
  ASSERT_EQ(chmod(state.c_str(), 0711), 0);
  ASSERT_TRUE(allot::testing::BuildTinyImage(state + "/image"));
  const std::string image = "oci:" + state + "/image/oci:tiny";

  // A process node first: the image is never run on the bare host.
  auto p1 = StartReadyAgent("p1", "1xH100-80GB");
  json::value w;
  ASSERT_NO_FATAL_FAILURE(RunToEnd("on-host", Job("on-host", image, "echo ran"), &w));
  EXPECT_EQ(State(w), "Failed");
  EXPECT_NE(FinishedMessage(w).find("run its agent with --runtime container"), std::string::npos)
      << json::serialize(w);
  // Nothing more goes there.
  int code = 0;
  srv_->Json("POST", "/api/v1/nodes/p1/cordon", "", &code);
  ASSERT_EQ(code, 200);

  auto c1 = StartReadyAgent("c1", "1xH100-80GB",
                            {"--runtime", "container", "--container-state", state + "/state"});
  json::value node = srv_->Json("GET", "/api/v1/nodes/c1", "", &code);
  EXPECT_EQ(node.at("metadata").at("labels").at("allot.dev/runtime").as_string(), "container")
      << json::serialize(node);
  ASSERT_NO_FATAL_FAILURE(RunToEnd(
      "in-image",
      Job("in-image", image, "echo image=$FROM_IMAGE gpus=$CUDA_VISIBLE_DEVICES; cat /proc/self/uid_map"),
      &w));
  ASSERT_EQ(State(w), "Succeeded") << json::serialize(w) << c1->Output();
  const std::string log = c1->PodLog(PodId(w, 0));
  EXPECT_NE(log.find("allot: pulled image " + image), std::string::npos) << log;
  EXPECT_TRUE(std::regex_search(log, std::regex("image=yes gpus=GPU-\\S+\n")))
      << log;
  // Root inside is the tenant's range outside (the default base, 2^20).
  EXPECT_TRUE(std::regex_search(log, std::regex("\\n\\s*0\\s+1048576\\s+65536\\n"))) << log;
}

}  // namespace
}  // namespace allot::server
