// The process fixtures of the integration tests that need the real binary
// (header-only; tests only): TestServer, a real `allot serve` on loopback,
// with the calls a test makes to it; ServerTest, the gtest fixture of one;
// and AgentProcess, a real `allot agent` polling it.
//
// Start() runs $ALLOT_BIN (set by CMake for these tests) with --listen
// 127.0.0.1:0, a fresh SQLite store in a temporary directory and an admin
// token file, reads the bound port from its start-up line, and gives an
// HttpClient per caller. Kill9() and Restart() exercise durability: the
// store directory survives them. Not thread-safe, except NewClient() and
// the accessors: a test thread drives it.
#pragma once

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <algorithm>
#include <chrono>
#include <functional>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "net/http.h"
#include "testing/process.h"

namespace allot::server::testing {

class TestServer {
 public:
  // Empty `dir`: a new temporary directory. Returns null (and prints why)
  // when the server does not come up within 20 s.
  // `host`: the address it listens on (a test network's, for agents in
  // network namespaces of their own).
  static std::unique_ptr<TestServer> Start(std::string dir = "",
                                           std::vector<std::string> extra = {},
                                           std::string host = "127.0.0.1") {
    auto s = std::unique_ptr<TestServer>(new TestServer());
    s->extra_ = std::move(extra);
    s->host_ = std::move(host);
    if (dir.empty()) {
      std::string tmpl = std::filesystem::temp_directory_path().string() +
                         "/allot-it-XXXXXX";
      if (mkdtemp(tmpl.data()) == nullptr) return nullptr;
      dir = tmpl;
    }
    s->dir_ = dir;
    s->admin_token_ = "allot_" + std::string(64, 'a');
    std::ofstream(dir + "/admin.token") << s->admin_token_ << "\n";
    if (!s->Launch()) return nullptr;
    return s;
  }

  // Start() with `manifests` applied by the admin (Apply); null (and the
  // test fails) when the server does not come up or refuses them.
  static std::unique_ptr<TestServer> StartWith(const std::string& manifests,
                                               std::vector<std::string> extra = {},
                                               std::string host = "127.0.0.1") {
    auto s = Start("", std::move(extra), std::move(host));
    if (s == nullptr || !s->Apply(manifests)) return nullptr;
    return s;
  }

  ~TestServer() {
    Stop();
    if (!keep_dir_) std::filesystem::remove_all(dir_);
  }

  const std::string& dir() const { return dir_; }
  const std::string& admin_token() const { return admin_token_; }
  std::string url() const { return "http://" + host_ + ":" + std::to_string(port_); }
  uint16_t port() const { return port_; }
  std::string store_url() const { return "sqlite:" + dir_ + "/allot.db"; }
  void keep_dir() { keep_dir_ = true; }

  std::unique_ptr<net::HttpClient> NewClient() const {
    net::ClientOptions o;
    o.base_url = url();
    auto c = net::HttpClient::Create(o);
    return c.ok() ? std::move(*c) : nullptr;
  }

  // One request with this Authorization header ("" = none), on one
  // kept-alive connection. Transport errors give status 0 and the message
  // as body (and a fresh connection for the next request).
  net::Response Send(const std::string& authorization, const std::string& method,
                     const std::string& target, const std::string& body = "") {
    if (!client_) client_ = NewClient();
    std::vector<std::pair<std::string, std::string>> h;
    if (!authorization.empty()) h.push_back({"Authorization", authorization});
    if (!body.empty()) h.push_back({"Content-Type", "application/json"});
    auto r = client_->Do(method, target, h, body);
    if (!r.ok()) {
      client_.reset();
      return net::Response{0, "", r.status().message(), {}};
    }
    return *r;
  }
  // One request with a bearer token ("" = none).
  net::Response Call(const std::string& token, const std::string& method,
                     const std::string& target, const std::string& body = "") {
    return Send(token.empty() ? "" : "Bearer " + token, method, target, body);
  }
  // One request with the admin's token.
  net::Response Admin(const std::string& method, const std::string& target,
                      const std::string& body = "") {
    return Call(admin_token_, method, target, body);
  }
  // The admin's call, body parsed as JSON (null when not JSON).
  boost::json::value Json(const std::string& method, const std::string& target,
                          const std::string& body = "", int* status = nullptr) {
    net::Response r = Call(admin_token_, method, target, body);
    if (status) *status = r.status;
    boost::system::error_code ec;
    boost::json::value v = boost::json::parse(r.body, ec);
    return ec ? boost::json::value() : v;
  }

