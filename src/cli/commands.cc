#include "cli/commands.h"
#include "cli/secret.h"

#include <boost/json.hpp>
#include <yaml-cpp/yaml.h>

#include <atomic>
#include <csignal>
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <thread>
#include <tuple>

#include "cli/kueue_version.h"
#include "core/duration.h"
#include "net/http.h"
#include "server/audit.h"
#include "server/server.h"
#include "store/store.h"

namespace allot::cli {
namespace json = boost::json;

int Fail(const Status& s) {
  std::cerr << "allot: " << s.message();
  if (!s.field().empty() && s.message().find(s.field()) == std::string::npos)
    std::cerr << " (field " << s.field() << ")";
  std::cerr << "\n";
  return kExitFailed;
}

void PrintTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> w;
  for (const auto& r : rows) {
    if (w.size() < r.size()) w.resize(r.size(), 0);
    for (size_t i = 0; i < r.size(); ++i) w[i] = std::max(w[i], r[i].size());
  }
  for (const auto& r : rows) {
    std::string line;
    for (size_t i = 0; i < r.size(); ++i) {
      line += r[i];
      if (i + 1 < r.size()) line += std::string(w[i] - r[i].size() + 3, ' ');
    }
    std::cout << line << "\n";
  }
}

namespace {


Result<std::unique_ptr<Client>> Connect(const ClientFlags& c) {
  return Client::Connect(c);
}

// Kind aliases -> API plural.
Result<std::string> Plural(const std::string& k) {
  static const std::map<std::string, std::string> kAliases = {
      {"workload", "workloads"},       {"workloads", "workloads"},
      {"wl", "workloads"},             {"clusterqueue", "clusterqueues"},
      {"clusterqueues", "clusterqueues"}, {"cq", "clusterqueues"},
      {"localqueue", "localqueues"},   {"localqueues", "localqueues"},
      {"lq", "localqueues"},           {"flavor", "resourceflavors"},
      {"flavors", "resourceflavors"},  {"resourceflavor", "resourceflavors"},
      {"resourceflavors", "resourceflavors"}, {"rf", "resourceflavors"},
      {"cohort", "cohorts"},           {"cohorts", "cohorts"},
      {"node", "nodes"},               {"nodes", "nodes"},
      {"tenant", "tenants"},           {"tenants", "tenants"},
      {"namespace", "tenants"},        {"ns", "tenants"},
      {"priorityclass", "workloadpriorityclasses"},
      {"priorityclasses", "workloadpriorityclasses"},
      {"workloadpriorityclass", "workloadpriorityclasses"},
      {"workloadpriorityclasses", "workloadpriorityclasses"},
      {"wpc", "workloadpriorityclasses"},
      {"topology", "topologies"},      {"topologies", "topologies"},
      {"image", "images"},             {"images", "images"},
      {"img", "images"},               {"nodepool", "nodepools"},
      {"nodepools", "nodepools"},      {"np", "nodepools"}};
  auto it = kAliases.find(k);
  if (it == kAliases.end()) {
    return Status::InvalidArgument(
        "unknown kind '" + k +
        "': use workloads, clusterqueues, localqueues, flavors, cohorts, "
        "nodes, tenants, priorityclasses, topologies, images or nodepools");
  }
  return it->second;
}

bool Namespaced(const std::string& plural) {
  return plural == "workloads" || plural == "localqueues";
}

std::string Path(const std::string& plural, const std::string& tenant,
                 const std::string& name) {
  std::string p = "/api/v1/" + plural;
  if (Namespaced(plural)) p += "/" + net::UrlEncode(tenant);
  return p + "/" + net::UrlEncode(name);
}


void EmitYaml(YAML::Emitter& out, const json::value& v) {
  switch (v.kind()) {
    case json::kind::object:
      out << YAML::BeginMap;
      for (const auto& [k, x] : v.as_object()) {
        out << YAML::Key << std::string(k) << YAML::Value;
        EmitYaml(out, x);
      }
      out << YAML::EndMap;
      break;
    case json::kind::array:
      out << YAML::BeginSeq;
      for (const auto& x : v.as_array()) EmitYaml(out, x);
      out << YAML::EndSeq;
      break;
    case json::kind::string:
      out << YAML::DoubleQuoted << std::string(v.as_string());
      break;
    case json::kind::null:
      out << YAML::Null;
      break;
    default:
      out << json::serialize(v);
  }
}

void PrintYaml(const json::value& v) {
  YAML::Emitter out;
  EmitYaml(out, v);
  std::cout << out.c_str() << "\n";
}

// Columns of the table view per kind.
std::vector<std::string> Header(const std::string& plural) {
  if (plural == "workloads")
    return {"TENANT", "NAME", "QUEUE", "STATE", "PRIORITY", "CLUSTERQUEUE", "AGE"};
  if (plural == "clusterqueues")
    return {"NAME", "COHORT", "STRATEGY", "PENDING", "ADMITTED", "SHARE"};
  if (plural == "localqueues")
    return {"TENANT", "NAME", "CLUSTERQUEUE", "PENDING", "ADMITTED"};
  if (plural == "nodes") return {"NAME", "READY", "GPUS", "PRODUCT", "RUNTIME", "SCHEDULABLE"};
  if (plural == "workloadpriorityclasses") return {"NAME", "VALUE"};
  if (plural == "cohorts") return {"NAME", "PARENT"};
  if (plural == "topologies") return {"NAME", "LEVELS"};
  if (plural == "images") return {"NAME", "IMAGE", "DESCRIPTION"};
  if (plural == "nodepools") {
    return {"NAME", "MIN", "MAX", "READY", "BOOTING", "GPUS", "LOCATION", "PRICE/NODE-H", "HEALTH"};
  }
  return {"NAME"};
}

std::string Age(const std::string& rfc3339) {
  if (rfc3339.size() < 19) return "";
  std::tm tm{};
  std::istringstream in(rfc3339.substr(0, 19));
  in >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%S");
  if (in.fail()) return "";
  int64_t t = timegm(&tm);
  int64_t d = int64_t(std::time(nullptr)) - t;
  if (d < 0) d = 0;
  if (d < 120) return std::to_string(d) + "s";
  if (d < 7200) return std::to_string(d / 60) + "m";
  if (d < 172800) return std::to_string(d / 3600) + "h";
  return std::to_string(d / 86400) + "d";
}

std::vector<std::string> Row(const std::string& plural, const json::value& o) {
  std::string name = JsonStr(o, {"metadata", "name"});
  if (plural == "workloads") {
    return {JsonStr(o, {"metadata", "namespace"}), name, JsonStr(o, {"spec", "queueName"}),
            JsonStr(o, {"status", "state"}), JsonStr(o, {"status", "priority"}),
            JsonStr(o, {"status", "admission", "clusterQueue"}),
            Age(JsonStr(o, {"metadata", "creationTimestamp"}))};
  }
  if (plural == "clusterqueues") {
    std::string strategy = JsonStr(o, {"spec", "queueingStrategy"});
    std::string cohort = JsonStr(o, {"spec", "cohortName"});
    if (cohort.empty()) cohort = JsonStr(o, {"spec", "cohort"});  // v1beta1
    return {name, cohort,
            strategy.empty() ? "BestEffortFIFO" : strategy,
            JsonStr(o, {"status", "pendingWorkloads"}),
            JsonStr(o, {"status", "admittedWorkloads"}),
            JsonStr(o, {"status", "fairSharing", "weightedShare"})};
  }
  if (plural == "localqueues") {
    return {JsonStr(o, {"metadata", "namespace"}), name, JsonStr(o, {"spec", "clusterQueue"}),
            JsonStr(o, {"status", "pendingWorkloads"}),
            JsonStr(o, {"status", "admittedWorkloads"})};
  }
  if (plural == "nodes") {
    const json::value* gpus = JsonAt(o, {"status", "gpus"});
    size_t n = gpus && gpus->is_array() ? gpus->as_array().size() : 0;
    std::string product;
    if (n > 0) product = JsonStr(gpus->as_array()[0], {"product"});
    bool unsched = JsonStr(o, {"spec", "unschedulable"}) == "true";
    std::string ready;
    if (const json::value* cs = JsonAt(o, {"status", "conditions"}); cs && cs->is_array()) {
      for (const json::value& c : cs->as_array()) {
        if (JsonStr(c, {"type"}) != "Ready") continue;
        std::string st = JsonStr(c, {"status"});
        ready = st == "True" ? "Ready" : st == "False" ? "NotReady" : "Unknown";
      }
    }
    // Simulated GPUs say so; how the node runs pods (allot.dev/runtime).
    if (JsonStr(o, {"metadata", "labels", "allot.dev/simulated"}) == "true" && n > 0) {
      product += " (simulated)";
    }
    std::string runtime = JsonStr(o, {"metadata", "labels", "allot.dev/runtime"});
    if (JsonStr(o, {"metadata", "labels", "allot.dev/ignore-images"}) == "true") {
      runtime += " (ignores images)";
    }
    return {name,    ready,   std::to_string(n), product, runtime.empty() ? "-" : runtime,
            unsched ? "no (cordoned)" : "yes"};
  }
  if (plural == "workloadpriorityclasses") return {name, JsonStr(o, {"value"})};
  if (plural == "cohorts") {
    std::string parent = JsonStr(o, {"spec", "parent"});
    if (parent.empty()) parent = JsonStr(o, {"spec", "parentName"});
    return {name, parent};
  }
  if (plural == "topologies") {
    std::string levels;
    if (const json::value* ls = JsonAt(o, {"spec", "levels"}); ls && ls->is_array()) {
      for (const json::value& l : ls->as_array())
        levels += (levels.empty() ? "" : ", ") + JsonStr(l, {"nodeLabel"});
    }
    return {name, levels};
  }
  if (plural == "images") {
    return {name, JsonStr(o, {"spec", "image"}), JsonStr(o, {"spec", "description"})};
  }
  if (plural == "nodepools") {
    auto num = [&](const char* k) {
      const json::value* v = JsonAt(o, {"spec", k});
      return v && v->is_int64() ? std::to_string(v->as_int64()) : std::string();
    };
    auto nodes = [&](const char* state) {
      const json::value* v = JsonAt(o, {"status", "nodes", state});
      return v && v->is_int64() ? std::to_string(v->as_int64()) : std::string("-");
    };
    std::string gpus = num("gpus");
    if (const std::string p = JsonStr(o, {"spec", "product"}); !p.empty()) gpus += "x" + p;
    const json::value* degraded = JsonAt(o, {"status", "degraded"});
    const json::value* listing = JsonAt(o, {"status", "listing"});
    const std::string health = listing && listing->is_bool() && listing->as_bool() ? "listing"
                               : degraded && degraded->is_bool() && degraded->as_bool()
                                   ? "degraded"
                                   : "ok";
    return {name, num("minNodes"), num("maxNodes"), nodes("ready"), nodes("booting"), gpus,
            JsonStr(o, {"spec", "location"}), JsonStr(o, {"spec", "pricePerNodeHour"}), health};
  }
  return {name};
}


Result<std::string> ReadFile(const std::string& path) {
  if (path == "-") {
    std::stringstream ss;
    ss << std::cin.rdbuf();
    return ss.str();
  }
  std::ifstream in(path);
  if (!in) return Status::NotFound("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop = true; }

}  // namespace

int CmdServe(const ServeFlags& f) {
  server::ServeOptions o;
  o.listen = f.listen;
  o.store_url = f.store;
  o.tls_cert_file = f.tls_cert;
  o.tls_key_file = f.tls_key;
  o.admin_token_file = f.admin_token_file;
  o.secret_key_file = f.secret_key_file;
  o.pool_dir = f.pool_dir;
  o.threads = f.threads;
  o.node_timeout_ms = int64_t(f.node_timeout_s) * 1000;
  o.idle_util_pct = f.idle_util_pct;
  o.telemetry_retention_ms = int64_t(f.telemetry_retention_days) * 86400000;
  Result<int64_t> probe_s = core::ParseDurationSeconds(f.notebook_probe);
  if (!probe_s.ok() || *probe_s < 1 || *probe_s > 3600) {
    std::cerr << "allot serve: --notebook-probe-interval " << f.notebook_probe
              << ": must be a duration from 1s to 1h\n";
    return kExitUsage;
  }
  o.notebook_probe_ms = *probe_s * 1000;
  if (f.tls_cert.empty() != f.tls_key.empty()) {
    std::cerr << "allot serve: --tls-cert and --tls-key go together\n";
    return kExitUsage;
  }
  auto srv = server::Server::Start(o, std::cout);
  if (!srv.ok()) return Fail(srv.status());
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  while (!g_stop) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::cout << "allot: stopping\n";
  (*srv)->Stop();
  return kExitOk;
}

int CmdLogs(const ClientFlags& c, const LogsFlags& f) {
  std::string tenant = f.tenant, name = f.workload;
  if (size_t slash = name.find('/'); slash != std::string::npos) {
    tenant = name.substr(0, slash);
    name = name.substr(slash + 1);
  }
  auto cl = Connect(c);
  if (!cl.ok()) return Fail(cl.status());
  if (tenant.empty()) {
    Result<std::string> t = (*cl)->Tenant("");
    if (!t.ok()) return Fail(t.status());
    tenant = *t;
  }
  std::signal(SIGINT, OnSignal);
  int64_t offset = -1, limit = f.tail_bytes;
  bool said_waiting = false;
  while (!g_stop) {
    std::string q = "?pod=" + std::to_string(f.pod) + "&limit=" + std::to_string(limit);
    if (offset >= 0) q += "&offset=" + std::to_string(offset);  // Else the tail.
    if (f.attempt > 0) q += "&attempt=" + std::to_string(f.attempt);
    auto r = (*cl)->Call("GET", "/api/v1/workloads/" + tenant + "/" + name + "/log" + q);
    if (!r.ok()) {
      // Following: an agent slow to answer is asked again.
      if (f.follow && r.status().message().rfind("HTTP 504", 0) == 0) continue;
      return Fail(r.status());
    }
    const json::object& o = r->as_object();
    const std::string data(o.at("data").as_string());
    std::cout << data << std::flush;
    const bool finished = o.at("finished").as_bool();
    const bool exists = o.at("exists").as_bool();
    if (!exists && !said_waiting) {
      std::cerr << "allot logs: pod " << JsonStr(*r, {"pod"}) << " on " << JsonStr(*r, {"node"})
                << " has no log yet\n";
      said_waiting = true;
    }
    if (!f.follow) break;
    if (data.empty()) {
      if (finished) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    offset = o.at("nextOffset").as_int64();
    limit = 256 << 10;
  }
  return kExitOk;
}

int CmdUp(const UpFlags& f) {
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  return RunUp(f, &g_stop, std::cout);
}

int CmdAgent(const ClientFlags& c, const AgentFlags& f) {
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  return RunAgent(c, f, &g_stop, std::cout);
}

int CmdApply(const ClientFlags& c, const std::vector<std::string>& files,
             bool skip_unsupported) {
  auto cl = Connect(c);
  if (!cl.ok()) return Fail(cl.status());
  std::string all;
  for (const std::string& f : files) {
    Result<std::string> text = ReadFile(f);
    if (!text.ok()) return Fail(text.status());
    if (!all.empty()) all += "\n---\n";
    all += *text;
  }
  // v1 Secrets first (the workloads after them may name them), through
  // the Secrets API.
  if (Status s = ApplySecretDocuments(**cl, &all, std::cout); !s.ok()) return Fail(s);
  auto r = (*cl)->Call("POST", std::string("/api/v1/apply") +
                                  (skip_unsupported ? "?skipUnsupported=true" : ""),
                       all, "application/yaml");
  if (!r.ok()) return Fail(r.status());
  for (const json::value& x : r->as_object().at("results").as_array()) {
    std::string name = JsonStr(x, {"name"});
    std::cout << JsonStr(x, {"kind"}) << (name.empty() ? "" : " " + name) << " "
              << JsonStr(x, {"action"});
    if (JsonStr(x, {"action"}) == "skipped") {
      std::cout << " (" << JsonStr(x, {"apiVersion"}) << ", document "
                << JsonStr(x, {"document"}) << ": Allot does not run this kind)";
    }
    std::cout << "\n";
  }
  return kExitOk;
}

int CmdSubmit(const ClientFlags& c, const SubmitFlags& f) {
  auto cl = Connect(c);
  if (!cl.ok()) return Fail(cl.status());
  std::string body;
  if (!f.file.empty()) {
    Result<std::string> text = ReadFile(f.file);
    if (!text.ok()) return Fail(text.status());
    body = *text;
  } else {
    if (f.name.empty() || f.queue.empty()) {
      std::cerr << "allot submit: give -f FILE, or --name and --queue (and "
                   "--gpus, -- COMMAND ...)\n";
      return kExitUsage;
    }
    json::object requests;
    if (f.gpus > 0) {
      requests[f.mig.empty() ? "nvidia.com/gpu" : "nvidia.com/mig-" + f.mig] =
          std::to_string(f.gpus);
    }
    if (!f.cpu.empty()) requests["cpu"] = f.cpu;
    if (!f.memory.empty()) requests["memory"] = f.memory;
    json::object tmpl;
    tmpl["resources"] = json::object{{"requests", requests}};
    if (!f.image.empty()) tmpl["image"] = f.image;
    if (!f.image_pull_policy.empty()) tmpl["imagePullPolicy"] = f.image_pull_policy;
    if (!f.command.empty()) {
      json::array cmd;
      for (const auto& a : f.command) cmd.push_back(json::string(a));
      tmpl["command"] = std::move(cmd);
    }
    if (!f.env.empty()) {
      json::array env;
      for (const std::string& kv : f.env) {
        size_t eq = kv.find('=');
        if (eq == std::string::npos) {
          std::cerr << "allot submit: --env takes K=V, not '" << kv << "'\n";
          return kExitUsage;
        }
        env.push_back(json::object{{"name", kv.substr(0, eq)},
                                   {"value", kv.substr(eq + 1)}});
      }
      tmpl["env"] = std::move(env);
    }
    json::object ps{{"name", "main"}, {"count", f.pods}, {"template", tmpl}};
    json::object spec{{"queueName", f.queue},
                      {"type", f.type},
                      {"podSets", json::array{ps}}};
    if (!f.priority_class.empty()) spec["priorityClassName"] = f.priority_class;
    Result<std::string> tenant = (*cl)->Tenant(f.tenant);
    if (!tenant.ok()) return Fail(tenant.status());
    json::object wl{{"apiVersion", "allot.dev/v1"},
                    {"kind", "Workload"},
                    {"metadata", json::object{{"name", f.name},
                                              {"namespace", *tenant}}},
                    {"spec", spec}};
    body = json::serialize(wl);
  }
  auto r = (*cl)->Call("POST", "/api/v1/workloads", body);
  if (!r.ok()) return Fail(r.status());
  std::string ns = JsonStr(*r, {"metadata", "namespace"});
  std::string name = JsonStr(*r, {"metadata", "name"});
  std::cout << "workload " << ns << "/" << name << " submitted: "
            << JsonStr(*r, {"status", "state"});
  std::string reason;
  if (JsonStr(*r, {"status", "state"}) != "Admitted") {
    // The reply to a write leaves out the (costly) reason; ask for it.
    auto got = (*cl)->Call("GET", Path("workloads", ns, name));
    if (got.ok()) reason = JsonStr(*got, {"status", "pendingReason"});
  }
  if (!reason.empty()) std::cout << " (" << reason << ")";
  std::cout << "\n";
  return kExitOk;
}

int CmdGet(const ClientFlags& c, const GetFlags& f) {
  Result<std::string> plural = Plural(f.kind);
  if (!plural.ok()) {
    std::cerr << "allot get: " << plural.status().message() << "\n";
    return kExitUsage;
  }
  if (f.output != "table" && f.output != "json" && f.output != "yaml") {
    std::cerr << "allot get: -o takes table, json or yaml\n";
    return kExitUsage;
  }
  Result<core::KueueVersion> version = core::ParseKueueVersion(f.api_version);
  if (!version.ok()) {
    std::cerr << "allot get: --api-version: " << version.status().message() << "\n";
    return kExitUsage;
  }
  // The Kueue objects of json and yaml output in the version asked for.
  auto versioned = [&](Result<json::value> r) -> Result<json::value> {
    if (!r.ok() || f.output == "table") return r;
    return InKueueVersion(*r, *version);
  };
  auto cl = Connect(c);
  if (!cl.ok()) return Fail(cl.status());
  if (!f.name.empty()) {
    Result<std::string> tenant =
        Namespaced(*plural) ? (*cl)->Tenant(f.tenant) : Result<std::string>(f.tenant);
    if (!tenant.ok()) return Fail(tenant.status());
    auto r = versioned((*cl)->Call("GET", Path(*plural, *tenant, f.name)));
    if (!r.ok()) return Fail(r.status());
    if (f.output == "json") {
      std::cout << json::serialize(*r) << "\n";
    } else if (f.output == "yaml") {
      PrintYaml(*r);
    } else {
      PrintTable({Header(*plural), Row(*plural, *r)});
    }
    return kExitOk;
  }
  std::string q;
  auto add = [&](const char* k, const std::string& v) {
    if (v.empty()) return;
    q += (q.empty() ? "?" : "&") + std::string(k) + "=" + net::UrlEncode(v);
  };
  add("tenant", f.tenant);
  add("state", f.state);
  add("queue", f.queue);
  add("label", f.label);
  if (f.limit > 0) add("limit", std::to_string(f.limit));
  if (f.watch) {
    add("watch", "1");
    bool first = true;
    Status s = (*cl)->Watch("/api/v1/" + *plural + q, [&](const json::value& ev) {
      if (f.output == "json") {
        Result<json::value> e = versioned(ev);
        std::cout << json::serialize(e.ok() ? *e : ev) << std::endl;
      } else {
        std::vector<std::string> h = Header(*plural);
        h.insert(h.begin(), "EVENT");
        std::vector<std::string> r = Row(*plural, ev.as_object().at("object"));
        r.insert(r.begin(), JsonStr(ev, {"type"}));
        if (first) PrintTable({h, r}); else PrintTable({r});
        std::cout.flush();
        first = false;
      }
      return true;
    });
    return s.ok() ? kExitOk : Fail(s);
  }
  auto r = versioned((*cl)->Call("GET", "/api/v1/" + *plural + q));
  if (!r.ok()) return Fail(r.status());
  if (f.output == "json") {
    std::cout << json::serialize(*r) << "\n";
    return kExitOk;
  }
  if (f.output == "yaml") {
    PrintYaml(*r);
    return kExitOk;
  }
  std::vector<std::vector<std::string>> rows = {Header(*plural)};
  for (const json::value& o : r->as_object().at("items").as_array()) {
    rows.push_back(Row(*plural, o));
  }
  if (rows.size() == 1) {
    std::cout << "no " << *plural << "\n";
    return kExitOk;
  }
  PrintTable(rows);
  return kExitOk;
}

int CmdDescribe(const ClientFlags& c, const std::string& kind,
                const std::string& name, const std::string& tenant) {
  Result<std::string> plural = Plural(kind);
  if (!plural.ok()) {
    std::cerr << "allot describe: " << plural.status().message() << "\n";
    return kExitUsage;
  }
  auto cl = Connect(c);
  if (!cl.ok()) return Fail(cl.status());
  Result<std::string> t =
      Namespaced(*plural) ? (*cl)->Tenant(tenant) : Result<std::string>(tenant);
  if (!t.ok()) return Fail(t.status());
  auto r = (*cl)->Call("GET", Path(*plural, *t, name));
  if (!r.ok()) return Fail(r.status());
  const json::value& o = *r;
  if (*plural != "workloads") {
    PrintYaml(o);
    return kExitOk;
  }
  std::cout << "Name:          " << JsonStr(o, {"metadata", "namespace"}) << "/"
            << JsonStr(o, {"metadata", "name"}) << "\n"
            << "Queue:         " << JsonStr(o, {"spec", "queueName"}) << "\n"
            << "Priority:      " << JsonStr(o, {"status", "priority"}) << "\n"
            << "Submitted by:  " << JsonStr(o, {"status", "submittedBy"}) << " at "
            << JsonStr(o, {"metadata", "creationTimestamp"}) << "\n"
            << "State:         " << JsonStr(o, {"status", "state"}) << "\n";
  std::string reason = JsonStr(o, {"status", "pendingReason"});
  if (!reason.empty()) {
    std::cout << "ClusterQueue:  " << JsonStr(o, {"status", "clusterQueue"}) << "\n"
              << "Position:      " << JsonStr(o, {"status", "position"}) << "\n"
              << "Why pending:   " << reason << "\n";
  }
  if (const json::value* a = JsonAt(o, {"status", "admission"})) {
    std::cout << "Admission:     ClusterQueue " << JsonStr(*a, {"clusterQueue"})
              << (JsonStr(o, {"status", "onParkedCapacity"}) == "true"
                      ? ", on parked capacity (no quota; the first to go when its owners resume)"
                      : "")
              << "\n";
    if (const json::value* psas = JsonAt(*a, {"podSetAssignments"}); psas && psas->is_array()) {
      for (const json::value& psa : psas->as_array()) {
        std::cout << "  pod set " << JsonStr(psa, {"name"}) << ": "
                  << JsonStr(psa, {"count"}) << " pod(s), flavors "
                  << JsonStr(psa, {"flavors"}) << "\n";
        if (const json::value* pl = JsonAt(psa, {"placements"}); pl && pl->is_array()) {
          int i = 0;
          for (const json::value& p : pl->as_array()) {
            std::cout << "    pod " << i++ << " on " << JsonStr(p, {"node"}) << " "
                      << JsonStr(p, {"gpus"}) << "\n";
          }
        }
      }
    }
  }
  if (const json::value* cs = JsonAt(o, {"status", "conditions"}); cs && cs->is_array()) {
    std::cout << "Conditions:\n";
    std::vector<std::vector<std::string>> rows = {
        {"  TYPE", "STATUS", "REASON", "SINCE", "MESSAGE"}};
    for (const json::value& x : cs->as_array()) {
      rows.push_back({"  " + JsonStr(x, {"type"}), JsonStr(x, {"status"}), JsonStr(x, {"reason"}),
                      JsonStr(x, {"lastTransitionTime"}), ConditionMessage(x)});
    }
    PrintTable(rows);
  }
  return kExitOk;
}

int CmdDelete(const ClientFlags& c, const std::string& kind,
              const std::string& name, const std::string& tenant, bool drain) {
  Result<std::string> plural = Plural(kind);
  if (!plural.ok()) {
    std::cerr << "allot delete: " << plural.status().message() << "\n";
    return kExitUsage;
  }
  auto cl = Connect(c);
  if (!cl.ok()) return Fail(cl.status());
  Result<std::string> t =
      Namespaced(*plural) ? (*cl)->Tenant(tenant) : Result<std::string>(tenant);
  if (!t.ok()) return Fail(t.status());
  std::string path = Path(*plural, *t, name);
  if (drain) path += "?drain=true";
  auto r = (*cl)->Call("DELETE", path);
  if (!r.ok()) return Fail(r.status());
  std::cout << kind << " " << name << " deleted\n";
  return kExitOk;
}

int CmdPark(const ClientFlags& c, const std::string& action, const std::string& name,
            const std::string& tenant) {
  if (name.empty()) {
    return Fail(Status::InvalidArgument("name a workload, or give --query and --prometheus"));
  }
  auto cl = Connect(c);
  if (!cl.ok()) return Fail(cl.status());
  Result<std::string> t = (*cl)->Tenant(tenant);
  if (!t.ok()) return Fail(t.status());
  auto r = (*cl)->Call("POST", Path("workloads", *t, name) + "/" + action);
  if (!r.ok()) return Fail(r.status());
  const std::string result = JsonStr(*r, {"result"});
  std::cout << "workload " << *t << "/" << name << " " << result;
  const std::string message = JsonStr(*r, {"message"});
  if (!message.empty() && result != "queued") std::cout << " (" << message << ")";
  std::cout << "\n";
  return kExitOk;
}

int CmdNode(const ClientFlags& c, const std::string& action,
            const std::string& node) {
  auto cl = Connect(c);
  if (!cl.ok()) return Fail(cl.status());
  auto r = (*cl)->Call("POST", "/api/v1/nodes/" + net::UrlEncode(node) + "/" + action);
  if (!r.ok()) return Fail(r.status());
  std::cout << "node " << node << " " << JsonStr(*r, {"result"}) << "\n";
  return kExitOk;
}

int CmdTokenCreate(const ClientFlags& c, const std::string& user,
                   const std::string& role, const std::string& tenant,
                   const std::string& node) {
  auto cl = Connect(c);
  if (!cl.ok()) return Fail(cl.status());
  json::object body{{"user", user}, {"role", role}, {"tenant", tenant}};
  if (!node.empty()) body["node"] = node;
  auto r = (*cl)->Call("POST", "/api/v1/tokens", json::serialize(body));
  if (!r.ok()) return Fail(r.status());
  std::cerr << "token " << JsonStr(*r, {"id"}) << " for " << user << " (" << role
            << (tenant.empty() ? "" : " in " + tenant)
            << (node.empty() ? "" : ", bound to node " + node)
            << "); it is shown only now:\n";
  std::cout << JsonStr(*r, {"token"}) << "\n";
  return kExitOk;
}

int CmdTokenRevoke(const ClientFlags& c, const std::string& id) {
  auto cl = Connect(c);
  if (!cl.ok()) return Fail(cl.status());
  auto r = (*cl)->Call("DELETE", "/api/v1/tokens/" + net::UrlEncode(id));
  if (!r.ok()) return Fail(r.status());
  std::cout << "token " << id << " revoked\n";
  return kExitOk;
}

int CmdTokenList(const ClientFlags& c) {
  auto cl = Connect(c);
  if (!cl.ok()) return Fail(cl.status());
  auto r = (*cl)->Call("GET", "/api/v1/tokens");
  if (!r.ok()) return Fail(r.status());
  std::vector<std::vector<std::string>> rows = {
      {"ID", "USER", "ROLE", "TENANT", "NODE", "CREATED", "REVOKED"}};
  for (const json::value& t : r->as_object().at("items").as_array()) {
    rows.push_back({JsonStr(t, {"id"}), JsonStr(t, {"user"}), JsonStr(t, {"role"}),
                    JsonStr(t, {"tenant"}), JsonStr(t, {"node"}), JsonStr(t, {"created"}),
                    JsonStr(t, {"revoked"})});
  }
  PrintTable(rows);
  return kExitOk;
}

int CmdAuditList(const ClientFlags& c, const std::map<std::string, std::string>& q) {
  auto cl = Connect(c);
  if (!cl.ok()) return Fail(cl.status());
  std::string target = "/api/v1/audit";
  char sep = '?';
  for (const auto& [k, v] : q) {
    if (v.empty()) continue;
    target += sep + k + "=" + net::UrlEncode(v);
    sep = '&';
  }
  auto r = (*cl)->Call("GET", target);
  if (!r.ok()) return Fail(r.status());
  std::vector<std::vector<std::string>> rows = {
      {"SEQ", "TIME", "PRINCIPAL", "TENANT", "VERB", "OBJECT", "OUTCOME"}};
  for (const json::value& a : r->as_object().at("items").as_array()) {
    rows.push_back({JsonStr(a, {"seq"}), JsonStr(a, {"time"}), JsonStr(a, {"principal"}),
                    JsonStr(a, {"tenant"}), JsonStr(a, {"verb"}), JsonStr(a, {"object"}),
                    JsonStr(a, {"outcome"})});
  }
  PrintTable(rows);
  return kExitOk;
}

int CmdAuditVerify(const ClientFlags& c, const std::string& store_url) {
  if (!store_url.empty()) {
    auto st = store::OpenStore(store_url);
    if (!st.ok()) return Fail(st.status());
    size_t records = 0;
    Status s = server::VerifyAuditStore(**st, store_url, &records);
    if (s.code() == StatusCode::kFailedPrecondition) {
      std::cout << "audit log BROKEN: " << s.message() << "\n";
      return kExitFailed;
    }
    if (!s.ok()) return Fail(s);
    std::cout << "audit log OK: " << records << " records verified\n";
    return kExitOk;
  }
  auto cl = Connect(c);
  if (!cl.ok()) return Fail(cl.status());
  auto r = (*cl)->Call("GET", "/api/v1/audit/verify");
  if (!r.ok()) return Fail(r.status());
  if (JsonStr(*r, {"ok"}) != "true") {
    std::cout << "audit log BROKEN: " << JsonStr(*r, {"error"}) << "\n";
    return kExitFailed;
  }
  std::cout << "audit log OK: " << JsonStr(*r, {"records"}) << " records verified\n";
  return kExitOk;
}

int CmdAuditAcknowledge(const ClientFlags& c, const std::string& reason) {
  auto cl = Connect(c);
  if (!cl.ok()) return Fail(cl.status());
  auto r = (*cl)->Call("POST", "/api/v1/audit/acknowledge",
                       json::serialize(json::object{{"reason", reason}}));
  if (!r.ok()) return Fail(r.status());
  std::cout << "acknowledged in audit record " << JsonStr(*r, {"record"}) << ": "
            << JsonStr(*r, {"acknowledged"}) << "\n";
  return kExitOk;
}

namespace {

// "1700000000000" (unix ms), "2026-12-01", "2026-12-01T08:00:00Z", or an
// age: "90m", "24h", "7d" before now.
Result<int64_t> ParseWhen(const std::string& s, const char* field) {
  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  if (!s.empty() && std::all_of(s.begin(), s.end(), ::isdigit) && s.size() > 8) {
    return std::stoll(s);
  }
  if (s.size() >= 2 && std::all_of(s.begin(), s.end() - 1, ::isdigit)) {
    const int64_t n = std::stoll(s.substr(0, s.size() - 1));
    const char unit = s.back();
    const int64_t ms = unit == 'm' ? 60000 : unit == 'h' ? 3600000 : unit == 'd' ? 86400000 : 0;
    if (ms > 0) return now - n * ms;
  }
  std::tm tm{};
  const char* end = nullptr;
  if (s.size() == 10) {
    end = strptime(s.c_str(), "%Y-%m-%d", &tm);
  } else {
    end = strptime(s.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm);
  }
  if (end == nullptr || *end != '\0') {
    return Status::InvalidArgument(
        std::string("--") + field + " '" + s +
            "': use a date (2026-12-01), a UTC time (2026-12-01T08:00:00Z), unix "
            "milliseconds, or an age (90m, 24h, 7d)",
        field);
  }
  return int64_t(timegm(&tm)) * 1000;
}

}  // namespace

int CmdUsage(const ClientFlags& c, const UsageFlags& f) {
  if (f.output != "table" && f.output != "csv" && f.output != "json") {
    return Fail(Status::InvalidArgument("-o must be table, csv or json", "output"));
  }
  std::string target = f.idle ? "/api/v1/usage/idle?minutes=" + std::to_string(f.minutes)
                              : "/api/v1/usage?by=" + net::UrlEncode(f.by);
  for (auto [flag, value, param] : {std::tuple{"since", f.since, "sinceUnixMs"},
                                    {"until", f.until, "untilUnixMs"}}) {
    if (value.empty()) continue;
    Result<int64_t> ms = ParseWhen(value, flag);
    if (!ms.ok()) return Fail(ms.status());
    target += std::string("&") + param + "=" + std::to_string(*ms);
  }
  if (!f.tenant.empty()) target += "&tenant=" + net::UrlEncode(f.tenant);
  auto cl = Connect(c);
  if (!cl.ok()) return Fail(cl.status());
  auto r = (*cl)->Call("GET", target);
  if (!r.ok()) return Fail(r.status());
  if (f.output == "json") {
    std::cout << json::serialize(*r) << "\n";
    return kExitOk;
  }
  auto num = [](const json::value& o, const char* k, int decimals) {
    const json::value* v = o.is_object() ? o.as_object().if_contains(k) : nullptr;
    double d = v && v->is_number() ? v->to_number<double>() : 0;
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, d);
    return std::string(buf);
  };
  std::vector<std::vector<std::string>> rows;
  if (f.idle) {
    rows.push_back({"WORKLOAD", "GPUS", "IDLE-MINUTES", "WASTED-GPU-HOURS", "WASTED-COST"});
    for (const json::value& it : r->as_object().at("items").as_array()) {
      rows.push_back({JsonStr(it, {"workload"}), num(it, "gpus", 1), num(it, "idleMinutes", 1),
                      num(it, "wastedGpuHours", 3), num(it, "wastedCost", 2)});
    }
  } else {
    std::string by = f.by;
    for (char& ch : by) ch = char(std::toupper(static_cast<unsigned char>(ch)));
    // RESERVED: GPU-hours parked workloads held as quota (not charged).
    rows.push_back({by, "GPU-HOURS", "UTIL%", "COST", "RESERVED-GPU-HOURS", "WORKLOADS"});
    auto line = [&](const std::string& key, const json::value& it) {
      rows.push_back({key, num(it, "gpuHours", 3), num(it, "utilizationPct", 1),
                      num(it, "cost", 2), num(it, "reservedGpuHours", 3),
                      JsonStr(it, {"workloads"})});
    };
    for (const json::value& it : r->as_object().at("items").as_array()) {
      line(JsonStr(it, {"key"}), it);
    }
    line("TOTAL", r->as_object().at("total"));
  }
  if (f.output == "csv") {
    for (const auto& row : rows) {
      for (size_t i = 0; i < row.size(); ++i) {
        std::string cell = row[i];
        if (cell.find_first_of(",\"") != std::string::npos) {
          std::string q = "\"";
          for (char ch : cell) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
          cell = q + "\"";
        }
        std::cout << (i ? "," : "") << cell;
      }
      std::cout << "\n";
    }
    return kExitOk;
  }
  PrintTable(rows);
  return kExitOk;
}

int CmdWhoami(const ClientFlags& c) {
  auto cl = Connect(c);
  if (!cl.ok()) return Fail(cl.status());
  auto r = (*cl)->Call("GET", "/api/v1/whoami");
  if (!r.ok()) return Fail(r.status());
  std::cout << JsonStr(*r, {"user"}) << " (" << JsonStr(*r, {"role"})
            << (JsonStr(*r, {"tenant"}).empty() ? "" : " in " + JsonStr(*r, {"tenant"}))
            << ") at " << (*cl)->server() << "\n";
  return kExitOk;
}

}  // namespace allot::cli
