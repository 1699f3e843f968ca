// The Agent in process, against a scripted server (a fake ServerLink):
// simulated GPUs and simulated execution, no network. The real binary
// against a real server is tested in src/server/agent_test.cc.
#include "agent/agent.h"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <deque>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "agent/exec.h"
#include "agent/gpu.h"
#include "proto/agent_protocol.h"

namespace allot::agent {
namespace {

namespace json = boost::json;

// What the agent sent, and the answers its syncs get, in order. The sync
// that takes the last answer sets `stop`, so PollLoop makes exactly as
// many syncs as there are answers; later syncs get null (no answer at
// all: the agent changes nothing).
struct Script {
  std::mutex mu;
  std::deque<proto::SyncAnswer> answers;
  std::vector<std::pair<std::string, std::string>> posts;  // target, body
  std::atomic<bool> stop{false};

  std::vector<proto::AgentReport> Reports() {
    std::lock_guard<std::mutex> l(mu);
    std::vector<proto::AgentReport> out;
    for (const auto& [target, body] : posts) {
      if (target.rfind("/api/v1/agents/sync", 0) != 0) continue;
      Result<proto::AgentReport> r = proto::DecodeAgentReport(body);
      EXPECT_TRUE(r.ok()) << r.status().ToString();
      if (r.ok()) out.push_back(*r);
    }
    return out;
  }
};

class FakeLink : public ServerLink {
 public:
  explicit FakeLink(Script* s) : s_(s) {}
  Result<json::value> Post(const std::string& target,
                           const std::string& body) override {
    std::lock_guard<std::mutex> l(s_->mu);
    s_->posts.emplace_back(target, body);
    if (target.rfind("/api/v1/agents/sync", 0) != 0 || s_->answers.empty()) {
      return json::value(nullptr);
    }
    json::value v = proto::EncodeSyncAnswer(s_->answers.front());
    s_->answers.pop_front();
    if (s_->answers.empty()) s_->stop = true;
    return v;
  }
  const std::string& server() const override { return server_; }

