#include "cli/notebook.h"

#include <boost/json.hpp>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <vector>

#include "cli/commands.h"
#include "net/http.h"

namespace allot::cli {
namespace json = boost::json;

namespace {

// A YAML double-quoted scalar (JSON's quoting is YAML's).
std::string Q(const std::string& s) { return json::serialize(json::value(s)); }

std::string WorkloadPath(const std::string& tenant, const std::string& name) {
  return "/api/v1/workloads/" + net::UrlEncode(tenant) + "/" + net::UrlEncode(name);
}

// A verb on one notebook: its name given, a client, and its tenant.
struct Target {
  std::unique_ptr<Client> cl;
  std::string tenant;
  std::string path;  // Its workload's API path.
};
Result<Target> Connect(const ClientFlags& c, const NotebookFlags& f) {
  if (f.name.empty()) return Status::InvalidArgument("name the notebook", "name");
  auto cl = Client::Connect(c);
  if (!cl.ok()) return cl.status();
  Result<std::string> t = (*cl)->Tenant(f.tenant);
  if (!t.ok()) return t.status();
  const std::string path = WorkloadPath(*t, f.name);
  return Target{std::move(*cl), *t, path};
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// "45s", "12m", "3h", "2d": a span of `ms` milliseconds for people.
std::string Span(int64_t ms) {
  const int64_t s = std::max<int64_t>(0, ms / 1000);
  if (s < 120) return std::to_string(s) + "s";
  if (s < 7200) return std::to_string(s / 60) + "m";
  if (s < 172800) return std::to_string(s / 3600) + "h";
  return std::to_string(s / 86400) + "d";
}

}  // namespace

std::string NotebookManifest(const NotebookFlags& f, const std::string& tenant) {
  std::ostringstream y;
  y << "apiVersion: allot.dev/v1\nkind: Notebook\nmetadata:\n  name: " << Q(f.name)
    << "\n  namespace: " << Q(tenant) << "\nspec:\n";
  if (!f.queue.empty()) y << "  queueName: " << Q(f.queue) << "\n";
  if (f.gpus > 0) y << "  gpus: " << f.gpus << "\n";
  if (!f.mig.empty()) y << "  mig: " << Q(f.mig) << "\n";
  if (!f.image.empty()) y << "  image: " << Q(f.image) << "\n";
  if (!f.idle_after.empty()) y << "  idleAfter: " << Q(f.idle_after) << "\n";
  if (!f.cpu.empty() || !f.memory.empty()) {
    y << "  resources:\n    requests:\n";
    if (!f.cpu.empty()) y << "      cpu: " << Q(f.cpu) << "\n";
    if (!f.memory.empty()) y << "      memory: " << Q(f.memory) << "\n";
  }
  return y.str();
}

int CmdNotebookCreate(const ClientFlags& c, const NotebookFlags& f) {
  if (f.gpus > 0 && !f.mig.empty()) {
    return Fail(Status::InvalidArgument("give --gpus or --mig, not both", "mig"));
  }
  Result<Target> t = Connect(c, f);
  if (!t.ok()) return Fail(t.status());
  auto r = t->cl->Call("POST", "/api/v1/apply", NotebookManifest(f, t->tenant), "application/yaml");
  if (!r.ok()) return Fail(r.status());
  auto w = t->cl->Call("GET", t->path);
  std::cout << "notebook " << t->tenant << "/" << f.name << " "
            << JsonStr(r->as_object().at("results").as_array().at(0), {"action"});
  if (w.ok()) {
    std::cout << ": " << JsonStr(*w, {"status", "state"});
    const std::string why = JsonStr(*w, {"status", "pendingReason"});
    if (!why.empty()) std::cout << " (" << why << ")";
  }
  std::cout << "\nopen it with: allot notebook open " << f.name
            << (f.tenant.empty() ? "" : " -t " + f.tenant) << "\n";
  return kExitOk;
}

int CmdNotebookList(const ClientFlags& c, const NotebookFlags& f) {
  auto cl = Client::Connect(c);
  if (!cl.ok()) return Fail(cl.status());
  std::string q;
  if (!f.tenant.empty()) q = "?tenant=" + net::UrlEncode(f.tenant);
  auto r = (*cl)->Call("GET", "/api/v1/workloads" + q);
  if (!r.ok()) return Fail(r.status());
  std::vector<std::vector<std::string>> rows = {
      {"TENANT", "NAME", "STATE", "GPUS", "QUEUE", "LAST ACTIVITY", "IDLE PARKING", "PATH"}};
  for (const json::value& o : r->as_object().at("items").as_array()) {
    if (JsonStr(o, {"spec", "type"}) != "notebook") continue;
    const std::string ns = JsonStr(o, {"metadata", "namespace"});
    const std::string name = JsonStr(o, {"metadata", "name"});
    std::string gpus = "0";
    if (const json::value* ps = JsonAt(o, {"spec", "podSets"}); ps && ps->is_array()) {
      for (const json::value& p : ps->as_array()) {
        if (const json::value* req = JsonAt(p, {"template", "resources", "requests"});
            req && req->is_object()) {
          for (const auto& [k, v] : req->as_object()) {
            if (k == "nvidia.com/gpu") gpus = JsonStr(v, {});
            if (std::string(k).starts_with("nvidia.com/mig-")) {
              gpus = std::string(k).substr(15);
            }
          }
        }
      }
    }
    const json::value* last = JsonAt(o, {"status", "lastActivityUnixMs"});
    // The idle parker's clock (status.idleAfterSeconds, .parkAtUnixMs).
    std::string parking = "-";
    const json::value* after = JsonAt(o, {"status", "idleAfterSeconds"});
    const json::value* at = JsonAt(o, {"status", "parkAtUnixMs"});
    if (at && at->is_int64()) {
      parking = "in " + Span(at->as_int64() - NowMs());
    } else if (after && after->is_int64()) {
      parking = "after " + Span(after->as_int64() * 1000) + " idle";
    }
    rows.push_back({ns, name, JsonStr(o, {"status", "state"}), gpus,
                    JsonStr(o, {"spec", "queueName"}),
                    last && last->is_int64() ? Span(NowMs() - last->as_int64()) + " ago" : "-", parking,
                    "/notebooks/" + ns + "/" + name + "/"});
  }
  if (rows.size() == 1) {
    std::cout << "no notebooks\n";
    return kExitOk;
  }
  PrintTable(rows);
  return kExitOk;
}

int CmdNotebookOpen(const ClientFlags& c, const NotebookFlags& f) {
  Result<Target> t = Connect(c, f);
  if (!t.ok()) return Fail(t.status());
  auto r = t->cl->Call("POST", t->path + "/open");
  if (!r.ok()) return Fail(r.status());
  std::string server = t->cl->server();
  while (server.ends_with("/")) server.pop_back();
  const std::string url = server + JsonStr(*r, {"url"});
  std::cerr << "notebook " << t->tenant << "/" << f.name << " is " << JsonStr(*r, {"state"})
            << "; this link signs a browser in once, within 2 minutes:\n";
  std::cout << url << "\n";
  if (f.browser) {
    const std::string cmd = "xdg-open '" + url + "' >/dev/null 2>&1 &";
    if (std::system(cmd.c_str()) != 0) std::cerr << "allot: could not start a browser\n";
  }
  return kExitOk;
}

int CmdNotebookStop(const ClientFlags& c, const NotebookFlags& f) {
  Result<Target> t = Connect(c, f);
  if (!t.ok()) return Fail(t.status());
  auto r = t->cl->Call("POST", t->path + "/park");
  if (!r.ok()) return Fail(r.status());
  std::cout << "notebook " << t->tenant << "/" << f.name << " stopped (" << JsonStr(*r, {"result"})
            << ": its GPUs are free, its files and its quota kept; open it to resume)\n";
  return kExitOk;
}

int CmdNotebookDelete(const ClientFlags& c, const NotebookFlags& f) {
  Result<Target> t = Connect(c, f);
  if (!t.ok()) return Fail(t.status());
  auto r = t->cl->Call("DELETE", t->path);
  if (!r.ok()) return Fail(r.status());
  std::cout << "notebook " << t->tenant << "/" << f.name
            << " deleted (its files stay in the tenant's home on its node)\n";
  return kExitOk;
}

}  // namespace allot::cli
