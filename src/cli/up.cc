#include "cli/up.h"

#include <sys/stat.h>

#include <boost/json.hpp>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "cli/agent.h"
#include "cli/client.h"
#include "cli/demo_data.h"
#include "server/crypto.h"
#include "server/server.h"
#include "store/store.h"

namespace allot::cli {
namespace {

namespace json = boost::json;
namespace fs = std::filesystem;

std::string Clock() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  std::ostringstream o;
  o << std::put_time(&tm, "%H:%M:%S");
  return o.str();
}

// The token of this data directory: read from DIR/admin.token, or made and
// written there (mode 0600) on the first start.
Result<std::string> AdminToken(const std::string& dir) {
  const std::string path = dir + "/admin.token";
  std::ifstream in(path);
  std::string token;
  if (in >> token && !token.empty()) return token;
  token = "allot_" + server::RandomHex(32);
  const std::string tmp = path + ".tmp";
  {
    std::ofstream o(tmp, std::ios::trunc);
    o << token << "\n";
    if (!o.flush()) return Status::Internal("cannot write " + tmp);
  }
  ::chmod(tmp.c_str(), 0600);
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return Status::Internal("cannot write " + path + ": " + ec.message());
  return token;
}

// One line per workload state change, with why: what a newcomer watches.
class DemoNarrator {
 public:
  // `watch` streams; `cl` asks for quota usage meanwhile.
  DemoNarrator(Client* watch, Client* cl, std::ostream& out)
      : watch_(watch), cl_(cl), out_(out) {}

  // Blocks until the watch ends (the server stops).
  void Run() {
    (void)watch_->Watch("/api/v1/workloads?watch=1", [&](const json::value& ev) {
      const json::value& w = ev.as_object().at("object");
      const std::string key = JsonStr(w, {"metadata", "namespace"}) + "/" +
                              JsonStr(w, {"metadata", "name"});
      if (JsonStr(ev, {"type"}) == "DELETED") return true;
      const std::string state = JsonStr(w, {"status", "state"});
      std::string& last = last_[key];
      if (state == last) return true;
      std::string why = Why(w, state);
      if (state == "Pending" || state == "Requeued") {
        // Watch events leave the pending reason out: ask for it.
        auto full = cl_->Call("GET", "/api/v1/workloads/" + key);
        std::string reason = full.ok() ? JsonStr(*full, {"status", "pendingReason"}) : "";
        if (!reason.empty()) why += (why.empty() ? "" : "; ") + std::string("waits: ") + reason;
      }
      std::string line = Clock() + "  " + Pad(key, 14) + Pad(state, 10) + why;
      last = state;
      std::lock_guard<std::mutex> l(mu_);
      out_ << line << "\n";
      if (state == "Admitted" || state == "Requeued" || state == "Succeeded" ||
          state == "Failed") {
        out_ << Usage();
      }
      out_.flush();
      return true;
    });
  }

 private:
  static std::string Pad(std::string s, size_t n) {
    if (s.size() < n) s.resize(n, ' ');
    return s + " ";
  }

  // The latest condition that explains `state`.
  static std::string Why(const json::value& w, const std::string& state) {
    const json::value* conds = nullptr;
    if (const json::value* st = w.as_object().if_contains("status")) {
      conds = st->as_object().if_contains("conditions");
    }
    if (conds == nullptr || !conds->is_array()) return "";
    // The newest condition of the kinds that explain this state (a gang
    // restart keeps the workload Admitted, with PodsReady saying why).
    std::vector<std::string> want;
    if (state == "Admitted") want = {"QuotaReserved", "PodsReady"};
    if (state == "Requeued") want = {"Evicted"};
    if (state == "Running") want = {"PodsReady"};
    if (state == "Succeeded" || state == "Failed") want = {"Finished"};
    const json::value* best = nullptr;
    int64_t best_ms = -1;
    for (const json::value& c : conds->as_array()) {
      if (std::find(want.begin(), want.end(), JsonStr(c, {"type"})) == want.end()) continue;
      const json::value* ms = c.as_object().if_contains("lastTransitionUnixMs");
      const int64_t t = ms && ms->is_int64() ? ms->as_int64() : 0;
      if (t > best_ms || (t == best_ms && JsonStr(c, {"type"}) == want[0])) {
        best = &c;
        best_ms = t;
      }
    }
    if (best != nullptr) {
      const json::value& c = *best;
      std::string msg = ConditionMessage(c);
      if (size_t nl = msg.find('\n'); nl != std::string::npos) {
        // Failed: the exit, then its last log lines indented.
        std::string rest = msg.substr(nl + 1);
        msg.resize(nl);
        std::string indented;
        std::istringstream lines(rest);
        for (std::string l; std::getline(lines, l);) indented += "\n            | " + l;
        msg += indented;
      }
      return msg;
    }
    return "";
  }

