// The agent protocol's encoders and decoders: every field survives
// encode -> JSON text -> decode, and the strict decoder names what is wrong.
#include "proto/agent_protocol.h"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

namespace allot::proto {
namespace {

namespace json = boost::json;

// Every field set to something other than its default.
AgentReport FullReport() {
  AgentReport r;
  r.node.name = "gpu-07";
  r.node.labels = {{"gpu", "h100"}, {"zone", "b"}};
  r.node.taints = {{"dedicated", "ml", core::TaintEffect::kNoSchedule}};
  r.node.unschedulable = true;
  r.node.cpu = Quantity::FromUnits(64);
  r.node.memory = Quantity::FromUnits(int64_t(512) << 30);
  core::Gpu g0;
  g0.uuid = "GPU-0";
  g0.product = "NVIDIA H100 80GB HBM3";
  g0.memory = Quantity::FromUnits(int64_t(80) << 30);
  core::Gpu g1 = g0;
  g1.uuid = "GPU-1";
  g1.healthy = false;
  r.node.gpus = {g0, g1};
  r.address = "10.0.0.7";
  r.simulated = true;
  r.pods.push_back({"t1/w/a1/main/0", false, 0, 0, false, "", ""});
  r.pods.push_back({"t1/w/a0/main/1", true, 137, 9, true, "line 1\nline 2\n", "OOMKilled: 4Gi"});
  r.pods.push_back({"t2/v/a2/main/0", true, 3, 0, false, "", ""});
  r.pods.push_back({"t3/p/a1/main/0", false, 0, 0, false, "", "", true, 12345, 40000});
  r.pods.push_back({"t3/nb/a1/notebook/0", false, 0, 0, false, "", "", false, 0, 0,
                    "127.0.0.1:41234"});
  r.gpu_samples.push_back({"GPU-0", 0, 87, 71, 512.5, int64_t(40) << 30, 2, 79});
  r.gpu_samples.push_back({"GPU-1", 1, 0, 30, 61.25, 0, 0, 0});
  r.pod_network.cidr = "10.91.0.0/16";
  r.pod_network.tenants = {{"team-a", "10.91.0.0/24"}, {"team-b", "10.91.1.0/24"}};
  return r;
}

TEST(AgentProtocol, ReportRoundTripsEveryField) {
  const AgentReport want = FullReport();
  std::string text = json::serialize(EncodeAgentReport(want));
  Result<AgentReport> got = DecodeAgentReport(text);
  ASSERT_TRUE(got.ok()) << got.status().ToString() << "\n" << text;
  EXPECT_EQ(got->node, want.node) << text;
  EXPECT_EQ(got->address, want.address);
  EXPECT_EQ(got->simulated, want.simulated);
  EXPECT_EQ(got->pods, want.pods) << text;
  EXPECT_EQ(got->gpu_samples, want.gpu_samples) << text;
  EXPECT_TRUE(*got == want);
  // No samples: none sent.
  AgentReport quiet = want;
  quiet.gpu_samples.clear();
  text = json::serialize(EncodeAgentReport(quiet));
  EXPECT_EQ(text.find("gpuSamples"), std::string::npos) << text;
  got = DecodeAgentReport(text);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(*got == quiet);
}

TEST(AgentProtocol, SyncAnswerRoundTripsEveryField) {
  SyncAnswer want;
  want.node = "gpu-07";
  want.revision = 4711;
  DesiredPod d;
  d.id = "t1/w/a1/main/0";
  d.workload = "t1/w";
  d.command = {"python", "train.py"};
  d.args = {"--epochs", "3"};
  d.env = {{"B", "2"}, {"A", "1"}};  // Order kept.
  d.working_dir = "/work";
  d.image = "127.0.0.1:5000/tiny:1";
  d.image_pull_policy = "IfNotPresent";
  d.gpus = {"GPU-0", "MIG-3"};
  d.grace_ms = 5000;
  d.simulated_runtime_ms = 1200;
  d.cpu_milli = 4000;
  d.memory_bytes = int64_t(16) << 30;
  d.host_network = true;
  d.port = 8888;
  want.pods.push_back(d);
  DesiredPod bare;
  bare.id = "t2/v/a0/main/0";
  want.pods.push_back(bare);
  want.log_requests.push_back({7, "t1/w/a1/main/0", -1, 65536});
  want.log_requests.push_back({8, "t1/w/a1/main/0", 100, 10});
  want.peers.push_back({"gpu-08", "192.168.7.8", "10.92.0.0/16", {{"team-a", "10.92.4.0/24"}}});
  want.peers.push_back({"gpu-09", "gpu-09.lab", "10.93.0.0/16", {}});
  std::string text = json::serialize(EncodeSyncAnswer(want));
  SyncAnswer got = DecodeSyncAnswer(json::parse(text));
  EXPECT_TRUE(got == want) << text;
  EXPECT_EQ(got.pods[0], d);
  EXPECT_EQ(got.pods[1], bare);
  EXPECT_EQ(got.log_requests, want.log_requests);
  // No log requests: the key is left out.
  want.log_requests.clear();
  text = json::serialize(EncodeSyncAnswer(want));
  EXPECT_EQ(text.find("logRequests"), std::string::npos) << text;
}

TEST(AgentProtocol, AgentSkipsWhatItCannotRead) {
  SyncAnswer a = DecodeSyncAnswer(json::parse(
      R"({"node":"n","revision":3,"future":1,"pods":[{"id":"a/b/a0/p/0"},{"noid":1},7,)"
      R"({"id":"x/y/a0/p/0","cpuMilli":-5,"env":[{"name":"K"},{"name":"V","value":"v"}]}],)"
      R"("logRequests":[{"id":"1","pod":"p"},{"id":2,"pod":"p"}]})"));
  ASSERT_EQ(a.pods.size(), 2u);
  EXPECT_EQ(a.pods[0].grace_ms, 30000);  // The default.
  EXPECT_EQ(a.pods[1].cpu_milli, 0);
  ASSERT_EQ(a.pods[1].env.size(), 1u);
  EXPECT_EQ(a.pods[1].env[0].first, "V");
  ASSERT_EQ(a.log_requests.size(), 1u);
  EXPECT_EQ(a.log_requests[0].id, 2);
  EXPECT_EQ(a.log_requests[0].limit, 64 << 10);
  EXPECT_EQ(DecodeSyncAnswer(json::parse("[1]")), SyncAnswer{});
  // Peers without a valid range, a node or an address are not routed to.
  a = DecodeSyncAnswer(json::parse(
      R"({"peers":[{"node":"n1","address":"10.0.0.1","cidr":"10.91.0.0/16"},)"
      R"({"node":"n2","address":"10.0.0.2","cidr":"10.92.0.1/16"},)"
      R"({"node":"n3","cidr":"10.93.0.0/16"},{"address":"10.0.0.4","cidr":"10.94.0.0/16"},)"
      R"({"node":"n5","address":"10.0.0.5","cidr":"10.95.0.0/16","tenants":{"t":"10.1.0.0/24"}}]})"));
  ASSERT_EQ(a.peers.size(), 1u);
  EXPECT_EQ(a.peers[0].node, "n1");
}

TEST(AgentProtocol, CidrsParseAndOverlap) {
  unsigned base = 0;
  int bits = 0;
  EXPECT_TRUE(ParseIpv4Cidr("10.88.0.0/16", &base, &bits));
  EXPECT_EQ(base, 0x0a580000u);
  EXPECT_EQ(bits, 16);
  for (const char* bad : {"10.88.0.0", "10.88.0.1/16", "10.88.0.0/7", "10.88.0.0/31",
                          "10.88.0.0/1x", "ten/16", "10.88.0.0/", "10.88.0.0/016"}) {
    EXPECT_FALSE(ParseIpv4Cidr(bad)) << bad;
  }
  EXPECT_TRUE(CidrsOverlap("10.88.0.0/16", "10.88.4.0/24"));
  EXPECT_TRUE(CidrsOverlap("10.0.0.0/8", "10.88.0.0/16"));
  EXPECT_FALSE(CidrsOverlap("10.88.0.0/16", "10.89.0.0/16"));
}

TEST(AgentProtocol, LogAnswersRoundTrip) {
  LogAnswers want{"gpu-07", {{7, true, 0, 11, "hello\nworld"}, {8, false, 0, 0, ""}}};
  std::string text = json::serialize(EncodeLogAnswers(want));
  Result<LogAnswers> got = DecodeLogAnswers(text);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(*got == want) << text;
  for (const char* bad : {"", "[]", R"({"node":1,"logs":[]})", R"({"node":"n"})"}) {
    Result<LogAnswers> r = DecodeLogAnswers(bad);
    EXPECT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().field(), "body") << bad;
  }
}

// The server's decoder: a bad report is an error naming the field.
TEST(AgentProtocol, ServerRefusesBadReports) {
  json::object good = EncodeAgentReport(FullReport());
  auto with = [&](const char* key, json::value v) {
    json::object o = good;
    o[key] = std::move(v);
    return json::serialize(o);
  };
  struct Case {
    std::string body, field, says;
  };
  const std::vector<Case> cases = {
      {"[]", "body", "not a JSON object"},
      {with("extra", 1), "extra", "unknown field 'extra'"},
      {with("node", "gpu-07"), "node", "allot.dev/v1 Node"},
      {with("address", 5), "address", "host name or IP"},
      {with("address", json::string(std::string(254, 'a'))), "address", "host name or IP"},
      {with("simulated", "yes"), "simulated", "true or false"},
      {with("pods", json::object{}), "pods", "must be a list"},
      {with("pods", json::array{json::object{{"exited", true}}}), "pods.id", "needs an id"},
      {with("gpuSamples", json::array{json::object{{"uuid", "GPU-9"}}}), "gpuSamples.uuid",
       "one of the node's GPUs"},
      {with("gpuSamples", json::array{json::object{{"uuid", "GPU-0"}, {"util", 101}}}),
       "gpuSamples.util", "from 0 to 100"},
      {with("gpuSamples", json::array{json::object{{"uuid", "GPU-0"}}, json::object{{"uuid", "GPU-1"}},
                                      json::object{{"uuid", "GPU-0"}}}),
       "gpuSamples", "at most one sample per GPU"},
      {with("podNetwork", json::object{{"cidr", "10.88.0.0"}}), "podNetwork.cidr",
       "IPv4 range"},
      {with("podNetwork", json::object{{"cidr", "10.88.0.0/16"}, {"tenants", json::array{}}}),
       "podNetwork.tenants", "map tenants"},
      {with("podNetwork",
            json::object{{"cidr", "10.88.0.0/16"}, {"tenants", {{"t", "10.89.0.0/24"}}}}),
       "podNetwork.tenants", "t must be a subnet of 10.88.0.0/16"},
  };
  for (const Case& c : cases) {
    Result<AgentReport> r = DecodeAgentReport(c.body);
    ASSERT_FALSE(r.ok()) << c.body;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << c.body;
    EXPECT_EQ(r.status().field(), c.field) << c.body << ": " << r.status().ToString();
    EXPECT_NE(r.status().message().find(c.says), std::string::npos)
        << c.body << ": " << r.status().ToString();
  }
  // Over-long texts are cut, not refused.
  json::array pods{json::object{{"id", "p"},
                                {"exited", true},
                                {"lastLines", std::string(10000, 'x')},
                                {"reason", std::string(1000, 'y')}}};
  Result<AgentReport> r = DecodeAgentReport(with("pods", pods));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->pods[0].last_lines.size(), kMaxLastLines);
  EXPECT_EQ(r->pods[0].reason.size(), kMaxReason);
}

}  // namespace
}  // namespace allot::proto
