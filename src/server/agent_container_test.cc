// The container runtime end to end (agent_test_util.h): a Kubernetes Job
// with an image runs in it on an agent with --runtime container, as an
// unprivileged host id; the same Job on a process agent fails saying why.
// Skipped, saying why, where the host cannot run containers.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <string>
#include <thread>

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

TEST_F(AgentTest, AJobWithAnImageRunsInItOnAContainerNode) {
  const std::string why = allot::testing::ContainersUnavailable();
  if (!why.empty()) GTEST_SKIP() << why;
  ContainerState cs(dir_ + "-containers");
  ASSERT_TRUE(cs.ok);
  const std::string& state = cs.dir;
  const std::string& image = cs.image;

  // A process node first: the scheduler does not place the image there
  // (the image is never run on the bare host), and says why it waits.
  auto p1 = StartReadyAgent("p1", "1xH100-80GB");
  json::value w;
  int code = 0;
  srv_->Json("POST", "/api/v1/workloads", Job("on-host", image, "echo ran"), &code);
  ASSERT_EQ(code, 201);
  w = WaitFor("on-host", [](const json::value& v) {
    return json::serialize(v).find("--runtime container") != std::string::npos;
  });
  EXPECT_EQ(State(w), "Pending") << json::serialize(w);
  srv_->Json("DELETE", "/api/v1/workloads/team-a/on-host", "", &code);
  ASSERT_EQ(code, 200);
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
  // Its GPU is simulated, and the pod is told so.
  EXPECT_TRUE(std::regex_search(log, std::regex("allot: GPUs GPU-SIM-\\S+ are SIMULATED: no "
                                                "device is given")))
      << log;
  // Root inside is the tenant's range outside (the default base, 2^20).
  EXPECT_TRUE(std::regex_search(log, std::regex("\\n\\s*0\\s+1048576\\s+65536\\n"))) << log;
}

// A pod that serves on a port, in a container (docs/notebooks.md): on a
// node whose containers share its network it gets a free port of the
// node's loopback as $PORT, and the server proxies a notebook to it (here
// busybox's httpd stands in for Jupyter); on a node whose containers have
// private networks it fails, saying why.
TEST_F(AgentTest, AContainerThatServesIsProxiedToOrFailsSayingWhy) {
  const std::string why = allot::testing::ContainersUnavailable();
  if (!why.empty()) GTEST_SKIP() << why;
  ContainerState cs(dir_ + "-containers");
  ASSERT_TRUE(cs.ok);
  auto notebook = [&](const std::string& name) {
    return "apiVersion: allot.dev/v1\nkind: Notebook\nmetadata: {name: " + name +
           ", namespace: team-a}\nspec:\n  queueName: q\n  gpus: 1\n  image: " + cs.image +
           "\n  command: [sh, -c, 'mkdir -p /tmp/w/notebooks/team-a/" + name +
           " && echo served-by-$ALLOT_NOTEBOOK > /tmp/w/notebooks/team-a/" + name +
           "/index.html && exec httpd -f -p 127.0.0.1:$PORT -h /tmp/w']\n";
  };
  auto c1 = StartReadyAgent("c1", "1xH100-80GB",
                            {"--runtime", "container", "--container-state", cs.dir + "/state"});
  ASSERT_TRUE(srv_->Apply(notebook("web")));
  json::value w = WaitFor("web", [](const json::value& v) { return State(v) == "Running"; });
  ASSERT_EQ(State(w), "Running") << c1->Output();
  net::Response page;
  ASSERT_TRUE(allot::testing::WaitFor(
      [&] {
        page = srv_->Admin("GET", "/notebooks/team-a/web/index.html");
        return page.status == 200;
      },
      std::chrono::seconds(30)))
      << page.status << " " << page.body;
  EXPECT_EQ(page.body, "served-by-web\n");

  // Containers on private networks: nothing could reach the port.
  srv_->Json("POST", "/api/v1/nodes/c1/cordon");
  auto c2 = StartReadyAgent("c2", "1xH100-80GB",
                            {"--runtime", "container", "--container-state", cs.dir + "/state2",
                             "--network", "private"});
  ASSERT_EQ(srv_->Admin("DELETE", "/api/v1/workloads/team-a/web").status, 200);
  ASSERT_TRUE(srv_->Apply(notebook("hidden")));
  w = WaitFor("hidden", [](const json::value& v) { return State(v) == "Failed"; });
  EXPECT_NE(json::serialize(w).find("private networks nothing reaches: run its agent with "
                                    "--network tenant"),
            std::string::npos)
      << json::serialize(w);
}

