// Tenant networks across nodes, end to end: two "hosts" (network
// namespaces on a bridge of the test's own, 198.18.213.0/24), each with a
// real `allot agent --runtime container --network tenant` and a pod range
// of its own, and a real `allot serve` on that bridge. A workload on both
// hosts meets as torchrun's do: rank 1 reaches rank 0 at MASTER_ADDR:
// MASTER_PORT (the rank-0 node's address, sent on into rank 0's namespace)
// and rank 0 reaches rank 1 at its pod address (NCCL's data connections).
// Another tenant's pods, on both hosts, reach neither, nor the hosts, nor
// the server; they do reach the network beyond (through NAT). Skipped,
// saying why, where the host cannot run containers.
#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
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

constexpr char kLan[] = "198.18.213";  // The hosts' network (RFC 2544's range).

int Sh(const std::string& cmd) { return std::system(cmd.c_str()); }

// A Workload of `tenant` on its queue q: `pods` pods of `gpus` GPUs each,
// running `script` in `image`.
std::string ImageWorkload(const std::string& tenant, const std::string& name, int pods, int gpus,
                          const std::string& image, const std::string& script) {
  json::object tmpl{
      {"image", image},
      {"resources", json::object{{"requests", json::object{{"nvidia.com/gpu", gpus}}}}},
      {"command", json::array{"sh", "-c", script}}};
  json::object w{
      {"apiVersion", "allot.dev/v1"},
      {"kind", "Workload"},
      {"metadata",
       json::object{{"name", name},
                    {"namespace", tenant},
                    {"annotations",
                     json::object{{"allot.dev/termination-grace-period", "1s"}}}}},
      {"spec", json::object{{"queueName", "q"},
                            {"podSets", json::array{json::object{
                                            {"name", "main"}, {"count", pods}, {"template", tmpl}}}}}}};
  return json::serialize(w);
}

class CrossNodeNetworkTest : public ServerTest {
 protected:
  void SetUp() override {
    skip_ = allot::testing::ContainersUnavailable();
    if (skip_.empty() && Sh("command -v ip iptables-restore > /dev/null 2>&1") != 0) {
      skip_ = "ip or iptables is missing (make deps)";
    }
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    const std::string id = std::to_string(getpid() % 100000);
    ns_[0] = "altest-a-" + id;
    ns_[1] = "altest-b-" + id;
    bridge_ = "altbr" + id;
    // The hosts' network: a bridge here, each host on it through a veth.
    std::string setup = "set -e; ip link add " + bridge_ + " type bridge; ip addr add " +
                        std::string(kLan) + ".1/24 dev " + bridge_ + "; ip link set " +
                        bridge_ + " up;";
    for (int i = 0; i < 2; ++i) {
      const std::string ns = ns_[i], outer = "alv" + std::string(1, char('a' + i)) + id;
      setup += " ip netns add " + ns + "; ip link add " + outer + " type veth peer name up" +
               id + "; ip link set up" + id + " netns " + ns + "; ip link set " + outer +
               " master " + bridge_ + " up; ip -n " + ns + " link set up" + id +
               " name uplink; ip -n " + ns + " addr add " + Host(i) + "/24 dev uplink; ip -n " +
               ns + " link set uplink up; ip -n " + ns + " link set lo up;";
    }
    ASSERT_EQ(Sh(setup), 0) << setup;
    namespace b = allot::testing;
    ASSERT_NO_FATAL_FAILURE(
        srv_ = TestServer::StartWith(
            b::Namespace("team-a") + b::Namespace("team-b") + b::Flavor("sim", "") +
                b::GpuCq("cq-a", "", "sim", "nominalQuota: 6") +
                b::GpuCq("cq-b", "", "sim", "nominalQuota: 6") +
                b::LocalQueue("team-a", "q", "cq-a") + b::LocalQueue("team-b", "q", "cq-b"),
            {"--node-timeout", "3"}, std::string(kLan) + ".1"));
    ASSERT_NE(srv_, nullptr);
    token_ = srv_->NewToken(R"({"user":"agents","role":"node"})");
    ASSERT_FALSE(token_.empty());
    state_ = std::make_unique<ContainerState>(srv_->dir() + "-containers");
    ASSERT_TRUE(state_->ok);
  }
  void TearDown() override {
    for (auto& a : agents_) a.reset();  // They remove their networks.
    for (auto& l : listeners_) l.Kill9();
    srv_.reset();
    if (!bridge_.empty()) {
      Sh("ip netns del " + ns_[0] + " 2>/dev/null; ip netns del " + ns_[1] +
         " 2>/dev/null; ip link del " + bridge_ + " 2>/dev/null");
    }
    state_.reset();
  }