 private:
  Script* s_;
  const std::string server_ = "fake";
};

proto::DesiredPod Pod(const std::string& id) {
  proto::DesiredPod d;
  d.id = id;
  d.workload = id.substr(0, id.find('/', id.find('/') + 1));
  d.gpus = {"GPU-X"};
  d.simulated_runtime_ms = 3600 * 1000;  // Runs until stopped.
  return d;
}

proto::SyncAnswer Answer(int64_t revision,
                         std::vector<proto::DesiredPod> pods) {
  proto::SyncAnswer a;
  a.node = "n1";
  a.revision = revision;
  a.pods = std::move(pods);
  return a;
}

std::unique_ptr<Agent> NewAgent(Script* s, std::ostream& out) {
  AgentOptions o;
  o.simulate_exec = true;
  o.sample_seconds = 0;
  auto gpus = OpenSimulated("1xH100-80GB", "n1");
  EXPECT_TRUE(gpus.ok());
  core::Node node;
  node.name = "n1";
  node.cpu = Quantity::FromUnits(8);
  node.memory = Quantity::FromUnits(int64_t(64) << 30);
  Connect connect = [s]() -> Result<std::unique_ptr<ServerLink>> {
    return std::unique_ptr<ServerLink>(std::make_unique<FakeLink>(s));
  };
  return std::make_unique<Agent>(
      connect, o, std::move(*gpus), NewSimulatedExecutor(), node,
      ::testing::TempDir() + "/agent_test_logs", "n1@test", out);
}

// The first report has no pods; the answer to it lists one, so the agent
// starts it and the next report says it runs.
TEST(AgentTest, StartsWhatTheAnswerListsAndReportsItRunning) {
  Script s;
  s.answers = {Answer(1, {Pod("t/w/a0/main/0")}),
               Answer(2, {Pod("t/w/a0/main/0")})};
  std::ostringstream out;
  auto a = NewAgent(&s, out);
  a->PollLoop(&s.stop);
  EXPECT_TRUE(a->synced());
  std::vector<proto::AgentReport> reports = s.Reports();
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_TRUE(reports[0].pods.empty());
  ASSERT_EQ(reports[1].pods.size(), 1u);
  EXPECT_EQ(reports[1].pods[0].id, "t/w/a0/main/0");
  EXPECT_FALSE(reports[1].pods[0].exited);
  EXPECT_NE(out.str().find("node n1 synced with fake"), std::string::npos)
      << out.str();
}

// Answers can cross: one with an older revision than one already applied
// changes nothing, so its empty list does not stop the pod. Had it been
// applied, the reporter would find the stopped pod's exit and sync it.
TEST(AgentTest, AnOlderAnswerChangesNothing) {
  Script s;
  s.answers = {Answer(5, {Pod("t/w/a0/main/0")}), Answer(3, {})};
  std::ostringstream out;
  auto a = NewAgent(&s, out);
  a->PollLoop(&s.stop);
  ASSERT_TRUE(a->ReportStep());
  std::vector<proto::AgentReport> reports = s.Reports();
  ASSERT_EQ(reports.size(), 2u);  // No exit to report.
  ASSERT_EQ(reports[1].pods.size(), 1u);
  EXPECT_FALSE(reports[1].pods[0].exited);
}

// A pod id runs once. Answers of one revision can differ and cross: the
// one that forgot the exited pod is applied first, then one made before
// the exit was recorded lists it again. Run again, a failed pod would
// append a second run to its log and report a second exit.
TEST(AgentTest, AStaleAnswerDoesNotRunAnEndedPodAgain) {
  Script s;
  proto::DesiredPod quick = Pod("t/w/a1/main/0");
  quick.simulated_runtime_ms = 0;  // Exits at once.
  s.answers = {Answer(4, {quick})};
  std::ostringstream out;
  auto a = NewAgent(&s, out);
  a->PollLoop(&s.stop);
  ASSERT_TRUE(a->ReportStep());  // Reports its exit.
  std::vector<proto::AgentReport> reports = s.Reports();
  ASSERT_FALSE(reports.empty());
  ASSERT_EQ(reports.back().pods.size(), 1u);
  EXPECT_TRUE(reports.back().pods[0].exited);
  // The server forgets it (revision 5), then the stale answer comes.
  s.stop = false;
  s.answers = {Answer(5, {}), Answer(5, {quick})};
  a->PollLoop(&s.stop);
  ASSERT_TRUE(a->ReportStep());
  reports = s.Reports();
  EXPECT_TRUE(reports.back().pods.empty())
      << reports.back().pods.size() << " pod(s), the first "
      << (reports.back().pods.empty() ? "" : reports.back().pods[0].id);
}

// The reporter answers log reads on its own connection; a pod id that
// would lead out of the log directory is never read.
TEST(AgentTest, AnswersLogReadsInsideTheLogDirectoryOnly) {
  Script s;
  proto::SyncAnswer answer = Answer(1, {});
  answer.log_requests = {{1, "../../etc/passwd", -1, 100},
                         {2, "t/w/a0/main/0", -1, 100}};
  s.answers = {answer};
  std::ostringstream out;
  auto a = NewAgent(&s, out);
  a->PollLoop(&s.stop);
  ASSERT_TRUE(a->ReportStep());
  std::lock_guard<std::mutex> l(s.mu);
  ASSERT_EQ(s.posts.size(), 2u);
  EXPECT_EQ(s.posts[1].first, "/api/v1/agents/logs");
  Result<proto::LogAnswers> logs = proto::DecodeLogAnswers(s.posts[1].second);
  ASSERT_TRUE(logs.ok()) << logs.status().ToString();
  EXPECT_EQ(logs->node, "n1");
  ASSERT_EQ(logs->logs.size(), 1u);
  EXPECT_EQ(logs->logs[0].id, 2);
  EXPECT_FALSE(logs->logs[0].exists);  // The pod never ran here.
}

}  // namespace
}  // namespace allot::agent