// A pull that takes long (here: another pull of the image holds its lock)
// is shown as one: the workload is Admitted with PodsReady False, reason
// Pulling, not Running; then it runs, and the pull time is not run time:
// a limit shorter than the pull does not end it.
TEST_F(AgentTest, PullTimeIsShownAndIsNotRunTime) {
  const std::string why = allot::testing::ContainersUnavailable();
  if (!why.empty()) GTEST_SKIP() << why;
  ContainerState cs(dir_ + "-containers");
  ASSERT_TRUE(cs.ok);
  const std::string& state = cs.dir;
  const std::string& image = cs.image;
  auto c1 = StartReadyAgent("c1", "1xH100-80GB",
                            {"--runtime", "container", "--container-state", state + "/state"});
  json::value w;
  ASSERT_NO_FATAL_FAILURE(RunToEnd("first", Job("first", image, "true"), &w));
  ASSERT_EQ(State(w), "Succeeded") << json::serialize(w);

  // Hold the image's pull lock, as a pull of it would.
  std::string lock_path;
  for (const auto& e : std::filesystem::directory_iterator(state + "/state/images")) {
    lock_path = e.path().string() + "/lock";
  }
  const int lock = open(lock_path.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(lock, 0) << lock_path;
  ASSERT_EQ(flock(lock, LOCK_EX), 0);
  json::value job = json::parse(Job("slow", image, "echo ran"));
  job.at("spec").as_object()["activeDeadlineSeconds"] = 2;
  int code = 0;
  srv_->Json("POST", "/api/v1/workloads", json::serialize(job), &code);
  ASSERT_EQ(code, 201);
  w = WaitFor("slow", [](const json::value& v) {
    return json::serialize(v).find("\"reason\":\"Pulling\"") != std::string::npos;
  });
  EXPECT_EQ(State(w), "Admitted") << json::serialize(w);
  EXPECT_TRUE(w.at("status").as_object().contains("pullingSinceMs")) << json::serialize(w);
  // The pull it waits for is under way (as another container-run's would
  // be: a layout being written, the size its manifest gave): its progress
  // is in the workload's status.
  const std::string image_dir = std::filesystem::path(lock_path).parent_path().string();
  const std::string pull = image_dir + "/pull-" + std::to_string(getpid());
  std::filesystem::create_directories(pull + "/blobs/sha256");
  std::ofstream(pull + "/blobs/sha256/partial") << std::string(12345, 'x');
  std::ofstream(pull + ".total") << "40000";
  w = WaitFor("slow", [](const json::value& v) {
    const json::object& s = v.at("status").as_object();
    return s.contains("pullBytes") && s.contains("pullTotalBytes");
  });
  EXPECT_EQ(w.at("status").at("pullBytes").as_int64(), 12345) << json::serialize(w);
  EXPECT_EQ(w.at("status").at("pullTotalBytes").as_int64(), 40000) << json::serialize(w);
  std::filesystem::remove_all(pull);
  std::filesystem::remove(pull + ".total");
  std::this_thread::sleep_for(std::chrono::seconds(3));  // Longer than the limit.
  close(lock);
  w = WaitFor("slow", [](const json::value& v) {
    return State(v) == "Succeeded" || State(v) == "Failed";
  });
  ASSERT_EQ(State(w), "Succeeded") << json::serialize(w);
  EXPECT_GE(w.at("status").at("pullMs").as_int64(), 2500) << json::serialize(w);
}

}  // namespace
}  // namespace allot::server
