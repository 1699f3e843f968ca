// `allot simulate --from-history` against a live server: a real `allot up`
// (simulated GPUs, real pod processes) runs workloads of several shapes,
// tenants and queues, some that fail, one deleted, one still running, one
// pending; then the real binary replays what the server recorded, and the
// replay is checked against the server's own record of each workload.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "cli/simulate.h"
#include "cli/up_fixture.h"
#include "sched/test_util.h"

namespace allot::cli {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

// The server's quotas: `quota` GPUs per team, lent within the cohort.
std::string Cluster(int quota) {
  namespace t = sched::testing;
  const std::string q = "nominalQuota: " + std::to_string(quota);
  return t::Namespace("team-a", "{}") + t::Namespace("team-b", "{}") + t::Flavor("h100", "") +
         t::GpuCq("cq-a", "all", "h100", q) + t::GpuCq("cq-b", "all", "h100", q) +
         t::LocalQueue("team-a", "q", "cq-a") + t::LocalQueue("team-a", "dev", "cq-a") +
         t::LocalQueue("team-b", "q", "cq-b");
}

struct Shape {
  std::string tenant, name, queue, type;
  int pods = 1, gpus = 0, priority = 0;
  std::string command;  // Flow-style YAML list.
};

std::string WorkloadYaml(const Shape& s) {
  std::string y = "apiVersion: allot.dev/v1\nkind: Workload\nmetadata: {name: " + s.name +
                  ", namespace: " + s.tenant + "}\nspec:\n  queueName: " + s.queue + "\n";
  if (!s.type.empty()) y += "  type: " + s.type + "\n";
  if (s.priority != 0) y += "  priority: " + std::to_string(s.priority) + "\n";
  y += "  podSets:\n  - name: main\n    count: " + std::to_string(s.pods) + "\n    template: {";
  if (s.gpus > 0) {
    y += "resources: {requests: {nvidia.com/gpu: " + std::to_string(s.gpus) + "}}, ";
  }
  return y + "command: " + s.command + "}\n";
}

// "2026-12-03T11:53:46.104Z" -> Unix ms, independently of sim/history.cc;
// a time on a whole second has no fraction ("2026-12-07T18:01:02Z", as
// core::FormatRfc3339Ms writes it).
int64_t UnixMs(const std::string& ts) {
  std::tm tm{};
  int ms = 0;
  const int n = std::sscanf(ts.c_str(), "%d-%d-%dT%d:%d:%d.%dZ", &tm.tm_year, &tm.tm_mon,
                            &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ms);
  EXPECT_TRUE(n == 7 || (n == 6 && ts.find('.') == std::string::npos)) << ts;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return int64_t(timegm(&tm)) * 1000 + ms;
}

int64_t ConditionMs(const json::value& w, const std::string& type) {
  for (const json::value& c : w.at("status").at("conditions").as_array()) {
    if (c.at("type").as_string() == type && c.at("status").as_string() == "True") {
      return c.at("lastTransitionUnixMs").as_int64();
    }
  }
  return -1;
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class HistoryE2eTest : public testing::UpFixture {
 protected:
  // Runs `allot simulate ARGS` (UpFixture::Allot).
  Ran Simulate(std::vector<std::string> args, const std::string& token = "") {
    args.insert(args.begin(), "simulate");
    return Allot(std::move(args), token);
  }

  std::string WriteConfig(const std::string& name, int quota, int nodes, int gpus) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << Cluster(quota)
                        << "---\napiVersion: allot.dev/v1\nkind: NodePool\n"
                           "metadata: {name: sim}\nspec: {count: "
                        << nodes << ", gpus: " << gpus << "}\n";
    return path;
  }

  std::string NewToken(const std::string& body) {
    int code = 0;
    json::value r = Call("POST", "/api/v1/tokens", body, &code);
    EXPECT_EQ(code, 201) << json::serialize(r);
    return code == 201 ? std::string(r.at("token").as_string()) : "";
  }

  void Submit(const Shape& s) {
    int code = 0;
    json::value r = Call("POST", "/api/v1/apply", WorkloadYaml(s), &code);
    ASSERT_EQ(code, 200) << json::serialize(r);
  }

  static bool Done(const json::value& w) {
    return State(w) == "Succeeded" || State(w) == "Failed";
  }
};

// What "what the server recorded" means, workload by workload:
//   a1, a2 (a 2-pod gang in another queue), b2 (priority 5) succeeded and
//   b1 exited 3 (Failed): all four held GPUs, all four are replayed, with
//   run time = Finished - Admitted as the server wrote them;
//   run is still running when the history is read: replayed with its run
//   time so far;
//   gone was deleted while running: the server forgets deleted workloads,
//   so it is not in the history (its GPU-hours stay in `allot usage`);
//   big (8 GPUs while run holds one) is pending: left out, counted;
//   cpu asked for no GPUs: left out, counted.
TEST_F(HistoryE2eTest, ReplaysWhatTheServerRecorded) {
  Start({});
  int code = 0;
  json::value r = Call("POST", "/api/v1/apply", Cluster(4), &code);
  ASSERT_EQ(code, 200) << json::serialize(r);

  Submit({"team-a", "run", "q", "", 1, 1, 0, "[sleep, '600']"});
  Submit({"team-b", "gone", "q", "", 1, 1, 0, "[sleep, '600']"});
  for (const char* key : {"team-a/run", "team-b/gone"}) {
    WaitFor(key, [](const json::value& w) { return State(w) == "Running"; });
  }
  Call("DELETE", "/api/v1/workloads/team-b/gone", "", &code);
  ASSERT_EQ(code, 200);
  const std::vector<Shape> finite = {
      {"team-a", "a1", "q", "", 1, 2, 0, "[sleep, '1']"},
      {"team-a", "a2", "dev", "training", 2, 1, 0, "[sleep, '1']"},
      {"team-b", "b1", "q", "", 1, 1, 0, "[sh, -c, 'exit 3']"},
      {"team-b", "b2", "q", "", 1, 4, 5, "[sleep, '2']"},
  };
  for (const Shape& s : finite) {
    Submit(s);
    std::this_thread::sleep_for(200ms);  // Distinct submit times.
  }
  for (const Shape& s : finite) WaitFor(s.tenant + "/" + s.name, Done);
  Submit({"team-b", "big", "q", "", 1, 8, 0, "[sleep, '1']"});
  Submit({"team-a", "cpu", "q", "", 1, 0, 0, "['true']"});
  WaitFor("team-a/cpu", Done);
  EXPECT_EQ(State(Get("/api/v1/workloads/team-b/big", &code)), "Pending");
  EXPECT_EQ(State(Get("/api/v1/workloads/team-b/b1", &code)), "Failed");

  // The server's record: submit and run times of the replayed workloads.
  json::value list = Get("/api/v1/workloads", &code);
  ASSERT_EQ(code, 200);
  std::map<std::string, json::value> rec;
  for (const json::value& w : list.at("items").as_array()) {
    rec[std::string(w.at("metadata").at("name").as_string())] = w;
  }
  ASSERT_EQ(rec.size(), 7u);  // Not gone.
  std::map<std::string, int64_t> submit, run_ms;
  for (const char* n : {"a1", "a2", "b1", "b2", "run"}) {
    submit[n] = UnixMs(std::string(rec[n].at("metadata").at("creationTimestamp").as_string()));
    if (std::string(n) != "run") {
      run_ms[n] = ConditionMs(rec[n], "Finished") - ConditionMs(rec[n], "Admitted");
      EXPECT_GT(run_ms[n], 0) << n;
    }
  }
  const int64_t run_admitted = ConditionMs(rec["run"], "Admitted");
  const int64_t origin = submit["run"];  // Submitted first.

  // Page by page (2 a page: 4 pages) and in one page, in this process.
  {
    ClientFlags cf;
    cf.server = url_;
    cf.token = token_;
    auto client = Client::Connect(cf);
    ASSERT_TRUE(client.ok());
    const int64_t before = NowMs();
    auto paged = FetchHistory(**client, 2);
    auto whole = FetchHistory(**client);
    const int64_t after = NowMs();
    ASSERT_TRUE(paged.ok()) << paged.status().message();
    ASSERT_TRUE(whole.ok()) << whole.status().message();
    EXPECT_EQ(paged->rows, 7);
    ASSERT_EQ(paged->jobs.size(), 5u);
    ASSERT_EQ(whole->jobs.size(), 5u);
    for (const sim::TraceJob& j : paged->jobs) {
      SCOPED_TRACE(j.name);
      ASSERT_TRUE(submit.count(j.name));
      EXPECT_EQ(j.submit_ms, submit[j.name] - origin);
      if (j.name == "run") {
        EXPECT_GE(j.duration_ms, before - run_admitted);
        EXPECT_LE(j.duration_ms, after - run_admitted);
      } else {
        EXPECT_EQ(j.duration_ms, run_ms[j.name]);
      }
      const auto it = std::find_if(finite.begin(), finite.end(),
                                   [&](const Shape& s) { return s.name == j.name; });
      const Shape want = it != finite.end() ? *it : Shape{"team-a", "run", "q", "", 1, 1, 0, ""};
      EXPECT_EQ(j.tenant, want.tenant);
      EXPECT_EQ(j.queue, want.queue);
      EXPECT_EQ(j.pods, want.pods);
      EXPECT_EQ(j.gpus, want.gpus);
      EXPECT_EQ(j.type, want.type.empty() ? "batch" : want.type);
      EXPECT_EQ(j.priority, std::to_string(want.priority));
    }
    for (size_t i = 0; i < 5; ++i) {
      EXPECT_EQ(paged->jobs[i].name, whole->jobs[i].name);
      EXPECT_EQ(paged->jobs[i].submit_ms, whole->jobs[i].submit_ms);
    }
    EXPECT_EQ(json::serialize(json::value_from(paged->notes)),
              json::serialize(json::value_from(whole->notes)));
  }

  // The real binary, on a cluster where nothing waits: every job runs
  // for its recorded time from its recorded submit time.
  const std::string roomy = WriteConfig("roomy.yaml", 16, 2, 8);
  const int64_t before = NowMs();
  Ran out = Simulate({"--from-history", url_, "--token", token_, "-f", roomy});
  const int64_t after = NowMs();
  ASSERT_EQ(out.code, 0) << out.err;
  json::value s = json::parse(out.out);
  const json::value& jobs = s.at("jobs");
  EXPECT_EQ(jobs.at("submitted").as_int64(), 5);
  EXPECT_EQ(jobs.at("completed").as_int64(), 5);
  EXPECT_EQ(jobs.at("rejected").as_int64(), 0);
  EXPECT_EQ(s.at("trace").at("rows").as_int64(), 7);
  EXPECT_EQ(s.at("trace").at("malformedRows").as_int64(), 0);
  const std::string notes = json::serialize(s.at("trace").at("notes"));
  EXPECT_NE(notes.find("1 workloads still running when the history was read"), std::string::npos)
      << notes;
  EXPECT_NE(notes.find("1 workloads not admitted"), std::string::npos) << notes;
  EXPECT_NE(notes.find("1 workloads requesting no GPUs"), std::string::npos) << notes;
  EXPECT_NE(out.err.find("allot: note: 1 workloads still running"), std::string::npos) << out.err;
  EXPECT_EQ(s.at("queueingDelaySeconds").at("max").to_number<double>(), 0);
  const json::value& ta = s.at("tenants").at("team-a");
  const json::value& tb = s.at("tenants").at("team-b");
  EXPECT_EQ(s.at("tenants").as_object().size(), 2u);
  EXPECT_EQ(ta.at("jobs").as_int64(), 3);
  EXPECT_EQ(tb.at("jobs").as_int64(), 2);
  // Job completion time = run time here; seconds, rounded to 4 places.
  auto secs = [](int64_t ms) { return double(ms) / 1000; };
  const json::value& bj = tb.at("jctSeconds");
  EXPECT_NEAR(bj.at("max").to_number<double>(), secs(std::max(run_ms["b1"], run_ms["b2"])), 1e-3);
  EXPECT_NEAR(bj.at("mean").to_number<double>(), secs(run_ms["b1"] + run_ms["b2"]) / 2, 1e-3);
  // team-a: a1 and a2 ran inside run's time, so run is the longest.
  const json::value& aj = ta.at("jctSeconds");
  EXPECT_NEAR(aj.at("p50").to_number<double>(), secs(std::max(run_ms["a1"], run_ms["a2"])), 1e-3);
  EXPECT_GE(aj.at("max").to_number<double>(), secs(before - run_admitted) - 1e-3);
  EXPECT_LE(aj.at("max").to_number<double>(), secs(after - run_admitted) + 1e-3);
  // From the first submission (run's) to the end of run's time so far.
  EXPECT_GE(s.at("makespanSeconds").to_number<double>(), secs(before - origin) - 1e-3);
  EXPECT_LE(s.at("makespanSeconds").to_number<double>(), secs(after - origin) + 1e-3);

  // One node of 4 GPUs: run keeps one the whole time, so b2 (4 GPUs) waits
  // for its end, and the others queue behind each other.
  const std::string small = WriteConfig("small.yaml", 4, 1, 4);
  out = Simulate({"--from-history", url_, "-f", small}, token_);  // ALLOT_TOKEN.
  ASSERT_EQ(out.code, 0) << out.err;
  s = json::parse(out.out);
  EXPECT_EQ(s.at("jobs").at("completed").as_int64(), 5);
  EXPECT_GT(s.at("queueingDelaySeconds").at("max").to_number<double>(), 1.0);
  // b2 starts when run ends: run_admitted..before at least, from 0.
  EXPECT_GE(s.at("tenants").at("team-b").at("queueingDelaySeconds").at("max").to_number<double>(),
            secs(before - run_admitted) - secs(submit["b2"] - origin) - 1e-3);
}

// MIG slices as the server lists them (`nvidia.com/mig-1g.10gb: "2"`): a
// notebook on a MIG node of the manifests (no agent runs it, so it stays
// admitted: holding its slices, it is replayed as running until the read).
constexpr char kMig[] = R"(
apiVersion: v1
kind: Namespace
metadata: {name: team-m}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: a100}
spec:
  nodeLabels: {gpu: a100}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq-m}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/mig-1g.10gb]
    flavors:
    - name: a100
      resources: [{name: nvidia.com/mig-1g.10gb, nominalQuota: 7}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: q, namespace: team-m}
