// The node agent's logic (see agent.h): the long poll, the reporter, and
// applying the server's answers to the node's pods.
#include "agent/agent.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/json/serialize.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "agent/heartbeat.h"

namespace allot::agent {

namespace json = boost::json;

namespace {
// How long a forgotten pod's id is remembered (Agent::ended_): far longer
// than any answer stays in flight.
constexpr std::chrono::minutes kEndedKeep{10};

// A port of 127.0.0.1 nothing listens on now, for a pod to bind (the
// kernel's choice; taken by another program before the pod binds it, the
// pod fails to start and its gang restarts).
Result<int> FreeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::Internal("cannot choose a port for the pod: socket failed");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  ::close(fd);
  if (!ok) return Status::Internal("cannot choose a port for the pod on 127.0.0.1");
  return int(ntohs(a.sin_port));
}
// Whether something at IPv4 "HOST:PORT" accepts a connection now (a pod
// that binds its port does so in its first seconds: the report after that
// names it). Loopback or the node's own bridge: refused or accepted at once.
bool Accepts(const std::string& endpoint) {
  const size_t colon = endpoint.rfind(':');
  if (colon == std::string::npos) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(uint16_t(std::atoi(endpoint.c_str() + colon + 1)));
  if (::inet_pton(AF_INET, endpoint.substr(0, colon).c_str(), &a.sin_addr) != 1) return false;
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  timeval tv{0, 200000};  // A bridge that drops: give up, try at the next report.
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}
}  // namespace

Agent::Agent(Connect connect, AgentOptions options,
             std::unique_ptr<GpuSource> gpus, std::unique_ptr<Executor> exec,
             core::Node node, std::string log_dir, std::string tag,
             std::ostream& out)
    : connect_(std::move(connect)),
      f_(std::move(options)),
      gpus_(std::move(gpus)),
      exec_(std::move(exec)),
      node_(std::move(node)),
      log_dir_(std::move(log_dir)),
      tag_(std::move(tag)),
      out_(out) {}

void Agent::Run(const std::atomic<bool>* stop) {
  std::thread reporter([this, stop] {
    while (!*stop) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (!ReportStep())
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  });
  PollLoop(stop);
  reporter.join();
  Shutdown();
}

void Agent::Shutdown() {
  out_ << "allot agent: stopping " << exec_->Running().size() << " pod(s)\n";
  out_.flush();
  exec_->StopAll(std::chrono::seconds(10));
}