  // GPU usage of every ClusterQueue against its quota, borrowing shown.
  std::string Usage() {
    auto r = cl_->Call("GET", "/api/v1/clusterqueues");
    if (!r.ok()) return "";
    std::string s = "            quota:";
    for (const json::value& cq : r->as_object().at("items").as_array()) {
      int64_t used = 0, borrowed = 0, nominal = 0;
      const json::value* st = cq.as_object().if_contains("status");
      const json::value* fu = st ? st->as_object().if_contains("flavorsUsage") : nullptr;
      if (fu == nullptr || !fu->is_array()) continue;
      for (const json::value& f : fu->as_array()) {
        for (const json::value& res : f.at("resources").as_array()) {
          if (JsonStr(res, {"name"}) != "nvidia.com/gpu") continue;
          used += std::atoll(JsonStr(res, {"total"}).c_str());
          borrowed += std::atoll(JsonStr(res, {"borrowed"}).c_str());
          nominal += std::atoll(JsonStr(res, {"nominalQuota"}).c_str());
        }
      }
      s += "  " + JsonStr(cq, {"metadata", "name"}) + " " + std::to_string(used) + "/" +
           std::to_string(nominal) + " GPUs";
      if (borrowed > 0) s += " (borrowing " + std::to_string(borrowed) + ")";
    }
    return s + "\n";
  }

  Client* watch_;
  Client* cl_;
  std::ostream& out_;
  std::mutex mu_;
  std::map<std::string, std::string> last_;
};

Status Apply(Client* cl, const char* yaml, std::ostream& out) {
  auto r = cl->Call("POST", "/api/v1/apply", yaml, "application/yaml");
  if (!r.ok()) return r.status();
  int n = 0;
  for (const json::value& x : r->as_object().at("results").as_array()) {
    (void)x;
    ++n;
  }
  out << "allot up: demo: applied " << n << " objects\n";
  return Status::Ok();
}

}  // namespace

int RunUp(const UpFlags& f, const std::atomic<bool>* stop, std::ostream& out) {
  const std::string dir = f.data_dir.empty() ? store::DefaultDataDir() : f.data_dir;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    out << "allot up: cannot create the data directory " << dir << ": "
        << ec.message() << "\n";
    return 1;
  }
  Result<std::string> token = AdminToken(dir);
  if (!token.ok()) {
    out << "allot up: " << token.status().message() << "\n";
    return 1;
  }
  std::string db = dir + "/allot.db";
  if (f.demo) {
    // The demo tells one story from its start: a store of its own, fresh
    // at every `allot up --demo`. The real store is left alone.
    db = dir + "/demo.db";
    for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(db + suffix, ec);
    out << "allot up: demo: a fresh store at " << db
        << " (replaced at every --demo start)\n";
  }

  server::ServeOptions so;
  so.listen = f.listen;
  so.store_url = "sqlite:" + db;
  so.admin_token_file = dir + "/admin.token";
  auto srv = server::Server::Start(so, out);
  if (!srv.ok()) {
    out << "allot up: " << srv.status().message() << "\n";
    return 1;
  }
  const std::string url = "http://127.0.0.1:" + std::to_string((*srv)->port());
  out << "\nallot up: the API is at " << url << "\n"
      << "allot up: admin token " << *token << " (kept in " << dir
      << "/admin.token)\n"
      << "allot up: try:  export ALLOT_SERVER=" << url << " ALLOT_TOKEN="
      << *token << "\n"
      << "                allot get workloads -w\n\n";
  out.flush();

  ClientFlags cf;
  cf.server = url;
  cf.token = *token;
  AgentFlags af;
  af.simulate_gpus = f.simulate_gpus;
  af.simulate_gpus_if_none = "8xH100-80GB";
  af.nvml_library = f.nvml_library;
  af.cpus = f.cpus;
  af.memory = f.memory;
  af.log_dir = dir + "/pods";
  af.runtime = f.runtime;
  af.ignore_images = f.runtime == "process";
  // Short polls: the one local agent costs a sync a second, and Ctrl-C
  // waits for its poll to end (5 s polls made stopping take 5.6 s).
  af.poll_seconds = 1;
  std::atomic<bool> agent_stop{false};
  std::thread agent([&] { RunAgent(cf, af, &agent_stop, out); });

  std::thread narrator;
  std::unique_ptr<Client> watch_client, usage_client;
  if (f.demo) {
    auto cl = Client::Connect(cf);
    auto wc = Client::Connect(cf);
    auto uc = Client::Connect(cf);
    if (!cl.ok() || !wc.ok() || !uc.ok()) {
      out << "allot up: demo: cannot connect to the API\n";
    } else if (Status s = Apply(cl->get(), kDemoYaml, out); !s.ok()) {
      out << "allot up: demo: " << s.message() << "\n";
    } else {
      watch_client = std::move(*wc);
      usage_client = std::move(*uc);
      narrator = std::thread([&out, w = watch_client.get(), u = usage_client.get()] {
        DemoNarrator(w, u, out).Run();
      });
      // The second wave, unless stopped first.
      auto wave2_at = std::chrono::steady_clock::now() + std::chrono::seconds(f.demo_delay_s);
      bool sent = false;
      while (!*stop) {
        if (!sent && std::chrono::steady_clock::now() >= wave2_at) {
          out << Clock() << "  demo: team-b submits its second wave\n";
          if (Status s = Apply(cl->get(), kDemoLaterYaml, out); !s.ok()) {
            out << "allot up: demo: " << s.message() << "\n";
          }
          sent = true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
  }
  while (!*stop) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  out << "allot up: stopping (the agent stops its pods first)\n";
  agent_stop = true;
  agent.join();
  (*srv)->Stop();
  if (narrator.joinable()) narrator.join();
  return 0;
}

}  // namespace allot::cli
