// A real Prometheus (Debian's `prometheus`) scraping a live `allot up`: the
// shipped rules and a scrape config like deploy/prometheus/prometheus.yml
// pass promtool, the scrape is up, and PromQL over Kueue's and DCGM's names
// returns what the API reports.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "cli/up_fixture.h"
#include "net/http.h"
#include "sched/test_util.h"

namespace allot::cli {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

// Two teams of 4 GPUs each, lending each other in cohort `all`.
std::string Cluster() {
  namespace t = sched::testing;
  return t::Namespace("team-a", "{}") + t::Namespace("team-b", "{}") + t::Flavor("h100", "") +
         t::GpuCq("cq-a", "all", "h100", "nominalQuota: 4") +
         t::GpuCq("cq-b", "all", "h100", "nominalQuota: 4") + t::LocalQueue("team-a", "q", "cq-a") +
         t::LocalQueue("team-b", "q", "cq-b");
}

std::string Sleeper(const std::string& ns, const std::string& name, int gpus) {
  return "apiVersion: allot.dev/v1\nkind: Workload\nmetadata: {name: " + name +
         ", namespace: " + ns +
         "}\nspec:\n  queueName: q\n  podSets:\n  - name: main\n    count: 1\n"
         "    template: {resources: {requests: {nvidia.com/gpu: " +
         std::to_string(gpus) + "}}, command: [sleep, '600']}\n";
}

uint16_t FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

int Shell(const std::string& cmd) {
  int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

class PrometheusTest : public testing::UpFixture {
 protected:
  void TearDown() override {
    prom_proc_.Terminate(std::chrono::seconds(30));
    UpFixture::TearDown();
  }

  // An instant PromQL query: metric labels (joined "k=v,...") -> value.
  std::map<std::string, double> Query(const std::string& promql) {
    std::map<std::string, double> out;
    auto r = prom_->Do("GET", "/api/v1/query?query=" + net::UrlEncode(promql), {}, "");
    if (!r.ok() || r->status != 200) return out;
    boost::system::error_code ec;
    json::value v = json::parse(r->body, ec);
    if (ec) return out;
    for (const json::value& s : v.at("data").at("result").as_array()) {
      std::string key;
      for (const auto& kv : s.at("metric").as_object()) {
        key += (key.empty() ? "" : ",") + std::string(kv.key()) + "=" +
               std::string(kv.value().as_string());
      }
      out[key] = std::stod(std::string(s.at("value").at(1).as_string()));
    }
    return out;
  }

  // Polls `promql` (up to 60 s) until `pred` holds.
  std::map<std::string, double> WaitQuery(
      const std::string& promql,
      const std::function<bool(const std::map<std::string, double>&)>& pred) {
    std::map<std::string, double> last;
    const bool held = allot::testing::WaitFor(
        [&] {
          last = Query(promql);
          return pred(last);
        },
        60s, 100ms);
    if (held) return last;
    std::ifstream log(dir_ + "/prometheus.log");
    std::stringstream ss;
    ss << log.rdbuf();
    ADD_FAILURE() << promql << " never held; last has " << last.size()
                  << " series\nprometheus:\n" << ss.str();
    return last;
  }

  allot::testing::ChildProcess prom_proc_;
  std::unique_ptr<net::HttpClient> prom_;
};

TEST_F(PrometheusTest, PromQlOverAllotsMetricsMatchesTheApi) {
  ASSERT_EQ(Shell("command -v prometheus >/dev/null && command -v promtool >/dev/null"), 0)
      << "Debian's prometheus package is missing (make deps installs it)";
  Start({});
  int code = 0;
  json::value r = Call("POST", "/api/v1/apply", Cluster(), &code);
  ASSERT_EQ(code, 200) << json::serialize(r);
  for (auto [ns, name, gpus] : {std::tuple{"team-a", "a3", 3}, {"team-a", "a2", 2},
                                {"team-b", "b1", 1}}) {
    r = Call("POST", "/api/v1/apply", Sleeper(ns, name, gpus), &code);
    ASSERT_EQ(code, 200) << json::serialize(r);
  }
  for (const char* key : {"team-a/a3", "team-a/a2", "team-b/b1"}) {
    WaitFor(key, [](const json::value& w) { return State(w) == "Running"; });
  }
  // Work that waits only for nodes: a 16-GPU pod within a big quota of its
  // own, more than any node has (what deploy/keda's ScaledObject scales on).
  r = Call("POST", "/api/v1/apply",
           sched::testing::GpuCq("cq-big", "", "h100", "nominalQuota: 64") +
               sched::testing::LocalQueue("team-b", "big", "cq-big"),
           &code);
  ASSERT_EQ(code, 200) << json::serialize(r);
  std::string big = Sleeper("team-b", "wide", 16);
  big.replace(big.find("queueName: q"), 12, "queueName: big");
  r = Call("POST", "/api/v1/apply", big, &code);
  ASSERT_EQ(code, 200) << json::serialize(r);
  r = Call("POST", "/api/v1/tokens", R"({"user":"prometheus","role":"metrics"})", &code);
  ASSERT_EQ(code, 201) << json::serialize(r);
  std::ofstream(dir_ + "/allot.token") << std::string(r.at("token").as_string()) << "\n";

  // The shipped rules, and a config like the shipped one pointing here.
  const std::string deploy = std::string(ALLOT_SOURCE_DIR) + "/deploy/prometheus";
  const std::string target = url_.substr(url_.find("//") + 2);
  std::ofstream(dir_ + "/prometheus.yml")
      << "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
      << "rule_files: [" << deploy << "/allot-alerts.yml]\n"
      << "scrape_configs:\n- job_name: allot\n  metrics_path: /metrics\n"
      << "  authorization: {type: Bearer, credentials_file: " << dir_ << "/allot.token}\n"
      << "  static_configs: [{targets: ['" << target << "']}]\n";
  ASSERT_EQ(Shell("promtool check config " + dir_ + "/prometheus.yml > " + dir_ +
                "/promtool.log 2>&1"), 0);
  ASSERT_EQ(Shell("promtool check rules " + deploy + "/allot-alerts.yml > /dev/null"), 0);

  const uint16_t port = FreePort();
  // env finds prometheus on the PATH, as execlp did.
  prom_proc_.Spawn({"/usr/bin/env", "prometheus", "--config.file=" + dir_ + "/prometheus.yml",
                    "--storage.tsdb.path=" + dir_ + "/tsdb",
                    "--web.listen-address=127.0.0.1:" + std::to_string(port)},
                   dir_ + "/prometheus.log", /*append=*/false);
  net::ClientOptions o;
  o.base_url = "http://127.0.0.1:" + std::to_string(port);
  auto c = net::HttpClient::Create(o);
  ASSERT_TRUE(c.ok());
  prom_ = std::move(*c);

  // The scrape is up (the metrics token authenticates).
  WaitQuery(R"(up{job="allot"})", [](const auto& m) {
    return m.size() == 1 && m.begin()->second == 1;
  });
  // The shipped KEDA ScaledObject's query reads the GPUs that wait for
  // nodes (Kueue's pending counts would say 0 active here).
  {
    std::ifstream in(std::string(ALLOT_SOURCE_DIR) + "/deploy/keda/scaledobject-gpu-pool.yaml");
    std::string line, query;
    while (std::getline(in, line)) {
      if (const size_t q = line.find("query: "); q != std::string::npos) query = line.substr(q + 7);
    }
    ASSERT_FALSE(query.empty());
    WaitQuery(query, [](const auto& m) { return m.size() == 1 && m.begin()->second == 16; });
    const std::map<std::string, double> active =
        Query(R"(kueue_pending_workloads{cluster_queue="cq-big",status="active"})");
    ASSERT_EQ(active.size(), 1u);
    EXPECT_EQ(active.begin()->second, 0);
  }
  // Kueue's usage per ClusterQueue, as the API's ClusterQueue status says.
  std::map<std::string, double> api_usage;
  for (const char* cq : {"cq-a", "cq-b"}) {
    json::value st = Get(std::string("/api/v1/clusterqueues/") + cq, &code);
    ASSERT_EQ(code, 200);
    for (const json::value& f : st.at("status").at("flavorsUsage").as_array()) {
      for (const json::value& res : f.at("resources").as_array()) {
        api_usage[std::string("cluster_queue=") + cq] +=
            std::stod(std::string(res.at("total").as_string()));
      }
    }
  }
  EXPECT_EQ(api_usage["cluster_queue=cq-a"], 5);
  EXPECT_EQ(api_usage["cluster_queue=cq-b"], 1);
  std::map<std::string, double> usage = WaitQuery(
      R"(sum by (cluster_queue) (kueue_cluster_queue_resource_usage{cluster_queue=~"cq-a|cq-b"}))",
      [&](const auto& m) { return m == api_usage; });
  EXPECT_EQ(usage, api_usage);
  // DCGM's names: 8 simulated GPUs, the 6 held ones naming their tenant.
  std::map<std::string, double> held = WaitQuery(
      R"(count by (namespace) (DCGM_FI_DEV_GPU_UTIL{simulated="true"}))",
      [](const auto& m) { return m.size() == 3; });
  EXPECT_EQ(held["namespace=team-a"], 5);
  EXPECT_EQ(held["namespace=team-b"], 1);
  EXPECT_EQ(held[""], 2);  // Free GPUs: empty namespace label.
  // The shipped alert rules evaluate against these series.
  std::map<std::string, double> rules = WaitQuery(
      R"(count(ALERTS) or vector(0))", [](const auto& m) { return !m.empty(); });
  EXPECT_FALSE(rules.empty());

  // The shipped Grafana dashboards: every panel's PromQL (its variables
  // given values that match everything) is valid PromQL, and every metric it
  // names is one Allot exports: in this scrape, or (a counter that has no
  // series until its first event, such as evictions) in docs/metrics.md.
  auto scrape = client_->Do("GET", "/metrics", {{"Authorization", "Bearer " + token_}}, "");
  ASSERT_TRUE(scrape.ok() && scrape->status == 200);
  const std::string& text = scrape->body;
  std::ifstream doc_in(std::string(ALLOT_SOURCE_DIR) + "/docs/metrics.md");
  std::stringstream doc;
  doc << doc_in.rdbuf();
  const std::regex name_re(R"(\b(kueue_[a-z_]+|DCGM_FI_[A-Z_]+|allot_[a-z_]+)\b)");
  int exprs = 0;
  for (const char* board : {"queues-and-tenants.json", "gpus.json"}) {
    std::ifstream in(std::string(ALLOT_SOURCE_DIR) + "/deploy/grafana/" + board);
    std::stringstream ss;
    ss << in.rdbuf();
    boost::system::error_code ec;
    json::value d = json::parse(ss.str(), ec);
    ASSERT_FALSE(ec) << board << ": " << ec.message();
    std::vector<std::string> found;
    std::function<void(const json::value&)> walk = [&](const json::value& v) {
      if (v.is_object()) {
        for (const auto& kv : v.as_object()) {
          if (kv.key() == "expr" && kv.value().is_string()) {
            found.emplace_back(kv.value().as_string());
          } else {
            walk(kv.value());
          }
        }
      } else if (v.is_array()) {
        for (const json::value& x : v.as_array()) walk(x);
      }
    };
    walk(d);
    EXPECT_GE(found.size(), 5u) << board;
    for (std::string e : found) {
      ++exprs;
      for (auto [var, val] : {std::pair{"$cluster_queue", ".*"}, {"$Hostname", ".*"},
                              {"$__rate_interval", "1m"}}) {
        for (size_t at; (at = e.find(var)) != std::string::npos;) e.replace(at, strlen(var), val);
      }
      auto r = prom_->Do("GET", "/api/v1/query?query=" + net::UrlEncode(e), {}, "");
      ASSERT_TRUE(r.ok()) << e;
      EXPECT_EQ(r->status, 200) << board << ": " << e << "\n" << r->body;
      for (std::sregex_iterator m(e.begin(), e.end(), name_re), end; m != end; ++m) {
        const std::string name = (*m)[1];
        const std::string base = std::regex_replace(name, std::regex("_(bucket|sum|count)$"), "");
        EXPECT_TRUE(text.find("\n" + name) != std::string::npos ||
                    doc.str().find("`" + base + "`") != std::string::npos)
            << board << " uses " << name << ", which Allot does not export";
      }
    }
  }
  EXPECT_GE(exprs, 20);

  // An autoscaler's loop on Prometheus (docs/parking.md): park what a query
  // names by its namespace and workload labels (here: team-a's workloads
  // holding GPUs), then resume what allot_workload_parked says is parked.
  Ran parked = Allot({"park", "--server", url_, "--prometheus", "http://127.0.0.1:" +
                      std::to_string(port), "--query",
                      R"(group by (namespace, workload) (DCGM_FI_DEV_GPU_UTIL{namespace="team-a"}))"},
                     token_);
  EXPECT_EQ(parked.code, 0) << parked.out << parked.err;
  EXPECT_NE(parked.out.find("workload team-a/a2 parked"), std::string::npos) << parked.out << parked.err;
  EXPECT_NE(parked.out.find("workload team-a/a3 parked"), std::string::npos) << parked.out;
  for (const char* key : {"team-a/a3", "team-a/a2"}) {
    WaitFor(key, [](const json::value& w) { return State(w) == "Parked"; });
  }
  EXPECT_EQ(State(Get("/api/v1/workloads/team-b/b1", &code)), "Running");
  WaitQuery("sum(allot_workload_parked)", [](const auto& m) {
    return m.size() == 1 && m.begin()->second == 2;
  });
  Ran resumed = Allot({"resume", "--server", url_, "--prometheus", "http://127.0.0.1:" +
                       std::to_string(port), "--query", "allot_workload_parked == 1"},
                      token_);
  EXPECT_EQ(resumed.code, 0) << resumed.out << resumed.err;
  EXPECT_NE(resumed.out.find("workload team-a/a3 resumed"), std::string::npos) << resumed.out;
  for (const char* key : {"team-a/a3", "team-a/a2"}) {
    WaitFor(key, [](const json::value& w) { return State(w) == "Running"; });
  }
  // A query whose series do not name workloads is an error saying so.
  Ran bad = Allot({"park", "--server", url_, "--prometheus", "http://127.0.0.1:" +
                   std::to_string(port), "--query", "up"},
                  token_);
  EXPECT_NE(bad.code, 0);
  EXPECT_NE((bad.out + bad.err).find("no namespace and workload labels"), std::string::npos)
      << bad.out << bad.err;
}

}  // namespace
}  // namespace allot::cli
