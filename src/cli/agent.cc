#include "cli/agent.h"

#include <boost/json.hpp>

#include <dirent.h>
#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>
#include <vector>

#include "agent/exec.h"
#include "agent/heartbeat.h"
#include "agent/gpu.h"
#include "core/manifest_encode.h"
#include "core/model.h"
#include "proto/agent_protocol.h"

namespace allot::cli {
namespace {

namespace json = boost::json;
using Clock = std::chrono::steady_clock;

std::string HostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "localhost";
  std::string s(buf);
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

int64_t MemTotalBytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  int64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit) {
    if (key == "MemTotal:") return kb * 1024;
  }
  return 0;
}

std::string DefaultLogDir() {
  if (const char* x = std::getenv("XDG_STATE_HOME"); x && *x) {
    return std::string(x) + "/allot/pods";
  }
  const char* home = std::getenv("HOME");
  if (geteuid() != 0 && home && *home) {
    return std::string(home) + "/.local/state/allot/pods";
  }
  return "/var/log/allot/pods";
}

// Kills the process groups of pods an earlier run of this agent left
// behind (it was killed before it could stop them): every process whose
// environment carries ALLOT_AGENT_TAG=tag.
int KillLeftovers(const std::string& tag) {
  int killed = 0;
  const std::string want = "ALLOT_AGENT_TAG=" + tag;
  DIR* d = opendir("/proc");
  if (d == nullptr) return 0;
  while (dirent* e = readdir(d)) {
    if (!std::isdigit(static_cast<unsigned char>(e->d_name[0]))) continue;
    pid_t pid = pid_t(std::atoi(e->d_name));
    if (pid == getpid()) continue;
    std::ifstream env(std::string("/proc/") + e->d_name + "/environ",
                      std::ios::binary);
    std::string entry;
    while (std::getline(env, entry, '\0')) {
      if (entry == want) {
        pid_t pgid = getpgid(pid);
        if (pgid > 1 && pgid != getpgid(0)) kill(-pgid, SIGKILL);
        kill(pid, SIGKILL);
        ++killed;
        break;
      }
    }
  }
  closedir(d);
  return killed;
}

// A node without GPUs (no driver, nothing simulated).
class NoGpus : public agent::GpuSource {
 public:
  std::string Describe() const override { return "no GPUs"; }
  bool simulated() const override { return false; }
  const std::vector<agent::GpuInfo>& Gpus() const override { return none_; }
  Result<std::vector<agent::GpuSample>> Sample() override {
    return std::vector<agent::GpuSample>{};
  }

 private:
  std::vector<agent::GpuInfo> none_;
};

using LogAsk = proto::LogRequest;

// A unix user that a tenant's pods run as (--run-as).
struct RunAsUser {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
  std::string home;
};

struct LocalPod {
  std::vector<std::string> gpus;
  int64_t grace_ms = 30000;
  bool stopping = false;
};

class Agent {
 public:
  Agent(const ClientFlags& c, const AgentFlags& f,
        std::unique_ptr<agent::GpuSource> gpus,
        std::unique_ptr<agent::Executor> exec, core::Node node,
        std::string log_dir, std::string tag, std::ostream& out)
      : flags_(c),
        f_(f),
        gpus_(std::move(gpus)),
        exec_(std::move(exec)),
        node_(std::move(node)),
        log_dir_(std::move(log_dir)),
        tag_(std::move(tag)),
        out_(out) {}

  // Tenant -> the user its pods run as ("*": every other tenant).
  void set_run_as(std::map<std::string, RunAsUser> m) { run_as_ = std::move(m); }