void Agent::PollLoop(const std::atomic<bool>* stop) {
  std::unique_ptr<ServerLink> cl;
  int64_t backoff_ms = 500;
  bool connected = false;
  while (!*stop) {
    if (!cl) {
      auto c = connect_();
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
    backoff_ms = std::min<int64_t>(backoff_ms * 2, kMaxReconnectBackoffMs);
  }
}

bool Agent::ReportStep() {
  std::vector<PodExit> exits = exec_->Poll();
  {
    std::lock_guard<std::mutex> l(mu_);
    for (PodExit& e : exits) {
      running_.erase(e.id);
      exited_[e.id] = std::move(e);
    }
    // A pull that ended is news: the pod now counts as started.
    std::set<std::string> pulling;
    for (const auto& [id, p] : running_) {
      if (exec_->Pulling(id)) pulling.insert(id);
    }
    const bool pulls_changed = pulling != pulling_;
    pulling_ = std::move(pulling);
    // A pod that now accepts connections at its endpoint is news: the
    // server proxies to it from then on (never sooner: it would be refused).
    bool serving_changed = false;
    for (auto& [id, p] : running_) {
      if (p.serving || (p.endpoint.empty() && p.port == 0)) continue;
      if (p.endpoint.empty()) {
        const std::string addr = exec_->PodAddress(id);
        if (addr.empty()) continue;
        p.endpoint = addr + ":" + std::to_string(p.port);
      }
      p.serving = Accepts(p.endpoint);
      serving_changed = serving_changed || p.serving;
    }
    report_pending_ = report_pending_ || !exits.empty() || report_now_ || pulls_changed ||
                      serving_changed;
    report_now_ = false;
    if (!exits.empty()) UpdateBusy();
    report_asks_.insert(report_asks_.end(), log_asks_.begin(), log_asks_.end());
    log_asks_.clear();
  }
  if (!report_pending_ && report_asks_.empty()) return true;
  if (!report_cl_) {
    auto c = connect_();
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

std::string Agent::LogPath(std::string id) const {
  std::replace(id.begin(), id.end(), '/', '_');
  return log_dir_ + "/" + id + ".log";
}

Status Agent::AnswerLogs(ServerLink& cl, const std::vector<LogAsk>& asks) {
  proto::LogAnswers answers;
  answers.node = node_.name;
  for (const LogAsk& a : asks) {
    LogChunk c = ReadLog(LogPath(a.pod), a.offset, a.limit);
    answers.logs.push_back({a.id, c.exists, c.offset, c.next_offset, c.data});
  }
  return cl
      .Post("/api/v1/agents/logs",
            json::serialize(proto::EncodeLogAnswers(answers)))
      .status();
}

Status Agent::SyncOnce(ServerLink& cl, int wait_s) {
  std::string body;
  {
    std::lock_guard<std::mutex> l(mu_);
    body = ReportJson();
  }
  auto r = cl.Post("/api/v1/agents/sync?wait=" + std::to_string(wait_s), body);
  if (!r.ok()) return r.status();
  std::lock_guard<std::mutex> l(mu_);
  Apply(*r);
  return Status::Ok();
}

std::string Agent::ReportJson() {
  proto::AgentReport r;
  const auto now = std::chrono::steady_clock::now();
  const bool send =
      f_.sample_seconds > 0 &&
      now - last_sample_sent_ >= std::chrono::seconds(f_.sample_seconds);
  // What runs decides simulated readings: looked at when they are sent
  // (one /proc pass per sample, not per sync).
  if (send && gpus_->simulated()) RefreshActivity();
  if (auto samples = gpus_->Sample(); samples.ok()) {
    const std::vector<GpuInfo>& infos = gpus_->Gpus();
    for (const GpuSample& s : *samples) {
      for (core::Gpu& g : node_.gpus) {
        if (g.uuid == s.uuid) g.healthy = s.healthy;
      }
      auto info =
          std::find_if(infos.begin(), infos.end(),
                       [&](const GpuInfo& i) { return i.uuid == s.uuid; });
      if (!send || info == infos.end()) continue;
      r.gpu_samples.push_back(
          {s.uuid, info->index, s.utilization_pct, s.temperature_c,
           s.power_watts, s.memory_used_bytes, s.ecc_dbe_volatile, s.last_xid});
    }
  }
  if (!r.gpu_samples.empty()) last_sample_sent_ = now;
  r.node = node_;
  r.address = f_.address.empty() ? node_.name : f_.address;
  r.simulated = gpus_->simulated();
  r.pod_network = exec_->PodNetwork();
  for (const auto& [id, p] : running_) {
    proto::PodReport pr;
    pr.id = id;
    if (p.serving) pr.endpoint = p.endpoint;
    pr.pulling = exec_->Pulling(id);
    if (pr.pulling) {
      const Executor::PullProgress pulled = exec_->Pulled(id);
      pr.pulled_bytes = pulled.bytes;
      pr.pull_total_bytes = pulled.total;
    }
    r.pods.push_back(std::move(pr));
  }
  for (const auto& [id, e] : exited_) {
    r.pods.push_back(
        {id, true, e.exit_code, e.signal, e.stopped, e.last_lines, e.reason});
  }
  return json::serialize(proto::EncodeAgentReport(r));
}

void Agent::Apply(const json::value& reply) {
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
  if (const json::value* rev = reply.as_object().if_contains("revision");
      rev && rev->is_int64()) {
    if (answer.revision < revision_) return;  // An older answer.
    revision_ = answer.revision;
  }
  if (answer.peers != peers_) {
    peers_ = answer.peers;
    exec_->SetNetworkPeers(peers_);
  }
  std::map<std::string, const proto::DesiredPod*> desired;
  for (const proto::DesiredPod& d : answer.pods) desired[d.id] = &d;
  // What the server recorded as ended, it no longer lists: remembered
  // a while, so that no stale answer runs it again.
  const auto now = std::chrono::steady_clock::now();
  std::erase_if(ended_, [&](const auto& e) { return now - e.second > kEndedKeep; });
  for (auto it = exited_.begin(); it != exited_.end();) {
    if (desired.count(it->first)) {
      ++it;
      continue;
    }
    ended_[it->first] = now;
    it = exited_.erase(it);
  }
  for (auto& [id, p] : running_) {
    if (!desired.count(id) && !p.stopping) {
      exec_->Stop(id, std::chrono::milliseconds(p.grace_ms));
      p.stopping = true;
    }
  }
  std::set<std::string> busy;
  for (const auto& [id, p] : running_)
    busy.insert(p.gpus.begin(), p.gpus.end());
  for (const auto& [id, d] : desired) {
    if (running_.count(id) || exited_.count(id) || ended_.count(id)) continue;
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

void Agent::Start(const proto::DesiredPod& d) {
  const std::string& id = d.id;
  const std::vector<std::string>& gpus = d.gpus;
  PodSpec spec;
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
  spec.image = d.image;
  spec.image_pull_policy = d.image_pull_policy;
  spec.gpus = d.gpus;
  spec.tenant = id.substr(0, id.find('/'));
  spec.volumes = d.volumes;
  spec.mounts = d.mounts;
  spec.files = d.files;
  spec.registry_auth = d.registry_auth;
  spec.run_as_user = d.run_as_user;
  spec.run_as_group = d.run_as_group;
  spec.run_as_non_root = d.run_as_non_root;
  spec.read_only_root = d.read_only_root;
  spec.host_network = d.host_network;
  const bool containers = exec_->RunsImages();
  // Exit 126, as a container that cannot be set up: the server could not
  // give the pod what it needs (a Secret it names is gone), or this node
  // cannot give it volumes.
  auto setup_failed = [&](const std::string& why) {
    exited_[id] = PodExit{id, 126, 0, false, why + "\n", why};
    report_now_ = true;
  };
  if (!d.start_error.empty()) return setup_failed(d.start_error);
  // A port: a container on its tenant's network listens on it there;
  // anything else shares the node's network and gets a free port of its
  // loopback (never the node's public address: the server proxies to it).
  // A container on a private network could not be reached at all.
  std::string endpoint;
  const bool own_network = containers && !d.host_network;
  if (d.port > 0 && own_network && exec_->PrivateNetwork()) {
    return setup_failed("the pod serves on port " + std::to_string(d.port) +
                        ", and this node's containers have private networks nothing reaches: "
                        "run its agent with --network tenant");
  }
  if (d.port > 0 && own_network && !exec_->PodNetwork().cidr.empty()) {
    spec.env["PORT"] = std::to_string(d.port);
  } else if (d.port > 0 && !f_.simulate_exec) {
    Result<int> port = FreeLoopbackPort();
    if (!port.ok()) return setup_failed(port.status().message());
    spec.env["PORT"] = std::to_string(*port);
    endpoint = "127.0.0.1:" + std::to_string(*port);
  }
  if (!containers && !f_.simulate_exec && (!d.volumes.empty() || !d.mounts.empty())) {
    return setup_failed(
        "the pod mounts volumes, and this node runs processes (allot agent --runtime "
        "process); run its agent with --runtime container");
  }
  if (!d.image.empty() && !containers && !f_.simulate_exec && f_.ignore_images) {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(spec.log_path).parent_path(), ec);
    std::ofstream(spec.log_path, std::ios::app)
        << "allot agent: image " << d.image
        << " not used: this node runs processes and ignores images (--ignore-images); the "
           "command runs on the host\n";
  } else if (!d.image.empty() && !containers && !f_.simulate_exec) {
    // Never the image's command on the bare host: the image is what the
    // pod asked for.
    exited_[id] = PodExit{id, 127, 0, false,
                          "the pod runs image " + d.image +
                              ", and this node runs processes (allot agent "
                              "--runtime process); run its agent with --runtime container",
                          ""};
    report_now_ = true;
    return;
  }
  if (spec.command.empty() && !containers && !f_.simulate_exec) {
    exited_[id] = PodExit{id,
                          127,
                          0,
                          false,
                          "the pod has no command (allot runs "
                          "processes, not images: set command)",
                          ""};
    report_now_ = true;
    return;
  }
  // Containers run in their tenant's user namespace instead.
  if (!f_.simulate_exec && !containers) {
    auto u = run_as_.find(spec.tenant);
    if (u == run_as_.end()) u = run_as_.find("*");
    if (u == run_as_.end() && tenant_ids_) {
      // The tenant's own ids, and a home of its own.
      Result<int64_t> ids = tenant_ids_->HostId(tenant_users_.base, spec.tenant);
      if (!ids.ok()) return setup_failed(ids.status().message());
      const int64_t host_id = *ids;
      const std::string home = tenant_users_.home_root + "/" + spec.tenant;
      struct stat st {};
      if (::stat(home.c_str(), &st) != 0) {
        // Made whole under another name and renamed into place: another
        // agent of this machine (they share the homes) never sees it half
        // made, still owned by root. Two at once: one rename wins, or
        // both do on the same empty directory, owned alike.
        static std::atomic<int> made{0};
        std::error_code ec;
        std::filesystem::create_directories(tenant_users_.home_root, ec);
        const std::string tmp =
            home + ".new-" + std::to_string(::getpid()) + "-" + std::to_string(++made);
        const bool ok = ::mkdir(tmp.c_str(), 0700) == 0 &&
                        ::chown(tmp.c_str(), uid_t(host_id), gid_t(host_id)) == 0 &&
                        ::chmod(tmp.c_str(), 0700) == 0;
        if (!ok || ::rename(tmp.c_str(), home.c_str()) != 0) ::rmdir(tmp.c_str());
        if (::stat(home.c_str(), &st) != 0) {
          return setup_failed("cannot make the tenant's home " + home);
        }
      }
      // A home owned by other ids means the tenants' numbers changed (their
      // file was lost): never hand one tenant's files to another.
      if (int64_t(st.st_uid) != host_id) {
        return setup_failed("the tenant's home " + home + " belongs to uid " +
                            std::to_string(st.st_uid) + ", not to the tenant's " +
                            std::to_string(host_id) + " (was " + tenant_users_.ids_file +
                            " lost?); an admin must move or remove it");
      }
      // As in a container: no new privileges (the host's setuid programs
      // do not raise it).
      std::vector<std::string> cmd = {"setpriv", "--reuid=" + std::to_string(host_id),
                                      "--regid=" + std::to_string(host_id), "--clear-groups",
                                      "--no-new-privs", "--"};
      cmd.insert(cmd.end(), spec.command.begin(), spec.command.end());
      spec.command = std::move(cmd);
      spec.env["HOME"] = home;
      if (spec.working_dir.empty()) spec.working_dir = home;
    } else if (u != run_as_.end()) {
      // setpriv (util-linux) drops to the user and its groups, then execs
      // the command: same pid, same process group.
      std::vector<std::string> cmd = {
          "setpriv", "--reuid=" + std::to_string(u->second.uid),
          "--regid=" + std::to_string(u->second.gid), "--init-groups", "--"};
      cmd.insert(cmd.end(), spec.command.begin(), spec.command.end());
      spec.command = std::move(cmd);
      spec.env["HOME"] = u->second.home;
      spec.env["USER"] = u->second.name;
      spec.env["LOGNAME"] = u->second.name;
    }
  }
  Result<int> pid = exec_->Start(spec);
  if (!pid.ok()) {
    exited_[id] = PodExit{id, 127, 0, false, pid.status().message(), ""};
    report_now_ = true;
    return;
  }
  running_[id] = LocalPod{gpus, grace_ms, false};
  running_[id].endpoint = endpoint;
  if (endpoint.empty()) running_[id].port = d.port;
}

void Agent::UpdateBusy() {
  std::set<std::string> busy;
  for (const auto& [id, p] : running_) {
    if (p.active) busy.insert(p.gpus.begin(), p.gpus.end());
  }
  gpus_->SetBusy(busy);
}

void Agent::RefreshActivity() {
  const auto now = std::chrono::steady_clock::now();
  const std::map<std::string, double> cpu = exec_->PodCpuSeconds();
  for (auto& [id, p] : running_) {
    auto c = cpu.find(id);
    if (c == cpu.end()) {
      p.active = true;  // Unknown (simulated execution, a container): busy.
      continue;
    }
    const double elapsed = std::chrono::duration<double>(now - p.cpu_at).count();
    // CPU time counts in ticks (10 ms): a much shorter look could not
    // tell, so the pod keeps its state and its baseline.
    if (p.cpu_s >= 0 && elapsed < kMinActivityWindowS) continue;
    if (p.cpu_s >= 0) p.active = (c->second - p.cpu_s) / elapsed >= kActiveCpuShare;
    p.cpu_s = c->second;
    p.cpu_at = now;
  }
  UpdateBusy();
}

}  // namespace allot::agent
