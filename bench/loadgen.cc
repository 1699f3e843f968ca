// allot_loadgen: an HTTP load generator for `allot serve` (see bench/README.md
// and bench/server_bench.sh).
//
// 1. Set-up (unless --no-setup): one POST /api/v1/apply with K tenants
//    (Namespaces), one ResourceFlavor, K ClusterQueues in one cohort that
//    share the nodes' GPUs equally, one LocalQueue per tenant and M nodes of
//    G GPUs. Applying the same cluster again changes nothing.
// 2. Submission (unless --list-only): C threads, each with its own
//    keep-alive HttpClient, POST /api/v1/workloads as fast as they can until
//    N distinct workloads were sent (round-robin over the tenants; each asks
//    for --gpus-per GPUs, so the first M*G/gpus-per are admitted and the rest
//    queue). Every request is timed with steady_clock around HttpClient::Do.
//    The server acknowledges (201) only once the workload is durable.
// 3. Lists (unless --no-list): GET /api/v1/workloads?limit=L, median of R,
//    and the whole list (no limit), median of --full-reps.
//
// Prints progress and a summary on stderr and one JSON line of results on
// stdout. Exit status 0 when every request got a 2xx, 1 otherwise, 2 on
// bad usage or a failed set-up.
#include <sys/resource.h>

#include <boost/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "net/http.h"

namespace {

using Clock = std::chrono::steady_clock;
namespace json = boost::json;

struct Options {
  std::string server = "http://127.0.0.1:8470";
  std::string token;
  int clients = 64;
  int64_t workloads = 10000;
  int tenants = 8;
  int nodes = 16;
  int gpus_per_node = 8;
  int gpus_per = 1;
  std::string prefix;  // Workload names: PREFIX-I. Default: from the clock.
  bool setup = true;
  bool submit = true;
  bool list = true;
  int list_limit = 10000;
  int list_reps = 5;
  int full_reps = 3;
  int timeout_ms = 60000;
  bool make_nodes = true;   // --agent-nodes: quota only; agents bring nodes.
  int64_t to_running = 0;   // --to-running N: submit-to-Running latency.
};

void Usage() {
  std::fprintf(stderr,
      "usage: allot_loadgen --server URL (--token T | --token-file F) [options]\n"
      "  --clients C        concurrent clients, one keep-alive connection each (64)\n"
      "  --workloads N      workloads to submit in total (10000)\n"
      "  --tenants K        tenants = ClusterQueues = LocalQueues (8)\n"
      "  --nodes M          nodes in the cluster (16)\n"
      "  --gpus-per-node G  GPUs per node (8)\n"
      "  --gpus-per W       GPUs each workload asks for (1)\n"
      "  --prefix P         workload names P-0 .. P-(N-1) (default: from the clock)\n"
      "  --no-setup         skip the cluster apply (it was applied already)\n"
      "  --list-only        only the list timings (no submission)\n"
      "  --no-list          only the submission (e.g. to fill the server)\n"
      "  --list-limit L     limit of the timed list (10000)\n"
      "  --list-reps R      repetitions of the limited list (5)\n"
      "  --full-reps R      repetitions of the whole list (3; 0 = skip)\n"
      "  --timeout-ms T     per-request timeout (60000)\n"
      "  --agent-nodes      create no Node objects (agents register theirs; run\n"
      "                     them with --labels allot.dev/gpu-product=BENCH-GPU);\n"
      "                     quota still from --nodes x --gpus-per-node\n"
      "  --to-running N     N times: submit one workload (sleep 30) and poll it\n"
      "                     every ms until Running, then delete it and wait\n"
      "                     300 ms (an idle cluster); reports the submit-to-\n"
      "                     Running latency (needs an agent)\n");
}

bool ParseArgs(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "allot_loadgen: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    auto num = [&]() -> int64_t {
      std::string v = val();
      char* end = nullptr;
      long long n = std::strtoll(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || n < 0) {
        std::fprintf(stderr, "allot_loadgen: %s: not a count: %s\n", a.c_str(), v.c_str());
        std::exit(2);
      }
      return n;
    };
    if (a == "--server") o->server = val();
    else if (a == "--token") o->token = val();
    else if (a == "--token-file") {
      std::ifstream f(val());
      std::getline(f, o->token);
      while (!o->token.empty() && (o->token.back() == '\r' || o->token.back() == ' '))
        o->token.pop_back();
    } else if (a == "--clients") o->clients = int(num());
    else if (a == "--workloads") o->workloads = num();
    else if (a == "--tenants") o->tenants = int(num());
    else if (a == "--nodes") o->nodes = int(num());
    else if (a == "--gpus-per-node") o->gpus_per_node = int(num());
    else if (a == "--gpus-per") o->gpus_per = int(num());
    else if (a == "--prefix") o->prefix = val();
    else if (a == "--no-setup") o->setup = false;
    else if (a == "--list-only") o->submit = false;
    else if (a == "--no-list") o->list = false;
    else if (a == "--list-limit") o->list_limit = int(num());
    else if (a == "--list-reps") o->list_reps = int(num());
    else if (a == "--full-reps") o->full_reps = int(num());
    else if (a == "--timeout-ms") o->timeout_ms = int(num());
    else if (a == "--agent-nodes") o->make_nodes = false;
    else if (a == "--to-running") o->to_running = num();
    else if (a == "-h" || a == "--help") { Usage(); std::exit(0); }
    else {
      std::fprintf(stderr, "allot_loadgen: unknown argument %s\n", a.c_str());
      Usage();
      return false;
    }
  }
  if (o->token.empty()) {
    std::fprintf(stderr, "allot_loadgen: --token or --token-file is required\n");
    return false;
  }
  if (o->clients < 1 || o->tenants < 1 || o->gpus_per < 1) {
    std::fprintf(stderr, "allot_loadgen: --clients, --tenants, --gpus-per must be >= 1\n");
    return false;
  }
  if (o->prefix.empty()) {
    o->prefix = "lg" + std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                                          std::chrono::system_clock::now().time_since_epoch())
                                          .count() % 100000000);
  }
  return true;
}