  // Runs the node until *stop: the long poll here, exits and log reads
  // reported by a thread of its own; then stops its pods.
  void Run(const std::atomic<bool>* stop) {
    std::thread reporter([this, stop] {
      while (!*stop) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        if (!ReportStep()) std::this_thread::sleep_for(std::chrono::milliseconds(500));
      }
    });
    PollLoop(stop);
    reporter.join();
    Shutdown();
  }

  void Shutdown() {
    out_ << "allot agent: stopping " << exec_->Running().size() << " pod(s)\n";
    out_.flush();
    exec_->StopAll(std::chrono::seconds(10));
  }

  // The long poll: the heartbeat, and how starts and stops arrive.
  void PollLoop(const std::atomic<bool>* stop) {
    std::unique_ptr<Client> cl;
    int64_t backoff_ms = 500;
    bool connected = false;
    while (!*stop) {
      if (!cl) {
        auto c = Client::Connect(flags_);
        if (c.ok()) cl = std::move(*c);
      }
      Status s = cl ? SyncOnce(*cl, f_.poll_seconds)
                    : Status::FailedPrecondition("cannot create a client");
      if (s.ok()) {
        if (!connected) {
          synced_ = true;
          out_ << "allot agent: node " << node_.name << " synced with "
               << cl->server() << " (" << node_.gpus.size() << " GPU(s), "
               << gpus_->Describe() << ")\n";
          out_.flush();
        }
        connected = true;
        backoff_ms = 500;
        continue;
      }
      if (connected || backoff_ms == 500) {
        out_ << "allot agent: " << s.message() << " (retrying)\n";
        out_.flush();
      }
      connected = false;
      synced_ = false;
      cl.reset();
      for (int64_t slept = 0; slept < backoff_ms && !*stop; slept += 100) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      backoff_ms = std::min<int64_t>(backoff_ms * 2, agent::kMaxReconnectBackoffMs);
    }
  }

  // Whether the last sync succeeded.
  bool synced() const { return synced_; }

  // One round of the reporter (one thread at a time): sends exits and the
  // answers to log reads at once, on a connection of its own. False after a
  // transport error.
  bool ReportStep() {
    std::vector<agent::PodExit> exits = exec_->Poll();
    {
      std::lock_guard<std::mutex> l(mu_);
      for (agent::PodExit& e : exits) {
        running_.erase(e.id);
        exited_[e.id] = std::move(e);
      }
      report_pending_ = report_pending_ || !exits.empty() || report_now_;
      report_now_ = false;
      if (!exits.empty()) UpdateBusy();
      report_asks_.insert(report_asks_.end(), log_asks_.begin(), log_asks_.end());
      log_asks_.clear();
    }
    if (!report_pending_ && report_asks_.empty()) return true;
    if (!report_cl_) {
      auto c = Client::Connect(flags_);
      if (!c.ok()) return false;
      report_cl_ = std::move(*c);
    }
    if (!report_asks_.empty()) {
      // Unanswered reads time out on the server; the caller asks again.
      Status s = AnswerLogs(*report_cl_, report_asks_);
      report_asks_.clear();
      if (!s.ok()) {
        report_cl_.reset();
        return false;
      }
    }
    if (report_pending_) {
      if (!SyncOnce(*report_cl_, 0).ok()) {
        report_cl_.reset();
        return false;
      }
      report_pending_ = false;
    }
    return true;
  }

 private:
  // LOG_DIR/TENANT_NAME_aATTEMPT_PODSET_INDEX.log for pod id
  // TENANT/NAME/aATTEMPT/PODSET/INDEX.
  std::string LogPath(std::string id) const {
    std::replace(id.begin(), id.end(), '/', '_');
    return log_dir_ + "/" + id + ".log";
  }

  // Reads the asked pieces of pod logs and sends them to the server.
  Status AnswerLogs(Client& cl, const std::vector<LogAsk>& asks) {
    proto::LogAnswers answers;
    answers.node = node_.name;
    for (const LogAsk& a : asks) {
      agent::LogChunk c = agent::ReadLog(LogPath(a.pod), a.offset, a.limit);
      answers.logs.push_back({a.id, c.exists, c.offset, c.next_offset, c.data});
    }
    return cl.Call("POST", "/api/v1/agents/logs", json::serialize(proto::EncodeLogAnswers(answers)))
        .status();
  }

  Status SyncOnce(Client& cl, int wait_s) {
    std::string body;
    {
      std::lock_guard<std::mutex> l(mu_);
      body = ReportJson();
    }
    auto r = cl.Call("POST", "/api/v1/agents/sync?wait=" + std::to_string(wait_s),
                     body);
    if (!r.ok()) return r.status();
    std::lock_guard<std::mutex> l(mu_);
    Apply(*r);
    return Status::Ok();
  }

  std::string ReportJson() {
    proto::AgentReport r;
    const auto now = std::chrono::steady_clock::now();
    const bool send = f_.sample_seconds > 0 &&
                      now - last_sample_sent_ >= std::chrono::seconds(f_.sample_seconds);
    if (auto samples = gpus_->Sample(); samples.ok()) {
      const std::vector<agent::GpuInfo>& infos = gpus_->Gpus();
      for (const agent::GpuSample& s : *samples) {
        for (core::Gpu& g : node_.gpus) {
          if (g.uuid == s.uuid) g.healthy = s.healthy;
        }
        auto info = std::find_if(infos.begin(), infos.end(),
                                 [&](const agent::GpuInfo& i) { return i.uuid == s.uuid; });
        if (!send || info == infos.end()) continue;
        r.gpu_samples.push_back({s.uuid, info->index, s.utilization_pct, s.temperature_c,
                                 s.power_watts, s.memory_used_bytes, s.ecc_dbe_volatile,
                                 s.last_xid});
      }
    }
    if (!r.gpu_samples.empty()) last_sample_sent_ = now;
    r.node = node_;
    r.address = f_.address.empty() ? node_.name : f_.address;
    r.simulated = gpus_->simulated();
    for (const auto& [id, p] : running_) r.pods.push_back({id, false, 0, 0, false, "", ""});
    for (const auto& [id, e] : exited_) {
      r.pods.push_back({id, true, e.exit_code, e.signal, e.stopped, e.last_lines, e.reason});
    }
    return json::serialize(proto::EncodeAgentReport(r));
  }

  // Makes the node run what the server wants (mu_ held).
  void Apply(const json::value& reply) {
    // Not an answer at all: change nothing (an empty list would stop
    // every pod).
    if (!reply.is_object()) return;
    proto::SyncAnswer answer = proto::DecodeSyncAnswer(reply);
    // Log reads are asked once, in whichever answer: never dropped.
    for (LogAsk& ask : answer.log_requests) {
      // A pod id names a file under the log directory: no way out of it.
      if (ask.pod.find("..") != std::string::npos) continue;
      log_asks_.push_back(std::move(ask));
    }
    if (const json::value* rev = reply.as_object().if_contains("revision"); rev && rev->is_int64()) {
      if (answer.revision < revision_) return;  // An older answer.
      revision_ = answer.revision;
    }
    std::map<std::string, const proto::DesiredPod*> desired;
    for (const proto::DesiredPod& d : answer.pods) desired[d.id] = &d;
    // What the server recorded as ended, it no longer lists.
    std::erase_if(exited_, [&](const auto& e) { return !desired.count(e.first); });
    for (auto& [id, p] : running_) {
      if (!desired.count(id) && !p.stopping) {
        exec_->Stop(id, std::chrono::milliseconds(p.grace_ms));
        p.stopping = true;
      }
    }
    std::set<std::string> busy;
    for (const auto& [id, p] : running_) busy.insert(p.gpus.begin(), p.gpus.end());
    for (const auto& [id, d] : desired) {
      if (running_.count(id) || exited_.count(id)) continue;
      // A stopping pod still holds a device this pod needs: next round.
      if (std::any_of(d->gpus.begin(), d->gpus.end(),
                      [&](const std::string& g) { return busy.count(g) > 0; })) {
        continue;
      }
      Start(*d);
      if (running_.count(id)) busy.insert(d->gpus.begin(), d->gpus.end());
    }
    UpdateBusy();
  }

  // Runs a desired pod: its command, environment and limits as sent.
  void Start(const proto::DesiredPod& d) {
    const std::string& id = d.id;
    const std::vector<std::string>& gpus = d.gpus;
    agent::PodSpec spec;
    spec.id = id;
    spec.command = d.command;
    spec.args = d.args;
    for (const auto& [k, v] : d.env) spec.env[k] = v;
    spec.env["ALLOT_POD_ID"] = id;
    spec.env["ALLOT_AGENT_TAG"] = tag_;
    spec.log_path = LogPath(id);
    spec.working_dir = d.working_dir;
    const int64_t grace_ms = d.grace_ms;
    spec.simulated_runtime = std::chrono::milliseconds(d.simulated_runtime_ms);
    // The pod's requests, its limits in its cgroup (when there is one).
    spec.cpu_milli = d.cpu_milli;
    spec.memory_bytes = d.memory_bytes;
    if (spec.command.empty() && !f_.simulate_exec) {
      exited_[id] = agent::PodExit{id, 127, 0, false,
                                   "the pod has no command (allot runs "
                                   "processes, not images: set command)", ""};
      report_now_ = true;
      return;
    }
    if (!run_as_.empty() && !f_.simulate_exec) {
      const std::string tenant = id.substr(0, id.find('/'));
      auto u = run_as_.find(tenant);
      if (u == run_as_.end()) u = run_as_.find("*");
      if (u != run_as_.end()) {
        // setpriv (util-linux) drops to the user and its groups, then execs
        // the command: same pid, same process group.
        std::vector<std::string> cmd = {"setpriv", "--reuid=" + std::to_string(u->second.uid),
                                        "--regid=" + std::to_string(u->second.gid),
                                        "--init-groups", "--"};
        cmd.insert(cmd.end(), spec.command.begin(), spec.command.end());
        spec.command = std::move(cmd);
        spec.env["HOME"] = u->second.home;
        spec.env["USER"] = u->second.name;
        spec.env["LOGNAME"] = u->second.name;
      }
    }
    Result<int> pid = exec_->Start(spec);
    if (!pid.ok()) {
      exited_[id] = agent::PodExit{id, 127, 0, false, pid.status().message(), ""};
      report_now_ = true;
      return;
    }
    running_[id] = LocalPod{gpus, grace_ms, false};
  }

  void UpdateBusy() {
    std::set<std::string> busy;
    for (const auto& [id, p] : running_) busy.insert(p.gpus.begin(), p.gpus.end());
    gpus_->SetBusy(busy);
  }

  const ClientFlags flags_;
  const AgentFlags f_;
  std::unique_ptr<agent::GpuSource> gpus_;
  std::unique_ptr<agent::Executor> exec_;
  core::Node node_;
  const std::string log_dir_;
  const std::string tag_;
  std::ostream& out_;

  std::mutex mu_;
  std::map<std::string, LocalPod> running_;
  std::map<std::string, agent::PodExit> exited_;  // Until the server forgets.
  std::chrono::steady_clock::time_point last_sample_sent_{};
  std::vector<LogAsk> log_asks_;  // From the last answers, for the reporter.
  std::map<std::string, RunAsUser> run_as_;
  std::atomic<bool> synced_{false};
  // The reporter's own (one thread at a time).
  std::unique_ptr<Client> report_cl_;
  bool report_pending_ = false;
  std::vector<LogAsk> report_asks_;
  int64_t revision_ = -1;
  bool report_now_ = false;
};

}  // namespace

