#include "server/local_provider.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "server/crypto.h"

extern char** environ;

namespace allot::server {

namespace json = boost::json;

namespace {

constexpr int64_t kStopWaitMs = 10000;

std::string ReadAll(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string Str(const json::object& o, const char* k) {
  const json::value* v = o.if_contains(k);
  return v != nullptr && v->is_string() ? std::string(v->as_string()) : "";
}

}  // namespace

LocalProvider::LocalProvider(std::string dir, std::string exe)
    : dir_(std::move(dir)), exe_(std::move(exe)) {}

void LocalProvider::SetServerUrl(const std::string& url) {
  {
    std::lock_guard<std::mutex> l(mu_);
    url_ = url;
  }
  cv_.notify_all();
}

void LocalProvider::SetOnSecret(std::function<void(const std::string&)> fn) {
  on_secret_ = std::move(fn);
  if (!dir_.empty() && std::filesystem::exists(dir_ + "/node.token")) (void)Secret();
}

Result<std::string> LocalProvider::Secret() {
  Result<std::string> s = ReadOrMakeSecret();
  if (s.ok() && on_secret_) on_secret_(*s);
  return s;
}

Result<std::string> LocalProvider::ReadOrMakeSecret() {
  if (dir_.empty()) return Status::FailedPrecondition("no pool directory");
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) return Status::Internal("cannot create " + dir_ + ": " + ec.message());
  const std::string path = dir_ + "/node.token";
  std::string secret = ReadAll(path);
  while (!secret.empty() && (secret.back() == '\n' || secret.back() == ' ')) secret.pop_back();
  if (!secret.empty()) return secret;
  secret = "allot_" + RandomHex(32);
  const std::string tmp = path + ".tmp";
  const std::string line = secret + "\n";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0 || ::write(fd, line.data(), line.size()) != ssize_t(line.size()) ||
      ::fsync(fd) != 0 || ::close(fd) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
    if (fd >= 0) ::close(fd);
    return Status::Internal("cannot write " + path + ": " + std::strerror(errno));
  }
  return secret;
}

pid_t LocalProvider::Running(const std::string& node) {
  const std::string file = dir_ + "/" + node + ".pid";
  std::ifstream f(file);
  pid_t pid = 0;
  if (!(f >> pid) || pid <= 0) return 0;
  int status = 0;
  const pid_t w = waitpid(pid, &status, WNOHANG);
  if (w == 0) return pid;  // Our child, alive.
  if (w == pid) {          // Our child, gone.
    std::filesystem::remove(file);
    return 0;
  }
  // Started by an earlier server: alive if the process still is that agent.
  const std::string cmdline = ReadAll("/proc/" + std::to_string(pid) + "/cmdline");
  std::string want;
  want.push_back('\0');
  want += node;
  want.push_back('\0');
  if (kill(pid, 0) == 0 && cmdline.find(want) != std::string::npos) return pid;
  std::filesystem::remove(file);
  return 0;
}

