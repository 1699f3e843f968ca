// `allot up` end to end: the real binary (server + agent in one process,
// simulated GPUs, real pod processes) on loopback, with and without --demo.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "net/http.h"

namespace allot::cli {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using namespace std::chrono_literals;

class UpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "allot_up_XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    Stop();
    fs::remove_all(dir_);
  }

  // Starts `allot up ARGS` and waits (20 s) for its API address and token.
  void Start(std::vector<std::string> args) {
    const char* bin = std::getenv("ALLOT_BIN");
    ASSERT_NE(bin, nullptr) << "ALLOT_BIN is not set";
    args.insert(args.begin(), {bin, "up", "--listen", "127.0.0.1:0", "--data-dir", dir_,
                               "--simulate-gpus", "8xH100-80GB"});
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    out_path_ = dir_ + "/up.out." + std::to_string(++starts_);
    pid_ = fork();
    if (pid_ == 0) {
      int fd = ::open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::execv(bin, argv.data());
      ::_exit(127);
    }
    const std::regex api("the API is at (http://[0-9.:]+)"), tok("admin token (allot_[0-9a-f]+)");
    for (int i = 0; i < 200; ++i) {
      std::smatch m1, m2;
      const std::string out = Output();
      if (std::regex_search(out, m1, api) && std::regex_search(out, m2, tok)) {
        url_ = m1[1];
        token_ = m2[1];
        net::ClientOptions o;
        o.base_url = url_;
        auto c = net::HttpClient::Create(o);
        ASSERT_TRUE(c.ok());
        client_ = std::move(*c);
        return;
      }
      std::this_thread::sleep_for(100ms);
    }
    FAIL() << "allot up did not start:\n" << Output();
  }

  // SIGINT, as Ctrl-C; returns the exit status.
  int Stop() {
    if (pid_ <= 0) return -1;
    ::kill(pid_, SIGINT);
    int status = 0;
    for (int i = 0; i < 300; ++i) {
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(100ms);
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
    return 137;
  }

  std::string Output() const {
    std::ifstream in(out_path_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  json::value Get(const std::string& target, int* code) {
    auto r = client_->Do("GET", target, {{"Authorization", "Bearer " + token_}}, "");
    *code = r.ok() ? r->status : 0;
    boost::system::error_code ec;
    json::value v = r.ok() ? json::parse(r->body, ec) : json::value();
    return ec ? json::value() : v;
  }

  static std::string State(const json::value& w) {
    const json::value* s = w.is_object() ? w.as_object().if_contains("status") : nullptr;
    return s ? std::string(s->at("state").as_string()) : "";
  }
  static bool HasCondition(const json::value& w, const std::string& type) {
    for (const json::value& c : w.at("status").at("conditions").as_array()) {
      if (c.at("type").as_string() == type) return true;
    }
    return false;
  }

  // Waits (up to 60 s) until `pred` holds for the workload.
  json::value WaitFor(const std::string& key, const std::function<bool(const json::value&)>& pred) {
    json::value last;
    for (int i = 0; i < 600; ++i) {
      int code = 0;
      last = Get("/api/v1/workloads/" + key, &code);
      if (code == 200 && pred(last)) return last;
      std::this_thread::sleep_for(100ms);
    }
    ADD_FAILURE() << key << " timed out; last: " << json::serialize(last) << "\n" << Output();
    return last;
  }

  std::string dir_, out_path_, url_, token_;
  std::unique_ptr<net::HttpClient> client_;
  pid_t pid_ = -1;
  int starts_ = 0;
};

// The demo tells its story: borrowing, queueing, reclaim by preemption, a
// gang restart and a failure with its log lines, on real processes.
TEST_F(UpTest, DemoShowsBorrowingPreemptionRestartsAndFailures) {
  Start({"--demo", "--demo-delay", "2"});
  int code = 0;
  json::value node = Get("/api/v1/nodes", &code);
  ASSERT_EQ(code, 200);
  // team-b's high-priority eval reclaims the GPUs team-a borrowed.
  json::value train = WaitFor("team-a/train", [](const json::value& w) {
    return HasCondition(w, "Preempted");
  });
  json::value eval = WaitFor("team-b/eval", [](const json::value& w) {
    return State(w) == "Running" || State(w) == "Succeeded";
  });
  json::value flaky = WaitFor("team-b/flaky", [](const json::value& w) {
    return State(w) == "Succeeded" || State(w) == "Failed";
  });
  EXPECT_EQ(State(flaky), "Succeeded");
  EXPECT_EQ(flaky.at("status").at("restarts").as_int64(), 1);
  json::value broken = WaitFor("team-b/broken", [](const json::value& w) {
    return State(w) == "Failed";
  });
  std::string finished;
  for (const json::value& c : broken.at("status").at("conditions").as_array()) {
    if (c.at("type").as_string() == "Finished") finished = c.at("message").as_string();
  }
  EXPECT_NE(finished.find("config.yaml: no such file"), std::string::npos) << finished;
  // Its log, through the server.
  json::value log = Get("/api/v1/workloads/team-b/broken/log", &code);
  ASSERT_EQ(code, 200) << json::serialize(log);
  EXPECT_EQ(log.at("data").as_string(), "loading config\nconfig.yaml: no such file\n");

  const std::string out = Output();
  EXPECT_NE(out.find("SIMULATED"), std::string::npos) << out;
  EXPECT_NE(out.find("preempted by team-b/eval (InCohortReclamation)"), std::string::npos) << out;
  EXPECT_NE(out.find("(borrowing"), std::string::npos) << out;
  EXPECT_EQ(Stop(), 0) << Output();
}

// Without --demo the store and the token survive a restart; --demo starts
// from a store of its own, fresh each time.
TEST_F(UpTest, KeepsItsStoreAndTokenAcrossRestarts) {
  Start({});
  const std::string token = token_;
  auto put = client_->Do("POST", "/api/v1/apply",
                         {{"Authorization", "Bearer " + token_},
                          {"Content-Type", "application/yaml"}},
                         "apiVersion: v1\nkind: Namespace\nmetadata: {name: kept}\n");
  ASSERT_TRUE(put.ok());
  ASSERT_EQ(put->status, 200) << put->body;
  EXPECT_EQ(Stop(), 0);
  EXPECT_EQ(fs::status(dir_ + "/admin.token").permissions() & fs::perms::others_read,
            fs::perms::none);

  Start({});
  EXPECT_EQ(token_, token);
  int code = 0;
  Get("/api/v1/tenants/kept", &code);
  EXPECT_EQ(code, 200);
  EXPECT_EQ(Stop(), 0);

  Start({"--demo", "--demo-delay", "600"});
  Get("/api/v1/tenants/kept", &code);
  EXPECT_EQ(code, 404);  // The demo's own store.
  // The demo applies its manifests once the server is up: wait for them.
  for (int i = 0; i < 200; ++i) {
    Get("/api/v1/tenants/team-a", &code);
    if (code == 200) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(code, 200);
  EXPECT_EQ(Stop(), 0);
}

}  // namespace
}  // namespace allot::cli
