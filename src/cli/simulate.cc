// `allot simulate` (see simulate.h and docs/simulate.md).
#include "cli/simulate.h"

#include <boost/json.hpp>

#include <chrono>
#include <fstream>
#include <ostream>
#include <sys/resource.h>

#include "cli/dry_run.h"
#include "core/generate_name.h"
#include "core/manifest.h"
#include "net/http.h"
#include "sim/configs.h"
#include "sim/history.h"
#include "sim/idle_model.h"
#include "sim/policy.h"
#include "sim/pools.h"
#include "sim/report.h"
#include "sim/simulator.h"
#include "sim/trace.h"

namespace allot::cli {
namespace {

namespace json = boost::json;
constexpr int kExitServer = 1;
constexpr size_t kShowIssues = 10;

int Fail(const Status& s, std::ostream& err) {
  err << "allot: " << s.message() << "\n";
  return kExitUsage;
}

int64_t IntAt(const json::value& v, const char* key) {
  const json::value* x = JsonAt(v, {key});
  return x && x->is_int64() ? x->as_int64() : -1;
}

}  // namespace

Result<sim::Trace> FetchHistory(Client& client, int64_t page_size) {
  const std::string& url = client.server();
  auto fail = [&](const Status& s) {
    std::string msg = s.message();
    if (msg.find(url) == std::string::npos) {
      msg = "reading the history of " + url + ": " + msg;
    }
    if (s.message().rfind("HTTP 401", 0) == 0) {
      msg += "; this command sends the token of --token, ALLOT_TOKEN or the config file";
    } else if (s.message().rfind("HTTP 404", 0) == 0) {
      msg += "; give the server's base URL, e.g. http://HOST:8470";
    }
    return Status::FailedPrecondition(msg);
  };
  // Whose workloads the token sees: all (cluster-admin), one tenant's, or
  // none (node and metrics tokens read empty lists: refuse those).
  auto who = client.Call("GET", "/api/v1/whoami");
  if (!who.ok()) return fail(who.status());
  const std::string role = JsonStr(*who, {"role"});
  const std::string tenant = JsonStr(*who, {"tenant"});
  sim::HistoryReader reader(url);
  if (role == "node" || role == "metrics") {
    return fail(Status::PermissionDenied(
        "a " + role + " token reads no workloads: use a cluster-admin token "
        "(every tenant) or a tenant's token (that tenant only)"));
  }
  if (role != "cluster-admin") {
    reader.AddNote("only tenant " + tenant + "'s workloads (the token is a " +
                   role + " in " + tenant + ")");
  }
  int64_t read_at = -1;
  std::string cont;
  for (int64_t page = 0;; ++page) {
    if (page == 1000000) {
      return fail(Status::Internal("more than a million pages: the server "
                                   "keeps answering with `continue`"));
    }
    std::string target = "/api/v1/workloads?limit=" + std::to_string(page_size);
    if (!cont.empty()) target += "&continue=" + net::UrlEncode(cont);
    auto r = client.Call("GET", target);
    if (!r.ok()) return fail(r.status());
    const json::value* items = JsonAt(*r, {"items"});
    if (items == nullptr || !items->is_array()) {
      return fail(Status::Internal("the server's workload list has no items"));
    }
    for (const json::value& w : items->as_array()) reader.Add(w);
    // The last page's time: every workload listed was admitted before it.
    read_at = IntAt(*r, "serverTimeUnixMs");
    const json::value* c = JsonAt(*r, {"continue"});
    if (!c || !c->is_string() || c->as_string().empty()) break;
    if (std::string(c->as_string()) <= cont) {
      return fail(Status::Internal("the server's `continue` does not advance"));
    }
    cont = std::string(c->as_string());
  }
  return reader.Finish(read_at);
}

namespace {

Result<int64_t> OptionalDuration(const std::string& flag, const std::string& v) {
  if (v.empty()) return int64_t(0);
  auto d = sim::ParseDurationMs(v);
  if (!d.ok()) return Status::InvalidArgument(flag + ": " + d.status().message());
  return d;
}

void ReportIssues(const char* what, const std::vector<sim::TraceIssue>& issues,
                  const std::string& source, std::ostream& err) {
  if (issues.empty()) return;
  err << "allot: " << issues.size() << " " << what << " in " << source << ":\n";
  for (size_t i = 0; i < issues.size() && i < kShowIssues; ++i) {
    err << "  line " << issues[i].line << ": " << issues[i].message << "\n";
  }
  if (issues.size() > kShowIssues) {
    err << "  ... and " << issues.size() - kShowIssues << " more (in the JSON)\n";
  }
}

Status WriteFile(const std::string& path, const std::string& text,
                 std::ostream& out) {
  if (path == "-") {
    out << text;
    out.flush();
    return Status::Ok();
  }
  std::ofstream f(path, std::ios::binary);
  f << text;
  f.close();
  if (!f) return Status::NotFound("cannot write " + path);
  return Status::Ok();
}

int64_t PeakRssMib() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss / 1024;
}

}  // namespace