  // Applies `manifests` (POST /api/v1/apply) as the admin; whether they
  // were taken (200; the test fails with the answer when not).
  bool Apply(const std::string& manifests) {
    net::Response r = Admin("POST", "/api/v1/apply", manifests);
    EXPECT_EQ(r.status, 200) << r.body;
    return r.status == 200;
  }

  // A token made by the admin from `body` (POST /api/v1/tokens), and its id
  // in *id; "" (and the test fails) when it is not created.
  std::string NewToken(const std::string& body, std::string* id = nullptr) {
    net::Response r = Admin("POST", "/api/v1/tokens", body);
    EXPECT_EQ(r.status, 201) << r.body;
    boost::system::error_code ec;
    boost::json::value v = boost::json::parse(r.body, ec);
    if (r.status != 201 || ec || !v.is_object()) return "";
    auto str = [&](const char* k) {
      const boost::json::value* x = v.as_object().if_contains(k);
      return x != nullptr && x->is_string() ? std::string(x->as_string()) : std::string();
    };
    if (id) *id = str("id");
    return str("token");
  }
  // A token of `user` with `role` in `tenant` ("" for none).
  std::string NewToken(const std::string& user, const std::string& role,
                       const std::string& tenant, std::string* id = nullptr) {
    return NewToken(R"({"user":")" + user + R"(","role":")" + role + R"(","tenant":")" +
                        tenant + R"("})",
                    id);
  }

  // Polls workload `key` ("ns/name") every 100 ms until `pred` holds for
  // its JSON, up to `timeout`; the last JSON read (and the test fails on a
  // timeout).
  boost::json::value WaitForWorkload(
      const std::string& key, const std::function<bool(const boost::json::value&)>& pred,
      std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
    boost::json::value last;
    bool held = allot::testing::WaitFor(
        [&] {
          int code = 0;
          last = Json("GET", "/api/v1/workloads/" + key, "", &code);
          return code == 200 && pred(last);
        },
        timeout, std::chrono::milliseconds(100));
    if (!held) ADD_FAILURE() << key << " timed out; last: " << boost::json::serialize(last);
    return last;
  }

  void Kill9() {
    proc_.Kill9();
    client_.reset();
  }
  void Stop() {
    proc_.Terminate(std::chrono::seconds(5));
    client_.reset();
  }
  bool Restart() {
    Stop();
    return Launch();
  }
  // The server's stdout and stderr so far.
  std::string Log() const { return allot::testing::ReadFile(dir_ + "/serve.log"); }

 private:
  TestServer() = default;

  bool Launch() {
    const char* bin = std::getenv("ALLOT_BIN");
    if (bin == nullptr) {
      std::fprintf(stderr, "TestServer: ALLOT_BIN is not set\n");
      return false;
    }
    std::string log = dir_ + "/serve.log";
    std::filesystem::remove(log);
    std::string store = "sqlite:" + dir_ + "/allot.db";
    std::string tok = dir_ + "/admin.token";
    // A restart keeps the port, so that clients (agents) find it again.
    std::string listen = host_ + ":" + std::to_string(port_);
    std::vector<std::string> args = {bin,    "serve",   "--listen",
                                     listen, "--store", store,
                                     "--admin-token-file", tok};
    args.insert(args.end(), extra_.begin(), extra_.end());
    if (!proc_.Spawn(std::move(args), log, /*append=*/false)) return false;
    const std::regex re("serving on http://" +
                        std::regex_replace(host_, std::regex("\\."), "\\.") + ":([0-9]+)");
    bool exited = false;
    bool up = allot::testing::WaitFor(
        [&] {
          std::smatch m;
          std::string text = Log();
          if (std::regex_search(text, m, re)) {
            port_ = uint16_t(std::stoi(m[1]));
            return true;
          }
          exited = proc_.Exited();
          return exited;
        },
        std::chrono::seconds(20));
    if (up && !exited) return true;
    if (exited) {
      std::fprintf(stderr, "TestServer: allot serve exited:\n%s\n", Log().c_str());
      return false;
    }
    std::fprintf(stderr, "TestServer: no start-up line in 20 s:\n%s\n", Log().c_str());
    Kill9();
    return false;
  }

  std::string dir_;
  std::string host_ = "127.0.0.1";
  std::vector<std::string> extra_;  // More `allot serve` flags.
  std::string admin_token_;
  allot::testing::ChildProcess proc_;
  uint16_t port_ = 0;
  bool keep_dir_ = false;
  std::unique_ptr<net::HttpClient> client_;
};

