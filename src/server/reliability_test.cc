// Reliability of `allot serve` (integration, the real binary on loopback):
//  - kill -9 while 32 clients submit 5,000 workloads: nothing acknowledged
//    is lost, nothing appears twice, quota usage matches the admissions and
//    no GPU is handed out twice, before and after the clients finish;
//  - admitted workloads keep their exact placements across a graceful
//    restart and a kill -9;
//  - deleting workloads frees quota, admits waiting ones (in the turn of the
//    delete, also those queued behind heads that still do not fit), and
//    survives a restart.
#include <gtest/gtest.h>

#include <fcntl.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/quantity.h"
#include "server/test_server.h"
#include "testing/builders.h"

namespace allot::server {
namespace {

using testing::TestServer;
namespace json = boost::json;

// ---- Helpers ----------------------------------------------------------------

std::string Str(const json::value& v) {
  return v.is_string() ? std::string(v.as_string()) : json::serialize(v);
}

// A quantity as the API writes it ("4", "500m", 4) in milli-units.
int64_t Milli(const json::value& v) {
  if (v.is_int64()) return v.as_int64() * 1000;
  if (v.is_uint64()) return int64_t(v.as_uint64()) * 1000;
  if (v.is_string()) {
    Result<Quantity> q = Quantity::Parse(std::string(v.as_string()));
    if (q.ok()) return q->milli();
  }
  ADD_FAILURE() << "not a quantity: " << json::serialize(v);
  return 0;
}

const json::value* Path(const json::value& v, std::initializer_list<const char*> keys) {
  const json::value* cur = &v;
  for (const char* k : keys) {
    if (!cur->is_object()) return nullptr;
    cur = cur->as_object().if_contains(k);
    if (cur == nullptr) return nullptr;
  }
  return cur;
}

std::string KeyOf(const json::value& wl) {
  const json::value* ns = Path(wl, {"metadata", "namespace"});
  const json::value* name = Path(wl, {"metadata", "name"});
  return (ns ? Str(*ns) + "/" : std::string()) + (name ? Str(*name) : "?");
}

// Every object of a collection, following "continue" page by page.
std::vector<json::value> ListAll(TestServer& srv, const std::string& plural,
                                 int page_size = 700) {
  std::vector<json::value> out;
  std::string cont;
  for (int page = 0; page < 100000; ++page) {
    std::string target = "/api/v1/" + plural + "?limit=" + std::to_string(page_size);
    if (!cont.empty()) target += "&continue=" + net::UrlEncode(cont);
    int code = 0;
    json::value v = srv.Json("GET", target, "", &code);
    if (code != 200 || !v.is_object() || !v.as_object().contains("items")) {
      ADD_FAILURE() << "GET " << target << ": " << code << " " << json::serialize(v);
      return out;
    }
    const json::array& items = v.at("items").as_array();
    EXPECT_LE(items.size(), size_t(page_size)) << target;
    for (const json::value& x : items) out.push_back(x);
    const json::value* c = v.as_object().if_contains("continue");
    if (c == nullptr) break;
    EXPECT_FALSE(items.empty()) << target << " gave no items but a continue";
    if (items.empty()) break;
    cont = Str(*c);
  }
  return out;
}

struct ClusterView {
  std::map<std::string, json::value> workloads;  // By key (last seen).
  std::map<std::string, int> occurrences;         // By key.
  std::map<std::string, std::string> admissions;  // Key -> serialized admission.
  size_t admitted = 0;
  size_t pending = 0;
};

// Lists everything and checks the invariants that must hold at any time:
// no workload listed twice, each ClusterQueue's usage equals the sum over
// the admissions it holds, every placement names GPUs (or MIG slices) of an
// existing node, as many as the pod asks for, and no device twice.
ClusterView CheckInvariants(TestServer& srv, const std::string& when) {
  SCOPED_TRACE(when);
  ClusterView view;
  for (json::value& w : ListAll(srv, "workloads")) {
    std::string key = KeyOf(w);
    ++view.occurrences[key];
    view.workloads[key] = std::move(w);
  }
  for (const auto& [key, n] : view.occurrences) {
    EXPECT_EQ(n, 1) << "workload " << key << " is listed " << n << " times";
  }

  // Node -> its whole GPUs and MIG slices; slice -> its GPU.
  std::map<std::string, std::set<std::string>> devices;
  std::map<std::string, std::string> parent;
  for (const json::value& n : ListAll(srv, "nodes")) {
    std::string name = Str(n.at("metadata").at("name"));
    std::set<std::string>& d = devices[name];
    if (const json::value* gpus = Path(n, {"status", "gpus"})) {
      for (const json::value& g : gpus->as_array()) {
        std::string uuid = Str(g.at("uuid"));
        d.insert(uuid);
        if (const json::value* mig = g.as_object().if_contains("mig")) {
          for (const json::value& s : mig->as_array()) {
            d.insert(Str(s.at("uuid")));
            parent[Str(s.at("uuid"))] = uuid;
          }
        }
      }
    }
  }

  using Cell = std::pair<std::string, std::string>;  // (flavor, resource)
  std::map<std::string, std::map<Cell, int64_t>> expected;  // By ClusterQueue.
  std::map<std::string, std::string> holder;  // Device -> workload.
  for (const auto& [key, w] : view.workloads) {
    const json::value* adm = Path(w, {"status", "admission"});
    std::string state = Str(w.at("status").at("state"));
    if (adm == nullptr) {
      ++view.pending;
      EXPECT_TRUE(state == "Pending" || state == "Requeued")
          << key << " has no admission but state " << state;
      continue;
    }
    ++view.admitted;
    EXPECT_EQ(state, "Admitted") << key << " has an admission";
    view.admissions[key] = json::serialize(*adm);
    std::string cq = Str(adm->at("clusterQueue"));
    const json::array& pod_sets = w.at("spec").at("podSets").as_array();
    const json::array& psas = adm->at("podSetAssignments").as_array();
    for (size_t i = 0; i < psas.size(); ++i) {
      const json::object& psa = psas[i].as_object();
      // The pod set of this assignment: by name, else by position.
      const json::value* ps = nullptr;
      for (const json::value& p : pod_sets) {
        if (p.as_object().contains("name") && psa.contains("name") &&
            p.at("name") == psa.at("name")) {
          ps = &p;
        }
      }
      if (ps == nullptr && i < pod_sets.size()) ps = &pod_sets[i];
      if (ps == nullptr) {
        ADD_FAILURE() << key << ": assignment " << i << " has no pod set";
        continue;
      }
      int64_t count = psa.at("count").as_int64();
      int64_t devices_per_pod = 0;
      const json::value* req = Path(*ps, {"template", "resources", "requests"});
      if (req != nullptr) {
        for (const auto& [res, q] : req->as_object()) {
          std::string r(res);
          const json::value* f = Path(psas[i], {"flavors", r.c_str()});
          if (f == nullptr) {
            ADD_FAILURE() << key << ": no flavor for " << r << " in "
                          << json::serialize(psas[i]);
            continue;
          }
          expected[cq][{Str(*f), r}] += count * Milli(q);
          if (r == "nvidia.com/gpu" || r.rfind("nvidia.com/mig-", 0) == 0) {
            devices_per_pod += Milli(q) / 1000;
          }
        }
      }
      const json::value* placements = psa.if_contains("placements");
      if (placements == nullptr) {
        ADD_FAILURE() << key << ": admitted without placements: " << view.admissions[key];
        continue;
      }
      EXPECT_EQ(int64_t(placements->as_array().size()), count)
          << key << ": one placement per admitted pod: " << view.admissions[key];
      for (const json::value& pl : placements->as_array()) {
        std::string node = Str(pl.at("node"));
        auto nit = devices.find(node);
        EXPECT_NE(nit, devices.end()) << key << " is placed on unknown node " << node;
        size_t n = 0;
        if (const json::value* gpus = pl.as_object().if_contains("gpus")) {
          for (const json::value& g : gpus->as_array()) {
            std::string uuid = Str(g);
            ++n;
            if (nit != devices.end()) {
              EXPECT_TRUE(nit->second.count(uuid))
                  << key << " names device " << uuid << " which node " << node
                  << " does not have";
            }
            auto [it, fresh] = holder.insert({uuid, key});
            EXPECT_TRUE(fresh) << "device " << uuid << " is handed out twice: to "
                               << it->second << " and " << key;
          }
        }
        EXPECT_EQ(int64_t(n), devices_per_pod)
            << key << ": a pod on " << node << " got " << n << " devices";
      }
    }
  }
  // A whole GPU and one of its MIG slices are never both handed out.
  for (const auto& [slice, gpu] : parent) {
    if (holder.count(slice) && holder.count(gpu)) {
      ADD_FAILURE() << "GPU " << gpu << " is handed out whole (to " << holder[gpu]
                    << ") and as slice " << slice << " (to " << holder[slice] << ")";
    }
  }

  std::set<std::string> cqs;
  for (const json::value& cq : ListAll(srv, "clusterqueues")) {
    std::string name = Str(cq.at("metadata").at("name"));
    cqs.insert(name);
    std::map<Cell, int64_t> want = expected[name];
    const json::value* usage = Path(cq, {"status", "flavorsUsage"});
    if (usage == nullptr) {
      ADD_FAILURE() << "ClusterQueue " << name << " has no status.flavorsUsage";
      continue;
    }
    for (const json::value& f : usage->as_array()) {
      std::string flavor = Str(f.at("name"));
      for (const json::value& r : f.at("resources").as_array()) {
        Cell cell{flavor, Str(r.at("name"))};
        int64_t got = Milli(r.at("total"));
        EXPECT_EQ(got, want[cell])
            << "ClusterQueue " << name << " " << flavor << "/" << cell.second
            << ": usage total " << Str(r.at("total")) << " but its admitted "
            << "workloads hold " << want[cell] << " milli-units";
        want.erase(cell);
      }
    }
    for (const auto& [cell, v] : want) {
      EXPECT_EQ(v, 0) << "ClusterQueue " << name << " shows no usage cell for "
                      << cell.first << "/" << cell.second << " but admissions hold " << v;
    }
  }
  for (const auto& [cq, cells] : expected) {
    EXPECT_TRUE(cqs.count(cq)) << "admissions name unknown ClusterQueue " << cq;
  }
  return view;
}

std::string GpuList(const std::string& node, int n, bool mig_first = false) {
  std::string s = "  gpus:\n";
  for (int i = 0; i < n; ++i) {
    std::string uuid = "GPU-" + node + "-" + std::to_string(i);
    s += "  - uuid: " + uuid + "\n";
    if (i == 0 && mig_first) {
      s += "    mig:\n";
      for (int k = 0; k < 7; ++k) {
        s += "    - {uuid: MIG-" + node + "-0-" + std::to_string(k) +
             ", profile: 1g.10gb}\n";
      }
    }
  }
  return s;
}

std::string Node(const std::string& name, const std::string& product, int gpus,
                 bool mig_first = false) {
  return "apiVersion: allot.dev/v1\nkind: Node\nmetadata:\n  name: " + name +
         "\n  labels: {allot.dev/gpu-product: " + product +
         "}\nstatus:\n  capacity: {cpu: 128, memory: 1Ti}\n" +
         GpuList(name, gpus, mig_first) + "---\n";
}

// Four tenants t0..t3, each with LocalQueue q -> ClusterQueue cq-N in one
// cohort; two flavors (h100 first, then a100 with MIG slices); 48 H100s,
// 31 whole A100s and 7 MIG slices.
std::string BigCluster() {
  std::string y;
  y += R"(apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: h100}
spec:
  nodeLabels: {allot.dev/gpu-product: H100}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: a100}
spec:
  nodeLabels: {allot.dev/gpu-product: A100}
---
)";
  for (int t = 0; t < 4; ++t) {
    std::string n = std::to_string(t);
    y += allot::testing::Namespace("t" + n);
    y += R"(apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq-)" + n + R"(}
spec:
  cohort: pool
  namespaceSelector: {}
  queueingStrategy: BestEffortFIFO
  resourceGroups:
  - coveredResources: [cpu, nvidia.com/gpu, nvidia.com/mig-1g.10gb]
    flavors:
    - name: h100
      resources:
      - {name: cpu, nominalQuota: 64}
      - {name: nvidia.com/gpu, nominalQuota: 12}
      - {name: nvidia.com/mig-1g.10gb, nominalQuota: 0}
    - name: a100
      resources:
      - {name: cpu, nominalQuota: 32}
      - {name: nvidia.com/gpu, nominalQuota: 8}
      - {name: nvidia.com/mig-1g.10gb, nominalQuota: 2}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: q, namespace: t)" + n + R"(}
spec: {clusterQueue: cq-)" + n + R"(}
---
)";
  }
  for (int i = 0; i < 6; ++i) y += Node("h100-" + std::to_string(i), "H100", 8);
  for (int i = 0; i < 3; ++i) y += Node("a100-" + std::to_string(i), "A100", 8);
  y += Node("a100-mig", "A100", 8, /*mig_first=*/true);
  return y;
}

