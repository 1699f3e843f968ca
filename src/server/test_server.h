// TestServer: a real `allot serve` process on loopback, for integration
// tests (header-only; tests only).
//
// Start() runs $ALLOT_BIN (set by CMake for these tests) with --listen
// 127.0.0.1:0, a fresh SQLite store in a temporary directory and an admin
// token file, reads the bound port from its start-up line, and gives an
// HttpClient per caller. Kill9() and Restart() exercise durability: the
// store directory survives them.
#pragma once

#include <boost/json.hpp>

#include <chrono>
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
  static std::unique_ptr<TestServer> Start(std::string dir = "",
                                           std::vector<std::string> extra = {}) {
    auto s = std::unique_ptr<TestServer>(new TestServer());
    s->extra_ = std::move(extra);
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

  ~TestServer() {
    Stop();
    if (!keep_dir_) std::filesystem::remove_all(dir_);
  }

  const std::string& dir() const { return dir_; }
  const std::string& admin_token() const { return admin_token_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  uint16_t port() const { return port_; }
  std::string store_url() const { return "sqlite:" + dir_ + "/allot.db"; }
  void keep_dir() { keep_dir_ = true; }

  std::unique_ptr<net::HttpClient> NewClient() const {
    net::ClientOptions o;
    o.base_url = url();
    auto c = net::HttpClient::Create(o);
    return c.ok() ? std::move(*c) : nullptr;
  }

  // One request with a bearer token ("" = none). Transport errors give
  // status 0 and the message as body.
  net::Response Call(const std::string& token, const std::string& method,
                     const std::string& target, const std::string& body = "") {
    if (!client_) client_ = NewClient();
    std::vector<std::pair<std::string, std::string>> h;
    if (!token.empty()) h.push_back({"Authorization", "Bearer " + token});
    if (!body.empty()) h.push_back({"Content-Type", "application/json"});
    auto r = client_->Do(method, target, h, body);
    if (!r.ok()) {
      client_.reset();
      return net::Response{0, "", r.status().message(), {}};
    }
    return *r;
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
    std::string listen = "127.0.0.1:" + std::to_string(port_);
    std::vector<std::string> args = {bin,    "serve",   "--listen",
                                     listen, "--store", store,
                                     "--admin-token-file", tok};
    args.insert(args.end(), extra_.begin(), extra_.end());
    if (!proc_.Spawn(std::move(args), log, /*append=*/false)) return false;
    const std::regex re("serving on http://127\\.0\\.0\\.1:([0-9]+)");
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
  std::vector<std::string> extra_;  // More `allot serve` flags.
  std::string admin_token_;
  allot::testing::ChildProcess proc_;
  uint16_t port_ = 0;
  bool keep_dir_ = false;
  std::unique_ptr<net::HttpClient> client_;
};

}  // namespace allot::server::testing