// The fixture of a test against one TestServer, srv_ (the fixtures of the
// agents' and the tenancy tests build on it).
class ServerTest : public ::testing::Test {
 protected:
  // Starts srv_ with `extra` flags and `manifests` applied (StartWith)
  // and, when `agent_sync` is given, posts it to /api/v1/agents/sync as the
  // admin (for tests that play a node's agent); fails the test fatally
  // when one of them does not succeed.
  void StartServer(const std::string& manifests, const std::string& agent_sync = "",
                   std::vector<std::string> extra = {}) {
    srv_ = TestServer::StartWith(manifests, std::move(extra));
    ASSERT_NE(srv_, nullptr);
    if (agent_sync.empty()) return;
    net::Response r = srv_->Admin("POST", "/api/v1/agents/sync", agent_sync);
    ASSERT_EQ(r.status, 200) << r.body;
  }

  std::unique_ptr<TestServer> srv_;
};

// One `allot agent` process (run by `wrap` when given) polling a TestServer every second, with
// simulated GPUs (`gpus`, e.g. "2xH100-80GB") and its pods' logs (and its
// own output, agent.out) in `log_dir`. Started by the constructor; stopped
// (SIGTERM, then SIGKILL after 15 s) by the destructor.
class AgentProcess {
 public:
  AgentProcess(const TestServer& srv, std::string token, std::string name,
               std::string gpus, std::string log_dir,
               std::vector<std::string> extra = {}, std::vector<std::string> wrap = {})
      : extra_(std::move(extra)),
        wrap_(std::move(wrap)),
        url_(srv.url()),
        token_(std::move(token)),
        name_(std::move(name)),
        gpus_(std::move(gpus)),
        log_dir_(std::move(log_dir)) {
    std::filesystem::create_directories(log_dir_);
    Launch();
  }
  ~AgentProcess() { Stop(); }

  // (Re)starts the process; its output is appended to agent.out.
  void Launch() {
    const char* bin = std::getenv("ALLOT_BIN");
    std::vector<std::string> args = {bin,        "agent",          "--server",
                                     url_,       "--token",        token_,
                                     "--name",   name_,            "--log-dir",
                                     log_dir_,   "--simulate-gpus", gpus_,
                                     "--poll-seconds", "1"};
    args.insert(args.end(), extra_.begin(), extra_.end());
    args.insert(args.begin(), wrap_.begin(), wrap_.end());
    proc_.Spawn(std::move(args), log_dir_ + "/agent.out", /*append=*/true);
  }
  void Kill9() { proc_.Kill9(); }
  void Stop() { proc_.Terminate(std::chrono::seconds(15)); }
  const std::string& log_dir() const { return log_dir_; }
  // The log of pod `pod_id` ("ns/name/aN/podset/index") so far.
  std::string PodLog(const std::string& pod_id) const {
    std::string file = pod_id;
    std::replace(file.begin(), file.end(), '/', '_');
    return allot::testing::ReadFile(log_dir_ + "/" + file + ".log");
  }
  std::string Output() const { return allot::testing::ReadFile(log_dir_ + "/agent.out"); }

 private:
  std::vector<std::string> extra_;
  std::vector<std::string> wrap_;  // Runs the agent ("ip netns exec NS").
  std::string url_, token_, name_, gpus_, log_dir_;
  allot::testing::ChildProcess proc_;
};

}  // namespace allot::server::testing