spec: {clusterQueue: cq-m}
---
apiVersion: allot.dev/v1
kind: Node
metadata: {name: migbox, labels: {gpu: a100}}
status:
  capacity: {cpu: 64, memory: 512Gi}
  gpus:
  - uuid: GPU-A
    mig: [{uuid: MIG-0, profile: 1g.10gb}, {uuid: MIG-1, profile: 1g.10gb}, {uuid: MIG-2, profile: 1g.10gb}]
)";

TEST_F(HistoryE2eTest, MigSlices) {
  Start({});
  int code = 0;
  json::value r = Call("POST", "/api/v1/apply", kMig, &code);
  ASSERT_EQ(code, 200) << json::serialize(r);
  r = Call("POST", "/api/v1/apply",
           "apiVersion: allot.dev/v1\nkind: Workload\nmetadata: {name: nb, namespace: team-m}\n"
           "spec:\n  queueName: q\n  type: notebook\n  podSets:\n  - name: main\n    count: 1\n"
           "    template: {resources: {requests: {nvidia.com/mig-1g.10gb: 2}}, command: [sleep, '600']}\n",
           &code);
  ASSERT_EQ(code, 200) << json::serialize(r);
  json::value nb = WaitFor("team-m/nb", [](const json::value& w) { return State(w) == "Admitted"; });
  EXPECT_EQ(nb.at("spec").at("podSets").at(0).at("template").at("resources").at("requests"),
            json::parse(R"({"nvidia.com/mig-1g.10gb":"2"})"));

  ClientFlags cf;
  cf.server = url_;
  cf.token = token_;
  auto client = Client::Connect(cf);
  ASSERT_TRUE(client.ok());
  auto h = FetchHistory(**client);
  ASSERT_TRUE(h.ok()) << h.status().message();
  ASSERT_EQ(h->jobs.size(), 1u);
  EXPECT_EQ(h->jobs[0].mig_profile, "1g.10gb");
  EXPECT_EQ(h->jobs[0].gpus, 2);
  EXPECT_EQ(h->jobs[0].pods, 1);
  EXPECT_EQ(h->jobs[0].type, "notebook");

  // Replayed on the same MIG node: admitted at once, holding 2 of its 3
  // slices (each 1/7 of a GPU, in milli-GPUs) until the read.
  const std::string config = dir_ + "/mig.yaml";
  std::ofstream(config) << kMig;
  Ran out = Simulate({"--from-history", url_, "--token", token_, "-f", config});
  ASSERT_EQ(out.code, 0) << out.err;
  json::value s = json::parse(out.out);
  EXPECT_EQ(s.at("jobs").at("completed").as_int64(), 1);
  EXPECT_EQ(s.at("jobs").at("rejected").as_int64(), 0);
  EXPECT_NEAR(s.at("cluster").at("gpus").to_number<double>(), 3.0 / 7, 5e-3);
  EXPECT_EQ(s.at("queueingDelaySeconds").at("max").to_number<double>(), 0);
  EXPECT_NEAR(s.at("utilization").at("overall").to_number<double>(), 2.0 / 3, 1e-3);
}