  static std::string Host(int i) { return std::string(kLan) + "." + std::to_string(i + 2); }

  // Host i's agent: nodes n0 and n1, three simulated GPUs each.
  void StartAgents() {
    for (int i = 0; i < 2; ++i) {
      const std::string name = "n" + std::to_string(i);
      agents_[i] = std::make_unique<AgentProcess>(
          *srv_, token_, name, "3xH100-80GB", srv_->dir() + "/agent-" + name,
          std::vector<std::string>{"--runtime", "container", "--container-state",
                                   state_->dir + "/" + name, "--network", "tenant",
                                   "--pod-cidr", "10.21" + std::to_string(4 + i) + ".0.0/16",
                                   "--address", Host(i)},
          // nsenter, not `ip netns exec`: that one mounts a sysfs of the
          // namespace's over /sys, and the cgroup hierarchies with it.
          std::vector<std::string>{"/usr/bin/nsenter", "--net=/var/run/netns/" + ns_[i]});
    }
  }
  AgentProcess& On(const json::value& w, int pod) {
    return *agents_[Placement(w, pod).at("node").as_string() == "n0" ? 0 : 1];
  }
  // Waits (up to 60 s) until the log of pod `pod` of `w` matches `re`; the
  // match in *m.
  bool WaitLog(const json::value& w, int pod, const std::string& re, std::smatch* m,
               std::string* log) {
    return allot::testing::WaitFor(
        [&] {
          *log = On(w, pod).PodLog(PodId(w, pod));
          return std::regex_search(*log, *m, std::regex(re));
        },
        std::chrono::seconds(60));
  }


  std::string skip_;
  std::string ns_[2], bridge_;
  std::string token_;
  std::unique_ptr<ContainerState> state_;
  allot::testing::ChildProcess listeners_[2];  // On each host: port 7999.
  std::unique_ptr<AgentProcess> agents_[2];
};

