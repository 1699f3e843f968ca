// The fixture of the `allot up` tests: starts the real binary (ALLOT_BIN)
// with simulated GPUs in a temporary data directory, reads its API address
// and admin token from what it prints, and stops it with SIGINT.
#pragma once

#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <boost/json.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "net/http.h"
#include "testing/process.h"

namespace allot::cli::testing {

namespace fs = std::filesystem;
namespace json = boost::json;
using namespace std::chrono_literals;

class UpFixture : public ::testing::Test {
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
    out_path_ = dir_ + "/up.out." + std::to_string(++starts_);
    ASSERT_TRUE(proc_.Spawn(std::move(args), out_path_, /*append=*/false));
    const std::regex api("the API is at (http://[0-9.:]+)"), tok("admin token (allot_[0-9a-f]+)");
    const bool up = allot::testing::WaitFor(
        [&] {
          std::smatch m1, m2;
          const std::string out = Output();
          if (!std::regex_search(out, m1, api) || !std::regex_search(out, m2, tok)) return false;
          url_ = m1[1];
          token_ = m2[1];
          return true;
        },
        20s, 100ms);
    if (up) {
      net::ClientOptions o;
      o.base_url = url_;
      auto c = net::HttpClient::Create(o);
      ASSERT_TRUE(c.ok());
      client_ = std::move(*c);
      return;
    }
    FAIL() << "allot up did not start:\n" << Output();
  }

  // SIGINT, as Ctrl-C; returns the exit status.
  int Stop() {
    if (!proc_.started()) return -1;
    return proc_.Terminate(30s, SIGINT) ? proc_.exit_code() : 137;
  }

  std::string Output() const { return allot::testing::ReadFile(out_path_); }

  struct Ran {
    int code = -1;
    std::string out, err;
  };

  // Runs `allot ARGS` with no ALLOT_SERVER, ALLOT_TOKEN or config file but
  // `token` (as ALLOT_TOKEN when non-empty); gives up after 60 s.
  Ran Allot(std::vector<std::string> args, const std::string& token = "") {
    const char* bin = std::getenv("ALLOT_BIN");
    args.insert(args.begin(), bin);
    // The environment is built here: the child of a threaded process only
    // opens files and execs.
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string kv = *e;
      if (kv.rfind("ALLOT_SERVER=", 0) == 0 || kv.rfind("ALLOT_TOKEN=", 0) == 0 ||
          kv.rfind("XDG_CONFIG_HOME=", 0) == 0) {
        continue;
      }
      env.push_back(kv);
    }
    if (!token.empty()) env.push_back("ALLOT_TOKEN=" + token);
    env.push_back("XDG_CONFIG_HOME=" + dir_);  // No config file.
    const std::string out = dir_ + "/cli.out", err = dir_ + "/cli.err";
    allot::testing::ChildProcess p;
    Ran r;
    if (!p.Spawn(std::move(args), out, /*append=*/false, &env, err)) return r;
    allot::testing::WaitFor([&] { return p.Exited(); }, 60s);
    p.Kill9();
    r.code = p.exit_code();
    r.out = allot::testing::ReadFile(out);
    r.err = allot::testing::ReadFile(err);
    return r;
  }

  // A request with the admin token; the body parsed as JSON (null if not).
  json::value Call(const std::string& method, const std::string& target,
                   const std::string& body, int* code) {
    auto r = client_->Do(method, target,
                         {{"Authorization", "Bearer " + token_},
                          {"Content-Type", "application/yaml"}},
                         body);
    *code = r.ok() ? r->status : 0;
    boost::system::error_code ec;
    json::value v = r.ok() ? json::parse(r->body, ec) : json::value();
    return ec ? json::value() : v;
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
  allot::testing::ChildProcess proc_;
  int starts_ = 0;
};

}  // namespace allot::cli::testing