std::string Tenant(int t) { return "bench-t" + std::to_string(t); }

// The cluster as multi-document YAML (flow style, one document per object).
std::string ClusterYaml(const Options& o) {
  std::ostringstream y;
  int64_t total = int64_t(o.nodes) * o.gpus_per_node;
  auto doc = [&] { y << "---\n"; };
  doc();
  y << "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\n"
       "metadata: {name: bench-gpu}\n"
       "spec: {nodeLabels: {allot.dev/gpu-product: BENCH-GPU}}\n";
  for (int t = 0; t < o.tenants; ++t) {
    // Quota split equally; the remainder goes to the first queues.
    int64_t quota = total / o.tenants + (t < total % o.tenants ? 1 : 0);
    doc();
    y << "apiVersion: v1\nkind: Namespace\nmetadata: {name: " << Tenant(t) << "}\n";
    doc();
    y << "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\n"
         "metadata: {name: " << Tenant(t) << "-cq}\n"
         "spec:\n  cohort: bench\n  namespaceSelector: {}\n"
         "  resourceGroups:\n  - coveredResources: [nvidia.com/gpu]\n"
         "    flavors:\n    - name: bench-gpu\n"
         "      resources: [{name: nvidia.com/gpu, nominalQuota: " << quota << "}]\n";
    doc();
    y << "apiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueue\n"
         "metadata: {name: q, namespace: " << Tenant(t) << "}\n"
         "spec: {clusterQueue: " << Tenant(t) << "-cq}\n";
  }
  for (int n = 0; o.make_nodes && n < o.nodes; ++n) {
    std::string name = "bench-n" + std::to_string(n);
    doc();
    y << "apiVersion: allot.dev/v1\nkind: Node\n"
         "metadata: {name: " << name << ", labels: {allot.dev/gpu-product: BENCH-GPU}}\n"
         "status:\n  capacity: {cpu: 64, memory: 512Gi}\n  gpus: [";
    for (int g = 0; g < o.gpus_per_node; ++g) {
      y << (g ? ", " : "") << "{uuid: GPU-" << name << "-" << g << "}";
    }
    y << "]\n";
  }
  return y.str();
}