ProviderResult LocalProvider::Run(const ProviderCall& call) {
  ProviderResult r;
  r.call = call;
  const auto start = std::chrono::steady_clock::now();
  const auto took = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now() - start)
        .count();
  };
  const std::string who = "pool " + call.pool + ": local provider " + call.verb;
  if (dir_.empty()) {
    r.status = Status::FailedPrecondition(
        who + ": the server has no directory for local agents: start `allot serve` with "
              "--pool-dir DIR (a sqlite store puts it beside its file)");
    return r;
  }
  json::object req;
  {
    boost::system::error_code ec;
    json::value v = json::parse(call.input, ec);
    if (ec || !v.is_object()) {
      r.status = Status::Internal(who + ": bad request");
      return r;
    }
    req = std::move(v.as_object());
  }
  std::string out;
  Status status = Status::Ok();
  const json::array* nodes = req.contains("nodes") && req.at("nodes").is_array()
                                 ? &req.at("nodes").as_array()
                                 : nullptr;
  if (call.verb == "list") {
    for (const std::string& n : call.nodes) out += n + (Running(n) > 0 ? " on\n" : " off\n");
  } else if (call.verb == "suspend") {
    for (const std::string& n : call.nodes) {
      const pid_t pid = Running(n);
      if (pid <= 0) {
        out += n + " was not running\n";
        continue;
      }
      kill(pid, SIGTERM);
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kStopWaitMs);
      while (Running(n) > 0 && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      if (Running(n) > 0) {
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
        while (Running(n) > 0 && std::chrono::steady_clock::now() < deadline + std::chrono::seconds(2)) {
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
      }
      std::filesystem::remove(dir_ + "/" + n + ".pid");
      out += n + " stopped (pid " + std::to_string(pid) + ")\n";
    }
  } else if (call.verb == "resume") {
    std::string url;
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait_for(l, std::chrono::milliseconds(call.timeout_ms), [&] { return !url_.empty(); });
      url = url_;
    }
    Result<std::string> secret = Secret();
    if (url.empty()) {
      status = Status::FailedPrecondition(who + ": the server is not listening yet");
    } else if (!secret.ok()) {
      status = Status::FailedPrecondition(who + ": " + secret.status().message());
    }
    std::vector<std::string> env;
    for (char** e = environ; status.ok() && *e != nullptr; ++e) {
      const std::string kv = *e;
      if (kv.rfind("ALLOT_TOKEN=", 0) == 0 || kv.rfind("ALLOT_SERVER=", 0) == 0) continue;
      env.push_back(kv);
    }
    if (status.ok()) env.push_back("ALLOT_TOKEN=" + *secret);
    std::vector<char*> envp;
    for (std::string& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    for (size_t i = 0; status.ok() && nodes != nullptr && i < nodes->size(); ++i) {
      if (!(*nodes)[i].is_object()) continue;
      const json::object& n = (*nodes)[i].as_object();
      const std::string name = Str(n, "name");
      if (name.empty()) continue;
      if (const pid_t pid = Running(name); pid > 0) {
        out += name + " runs already (pid " + std::to_string(pid) + ")\n";
        continue;
      }
      const std::string logs = dir_ + "/" + name;
      std::error_code ec;
      std::filesystem::create_directories(logs, ec);
      std::vector<std::string> args;
      if (call.boot_delay_ms > 0) {
        char secs[32];
        std::snprintf(secs, sizeof secs, "%.3f", double(call.boot_delay_ms) / 1000.0);
        args = {"/bin/sh", "-c", "sleep \"$0\"; exec \"$@\"", secs};
      }
      args.insert(args.end(), {exe_, "agent", "--server", url, "--name", name,
                               "--poll-seconds", "1", "--log-dir", logs});
      const int64_t gpus = n.contains("gpus") && n.at("gpus").is_int64() ? n.at("gpus").as_int64() : 0;
      if (gpus > 0) {
        std::string product = Str(n, "product");
        if (product.empty()) product = "H100-80GB";
        args.insert(args.end(), {"--simulate-gpus", std::to_string(gpus) + "x" + product});
      }
      if (const std::string c = Str(n, "cpu"); !c.empty()) args.insert(args.end(), {"--cpus", c});
      if (const std::string m = Str(n, "memory"); !m.empty()) {
        args.insert(args.end(), {"--memory", m});
      }
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      const std::string log = logs + "/agent.out";
      posix_spawn_file_actions_t fa;
      posix_spawn_file_actions_init(&fa);
      posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
      posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
      posix_spawn_file_actions_adddup2(&fa, 1, 2);
      // Its own process group: the server's terminal's Ctrl-C and a kill of
      // the server leave it (and its workloads) running.
      pid_t pid = -1;
      const int err = SpawnInOwnGroup(&fa, argv.data(), envp.data(), &pid);
      posix_spawn_file_actions_destroy(&fa);
      if (err != 0) {
        status = Status::FailedPrecondition(who + ": cannot start " + argv[0] + ": " +
                                            std::strerror(err));
        break;
      }
      std::ofstream(dir_ + "/" + name + ".pid") << pid << "\n";
      out += name + " started (pid " + std::to_string(pid) + ", logs in " + logs + ")\n";
    }
  } else {
    status = Status::InvalidArgument(who + ": unknown verb");
  }
  r.status = status;
  r.output = out;
  r.took_ms = took();
  return r;
}

}  // namespace allot::server
