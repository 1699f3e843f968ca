// The fixture of the `allot up` tests: starts the real binary (ALLOT_BIN)
// with simulated GPUs in a temporary data directory, reads its API address
// and admin token from what it prints, and stops it with SIGINT.
#pragma once

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
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "net/http.h"

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

  struct Ran {
    int code = -1;
    std::string out, err;
  };

  // Runs `allot ARGS` with no ALLOT_SERVER, ALLOT_TOKEN or config file but
  // `token` (as ALLOT_TOKEN when non-empty); gives up after 60 s.
  Ran Allot(std::vector<std::string> args, const std::string& token = "") {
    const char* bin = std::getenv("ALLOT_BIN");
    args.insert(args.begin(), bin);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
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
    std::vector<char*> envp;
    for (std::string& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    const std::string out = dir_ + "/cli.out", err = dir_ + "/cli.err";
    pid_t pid = fork();
    if (pid == 0) {
      int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (o < 0 || e < 0 || ::dup2(o, 1) < 0 || ::dup2(e, 2) < 0) ::_exit(126);
      ::execve(bin, argv.data(), envp.data());
      ::_exit(127);
    }
    Ran r;
    int status = 0;
    for (int i = 0; i < 1200 && ::waitpid(pid, &status, WNOHANG) != pid; ++i) {
      std::this_thread::sleep_for(50ms);
      if (i == 1199) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
      }
    }
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::ifstream o(out), e(err);
    std::stringstream so, se;
    so << o.rdbuf();
    se << e.rdbuf();
    r.out = so.str();
    r.err = se.str();
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
  pid_t pid_ = -1;
  int starts_ = 0;
};

}  // namespace allot::cli::testing