std::string WorkloadJson(const Options& o, int64_t i) {
  return R"({"apiVersion":"allot.dev/v1","kind":"Workload","metadata":{"name":")" +
         o.prefix + "-" + std::to_string(i) + R"(","namespace":")" +
         Tenant(int(i % o.tenants)) +
         R"("},"spec":{"queueName":"q","podSets":[{"count":1,"template":{"resources":{"requests":{"nvidia.com/gpu":)" +
         std::to_string(o.gpus_per) + "}}}}]}}";
}

std::unique_ptr<allot::net::HttpClient> NewClient(const Options& o) {
  allot::net::ClientOptions co;
  co.base_url = o.server;
  co.timeout_ms = o.timeout_ms;
  auto c = allot::net::HttpClient::Create(co);
  if (!c.ok()) {
    std::fprintf(stderr, "allot_loadgen: %s\n", c.status().ToString().c_str());
    std::exit(2);
  }
  return std::move(*c);
}

// CPU seconds (user + system) this process has used so far.
double CpuS() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

double Ms(Clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

// Nearest-rank percentile of sorted values.
double Pct(const std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  size_t k = size_t(p / 100.0 * double(v.size()) + 0.999999);
  return v[std::min(v.size() - 1, k == 0 ? 0 : k - 1)];
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct Errors {
  std::mutex mu;
  std::map<std::string, int64_t> by_kind;  // "409", "transport", ...
  std::vector<std::string> samples;        // First few messages.
  void Add(const std::string& kind, const std::string& msg) {
    std::lock_guard<std::mutex> l(mu);
    ++by_kind[kind];
    if (samples.size() < 5) samples.push_back(kind + ": " + msg.substr(0, 300));
  }
};

// The result line: keys in insertion order, numbers with 2 decimals at most
// (Boost.JSON would print doubles as 2.07E3).
class Line {
 public:
  void Num(const std::string& k, double v) {
    char buf[64];
    if (v == double(int64_t(v))) std::snprintf(buf, sizeof buf, "%lld", (long long)v);
    else std::snprintf(buf, sizeof buf, "%.2f", v);
    Raw(k, buf);
  }
  void Str(const std::string& k, const std::string& v) {
    Raw(k, json::serialize(json::value(v)));
  }
  void Raw(const std::string& k, const std::string& v) {
    out_ += (out_.empty() ? "{" : ",") + json::serialize(json::value(k)) + ":" + v;
  }
  std::string Done() const { return out_ + "}"; }

 private:
  std::string out_;
};

struct SubmitResult {
  int64_t sent = 0, acked = 0;
  double wall_s = 0;
  std::vector<double> lat_ms;  // Sorted; acknowledged requests only.
};

SubmitResult Submit(const Options& o, Errors* errors) {
  const std::vector<std::pair<std::string, std::string>> headers = {
      {"Authorization", "Bearer " + o.token}, {"Content-Type", "application/json"}};
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> acked{0};
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::vector<double>> lat(size_t(o.clients));
  std::vector<std::thread> threads;
  for (int c = 0; c < o.clients; ++c) {
    threads.emplace_back([&, c] {
      auto client = NewClient(o);
      std::vector<double>& mine = lat[size_t(c)];
      mine.reserve(size_t(o.workloads / o.clients + 1));
      ++ready;
      while (!go.load()) std::this_thread::yield();
      for (;;) {
        int64_t i = next.fetch_add(1);
        if (i >= o.workloads) break;
        std::string body = WorkloadJson(o, i);
        Clock::time_point t0 = Clock::now();
        auto r = client->Do("POST", "/api/v1/workloads", headers, body);
        double ms = Ms(Clock::now() - t0);
        if (!r.ok()) {
          errors->Add("transport", r.status().ToString());
          client = NewClient(o);
        } else if (r->status / 100 != 2) {
          errors->Add(std::to_string(r->status), r->body);
        } else {
          mine.push_back(ms);
          ++acked;
        }
      }
    });
  }
  while (ready.load() < o.clients) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  Clock::time_point start = Clock::now();
  go = true;
  // Progress every 5 s on stderr.
  std::atomic<bool> done{false};
  std::thread progress([&] {
    int64_t last = 0;
    Clock::time_point lt = start;
    while (!done.load()) {
      for (int k = 0; k < 50 && !done.load(); ++k)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (done.load()) break;
      int64_t a = acked.load();
      Clock::time_point now = Clock::now();
      std::fprintf(stderr, "  %lld acknowledged, %.0f/s in the last interval\n",
                   (long long)a, double(a - last) / (Ms(now - lt) / 1000));
      last = a;
      lt = now;
    }
  });
  for (auto& t : threads) t.join();
  SubmitResult res;
  res.wall_s = Ms(Clock::now() - start) / 1000;
  done = true;
  progress.join();
  res.sent = std::min<int64_t>(next.load(), o.workloads);
  res.acked = acked.load();
  for (auto& v : lat) res.lat_ms.insert(res.lat_ms.end(), v.begin(), v.end());
  std::sort(res.lat_ms.begin(), res.lat_ms.end());
  return res;
}

struct ListResult {
  std::vector<double> ms;
  int64_t items = 0;
  size_t bytes = 0;
  bool ok = true;
};

ListResult TimeList(const Options& o, allot::net::HttpClient* client,
                    const std::string& target, int reps, Errors* errors) {
  const std::vector<std::pair<std::string, std::string>> headers = {
      {"Authorization", "Bearer " + o.token}};
  ListResult res;
  for (int i = 0; i < reps; ++i) {
    Clock::time_point t0 = Clock::now();
    auto r = client->Do("GET", target, headers, "");
    double ms = Ms(Clock::now() - t0);
    if (!r.ok() || r->status != 200) {
      errors->Add(r.ok() ? std::to_string(r->status) : "transport",
                  r.ok() ? r->body : r.status().ToString());
      res.ok = false;
      continue;
    }
    res.ms.push_back(ms);
    if (i == 0) {  // Count items once, outside the timed region.
      res.bytes = r->body.size();
      boost::system::error_code ec;
      json::value v = json::parse(r->body, ec);
      if (!ec && v.is_object() && v.as_object().contains("items"))
        res.items = int64_t(v.at("items").as_array().size());
    }
  }
  return res;
}

}  // namespace

// Submits one workload at a time and polls it every millisecond until an
// agent reports its pod running; deletes it before the next.
std::vector<double> ToRunning(const Options& o, Errors* errors) {
  std::vector<double> ms;
  auto c = NewClient(o);
  const std::vector<std::pair<std::string, std::string>> auth = {
      {"Authorization", "Bearer " + o.token}, {"Content-Type", "application/json"}};
  for (int64_t i = 0; i < o.to_running; ++i) {
    std::string name = o.prefix + "-run-" + std::to_string(i);
    std::string body =
        R"({"apiVersion":"allot.dev/v1","kind":"Workload","metadata":{"name":")" + name +
        R"(","namespace":")" + Tenant(0) +
        R"(","annotations":{"allot.dev/termination-grace-period":"1s"}},"spec":{"queueName":"q","podSets":[{"count":1,"template":{"resources":{"requests":{"nvidia.com/gpu":)" +
        std::to_string(o.gpus_per) + R"(}},"command":["sleep","30"]}}]}})";
    Clock::time_point t0 = Clock::now();
    auto r = c->Do("POST", "/api/v1/workloads", auth, body);
    if (!r.ok() || r->status != 201) {
      errors->Add("submit", r.ok() ? std::to_string(r->status) + " " + r->body
                                   : r.status().ToString());
      continue;
    }
    const std::string target = "/api/v1/workloads/" + Tenant(0) + "/" + name;
    bool running = false;
    while (!running && Clock::now() - t0 < std::chrono::seconds(10)) {
      auto g = c->Do("GET", target, auth, "");
      running = g.ok() && g->body.find("\"state\":\"Running\"") != std::string::npos;
      if (!running) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (running) {
      ms.push_back(Ms(Clock::now() - t0));
    } else {
      errors->Add("to-running", name + " not Running within 10 s");
    }
    auto d = c->Do("DELETE", target, auth, "");
    if (!d.ok() || d->status != 200) errors->Add("delete", name);
    // Idle cluster: the pod's stop (SIGTERM, exit, reported) is done
    // before the next submission, which may get the same GPU.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  std::sort(ms.begin(), ms.end());
  return ms;
}

int main(int argc, char** argv) {
  Options o;
  if (!ParseArgs(argc, argv, &o)) return 2;
  Errors errors;
  Line out;
  out.Str("server", o.server);
  out.Num("clients", o.clients);

  if (o.setup) {
    auto c = NewClient(o);
    std::string yaml = ClusterYaml(o);
    Clock::time_point t0 = Clock::now();
    auto r = c->Do("POST", "/api/v1/apply",
                   {{"Authorization", "Bearer " + o.token},
                    {"Content-Type", "application/yaml"}},
                   yaml);
    if (!r.ok() || r->status != 200) {
      std::fprintf(stderr, "allot_loadgen: apply failed: %s\n",
                   r.ok() ? (std::to_string(r->status) + " " + r->body).c_str()
                          : r.status().ToString().c_str());
      return 2;
    }
    out.Num("setupMs", Ms(Clock::now() - t0));
    std::fprintf(stderr, "cluster: %d tenants, %d nodes x %d GPUs (applied in %.1f ms)\n",
                 o.tenants, o.nodes, o.gpus_per_node, Ms(Clock::now() - t0));
  }

  if (o.to_running > 0) {
    std::vector<double> l = ToRunning(o, &errors);
    std::fprintf(stderr,
                 "submit-to-Running over %zu: ms p50 %.2f p90 %.2f p99 %.2f max %.2f\n",
                 l.size(), Pct(l, 50), Pct(l, 90), Pct(l, 99), l.empty() ? 0 : l.back());
    out.Num("toRunning", double(l.size()));
    out.Num("toRunningP50Ms", Pct(l, 50));
    out.Num("toRunningP90Ms", Pct(l, 90));
    out.Num("toRunningP99Ms", Pct(l, 99));
    out.Num("toRunningMaxMs", l.empty() ? 0 : l.back());
    o.submit = false;
    o.list = false;
  }

  if (o.submit) {
    std::fprintf(stderr, "submitting %lld workloads (%s-*) with %d clients\n",
                 (long long)o.workloads, o.prefix.c_str(), o.clients);
    double cpu0 = CpuS();
    SubmitResult s = Submit(o, &errors);
    double cpu_s = CpuS() - cpu0;
    const std::vector<double>& l = s.lat_ms;
    double rate = s.wall_s > 0 ? double(s.acked) / s.wall_s : 0;
    std::fprintf(stderr,
                 "submitted %lld, acknowledged %lld in %.2f s: %.0f/s; latency ms "
                 "p50 %.2f p90 %.2f p99 %.2f max %.2f\n",
                 (long long)s.sent, (long long)s.acked, s.wall_s, rate, Pct(l, 50),
                 Pct(l, 90), Pct(l, 99), l.empty() ? 0 : l.back());
    out.Num("workloads", s.sent);
    out.Num("acknowledged", s.acked);
    out.Num("wallS", s.wall_s);
    out.Num("submitPerS", rate);
    out.Num("p50Ms", Pct(l, 50));
    out.Num("p90Ms", Pct(l, 90));
    out.Num("p99Ms", Pct(l, 99));
    out.Num("maxMs", l.empty() ? 0 : l.back());
    // The load generator's own CPU per acknowledged submission: on a
    // 2-core machine it competes with the server for the same cores.
    out.Num("clientCpuUsPerSubmit", s.acked ? cpu_s * 1e6 / double(s.acked) : 0);
  }

  if (o.list) {
    auto c = NewClient(o);
    std::string target = "/api/v1/workloads?limit=" + std::to_string(o.list_limit);
    ListResult lim = TimeList(o, c.get(), target, o.list_reps, &errors);
    std::fprintf(stderr, "GET %s: median %.1f ms over %zu, %lld items, %zu bytes\n",
                 target.c_str(), Median(lim.ms), lim.ms.size(), (long long)lim.items,
                 lim.bytes);
    out.Num("listLimit", o.list_limit);
    out.Num("listMedianMs", Median(lim.ms));
    out.Num("listMinMs",
            lim.ms.empty() ? 0 : *std::min_element(lim.ms.begin(), lim.ms.end()));
    out.Num("listItems", lim.items);
    out.Num("listBytes", lim.bytes);
    if (o.full_reps > 0) {
      ListResult full = TimeList(o, c.get(), "/api/v1/workloads", o.full_reps, &errors);
      std::fprintf(stderr, "GET /api/v1/workloads: median %.1f ms over %zu, %lld items, %zu bytes\n",
                   Median(full.ms), full.ms.size(), (long long)full.items, full.bytes);
      out.Num("fullListMedianMs", Median(full.ms));
      out.Num("fullListItems", full.items);
      out.Num("fullListBytes", full.bytes);
    }
  }

  int64_t nerr = 0;
  json::object by;
  for (const auto& [k, n] : errors.by_kind) {
    by[k] = n;
    nerr += n;
  }
  out.Num("errors", nerr);
  out.Raw("errorsByKind", json::serialize(by));
  json::array samples;
  for (const std::string& s : errors.samples) samples.push_back(json::value(s));
  out.Raw("errorSamples", json::serialize(samples));
  for (const std::string& s : errors.samples) std::fprintf(stderr, "error: %s\n", s.c_str());
  std::printf("%s\n", out.Done().c_str());
  return nerr == 0 ? 0 : 1;
}
