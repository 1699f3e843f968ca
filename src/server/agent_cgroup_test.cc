// The agent's cgroups end to end (agent_test_util.h): a pod's cpu and
// memory requests are its limits, and a pod killed at its memory limit
// fails saying so. Skipped where the host gives the agent no cgroups.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "server/agent_test_util.h"

namespace allot::server {
namespace {

using namespace testing;  // The agents' fixture: agent_test_util.h.
namespace fs = std::filesystem;
namespace json = boost::json;

// A ClusterQueue that covers cpu and memory too, and its LocalQueue "qr".
constexpr char kCpuMemoryQueue[] = R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq-r}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu, cpu, memory]
    flavors:
    - name: sim
      resources:
      - {name: nvidia.com/gpu, nominalQuota: 8}
      - {name: cpu, nominalQuota: 64}
      - {name: memory, nominalQuota: 256Gi}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: qr, namespace: team-a}
spec: {clusterQueue: cq-r}
)";

// A one-pod workload in "qr" requesting cpu and memory.
std::string Limited(const std::string& name, const std::string& cpu, const std::string& memory,
                    const std::string& script) {
  json::object w = json::parse(AgentWorkload(name, 1, 1, script)).as_object();
  json::object& spec = w["spec"].as_object();
  spec["queueName"] = "qr";
  json::object& req = spec["podSets"].as_array()[0].at("template").as_object()["resources"]
                          .as_object()["requests"].as_object();
  req["cpu"] = cpu;
  req["memory"] = memory;
  return json::serialize(w);
}

std::string FinishedMessage(const json::value& w) {
  for (const json::value& c : w.at("status").at("conditions").as_array()) {
    if (c.at("type").as_string() == "Finished") return std::string(c.at("message").as_string());
  }
  return "";
}

class AgentCgroupTest : public AgentTest {
 protected:
  // Starts agent n1 and returns its "cgroups: ..." line; empty (and the
  // test should skip) when the host gives it none.
  std::string StartWithCgroups() {
    n1_ = StartReadyAgent("n1", "2xH100-80GB");
    int code = 0;
    json::value r = srv_->Json("POST", "/api/v1/apply", kCpuMemoryQueue, &code);
    EXPECT_EQ(code, 200) << json::serialize(r);
    std::smatch m;
    const std::regex re("allot agent: (cgroups: [^\n]*)");
    std::string out = n1_->Output();
    if (!std::regex_search(out, m, re)) {
      ADD_FAILURE() << "no cgroups line: " << out;
      return "";
    }
    line_ = m[1];
    return line_.rfind("cgroups: none", 0) == 0 ? "" : line_;
  }
  // The agent's directories for its pods' cgroups, from its line.
  std::vector<std::string> AgentDirs() const {
    std::vector<std::string> dirs;
    std::istringstream in(line_);
    for (std::string w; in >> w;) {
      if (w[0] == '/' && w.find("/allot-n1-") != std::string::npos) {
        while (!w.empty() && (w.back() == ':' || w.back() == ',')) w.pop_back();
        dirs.push_back(w);
      }
    }
    return dirs;
  }
  std::unique_ptr<AgentProcess> n1_;
  std::string line_;
};

TEST_F(AgentCgroupTest, ThePodsRequestsAreItsLimits) {
  // 500m: 50 ms of CPU per 100 ms period; 64Mi: 67108864 bytes. The pod
  // prints the limit files of its own cgroups (v2 or v1 names).
  if (StartWithCgroups().empty()) GTEST_SKIP() << "the agent has no cgroups here: " << line_;
  json::value w;
  ASSERT_NO_FATAL_FAILURE(RunToEnd(
      "lim",
      Limited("lim", "500m", "64Mi",
              "dir=$(echo $ALLOT_POD_ID | tr / _); cat /proc/self/cgroup; "
              "while IFS=: read -r id ctl path; do case $path in */$dir) "
              "for f in cpu.max memory.max cpu.cfs_quota_us memory.limit_in_bytes; do "
              "for m in /sys/fs/cgroup /sys/fs/cgroup/*; do "
              "[ -f \"$m$path/$f\" ] && echo \"$f=$(cat \"$m$path/$f\")\"; "
              "done; done;; esac; done < /proc/self/cgroup"),
      &w));
  ASSERT_EQ(State(w), "Succeeded") << json::serialize(w);
  const std::string pod = PodId(w, 0);
  const std::string log = n1_->PodLog(pod);
  const bool v2 = line_.rfind("cgroups: v2", 0) == 0;
  EXPECT_NE(log.find(v2 ? "cpu.max=50000 100000" : "cpu.cfs_quota_us=50000"), std::string::npos)
      << log;
  EXPECT_NE(log.find(v2 ? "memory.max=67108864" : "memory.limit_in_bytes=67108864"),
            std::string::npos)
      << log;
  // Gone with the pod.
  std::string dir = pod;
  std::replace(dir.begin(), dir.end(), '/', '_');
  const std::vector<std::string> agent_dirs = AgentDirs();
  ASSERT_FALSE(agent_dirs.empty()) << line_;
  for (const std::string& a : agent_dirs) {
    EXPECT_NE(log.find(a.substr(a.find("/allot-n1-")) + "/" + dir), std::string::npos) << log;
    const bool gone = allot::testing::WaitFor([&] { return !fs::exists(a + "/" + dir); },
                                              std::chrono::seconds(5));
    EXPECT_TRUE(gone) << a << "/" << dir;
  }
  // The agent removes its own directories when it stops.
  n1_->Stop();
  for (const std::string& a : agent_dirs) EXPECT_FALSE(fs::exists(a)) << a;
}

TEST_F(AgentCgroupTest, APodKilledAtItsMemoryLimitFailsSayingSo) {
  // The shell holds 100 MB, more than the 64Mi it asked for.
  if (StartWithCgroups().empty()) GTEST_SKIP() << "the agent has no cgroups here: " << line_;
  json::value w;
  ASSERT_NO_FATAL_FAILURE(RunToEnd(
      "hog",
      Limited("hog", "1", "64Mi",
              "echo start; x=$(head -c 100000000 /dev/zero | tr '\\0' a); echo ${#x}"),
      &w));
  ASSERT_EQ(State(w), "Failed") << json::serialize(w);
  const std::string message = FinishedMessage(w);
  EXPECT_NE(message.find("OOMKilled"), std::string::npos) << message;
  EXPECT_NE(message.find("memory limit of 64Mi (its memory request)"), std::string::npos)
      << message;
}

}  // namespace
}  // namespace allot::server