// Tokens: a tenant's token reads its tenant's history only (a note says
// so), never another's; a metrics token is refused; a bad or missing token
// and an unreachable server are exit code 1 with a message naming the
// server and what to fix; a malformed URL is a bad flag (2).
TEST_F(HistoryE2eTest, TokensAndBadServers) {
  Start({});
  int code = 0;
  json::value r = Call("POST", "/api/v1/apply", Cluster(4), &code);
  ASSERT_EQ(code, 200) << json::serialize(r);
  const std::vector<Shape> shapes = {
      {"team-a", "a1", "q", "", 1, 1, 0, "['true']"},
      {"team-a", "a2", "dev", "", 1, 1, 0, "['true']"},
      {"team-b", "b1", "q", "", 1, 2, 0, "['true']"},
  };
  for (const Shape& s : shapes) Submit(s);
  for (const Shape& s : shapes) WaitFor(s.tenant + "/" + s.name, Done);
  const std::string config = WriteConfig("c.yaml", 4, 1, 8);

  const std::string viewer_a = NewToken(R"({"user":"ann","role":"viewer","tenant":"team-a"})");
  const std::string member_b = NewToken(R"({"user":"bob","role":"member","tenant":"team-b"})");
  for (const auto& [token, tenant, jobs] :
       {std::tuple{viewer_a, "team-a", 2}, std::tuple{member_b, "team-b", 1}}) {
    SCOPED_TRACE(tenant);
    Ran out = Simulate({"--from-history", url_, "-f", config}, token);
    ASSERT_EQ(out.code, 0) << out.err;
    json::value s = json::parse(out.out);
    EXPECT_EQ(s.at("jobs").at("submitted").as_int64(), jobs);
    EXPECT_EQ(s.at("trace").at("rows").as_int64(), jobs);  // Nothing else listed.
    ASSERT_EQ(s.at("tenants").as_object().size(), 1u);
    EXPECT_TRUE(s.at("tenants").as_object().contains(tenant));
    EXPECT_NE(json::serialize(s.at("trace").at("notes")).find(std::string("only tenant ") + tenant),
              std::string::npos);
  }

  const std::string metrics = NewToken(R"({"user":"prom","role":"metrics"})");
  Ran out = Simulate({"--from-history", url_, "-f", config}, metrics);
  EXPECT_EQ(out.code, 1);
  EXPECT_EQ(out.out, "");
  EXPECT_NE(out.err.find("a metrics token reads no workloads"), std::string::npos) << out.err;

  out = Simulate({"--from-history", url_, "-f", config, "--token", "allot_0123456789abcdef"});
  EXPECT_EQ(out.code, 1);
  EXPECT_NE(out.err.find("reading the history of " + url_ + ": HTTP 401: unknown or revoked token"),
            std::string::npos)
      << out.err;
  EXPECT_NE(out.err.find("--token, ALLOT_TOKEN"), std::string::npos) << out.err;

  out = Simulate({"--from-history", url_, "-f", config});  // No token at all.
  EXPECT_EQ(out.code, 1);
  EXPECT_NE(out.err.find("HTTP 401: no bearer token"), std::string::npos) << out.err;

  out = Simulate({"--from-history", url_ + "/api", "-f", config}, token_);
  EXPECT_EQ(out.code, 1);
  EXPECT_NE(out.err.find("HTTP 404"), std::string::npos) << out.err;
  EXPECT_NE(out.err.find("the server's base URL"), std::string::npos) << out.err;

  // Nothing listens on the port of a server that has stopped.
  const std::string url = url_;
  EXPECT_EQ(Stop(), 0);
  out = Simulate({"--from-history", url, "-f", config}, token_);
  EXPECT_EQ(out.code, 1);
  EXPECT_NE(out.err.find("cannot reach allot server at " + url), std::string::npos) << out.err;

  out = Simulate({"--from-history", url.substr(url.find("//") + 2), "-f", config}, token_);
  EXPECT_EQ(out.code, 2);
  EXPECT_NE(out.err.find("bad server URL"), std::string::npos) << out.err;

  // The config is read before the server is asked.
  out = Simulate({"--from-history", url, "-f", dir_ + "/missing.yaml"}, token_);
  EXPECT_EQ(out.code, 2);
  EXPECT_NE(out.err.find("missing.yaml"), std::string::npos) << out.err;
}

}  // namespace
}  // namespace allot::cli