int RunSimulate(const SimulateFlags& flags, const ClientFlags& client,
                std::ostream& out, std::ostream& err) {
  // Generators.
  if (!flags.synthetic_config.empty()) {
    int64_t gpus = 0, tenants = 0;
    if (std::sscanf(flags.synthetic_config.c_str(), "%ld:%ld", &gpus, &tenants) != 2 ||
        gpus < 8 || tenants < 1 || gpus > 10000000 || tenants > 10000) {
      return Fail(Status::InvalidArgument(
                      "--synthetic-config: expected GPUS:TENANTS, e.g. 10000:20"),
                  err);
    }
    out << sim::SyntheticConfigYaml(gpus, int32_t(tenants));
    return kExitOk;
  }
  if (flags.trace.empty() == flags.from_history.empty()) {
    return Fail(Status::InvalidArgument(
                    "give exactly one of --trace FORMAT:PATH and --from-history URL"),
                err);
  }
  const auto t0 = std::chrono::steady_clock::now();
  // The config first: a bad one is found before a long read of a trace.
  core::Config config;
  if (flags.philly_config.empty()) {
    if (flags.files.empty()) {
      return Fail(Status::InvalidArgument("no cluster config (use -f FILE)"), err);
    }
    for (const std::string& f : flags.files) {
      if (Status s = core::LoadManifestFile(f, &config); !s.ok()) return Fail(s, err);
    }
    Status named = core::GenerateNames(&config, nullptr, core::SeededRandom(0));
    if (!named.ok()) return Fail(named, err);
    if (Status s = core::ValidateConfig(&config); !s.ok()) return Fail(s, err);
    if (!config.workloads.empty()) {
      err << "allot: note: the " << config.workloads.size()
          << " Workloads in the config are ignored (the trace is replayed)\n";
      config.workloads.clear();
    }
  }
  sim::Trace trace;
  if (!flags.from_history.empty()) {
    ClientFlags cf = client;
    cf.server = flags.from_history;
    auto c = Client::Connect(cf);
    if (!c.ok()) return Fail(c.status(), err);  // A bad URL.
    auto h = FetchHistory(**c);
    if (!h.ok()) {
      err << "allot: " << h.status().message() << "\n";
      return kExitServer;
    }
    trace = std::move(*h);
  } else {
    auto t = sim::LoadTrace(flags.trace);
    if (!t.ok()) return Fail(t.status(), err);
    trace = std::move(*t);
  }
  if (!flags.philly_config.empty()) {
    if (trace.format != "philly") {
      return Fail(Status::InvalidArgument(
                      "--philly-config needs --trace philly:PATH (its VCs)"),
                  err);
    }
    std::ifstream in(flags.philly_config, std::ios::binary);
    if (!in) {
      return Fail(Status::NotFound("cannot open " + flags.philly_config), err);
    }
    if (!(flags.philly_scale > 0 && flags.philly_scale <= 100)) {
      return Fail(Status::InvalidArgument("--philly-scale must be in (0, 100]"), err);
    }
    auto y = sim::PhillyConfigYaml(in, flags.philly_config, trace, flags.philly_scale);
    if (!y.ok()) return Fail(y.status(), err);
    out << *y;
    return kExitOk;
  }

  ReportIssues("malformed rows skipped", trace.issues, trace.source, err);
  for (const std::string& n : trace.notes) err << "allot: note: " << n << "\n";
  if (flags.strict && !trace.issues.empty()) {
    err << "allot: --strict: malformed rows are fatal\n";
    return kExitUsage;
  }

  sim::SimOptions opt;
  int64_t park_after = 0;
  {
    auto ck = OptionalDuration("--checkpoint-interval", flags.checkpoint_interval);
    auto mtbf = OptionalDuration("--mtbf", flags.mtbf);
    auto mttr = OptionalDuration("--mttr", flags.mttr);
    auto win = OptionalDuration("--window", flags.window);
    for (const auto* r : {&ck, &mtbf, &mttr, &win}) {
      if (!r->ok()) return Fail(r->status(), err);
    }
    opt.checkpoint_interval_ms = *ck;
    opt.mtbf_ms = *mtbf;
    opt.mttr_ms = std::max<int64_t>(1, *mttr);
    opt.window_ms = *win;
    opt.seed = flags.seed;
    if (opt.window_ms <= 0) {
      return Fail(Status::InvalidArgument("--window must be positive"), err);
    }
    if (!flags.idle_model.empty()) {
      auto m = sim::ParseIdleModel(flags.idle_model);
      if (!m.ok()) return Fail(m.status(), err);
      opt.idle = *m;
    }
    auto after = OptionalDuration("--park-after", flags.park_after);
    if (!after.ok()) return Fail(after.status(), err);
    if (*after <= 0) return Fail(Status::InvalidArgument("--park-after must be positive"), err);
    if (!(flags.preemptible >= 0 && flags.preemptible <= 1)) {
      return Fail(Status::InvalidArgument("--preemptible must be a share in [0, 1]"), err);
    }
    opt.preemptible_fraction = flags.preemptible;
    park_after = *after;
  }

  std::vector<std::string> policies;
  if (flags.compare) {
    policies = flags.policies.empty() ? sim::PolicyNames() : flags.policies;
    // With an idle model, parking is among what is compared.
    if (flags.policies.empty() && opt.idle.enabled()) policies.push_back("park");
  } else {
    policies = {flags.policy};
  }
  for (const std::string& p : policies) {
    if (sim::PolicyParks(p) && !opt.idle.enabled()) {
      return Fail(Status::InvalidArgument(
                      "policy " + p + " parks idle jobs: give --idle-model busy=D,idle=D "
                      "(traces record no idleness)"),
                  err);
    }
  }
  std::vector<std::string> modes = flags.autoscale;
  if (modes.empty()) modes.push_back("");
  for (const std::string& m : modes) {
    if (m.empty()) continue;
    if (auto a = sim::ApplyAutoscale(config, m); !a.ok()) return Fail(a.status(), err);
  }
  std::vector<json::object> summaries;
  int64_t events = 0;
  for (const std::string& p : policies) {
    for (const std::string& mode : modes) {
      auto cfg = sim::ApplyPolicy(config, p);
      if (!cfg.ok()) return Fail(cfg.status(), err);
      if (!mode.empty()) {
        auto a = sim::ApplyAutoscale(*cfg, mode);
        if (!a.ok()) return Fail(a.status(), err);
        cfg = std::move(*a);
      }
      auto t1 = std::chrono::steady_clock::now();
      sim::SimOptions run = opt;
      run.park_after_ms = sim::PolicyParks(p) ? park_after : 0;
      auto r = sim::Simulate(*cfg, config, trace, run, p);
      if (!r.ok()) return Fail(r.status(), err);
      r->autoscale = mode;
      double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
      events += r->events;
      ReportIssues(("jobs rejected (policy " + p + ")").c_str(), r->issues,
                   trace.source, err);
      if (flags.strict && !r->issues.empty()) {
        err << "allot: --strict: rejected jobs are fatal\n";
        return kExitUsage;
      }
      if (!r->infeasible.empty()) {
        err << "allot: policy " << p << ": " << r->infeasible.size()
            << " jobs can never fit their ClusterQueue's quota (not submitted; "
               "first: line "
            << r->infeasible[0].line << ")\n";
      }
      err << "allot: policy " << p << (mode.empty() ? "" : " (autoscale " + mode + ")") << ": "
          << r->jobs.size() << " jobs, "
          << r->events << " events, " << r->cycles << " cycles in " << secs
          << " s (" << int64_t(double(r->events) / std::max(secs, 1e-9))
          << " events/s)\n";
      summaries.push_back(sim::Summarize(*r, trace));
    }
  }
  double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  err << "allot: total " << total << " s, peak RSS " << PeakRssMib() << " MiB\n";

  if (flags.compare || modes.size() > 1) {
    out << sim::CompareTable(summaries);
    out.flush();
    if (flags.output != "-") {
      json::array arr;
      for (const auto& s : summaries) arr.push_back(s);
      if (Status s = WriteFile(flags.output, sim::ToJson(arr) + "\n", out); !s.ok()) {
        return Fail(s, err);
      }
    }
  } else {
    if (Status s = WriteFile(flags.output, sim::ToJson(summaries[0]) + "\n", out);
        !s.ok()) {
      return Fail(s, err);
    }
  }
  if (!flags.html.empty()) {
    std::string title = "allot simulate: " + trace.source;
    if (Status s = WriteFile(flags.html, sim::HtmlReport(summaries, title), out);
        !s.ok()) {
      return Fail(s, err);
    }
  }
  return kExitOk;
}

}  // namespace allot::cli
