// The fixture of the `allot up` tests: starts the real binary (ALLOT_BIN)
// with simulated GPUs in a temporary data directory (TempDirTest's dir_),
// reads its API address and admin token from what it prints, and stops it
// with SIGINT.
#pragma once

#include <gtest/gtest.h>

#include <signal.h>

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
#include <vector>

#include "net/http.h"
#include "testing/process.h"
#include "testing/temp_dir.h"

namespace allot::cli::testing {

namespace fs = std::filesystem;
namespace json = boost::json;
using namespace std::chrono_literals;

class UpFixture : public allot::testing::TempDirTest {
 protected:
  void TearDown() override {
    Stop();
    TempDirTest::TearDown();
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
    if (proc_.Terminate(30s, SIGINT)) return proc_.exit_code();
    // A stop that hangs once in many runs is diagnosed by where the output
    // ends (stopping the agent, its pods, the server or the narrator).
    const std::string out = Output();
    ADD_FAILURE() << "allot up did not exit within 30 s of SIGINT; its output ends:\n"
                  << out.substr(out.size() > 3000 ? out.size() - 3000 : 0);
    return 137;
  }

  std::string Output() const { return allot::testing::ReadFile(out_path_); }

  using Ran = allot::testing::Ran;

  // Runs `allot ARGS` with no ALLOT_SERVER, ALLOT_TOKEN or config file but
  // `token` (as ALLOT_TOKEN when non-empty); gives up after 60 s.
  Ran Allot(std::vector<std::string> args, const std::string& token = "") {
    const char* bin = std::getenv("ALLOT_BIN");
    args.insert(args.begin(), bin);
    std::vector<std::string> add;
    if (!token.empty()) add.push_back("ALLOT_TOKEN=" + token);
    add.push_back("XDG_CONFIG_HOME=" + dir_);  // No config file.
    const std::vector<std::string> env = allot::testing::Environment(
        {"ALLOT_SERVER", "ALLOT_TOKEN", "XDG_CONFIG_HOME"}, add);
    return allot::testing::Run(std::move(args), &env);
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
    const bool held = allot::testing::WaitFor(
        [&] {
          int code = 0;
          last = Get("/api/v1/workloads/" + key, &code);
          return code == 200 && pred(last);
        },
        60s, 100ms);
    if (!held) {
      ADD_FAILURE() << key << " timed out; last: " << json::serialize(last) << "\n" << Output();
    }
    return last;
  }

  std::string out_path_, url_, token_;
  std::unique_ptr<net::HttpClient> client_;
  allot::testing::ChildProcess proc_;
  int starts_ = 0;
};

}  // namespace allot::cli::testing