// Workload i of the load: tenant t(i%4), a mix of sizes (a MIG slice, 1, 2,
// 4 or 8 GPUs, and 2-pod gangs of 8), 1 to 3 CPUs per pod.
std::string LoadWorkloadName(int i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "w-%05d", i);
  return buf;
}
std::string LoadTenant(int i) { return "t" + std::to_string(i % 4); }
std::string LoadWorkload(int i) {
  int kind = (i / 4) % 10;  // Every tenant gets every size.
  std::string res;
  int count = 1;
  if (kind == 0) {
    res = R"("nvidia.com/mig-1g.10gb":"1")";
  } else {
    int gpus = kind <= 3 ? 1 : kind <= 5 ? 2 : kind <= 7 ? 4 : 8;
    if (kind == 9) count = 2;
    res = R"("nvidia.com/gpu":")" + std::to_string(gpus) + "\"";
  }
  res += R"(,"cpu":")" + std::to_string(1 + i % 3) + "\"";
  return R"({"apiVersion":"allot.dev/v1","kind":"Workload","metadata":{"name":")" +
         LoadWorkloadName(i) + R"(","namespace":")" + LoadTenant(i) +
         R"("},"spec":{"queueName":"q","podSets":[{"name":"main","count":)" +
         std::to_string(count) + R"(,"template":{"resources":{"requests":{)" + res +
         "}}}}]}}";
}

// ---- kill -9 under load -----------------------------------------------------

constexpr int kTotal = 5000;
constexpr int kClients = 32;

struct Shared {
  std::mutex mu;
  std::set<std::string> acked;        // Keys whose POST got a 2xx.
  std::set<std::string> in_doubt;     // Keys whose POST got no answer.
  std::vector<std::string> errors;    // Unexpected answers.
  std::atomic<int> acked_count{0};
};

struct ClientState {
  std::vector<int> todo;  // Workload indices, in order.
  size_t next = 0;        // The first not known to exist.
  bool doubt = false;     // todo[next] was sent and got no answer.
};

// Submits c's remaining workloads until done or the server stops answering.
void RunClient(const TestServer& srv, const std::string& token, ClientState* c,
               Shared* sh) {
  std::unique_ptr<net::HttpClient> http = srv.NewClient();
  if (!http) {
    std::lock_guard<std::mutex> l(sh->mu);
    sh->errors.push_back("cannot create a client");
    return;
  }
  const std::vector<std::pair<std::string, std::string>> headers = {
      {"Authorization", "Bearer " + token}, {"Content-Type", "application/json"}};
  while (c->next < c->todo.size()) {
    int i = c->todo[c->next];
    std::string key = LoadTenant(i) + "/" + LoadWorkloadName(i);
    Result<net::Response> r = http->Do("POST", "/api/v1/workloads", headers, LoadWorkload(i));
    std::lock_guard<std::mutex> l(sh->mu);
    if (!r.ok()) {  // The server is gone: this one may or may not exist.
      c->doubt = true;
      sh->in_doubt.insert(key);
      return;
    }
    if (r->status / 100 == 2) {
      sh->acked.insert(key);
      sh->acked_count.fetch_add(1);
    } else if (!(r->status == 409 && c->doubt)) {
      // A 409 is fine only for the one sent before the kill: it was
      // committed but its answer was lost.
      sh->errors.push_back("POST " + key + ": " + std::to_string(r->status) + " " + r->body);
    }
    c->doubt = false;
    ++c->next;
  }
}

void RunAll(const TestServer& srv, std::vector<ClientState>* clients, Shared* sh) {
  std::vector<std::thread> threads;
  for (ClientState& c : *clients) {
    threads.emplace_back([&srv, &c, sh] { RunClient(srv, srv.admin_token(), &c, sh); });
  }
  for (std::thread& t : threads) t.join();
}

TEST(Reliability, Kill9UnderLoad) {
  auto srv = TestServer::StartWith(BigCluster());
  ASSERT_NE(srv, nullptr);

  uint64_t seed = std::random_device{}();
  if (const char* s = std::getenv("ALLOT_TEST_SEED")) seed = std::strtoull(s, nullptr, 10);
  std::mt19937_64 rng(seed);
  const int kill_at = kTotal * 40 / 100 +
                      int(rng() % uint64_t(kTotal * 30 / 100));  // 40-70%.
  std::cout << "[ seed " << seed << " (ALLOT_TEST_SEED) ] kill -9 after "
            << kill_at << " acknowledged submissions\n";
  SCOPED_TRACE("ALLOT_TEST_SEED=" + std::to_string(seed));

  std::vector<ClientState> clients(kClients);
  for (int i = 0; i < kTotal; ++i) clients[i % kClients].todo.push_back(i);
  std::set<std::string> universe;
  for (int i = 0; i < kTotal; ++i) universe.insert(LoadTenant(i) + "/" + LoadWorkloadName(i));

  using Clock = std::chrono::steady_clock;
  const Clock::time_point t0 = Clock::now();
  auto mark = [&](const char* what) {
    std::cout << "[ " << what << " at "
              << std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count()
              << " ms ]\n";
  };
  Shared sh;
  std::atomic<bool> killed{false};
  std::atomic<bool> clients_done{false};
  std::thread killer([&] {
    while (!clients_done && sh.acked_count.load() < kill_at) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    if (!clients_done) {
      srv->Kill9();
      killed = true;
    }
  });
  RunAll(*srv, &clients, &sh);
  clients_done = true;
  killer.join();
  ASSERT_TRUE(killed) << "the clients finished before the kill";
  ASSERT_TRUE(sh.errors.empty()) << sh.errors.size() << " unexpected answers, first: "
                                 << sh.errors.front();
  const std::set<std::string> acked_before = sh.acked;
  const std::set<std::string> doubt_before = sh.in_doubt;
  std::cout << "[ killed with " << acked_before.size() << " acknowledged, "
            << doubt_before.size() << " in doubt ]\n";
  EXPECT_GE(int(acked_before.size()), kill_at);

  mark("killed");
  ASSERT_TRUE(srv->Restart()) << srv->Log();
  mark("restarted");
  {
    ClusterView v = CheckInvariants(*srv, "after kill -9 and restart");
    for (const std::string& k : acked_before) {
      EXPECT_TRUE(v.occurrences.count(k)) << "acknowledged workload " << k << " was lost";
    }
    for (const auto& [k, n] : v.occurrences) {
      EXPECT_TRUE(acked_before.count(k) || doubt_before.count(k))
          << k << " exists but no client had sent it";
    }
    EXPECT_GT(v.admitted, 0u);
    EXPECT_GT(v.pending, 0u);
    std::cout << "[ after restart: " << v.workloads.size() << " workloads, "
              << v.admitted << " admitted ]\n";
  }

  mark("checked");
  // The clients resume where they were cut off.
  RunAll(*srv, &clients, &sh);
  mark("resumed clients done");
  ASSERT_TRUE(sh.errors.empty()) << sh.errors.size() << " unexpected answers, first: "
                                 << sh.errors.front();
  for (const ClientState& c : clients) EXPECT_EQ(c.next, c.todo.size());
  ClusterView done = CheckInvariants(*srv, "after the clients finished");
  EXPECT_EQ(done.workloads.size(), size_t(kTotal));
  for (const std::string& k : universe) {
    EXPECT_EQ(done.occurrences[k], 1) << k;
  }

  mark("checked");
}

// ---- Restarts keep placements -------------------------------------------------

// Tenants team-a and team-b, each with LocalQueue q into ClusterQueue cq
// (BestEffortFIFO, 24 GPUs); nodes n1, n2 and n3 with 8 each (GPUs
// G<node>-0..7).
std::string SmallCluster() {
  namespace b = allot::testing;
  std::string y = b::Namespace("team-a") + b::Namespace("team-b") + b::Flavor("h100", "") +
                  b::GpuCq("cq", "", "h100", "nominalQuota: 24",
                           "  queueingStrategy: BestEffortFIFO\n") +
                  b::LocalQueue("team-a", "q", "cq") + b::LocalQueue("team-b", "q", "cq");
  for (int n = 1; n <= 3; ++n) {
    const std::string i = std::to_string(n);
    y += b::Node("n" + i, "", "64", "512Gi", b::Uuids("G" + i + "-", 8));
  }
  return y;
}

std::string Workload(const std::string& ns, const std::string& name, int gpus,
                     int count = 1) {
  return allot::testing::WorkloadJson(ns + "/" + name).Gpus(gpus).Count(count);
}

// The items of the workload list, serialized one by one, by key.
std::map<std::string, std::string> Snapshot(TestServer& srv) {
  std::map<std::string, std::string> out;
  for (const json::value& w : ListAll(srv, "workloads", 5)) {
    out[KeyOf(w)] = json::serialize(w);
  }
  return out;
}

TEST(Reliability, RestartKeepsPlacements) {
  auto srv = TestServer::StartWith(SmallCluster());
  ASSERT_NE(srv, nullptr);
  int code = 0;
  json::value r;
  // 1+2+3+... GPUs, two 2-pod gangs; 24 GPUs fill up, the rest waits.
  const int sizes[] = {3, 1, 2, 4, 1, 3, 2, 5, 6, 1};
  for (int i = 0; i < 10; ++i) {
    std::string ns = i % 2 ? "team-b" : "team-a";
    r = srv->Json("POST", "/api/v1/workloads",
                  Workload(ns, "w" + std::to_string(i), sizes[i], i == 3 || i == 8 ? 2 : 1),
                  &code);
    ASSERT_EQ(code, 201) << json::serialize(r);
  }
  ClusterView before = CheckInvariants(*srv, "before restarts");
  EXPECT_GE(before.admitted, 4u);
  EXPECT_GE(before.pending, 1u);
  std::map<std::string, std::string> snap = Snapshot(*srv);
  ASSERT_EQ(snap.size(), 10u);

  srv->Stop();
  ASSERT_TRUE(srv->Restart()) << srv->Log();
  ClusterView graceful = CheckInvariants(*srv, "after a graceful restart");
  EXPECT_EQ(graceful.admissions, before.admissions);
  std::map<std::string, std::string> snap2 = Snapshot(*srv);
  for (const auto& [k, body] : snap) {
    EXPECT_EQ(snap2[k], body) << k << " changed across a graceful restart";
  }
  for (const auto& [k, adm] : before.admissions) {
    json::value w = srv->Json("GET", "/api/v1/workloads/" + k, "", &code);
    ASSERT_EQ(code, 200) << k;
    EXPECT_EQ(json::serialize(w.at("status").at("admission")), adm) << k;
  }

  srv->Kill9();
  ASSERT_TRUE(srv->Restart()) << srv->Log();
  ClusterView killed = CheckInvariants(*srv, "after kill -9");
  EXPECT_EQ(killed.admissions, before.admissions);
  std::map<std::string, std::string> snap3 = Snapshot(*srv);
  for (const auto& [k, body] : snap) {
    EXPECT_EQ(snap3[k], body) << k << " changed across kill -9";
  }

  // More work after the restarts: nothing already held is handed out again.
  for (int i = 10; i < 20; ++i) {
    r = srv->Json("POST", "/api/v1/workloads",
                  Workload("team-a", "w" + std::to_string(i), 1 + i % 3), &code);
    ASSERT_EQ(code, 201) << json::serialize(r);
  }
  // Free some GPUs so that new ones are placed next to the old ones.
  for (const char* k : {"team-a/w0", "team-b/w1"}) {
    srv->Json("DELETE", std::string("/api/v1/workloads/") + k, "", &code);
    EXPECT_EQ(code, 200) << k;
  }
  ClusterView after = CheckInvariants(*srv, "after more submissions");
  EXPECT_GT(after.admitted, before.admitted - 2);
  for (const auto& [k, adm] : before.admissions) {
    if (k == "team-a/w0" || k == "team-b/w1") continue;
    EXPECT_EQ(after.admissions[k], adm) << k << " moved";
  }
  srv->Kill9();
  ASSERT_TRUE(srv->Restart()) << srv->Log();
  ClusterView last = CheckInvariants(*srv, "after the last kill -9");
  EXPECT_EQ(last.admissions, after.admissions);
}

// ---- Deletion frees quota -----------------------------------------------------

std::string StateOf(TestServer& srv, const std::string& key, int* code = nullptr) {
  int c = 0;
  json::value w = srv.Json("GET", "/api/v1/workloads/" + key, "", &c);
  if (code) *code = c;
  if (c != 200) return "HTTP " + std::to_string(c);
  return Str(w.at("status").at("state"));
}

std::string GpuUsage(TestServer& srv) {
  int code = 0;
  json::value cq = srv.Json("GET", "/api/v1/clusterqueues/cq", "", &code);
  if (code != 200) return "HTTP " + std::to_string(code);
  for (const json::value& f : cq.at("status").at("flavorsUsage").as_array()) {
    for (const json::value& r : f.at("resources").as_array()) {
      if (Str(r.at("name")) == "nvidia.com/gpu") return Str(r.at("total"));
    }
  }
  return "none";
}

TEST(Reliability, DeleteFreesQuotaAndSurvivesRestart) {
  auto srv = TestServer::StartWith(SmallCluster());
  ASSERT_NE(srv, nullptr);
  int code = 0;
  json::value r;
  // 24 GPUs: big (3 pods x 8) takes all; the others wait.
  struct W { const char* name; int gpus; int count; };
  for (W w : {W{"big", 8, 3}, W{"p1", 4, 2}, W{"p2", 8, 2}, W{"p3", 8, 1}, W{"p4", 24, 1}}) {
    r = srv->Json("POST", "/api/v1/workloads", Workload("team-a", w.name, w.gpus, w.count), &code);
    ASSERT_EQ(code, 201) << json::serialize(r);
  }
  EXPECT_EQ(StateOf(*srv, "team-a/big"), "Admitted");
  for (const char* k : {"team-a/p1", "team-a/p2", "team-a/p3", "team-a/p4"}) {
    EXPECT_EQ(StateOf(*srv, k), "Pending") << k;
  }
  EXPECT_EQ(GpuUsage(*srv), "24");

  // Deleting a pending one changes no usage.
  srv->Json("DELETE", "/api/v1/workloads/team-a/p4", "", &code);
  EXPECT_EQ(code, 200);
  EXPECT_EQ(GpuUsage(*srv), "24");
  StateOf(*srv, "team-a/p4", &code);
  EXPECT_EQ(code, 404);

  // Deleting big admits p1 and p2 (8 + 16 = 24) in the same turn; p3 waits.
  srv->Json("DELETE", "/api/v1/workloads/team-a/big", "", &code);
  EXPECT_EQ(code, 200);
  EXPECT_EQ(StateOf(*srv, "team-a/p1"), "Admitted");
  EXPECT_EQ(StateOf(*srv, "team-a/p2"), "Admitted");
  EXPECT_EQ(StateOf(*srv, "team-a/p3"), "Pending");
  EXPECT_EQ(GpuUsage(*srv), "24");
  ClusterView v1 = CheckInvariants(*srv, "after deleting big");
  EXPECT_EQ(v1.workloads.size(), 3u);

  srv->Kill9();
  ASSERT_TRUE(srv->Restart()) << srv->Log();
  StateOf(*srv, "team-a/big", &code);
  EXPECT_EQ(code, 404) << "a deleted workload came back after kill -9";
  StateOf(*srv, "team-a/p4", &code);
  EXPECT_EQ(code, 404) << "a deleted workload came back after kill -9";
  EXPECT_EQ(StateOf(*srv, "team-a/p3"), "Pending");
  EXPECT_EQ(GpuUsage(*srv), "24");
  ClusterView v2 = CheckInvariants(*srv, "after kill -9");
  EXPECT_EQ(v2.admissions, v1.admissions);

  // Deleting p1 (8 GPUs) after the restart admits p3.
  srv->Json("DELETE", "/api/v1/workloads/team-a/p1", "", &code);
  EXPECT_EQ(code, 200);
  EXPECT_EQ(StateOf(*srv, "team-a/p3"), "Admitted");
  EXPECT_EQ(GpuUsage(*srv), "24");
  ClusterView v3 = CheckInvariants(*srv, "after deleting p1");

  ASSERT_TRUE(srv->Restart()) << srv->Log();
  StateOf(*srv, "team-a/p1", &code);
  EXPECT_EQ(code, 404);
  ClusterView v4 = CheckInvariants(*srv, "after a graceful restart");
  EXPECT_EQ(v4.admissions, v3.admissions);
  EXPECT_EQ(GpuUsage(*srv), "24");

  // Deleting everything empties the queue's usage, and that is durable too.
  for (const char* k : {"team-a/p2", "team-a/p3"}) {
    srv->Json("DELETE", std::string("/api/v1/workloads/") + k, "", &code);
    EXPECT_EQ(code, 200) << k;
  }
  EXPECT_EQ(GpuUsage(*srv), "0");
  srv->Kill9();
  ASSERT_TRUE(srv->Restart()) << srv->Log();
  EXPECT_EQ(GpuUsage(*srv), "0");
  EXPECT_EQ(CheckInvariants(*srv, "emptied").workloads.size(), 0u);
}

// Freed quota goes to every waiting workload that fits, in the turn of the
// delete, even behind heads that still do not fit (BestEffortFIFO sets those
// aside and moves on). Reads change nothing.
TEST(Reliability, DeleteAdmitsEveryWaitingWorkloadThatFits) {
  auto srv = TestServer::StartWith(SmallCluster());
  ASSERT_NE(srv, nullptr);
  int code = 0;
  json::value r;
  struct W { const char* name; int gpus; int count; };
  for (W w : {W{"hold-a", 4, 1}, W{"hold-b", 8, 2}, W{"hold-c", 4, 1}, W{"big1", 8, 2},
              W{"big2", 8, 2}, W{"small1", 2, 1}, W{"small2", 2, 1}}) {
    r = srv->Json("POST", "/api/v1/workloads", Workload("team-a", w.name, w.gpus, w.count),
                  &code);
    ASSERT_EQ(code, 201) << json::serialize(r);
  }
  EXPECT_EQ(GpuUsage(*srv), "24");
  for (const char* k : {"team-a/big1", "team-a/big2", "team-a/small1", "team-a/small2"}) {
    EXPECT_EQ(StateOf(*srv, k), "Pending") << k;
  }
  // 4 GPUs free up: big1 and big2 still do not fit, small1 and small2 do.
  srv->Json("DELETE", "/api/v1/workloads/team-a/hold-a", "", &code);
  EXPECT_EQ(code, 200);
  EXPECT_EQ(StateOf(*srv, "team-a/small1"), "Admitted")
      << "a workload that fits is still pending after the delete's turn";
  EXPECT_EQ(StateOf(*srv, "team-a/small2"), "Admitted")
      << "a workload that fits is still pending after the delete's turn";
  EXPECT_EQ(StateOf(*srv, "team-a/big1"), "Pending");
  EXPECT_EQ(StateOf(*srv, "team-a/big2"), "Pending");
  EXPECT_EQ(GpuUsage(*srv), "24");
  ClusterView v = CheckInvariants(*srv, "after the delete");
  EXPECT_EQ(v.admitted, 4u);
  // Reading again changes nothing.
  ClusterView again = CheckInvariants(*srv, "read again");
  EXPECT_EQ(again.admissions, v.admissions);

  ASSERT_TRUE(srv->Restart()) << srv->Log();
  ClusterView restarted = CheckInvariants(*srv, "after a graceful restart");
  EXPECT_EQ(restarted.admissions, again.admissions);
}

}  // namespace
}  // namespace allot::server