namespace {

// The node's GPUs as the model has them.
void AddGpus(const agent::GpuSource& gpus, core::Node* node) {
  for (const agent::GpuInfo& g : gpus.Gpus()) {
    core::Gpu cg;
    cg.uuid = g.uuid;
    cg.product = g.product;
    cg.memory = Quantity::FromUnits(g.memory_bytes);
    for (const agent::MigInstance& m : g.mig) cg.mig.push_back({m.uuid, m.profile});
    node->gpus.push_back(std::move(cg));
  }
}

// Discards what is written to it: the per-node lines of --simulate-nodes.
class NullStream : public std::ostream {
 public:
  NullStream() : std::ostream(nullptr) {}
};

// `--simulate-nodes N`: N nodes with simulated GPUs and simulated
// execution in this process, for load tests. Each node keeps its own long
// poll (a thread and a connection, as N real agents would); one reporter
// thread serves them all.
int RunSimulatedNodes(const ClientFlags& c, const AgentFlags& f, const core::Node& base,
                      const std::atomic<bool>* stop, std::ostream& out) {
  static NullStream quiet;
  std::vector<std::unique_ptr<Agent>> agents;
  const std::string prefix = base.name;
  for (int i = 0; i < f.simulate_nodes; ++i) {
    core::Node node = base;
    char suffix[16];
    std::snprintf(suffix, sizeof suffix, "-%05d", i);
    node.name = prefix + suffix;
    auto g = agent::OpenSimulated(f.simulate_gpus, node.name);
    if (!g.ok()) {
      out << "allot agent: --simulate-gpus: " << g.status().message() << "\n";
      return 2;
    }
    AddGpus(**g, &node);
    const std::string name = node.name;
    const std::string log_dir = (f.log_dir.empty() ? DefaultLogDir() : f.log_dir) + "/" + name;
    agents.push_back(std::make_unique<Agent>(c, f, std::move(*g), agent::NewSimulatedExecutor(),
                                             std::move(node), log_dir, name, quiet));
  }
  out << "allot agent: " << f.simulate_nodes << " SIMULATED nodes " << prefix
      << "-00000.. (" << f.simulate_gpus << " each, simulated execution: no processes run)\n";
  out.flush();
  std::vector<std::thread> polls;
  polls.reserve(agents.size());
  for (auto& a : agents) polls.emplace_back([&a, stop] { a->PollLoop(stop); });
  std::thread reporter([&] {
    while (!*stop) {
      const auto round = std::chrono::steady_clock::now();
      for (auto& a : agents) a->ReportStep();
      std::this_thread::sleep_until(round + std::chrono::milliseconds(100));
    }
  });
  int last = -1;
  auto next = std::chrono::steady_clock::now();
  while (!*stop) {
    if (std::chrono::steady_clock::now() >= next) {
      int n = 0;
      for (auto& a : agents) n += a->synced() ? 1 : 0;
      if (n != last) {
        out << "allot agent: " << n << " of " << agents.size() << " simulated nodes synced\n";
        out.flush();
        last = n;
      }
      next += std::chrono::seconds(5);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  for (std::thread& t : polls) t.join();
  reporter.join();
  return 0;
}

}  // namespace

int RunAgent(const ClientFlags& c, const AgentFlags& f,
             const std::atomic<bool>* stop, std::ostream& out) {
  core::Node node;
  node.name = f.name.empty() ? HostName() : f.name;
  std::stringstream labels(f.labels);
  for (std::string kv; std::getline(labels, kv, ',');) {
    if (kv.empty()) continue;
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      out << "allot agent: --labels wants k=v[,k=v...], got '" << kv << "'\n";
      return 2;
    }
    node.labels[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  if (!node.labels.count("allot.dev/location")) {
    node.labels["allot.dev/location"] = "onprem";
  }
  node.cpu = Quantity::FromUnits(
      std::max<int64_t>(1, std::thread::hardware_concurrency()));
  node.memory = Quantity::FromUnits(MemTotalBytes());
  // Overrides, for simulated nodes that stand in for bigger machines.
  for (const auto& [flag, text, field] :
       {std::tuple{"--cpus", &f.cpus, &node.cpu}, std::tuple{"--memory", &f.memory, &node.memory}}) {
    if (text->empty()) continue;
    Result<Quantity> q = Quantity::Parse(*text);
    if (!q.ok() || q->milli() <= 0) {
      out << "allot agent: " << flag << " wants a positive quantity like 64 or 512Gi, got '"
          << *text << "'\n";
      return 2;
    }
    *field = *q;
  }

  std::map<std::string, RunAsUser> run_as;
  std::stringstream ras(f.run_as);
  for (std::string kv; std::getline(ras, kv, ',');) {
    if (kv.empty()) continue;
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == kv.size()) {
      out << "allot agent: --run-as wants TENANT=USER[,...] (TENANT * for the rest), got '"
          << kv << "'\n";
      return 2;
    }
    const std::string user = kv.substr(eq + 1);
    struct passwd pw;
    struct passwd* found = nullptr;
    std::vector<char> buf(16384);
    if (getpwnam_r(user.c_str(), &pw, buf.data(), buf.size(), &found) != 0 || !found) {
      out << "allot agent: --run-as: no unix user '" << user << "'\n";
      return 2;
    }
    run_as[kv.substr(0, eq)] = RunAsUser{user, pw.pw_uid, pw.pw_gid, pw.pw_dir};
  }
  if (f.cgroups != "auto" && f.cgroups != "off") {
    out << "allot agent: --cgroups wants auto or off, got '" << f.cgroups << "'\n";
    return 2;
  }
  if (!f.cgroup_parent.empty() &&
      (f.cgroup_parent[0] != '/' || f.cgroup_parent.find("..") != std::string::npos)) {
    out << "allot agent: --cgroup-parent wants an absolute path inside the cgroup "
           "hierarchy, like /allot, got '"
        << f.cgroup_parent << "'\n";
    return 2;
  }
  if (!run_as.empty() && geteuid() != 0) {
    out << "allot agent: --run-as needs the agent to run as root (to switch users)\n";
    return 2;
  }
  if (f.simulate_nodes > 0) {
    if (f.simulate_gpus.empty() || !f.simulate_exec) {
      out << "allot agent: --simulate-nodes needs --simulate-gpus and --simulate-exec "
             "(simulated nodes run no processes)\n";
      return 2;
    }
    return RunSimulatedNodes(c, f, node, stop, out);
  }
  std::unique_ptr<agent::GpuSource> gpus;
  std::string simulate = f.simulate_gpus;
  if (simulate.empty() && !f.simulate_gpus_if_none.empty()) {
    auto g = agent::OpenNvml(f.nvml_library);
    if (g.ok() && !(*g)->Gpus().empty()) {
      gpus = std::move(*g);
    } else {
      out << "allot agent: NOTICE: no NVIDIA GPUs here ("
          << (g.ok() ? std::string("NVML lists none") : g.status().message())
          << "); offering SIMULATED ones instead\n";
      simulate = f.simulate_gpus_if_none;
    }
  }
  if (gpus) {
    out << "allot agent: GPUs from NVML: " << gpus->Describe() << "\n";
  } else if (!simulate.empty()) {
    auto g = agent::OpenSimulated(simulate, node.name);
    if (!g.ok()) {
      out << "allot agent: --simulate-gpus: " << g.status().message() << "\n";
      return 2;
    }
    gpus = std::move(*g);
    out << "allot agent: SIMULATED GPUs: " << gpus->Describe() << "\n";
  } else {
    auto g = agent::OpenNvml(f.nvml_library);
    if (g.ok()) {
      gpus = std::move(*g);
      out << "allot agent: GPUs from NVML: " << gpus->Describe() << "\n";
    } else {
      out << "allot agent: no NVIDIA GPUs (" << g.status().message()
          << "); this node offers none. --simulate-gpus 8xH100-80GB simulates "
             "some.\n";
      gpus = std::make_unique<NoGpus>();
    }
  }
  AddGpus(*gpus, &node);
  const std::string log_dir = f.log_dir.empty() ? DefaultLogDir() : f.log_dir;
  std::error_code ec;
  std::filesystem::create_directories(log_dir, ec);
  if (ec) {
    out << "allot agent: cannot create the log directory " << log_dir << ": "
        << ec.message() << "\n";
    return 1;
  }
  const std::string tag = node.name + "@" + log_dir;
  if (int n = KillLeftovers(tag); n > 0) {
    out << "allot agent: stopped " << n
        << " process(es) left by an earlier run of this agent\n";
  }
  std::unique_ptr<agent::Executor> exec;
  if (f.simulate_exec) {
    exec = agent::NewSimulatedExecutor();
  } else {
    // One cgroup directory per agent: the node name and a hash of the tag,
    // stable across restarts (leftovers are found) and apart from other
    // agents on this machine.
    uint32_t h = 2166136261u;
    for (char ch : tag) h = (h ^ uint8_t(ch)) * 16777619u;
    char hash[9];
    std::snprintf(hash, sizeof hash, "%08x", h);
    agent::CgroupOptions co;
    co.enabled = f.cgroups != "off";
    co.parent = f.cgroup_parent;
    co.name = "allot-" + node.name + "-" + hash;
    std::unique_ptr<agent::CgroupManager> cg = agent::CgroupManager::Detect(co);
    out << "allot agent: " << cg->description() << "\n";
    if (cg->leftovers_removed() > 0) {
      out << "allot agent: removed " << cg->leftovers_removed()
          << " pod cgroup(s) left by an earlier run of this agent\n";
    }
    exec = agent::NewProcessExecutor(std::move(cg));
  }
  out << "allot agent: node " << node.name << ", pod logs in " << log_dir
      << (f.simulate_exec ? " (simulated execution: no processes run)" : "")
      << "\n";
  out.flush();
  Agent a(c, f, std::move(gpus), std::move(exec), std::move(node), log_dir, tag,
          out);
  a.set_run_as(std::move(run_as));
  a.Run(stop);
  return 0;
}

}  // namespace allot::cli