TEST_F(CrossNodeNetworkTest, AWorkloadOnTwoNodesMeetsAsTorchrunDoesAndOtherTenantsCannot) {
  StartAgents();
  for (const char* n : {"n0", "n1"}) {
    ASSERT_TRUE(allot::testing::WaitFor(
        [&] {
          int code = 0;
          srv_->Json("GET", std::string("/api/v1/nodes/") + n, "", &code);
          return code == 200;
        },
        std::chrono::seconds(20)))
        << n << " never registered:\n" << agents_[0]->Output() << agents_[1]->Output();
  }
  // Two GPUs a pod, three a node: one pod on each.
  const std::string train =
      "echo \"master=$MASTER_ADDR:$MASTER_PORT ip=$ALLOT_POD_IP\";"
      " if [ \"$NODE_RANK\" = 0 ]; then"
      "   (while true; do echo from-rank0 | nc -l -p 7002; done) &"
      "   while :; do msg=$(nc -l -p $MASTER_PORT); [ -n \"$msg\" ] && break; done;"
      "   echo \"rendezvous: $msg\"; peer=${msg#hello };"
      "   for i in $(seq 30); do echo data-from-rank0 | nc -w 1 $peer 7001 && break; sleep 1; done;"
      "   echo sent;"
      " else"
      // Its stdin kept open: busybox's nc -l with stdin at its end may
      // quit before the data comes (seen: rank 0 "sent", /tmp/d empty);
      // then it stays until stdin ends too, so the loop waits for the data.
      "   sleep 120 | nc -l -p 7001 > /tmp/d &"
      "   for i in $(seq 30); do echo \"hello $ALLOT_POD_IP\" | nc -w 1 $MASTER_ADDR $MASTER_PORT;"
      "     [ -s /tmp/d ] && break; sleep 1; done;"
      "   echo \"attempts: $i\"; echo \"data: $(cat /tmp/d)\";"
      " fi; sleep 300";
  int code = 0;
  srv_->Json("POST", "/api/v1/workloads",
             ImageWorkload("team-a", "train", 2, 2, state_->image, train), &code);
  ASSERT_EQ(code, 201);
  json::value w = srv_->WaitForWorkload("team-a/train", [](const json::value& v) {
    return WorkloadStateOf(v) == "Running";
  });
  ASSERT_EQ(WorkloadStateOf(w), "Running") << json::serialize(w);
  ASSERT_NE(Placement(w, 0).at("node").as_string(), Placement(w, 1).at("node").as_string());
  const int rank0_host = &On(w, 0) == agents_[0].get() ? 0 : 1;
  std::smatch m;
  std::string log;
  // Rank 0 is on loopback for its own node; its peers get its node.
  ASSERT_TRUE(WaitLog(w, 0, "master=127\\.0\\.0\\.1:(\\d+) ip=(10\\.21\\d\\.\\d+\\.\\d+)", &m, &log))
      << log;
  const std::string master_port = m[1], ip0 = m[2];
  ASSERT_TRUE(WaitLog(w, 1, "master=" + Host(rank0_host) + ":" + master_port +
                                " ip=(10\\.21\\d\\.\\d+\\.\\d+)",
                      &m, &log))
      << log;
  const std::string ip1 = m[1];
  EXPECT_NE(ip0.substr(0, 6), ip1.substr(0, 6)) << "each node has its own range";
  // The rendezvous at MASTER_ADDR:MASTER_PORT, then rank 0 to rank 1's
  // pod address.
  EXPECT_TRUE(WaitLog(w, 0, "rendezvous: hello " + ip1 + "\n(.|\n)*sent", &m, &log))
      << log << "\nrank 1:\n" << On(w, 1).PodLog(PodId(w, 1)) << "\nagents:\n"
      << agents_[0]->Output() << agents_[1]->Output();
  EXPECT_TRUE(WaitLog(w, 1, "attempts: (\\d+)\ndata: data-from-rank0", &m, &log)) << log;
  // How soon the nodes knew each other's new subnets (1: at once).
  std::cout << "rank 1 reached rank 0 at attempt " << m[1] << " (1 s apart)\n";

  // team-b, a pod on each host: not team-a's pods (by their addresses or
  // the rendezvous port), not the hosts (a service listening on each), not
  // the server; the network beyond, yes (a listener here, on the hosts'
  // bridge).
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(listeners_[i].Spawn({"/usr/sbin/ip", "netns", "exec", ns_[i], "busybox", "nc",
                                     "-l", "-p", "7999"},
                                    srv_->dir() + "/listener.out", true));
    ASSERT_TRUE(allot::testing::WaitFor([&] {
      return Sh("ip netns exec " + ns_[i] + " ss -ltn | grep -q ':7999 '") == 0;
    }, std::chrono::seconds(10)));
  }
  const int lan_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in lan{};
  lan.sin_family = AF_INET;
  inet_pton(AF_INET, (std::string(kLan) + ".1").c_str(), &lan.sin_addr);
  ASSERT_EQ(bind(lan_fd, reinterpret_cast<sockaddr*>(&lan), sizeof(lan)), 0);
  ASSERT_EQ(listen(lan_fd, 8), 0);
  socklen_t len = sizeof(lan);
  getsockname(lan_fd, reinterpret_cast<sockaddr*>(&lan), &len);
  std::thread acceptor([lan_fd] {  // Answers by closing.
    for (int c; (c = accept(lan_fd, nullptr, nullptr)) >= 0;) close(c);
  });
  auto probe = [](const std::string& what, const std::string& host, const std::string& port) {
    return " nc -w 2 " + host + " " + port + " </dev/null >/dev/null 2>&1 && echo reached-" +
           what + " || echo blocked-" + what + ";";
  };
  const std::string probes =
      probe("rank0", ip0, "7002") + probe("master", Host(rank0_host), master_port) +
      probe("host0", Host(0), "7999") + probe("host1", Host(1), "7999") +
      probe("server", std::string(kLan) + ".1", std::to_string(srv_->port())) +
      probe("lan", std::string(kLan) + ".1", std::to_string(ntohs(lan.sin_port))) + " echo done";
  srv_->Json("POST", "/api/v1/workloads",
             ImageWorkload("team-b", "probe", 2, 1, state_->image, probes), &code);
  ASSERT_EQ(code, 201);
  json::value p = srv_->WaitForWorkload("team-b/probe", [](const json::value& v) {
    return WorkloadStateOf(v) == "Succeeded" || WorkloadStateOf(v) == "Failed";
  });
  ASSERT_EQ(WorkloadStateOf(p), "Succeeded") << On(p, 0).PodLog(PodId(p, 0)) << "\n"
                                      << On(p, 1).PodLog(PodId(p, 1));
  ASSERT_NE(Placement(p, 0).at("node").as_string(), Placement(p, 1).at("node").as_string());
  for (int i = 0; i < 2; ++i) {
    const std::string out = On(p, i).PodLog(PodId(p, i));
    EXPECT_NE(out.find("blocked-rank0\nblocked-master\nblocked-host0\nblocked-host1\n"
                       "blocked-server\nreached-lan\ndone"),
              std::string::npos)
        << "team-b's pod on " << Placement(p, i).at("node").as_string() << ":\n" << out;
  }
  shutdown(lan_fd, SHUT_RDWR);
  acceptor.join();
  close(lan_fd);
  srv_->Json("DELETE", "/api/v1/workloads/team-a/train", "", &code);
  EXPECT_EQ(code, 200);
}

}  // namespace
}  // namespace allot::server
