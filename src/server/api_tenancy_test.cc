// The cross-tenant matrix against a real `allot serve`: every role (the
// cluster-admin, and the tenant-admin, member and viewer of t1 and of t2,
// each a token made through POST /api/v1/tokens) against every endpoint,
// on objects of its own tenant and of the other one. The expectations
// follow server/authz.h: another tenant's objects are 404, never 403;
// lists and watches never show them.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "server/test_server.h"

namespace allot::server {
namespace {

using testing::TestServer;
namespace json = boost::json;

constexpr char kCluster[] = R"(
apiVersion: v1
kind: Namespace
metadata: {name: t1}
---
apiVersion: v1
kind: Namespace
metadata: {name: t2}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: f1}
spec: {nodeLabels: {pool: main}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: Cohort
metadata: {name: co1}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq1}
spec:
  cohort: co1
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: f1, resources: [{name: nvidia.com/gpu, nominalQuota: 64}]}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq2}
spec:
  cohort: co1
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: f1, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: q, namespace: t1}
spec: {clusterQueue: cq1}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: q, namespace: t2}
spec: {clusterQueue: cq1}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: WorkloadPriorityClass
metadata: {name: pc1}
value: 100
---
apiVersion: allot.dev/v1
kind: Node
metadata: {name: n1, labels: {pool: main}}
status:
  capacity: {cpu: 32, memory: 256Gi}
  gpus: [{uuid: G-0}, {uuid: G-1}, {uuid: G-2}, {uuid: G-3}]
---
apiVersion: allot.dev/v1
kind: Node
metadata: {name: nc}
status:
  capacity: {cpu: 8, memory: 32Gi}
---
apiVersion: allot.dev/v1
kind: Workload
metadata: {name: w, namespace: t1}
spec:
  queueName: q
  podSets: [{count: 1, template: {resources: {requests: {nvidia.com/gpu: 1}}}}]
---
apiVersion: allot.dev/v1
kind: Workload
metadata: {name: w, namespace: t2}
spec:
  queueName: q
  podSets: [{count: 1, template: {resources: {requests: {nvidia.com/gpu: 1}}}}]
)";

// ---- Kinds, bodies, expectations ---------------------------------------------

enum class Cls { kInfra, kTenant, kLocalQueue, kWorkload };

struct KindSpec {
  const char* plural;
  Cls cls;
  const char* fixture;  // An existing object (namespaced: its name in each tenant).
};

const KindSpec kKinds[] = {
    {"resourceflavors", Cls::kInfra, "f1"},
    {"cohorts", Cls::kInfra, "co1"},
    {"clusterqueues", Cls::kInfra, "cq1"},
    {"workloadpriorityclasses", Cls::kInfra, "pc1"},
    {"nodes", Cls::kInfra, "n1"},
    {"tenants", Cls::kTenant, ""},
    {"localqueues", Cls::kLocalQueue, "q"},
    {"workloads", Cls::kWorkload, "w"},
};

bool Namespaced(Cls c) { return c == Cls::kLocalQueue || c == Cls::kWorkload; }

// A valid document of `plural` named `name` (in `tenant` when namespaced);
// `variant` changes something a replace can change (a Workload cannot).
std::string Body(const std::string& plural, const std::string& name,
                 const std::string& tenant, int variant) {
  const std::string v = std::to_string(variant);
  const std::string md = R"("metadata":{"name":")" + name + R"("})";
  if (plural == "resourceflavors") {
    return R"({"apiVersion":"kueue.x-k8s.io/v1beta1","kind":"ResourceFlavor",)" + md +
           R"(,"spec":{"nodeLabels":{"pool":"p)" + v + R"("}}})";
  }
  if (plural == "cohorts") {
    return R"({"apiVersion":"kueue.x-k8s.io/v1beta1","kind":"Cohort",)" + md +
           R"(,"spec":{"fairSharing":{"weight":")" + std::to_string(variant + 1) + R"("}}})";
  }
  if (plural == "clusterqueues") {
    return R"({"apiVersion":"kueue.x-k8s.io/v1beta1","kind":"ClusterQueue",)" + md +
           R"(,"spec":{"namespaceSelector":{},"resourceGroups":[{"coveredResources":["nvidia.com/gpu"],)"
           R"("flavors":[{"name":"f1","resources":[{"name":"nvidia.com/gpu","nominalQuota":)" +
           std::to_string(4 + variant) + "}]}]}]}}";
  }
  if (plural == "workloadpriorityclasses") {
    return R"({"apiVersion":"kueue.x-k8s.io/v1beta1","kind":"WorkloadPriorityClass",)" + md +
           R"(,"value":)" + std::to_string(10 + variant) + "}";
  }
  if (plural == "nodes") {
    return R"({"apiVersion":"allot.dev/v1","kind":"Node","metadata":{"name":")" + name +
           R"(","labels":{"v":")" + v + R"("}},"status":{"capacity":{"cpu":"4","memory":"16Gi"}}})";
  }
  if (plural == "tenants") {
    return R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":")" + name +
           R"(","labels":{"v":")" + v + R"("}}})";
  }
  const std::string nmd =
      R"("metadata":{"name":")" + name + R"(","namespace":")" + tenant + R"("})";
  if (plural == "localqueues") {
    return R"({"apiVersion":"kueue.x-k8s.io/v1beta1","kind":"LocalQueue",)" + nmd +
           R"(,"spec":{"clusterQueue":"cq)" + std::to_string(1 + variant % 2) + R"("}})";
  }
  return R"({"apiVersion":"allot.dev/v1","kind":"Workload",)" + nmd +
         R"(,"spec":{"queueName":"q","podSets":[{"count":1,"template":{"resources":{"requests":{"nvidia.com/gpu":1}}}}]}})";
}

std::string ObjPath(const KindSpec& k, const std::string& tenant,
                    const std::string& name) {
  std::string p = std::string("/api/v1/") + k.plural + "/";
  return Namespaced(k.cls) ? p + tenant + "/" + name : p + name;
}

enum Verb { kGet, kCreate, kReplace, kDelete, kApplyNew, kApplyExisting, kNumVerbs };
const char* const kVerbNames[kNumVerbs] = {"get",    "create",    "replace",
                                           "delete", "apply-new", "apply-existing"};

// The expected outcome per column: cluster-admin; tenant-admin on its own
// tenant, on the other; member own, other; viewer own, other.
// A: 2xx, F: 403 Forbidden, N: 404 NotFound, C: 409 Conflict.
// Any Tenant but its own is "another tenant" for a tenant-bound principal,
// so writing one is 404 whether it exists or not (a new name too: 403 for a
// new name and 404 for an existing one would tell which exist); its own
// Tenant it may read but not write (403). A Workload's spec cannot change
// (409), but only for a principal that may write it at all: a viewer is
// refused first (403), as Kubernetes authorizes before it validates.
const char* const kExpect[4][kNumVerbs] = {
    //            get        create     replace    delete     apply-new  apply-existing
    /* infra  */ {"AAAAAAA", "AFFFFFF", "AFFFFFF", "AFFFFFF", "AFFFFFF", "AFFFFFF"},
    /* Tenant */ {"AANANAN", "ANNNNNN", "AFNFNFN", "AFNFNFN", "ANNNNNN", "AFNFNFN"},
    /* LQ     */ {"AANANAN", "AANFNFN", "AANFNFN", "AANFNFN", "AANFNFN", "AANFNFN"},
    /* WL     */ {"AANANAN", "AANANFN", "CCNCNFN", "AANANFN", "AANANFN", "AANANFN"},
};

// ---- Principals ----------------------------------------------------------------

struct Who {
  std::string role;    // cluster-admin, tenant-admin, member, viewer
  std::string tenant;  // "" for the cluster-admin
  std::string token;
  std::string name() const { return tenant.empty() ? role : role + "@" + tenant; }
  bool admin() const { return tenant.empty(); }
  std::string Own() const { return tenant.empty() ? "t1" : tenant; }
  std::string Other() const { return Own() == "t1" ? "t2" : "t1"; }
  int Col(bool other) const {
    if (role == "cluster-admin") return 0;
    int base = role == "tenant-admin" ? 1 : role == "member" ? 3 : 5;
    return base + (other ? 1 : 0);
  }
};

json::value Parse(const std::string& s) {
  boost::system::error_code ec;
  json::value v = json::parse(s, ec);
  return ec ? json::value() : v;
}

std::string Str(const json::value& v, std::initializer_list<const char*> path) {
  const json::value* cur = &v;
  for (const char* k : path) {
    if (!cur->is_object()) return "";
    cur = cur->as_object().if_contains(k);
    if (cur == nullptr) return "";
  }
  return cur->is_string() ? std::string(cur->as_string()) : "";
}

// The tenant an object of `cls` belongs to ("" for shared infrastructure).
std::string TenantOf(Cls cls, const json::value& obj) {
  if (cls == Cls::kTenant) return Str(obj, {"metadata", "name"});
  if (Namespaced(cls)) return Str(obj, {"metadata", "namespace"});
  return "";
}
std::string KeyOf(const json::value& obj) {
  std::string ns = Str(obj, {"metadata", "namespace"});
  std::string name = Str(obj, {"metadata", "name"});
  return ns.empty() ? name : ns + "/" + name;
}

class Harness {
 public:
  explicit Harness(TestServer* s) : srv(s) {}
  TestServer* srv;
  std::map<std::string, std::unique_ptr<net::HttpClient>> clients;

  net::Response Call(const std::string& token, const std::string& method,
                     const std::string& target, const std::string& body = "") {
    auto& c = clients[token];
    if (!c) c = srv->NewClient();
    std::vector<std::pair<std::string, std::string>> h = {
        {"Authorization", "Bearer " + token}};
    if (!body.empty()) h.push_back({"Content-Type", "application/json"});
    auto r = c->Do(method, target, h, body);
    if (!r.ok()) {
      c.reset();
      return net::Response{0, "", r.status().message(), {}};
    }
    return *r;
  }
  net::Response Admin(const std::string& method, const std::string& target,
                      const std::string& body = "") {
    return Call(srv->admin_token(), method, target, body);
  }
  // The list resourceVersion: it grows with every change of an object.
  std::string Rv() {
    return Str(Parse(Admin("GET", "/api/v1/tenants?limit=1").body), {"resourceVersion"});
  }
  size_t TokenCount() {
    json::value v = Parse(Admin("GET", "/api/v1/tokens").body);
    return v.is_object() && v.at("items").is_array() ? v.at("items").as_array().size() : 0;
  }
};

int StatusFor(char e, Verb v) {
  switch (e) {
    case 'A': return v == kCreate ? 201 : 200;
    case 'F': return 403;
    case 'N': return 404;
    case 'C': return 409;
  }
  return -1;
}
const char* CodeFor(char e) {
  return e == 'F' ? "Forbidden" : e == 'N' ? "NotFound" : e == 'C' ? "Conflict" : "";
}

// Checks one answer; `desc` names the case.
void Expect(const std::string& desc, int want, const char* code,
            const net::Response& r) {
  if (r.status != want) {
    ADD_FAILURE() << desc << ": want " << want << ", got " << r.status << " "
                  << r.body.substr(0, 300);
    return;
  }
  if (code[0] != '\0') {
    std::string got = Str(Parse(r.body), {"error", "code"});
    if (got != code) {
      ADD_FAILURE() << desc << ": want error.code " << code << ": " << r.body.substr(0, 300);
    }
  }
}

class ApiTenancy : public ::testing::Test {
 protected:
  void SetUp() override {
    srv_ = TestServer::Start();
    ASSERT_NE(srv_, nullptr);
    h_ = std::make_unique<Harness>(srv_.get());
    net::Response r = h_->Admin("POST", "/api/v1/apply", kCluster);
    ASSERT_EQ(r.status, 200) << r.body;
    who_.push_back(MakeToken("ops", "cluster-admin", ""));
    for (const char* t : {"t1", "t2"}) {
      for (const char* role : {"tenant-admin", "member", "viewer"}) {
        who_.push_back(MakeToken(std::string(role) + "-" + t, role, t));
      }
    }
  }
  Who MakeToken(const std::string& user, const std::string& role,
                const std::string& tenant, std::string* id = nullptr) {
    net::Response r = h_->Admin("POST", "/api/v1/tokens",
                                R"({"user":")" + user + R"(","role":")" + role +
                                    R"(","tenant":")" + tenant + R"("})");
    EXPECT_EQ(r.status, 201) << r.body;
    json::value v = Parse(r.body);
    if (id) *id = Str(v, {"id"});
    return Who{role, tenant, Str(v, {"token"})};
  }
  std::string Fresh(const std::string& prefix) {
    return prefix + std::to_string(++counter_);
  }

  std::unique_ptr<TestServer> srv_;
  std::unique_ptr<Harness> h_;
  std::vector<Who> who_;
  int counter_ = 0;
};

// ---- Objects: get, create, replace, delete, apply ------------------------------

TEST_F(ApiTenancy, ObjectVerbsFollowTheMatrix) {
  int cases = 0;
  for (const KindSpec& k : kKinds) {
    const int row = int(k.cls);
    for (int vi = 0; vi < kNumVerbs; ++vi) {
      const Verb verb = Verb(vi);
      for (const Who& p : who_) {
        for (bool other : {false, true}) {
          const char e = kExpect[row][verb][p.Col(other)];
          const std::string tenant = other ? p.Other() : p.Own();
          const std::string desc = p.name() + " " + kVerbNames[verb] + " " +
                                   k.plural + " in " + (other ? "other" : "own") +
                                   " tenant " + tenant;
          ++cases;
          // The target: an existing fixture, a fresh name, or a fresh object.
          std::string name;
          bool existing_tenant = k.cls == Cls::kTenant && !p.admin();
          if (verb == kGet) {
            name = k.cls == Cls::kTenant ? tenant : k.fixture;
          } else if (verb == kCreate || verb == kApplyNew) {
            name = Fresh("c");
          } else if (existing_tenant) {
            name = tenant;  // A tenant-bound principal's own or other tenant.
          } else {
            name = Fresh("x");
            net::Response made = h_->Admin("POST", std::string("/api/v1/") + k.plural,
                                           Body(k.plural, name, tenant, 0));
            ASSERT_EQ(made.status, 201) << desc << ": setup: " << made.body;
          }
          const std::string path = ObjPath(k, tenant, name);
          const std::string rv = h_->Rv();
          net::Response r;
          switch (verb) {
            case kGet: r = h_->Call(p.token, "GET", path); break;
            case kCreate:
              r = h_->Call(p.token, "POST", std::string("/api/v1/") + k.plural,
                           Body(k.plural, name, tenant, 0));
              break;
            case kReplace: r = h_->Call(p.token, "PUT", path, Body(k.plural, name, tenant, 1)); break;
            case kDelete: r = h_->Call(p.token, "DELETE", path); break;
            case kApplyNew:
              r = h_->Call(p.token, "POST", "/api/v1/apply", Body(k.plural, name, tenant, 0));
              break;
            case kApplyExisting:
              r = h_->Call(p.token, "POST", "/api/v1/apply",
                           Body(k.plural, name, tenant, k.cls == Cls::kWorkload ? 0 : 1));
              break;
            case kNumVerbs: break;
          }
          Expect(desc + " (" + path + ")", StatusFor(e, verb), CodeFor(e), r);
          if (e != 'A') {
            EXPECT_EQ(h_->Rv(), rv) << desc << ": a refused request changed the state";
          }
          if (e == 'A' && verb == kDelete) {
            EXPECT_EQ(h_->Admin("GET", path).status, 404) << desc << ": still there";
          }
          if (e == 'N') {
            // The answer must not say the object is there but forbidden.
            EXPECT_EQ(r.body.find("may not"), std::string::npos) << desc << ": " << r.body;
          }
        }
      }
    }
  }
  RecordProperty("cases", cases);
  std::printf("[ tenancy ] %d object cases\n", cases);
}

// ---- Lists --------------------------------------------------------------------

TEST_F(ApiTenancy, ListsNeverShowAnotherTenant) {
  // More objects in both tenants than the fixture holds.
  for (const char* t : {"t1", "t2"}) {
    for (int i = 0; i < 3; ++i) {
      ASSERT_EQ(h_->Admin("POST", "/api/v1/workloads",
                          Body("workloads", "lw" + std::to_string(i), t, 0)).status, 201);
      ASSERT_EQ(h_->Admin("POST", "/api/v1/localqueues",
                          Body("localqueues", "lq" + std::to_string(i), t, 0)).status, 201);
    }
  }
  int cases = 0;
  for (const Who& p : who_) {
    for (const KindSpec& k : kKinds) {
      for (const std::string& query :
           {std::string(""), "?tenant=" + p.Own(), "?tenant=" + p.Other(),
            "?tenant=" + p.Other() + "&limit=100", std::string("?limit=2")}) {
        ++cases;
        const std::string target = std::string("/api/v1/") + k.plural + query;
        const std::string desc = p.name() + " GET " + target;
        net::Response r = h_->Call(p.token, "GET", target);
        ASSERT_EQ(r.status, 200) << desc << ": " << r.body;
        json::value v = Parse(r.body);
        ASSERT_TRUE(v.is_object() && v.at("items").is_array()) << desc << ": " << r.body;
        std::set<std::string> keys, tenants;
        for (const json::value& item : v.at("items").as_array()) {
          keys.insert(KeyOf(item));
          tenants.insert(TenantOf(k.cls, item));
        }
        const bool asks_other = query.find("tenant=" + p.Other()) != std::string::npos;
        const bool limited = query.find("limit=2") != std::string::npos;
        if (!p.admin()) {
          EXPECT_EQ(tenants.count(p.Other()), 0u) << desc << " shows the other tenant: " << r.body;
          if (Namespaced(k.cls) && asks_other) {
            EXPECT_TRUE(keys.empty()) << desc << ": " << r.body;
          }
          if (k.cls == Cls::kTenant) {
            EXPECT_EQ(keys, std::set<std::string>{p.Own()}) << desc;
          }
          if (Namespaced(k.cls) && !asks_other && !limited) {
            EXPECT_EQ(keys.count(p.Own() + "/" + k.fixture), 1u) << desc << ": " << r.body;
          }
        } else if (Namespaced(k.cls)) {
          if (query.empty()) {
            EXPECT_EQ(keys.count(std::string("t1/") + k.fixture), 1u) << desc;
            EXPECT_EQ(keys.count(std::string("t2/") + k.fixture), 1u) << desc;
          } else if (query.rfind("?tenant=", 0) == 0) {
            std::string want = query.substr(8, 2);
            EXPECT_EQ(tenants, std::set<std::string>{want}) << desc;
          }
        }
        if (k.cls == Cls::kInfra && !limited) {
          EXPECT_EQ(keys.count(k.fixture), 1u) << desc << ": " << r.body;
        }
      }
    }
    // Paging through the Workloads one at a time stays in the own tenant and
    // sees the same as one list; a continue key in the other tenant shows
    // nothing of it.
    for (const char* plural : {"workloads", "localqueues"}) {
      ++cases;
      std::set<std::string> paged;
      std::string cont;
      for (int page = 0; page < 50; ++page) {
        std::string target = std::string("/api/v1/") + plural + "?limit=1" +
                             (cont.empty() ? "" : "&continue=" + net::UrlEncode(cont));
        json::value v = Parse(h_->Call(p.token, "GET", target).body);
        ASSERT_TRUE(v.is_object()) << p.name() << " " << target;
        for (const json::value& item : v.at("items").as_array()) paged.insert(KeyOf(item));
        cont = Str(v, {"continue"});
        if (cont.empty()) break;
      }
      json::value all = Parse(h_->Call(p.token, "GET", std::string("/api/v1/") + plural).body);
      std::set<std::string> listed;
      for (const json::value& item : all.at("items").as_array()) listed.insert(KeyOf(item));
      EXPECT_EQ(paged, listed) << p.name() << " paging " << plural;
      if (!p.admin()) {
        ++cases;
        std::string target = std::string("/api/v1/") + plural + "?continue=" +
                             net::UrlEncode(p.Other() + "/");
        json::value v = Parse(h_->Call(p.token, "GET", target).body);
        ASSERT_TRUE(v.is_object()) << target;
        for (const json::value& item : v.at("items").as_array()) {
          EXPECT_NE(Str(item, {"metadata", "namespace"}), p.Other())
              << p.name() << " " << target << " shows " << KeyOf(item);
        }
      }
    }
  }
  std::printf("[ tenancy ] %d list cases\n", cases);
}

// ---- Tokens, audit, nodes, whoami -------------------------------------------------

TEST_F(ApiTenancy, TokensAuditNodesAndWhoami) {
  int cases = 0;
  // Token grants: tenant-admin, member and viewer of the own tenant, a
  // member of the other tenant, a cluster-admin.
  const char* const kGrant[4] = {"AAAAA", "AAANF", "FFFNF", "FFFNF"};
  auto row = [](const Who& p) {
    return p.role == "cluster-admin" ? 0 : p.role == "tenant-admin" ? 1 : p.role == "member" ? 2 : 3;
  };
  for (const Who& p : who_) {
    struct G {
      std::string role, tenant;
    };
    const G grants[5] = {{"tenant-admin", p.Own()}, {"member", p.Own()}, {"viewer", p.Own()},
                         {"member", p.Other()}, {"cluster-admin", ""}};
    for (int i = 0; i < 5; ++i) {
      ++cases;
      const char e = kGrant[row(p)][i];
      const size_t before = h_->TokenCount();
      net::Response r = h_->Call(p.token, "POST", "/api/v1/tokens",
                                 R"({"user":"u)" + std::to_string(++counter_) + R"(","role":")" +
                                     grants[i].role + R"(","tenant":")" + grants[i].tenant + R"("})");
      Expect(p.name() + " creates a " + grants[i].role + " token for '" + grants[i].tenant + "'",
             e == 'A' ? 201 : StatusFor(e, kGet), CodeFor(e), r);
      EXPECT_EQ(h_->TokenCount(), before + (e == 'A' ? 1 : 0)) << p.name();
    }
    // Revocations: a member token of the own tenant, of the other, and a
    // cluster-admin token, each made for the case.
    const char* const kRevoke[4] = {"AAA", "ANN", "NNN", "NNN"};
    const G targets[3] = {{"member", p.Own()}, {"member", p.Other()}, {"cluster-admin", ""}};
    for (int i = 0; i < 3; ++i) {
      ++cases;
      std::string id;
      MakeToken("victim" + std::to_string(++counter_), targets[i].role, targets[i].tenant, &id);
      const char e = kRevoke[row(p)][i];
      net::Response r = h_->Call(p.token, "DELETE", "/api/v1/tokens/" + id);
      Expect(p.name() + " revokes a " + targets[i].role + " token of '" + targets[i].tenant + "'",
             StatusFor(e, kGet), CodeFor(e), r);
    }
    // The token list shows only what the principal may grant.
    ++cases;
    net::Response r = h_->Call(p.token, "GET", "/api/v1/tokens");
    ASSERT_EQ(r.status, 200) << p.name() << ": " << r.body;
    const json::value tokens = Parse(r.body);
    for (const json::value& t : tokens.at("items").as_array()) {
      if (p.admin()) break;
      EXPECT_EQ(Str(t, {"tenant"}), p.Own()) << p.name() << " sees token " << json::serialize(t);
      EXPECT_NE(Str(t, {"role"}), "cluster-admin") << p.name() << " sees " << json::serialize(t);
      EXPECT_EQ(p.role, "tenant-admin") << p.name() << " sees " << json::serialize(t);
    }
    // The audit log and its verification: the cluster-admin only.
    for (const char* target : {"/api/v1/audit?limit=5", "/api/v1/audit/verify"}) {
      ++cases;
      r = h_->Call(p.token, "GET", target);
      Expect(p.name() + " GET " + target, p.admin() ? 200 : 403, p.admin() ? "" : "Forbidden", r);
    }
    // Node actions: the cluster-admin only; a missing node is 404 for all.
    for (const char* action : {"cordon", "drain", "uncordon"}) {
      ++cases;
      const std::string rv = h_->Rv();
      r = h_->Call(p.token, "POST", std::string("/api/v1/nodes/nc/") + action);
      Expect(p.name() + " " + action + " nc", p.admin() ? 200 : 403, p.admin() ? "" : "Forbidden", r);
      if (!p.admin()) {
        EXPECT_EQ(h_->Rv(), rv) << p.name() << " " << action;
      }
      ++cases;
      r = h_->Call(p.token, "POST", std::string("/api/v1/nodes/ghost/") + action);
      Expect(p.name() + " " + action + " ghost", 404, "NotFound", r);
    }
    ++cases;
    r = h_->Call(p.token, "GET", "/api/v1/whoami");
    ASSERT_EQ(r.status, 200) << r.body;
    json::value me = Parse(r.body);
    EXPECT_EQ(Str(me, {"role"}), p.role);
    EXPECT_EQ(Str(me, {"tenant"}), p.tenant);
  }
  // A node left cordoned would change what others see; the last uncordon
  // was the cluster-admin's.
  EXPECT_EQ(Parse(h_->Admin("GET", "/api/v1/nodes/nc").body).at("spec").as_object().count("unschedulable"), 0u);
  std::printf("[ tenancy ] %d token/audit/node/whoami cases\n", cases);
}

// ---- Watches ----------------------------------------------------------------------

// A watch read from a raw socket, so that a quiet stream cannot block.
class RawWatch {
 public:
  RawWatch(uint16_t port, const std::string& token, const std::string& target) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      Close();
      return;
    }
    std::string req = "GET " + target +
                      " HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " +
                      token + "\r\n\r\n";
    if (::send(fd_, req.data(), req.size(), MSG_NOSIGNAL) != ssize_t(req.size())) {
      Close();
      return;
    }
    ::fcntl(fd_, F_SETFL, O_NONBLOCK);
  }
  ~RawWatch() { Close(); }
  int fd() const { return fd_; }
  bool HeadDone() const { return raw_.find("\r\n\r\n") != std::string::npos; }
  // Reads what is there: the number of bytes, 0 at end of stream.
  ssize_t ReadSome() {
    char buf[65536];
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n > 0) raw_.append(buf, size_t(n));
    if (n == 0) Close();
    return n;
  }
  int Status() const {
    if (raw_.size() < 12 || raw_.compare(0, 5, "HTTP/") != 0) return 0;
    return std::atoi(raw_.c_str() + 9);
  }
  // The body, de-chunked when chunked.
  std::string Body() const {
    size_t head = raw_.find("\r\n\r\n");
    if (head == std::string::npos) return "";
    std::string headers = raw_.substr(0, head);
    for (char& c : headers) c = char(std::tolower(static_cast<unsigned char>(c)));
    std::string rest = raw_.substr(head + 4);
    if (headers.find("transfer-encoding: chunked") == std::string::npos) return rest;
    std::string out;
    size_t at = 0;
    for (;;) {
      size_t eol = rest.find("\r\n", at);
      if (eol == std::string::npos) break;
      size_t n = std::strtoul(rest.substr(at, eol - at).c_str(), nullptr, 16);
      if (n == 0 || eol + 2 + n > rest.size()) break;
      out += rest.substr(eol + 2, n);
      at = eol + 2 + n + 2;
    }
    return out;
  }
  std::vector<json::value> Events() const {
    std::vector<json::value> out;
    std::string body = Body();
    size_t at = 0;
    while (at < body.size()) {
      size_t eol = body.find('\n', at);
      if (eol == std::string::npos) break;  // A partial line: not yet.
      std::string line = body.substr(at, eol - at);
      if (!line.empty()) out.push_back(Parse(line));
      at = eol + 1;
    }
    return out;
  }

 private:
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  int fd_ = -1;
  std::string raw_;
};

// Reads every watch until each has its head and nothing arrived for
// `idle_ms` (or `max_ms` passed).
void PumpAll(std::vector<std::unique_ptr<RawWatch>>& ws, int idle_ms, int max_ms) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  auto last = start;
  while (Clock::now() - start < std::chrono::milliseconds(max_ms)) {
    std::vector<pollfd> fds;
    std::vector<RawWatch*> owners;
    for (auto& w : ws) {
      if (w->fd() >= 0) {
        fds.push_back({w->fd(), POLLIN, 0});
        owners.push_back(w.get());
      }
    }
    if (fds.empty()) return;
    if (::poll(fds.data(), fds.size(), 10) > 0) {
      for (size_t i = 0; i < fds.size(); ++i) {
        if (fds[i].revents != 0 && owners[i]->ReadSome() > 0) last = Clock::now();
      }
    }
    bool heads = true;
    for (auto& w : ws) heads = heads && (w->HeadDone() || w->fd() < 0);
    if (heads && Clock::now() - last >= std::chrono::milliseconds(idle_ms)) return;
  }
}

TEST_F(ApiTenancy, WatchesNeverShowAnotherTenant) {
  struct Case {
    const Who* p;
    const KindSpec* k;
    bool ask_other;  // ?tenant=OTHER
    std::string target;
  };
  std::vector<Case> cases;
  std::vector<std::unique_ptr<RawWatch>> ws;
  for (const Who& p : who_) {
    for (const KindSpec& k : kKinds) {
      for (bool ask_other : {false, true}) {
        std::string target = std::string("/api/v1/") + k.plural + "?watch=1" +
                             (ask_other ? "&tenant=" + p.Other() : "");
        cases.push_back({&p, &k, ask_other, target});
        ws.push_back(std::make_unique<RawWatch>(srv_->port(), p.token, target));
      }
    }
  }
  PumpAll(ws, 150, 5000);
  // Live changes in both tenants and of the shared infrastructure.
  const std::vector<std::pair<std::string, std::string>> live = {
      {"/api/v1/resourceflavors", Body("resourceflavors", "live", "", 0)},
      {"/api/v1/cohorts", Body("cohorts", "live", "", 0)},
      {"/api/v1/clusterqueues", Body("clusterqueues", "live", "", 0)},
      {"/api/v1/workloadpriorityclasses", Body("workloadpriorityclasses", "live", "", 0)},
      {"/api/v1/nodes", Body("nodes", "live", "", 0)},
      {"/api/v1/localqueues", Body("localqueues", "live", "t1", 0)},
      {"/api/v1/localqueues", Body("localqueues", "live", "t2", 0)},
      {"/api/v1/workloads", Body("workloads", "live", "t1", 0)},
      {"/api/v1/workloads", Body("workloads", "live", "t2", 0)},
  };
  for (const auto& [target, body] : live) {
    ASSERT_EQ(h_->Admin("POST", target, body).status, 201) << target;
  }
  for (const char* t : {"t1", "t2"}) {
    ASSERT_EQ(h_->Admin("PUT", std::string("/api/v1/tenants/") + t, Body("tenants", t, "", 7)).status, 200);
  }
  PumpAll(ws, 200, 5000);

  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const Who& p = *c.p;
    const std::string desc = p.name() + " GET " + c.target;
    EXPECT_EQ(ws[i]->Status(), 200) << desc;
    std::set<std::string> added, modified;
    for (const json::value& ev : ws[i]->Events()) {
      ASSERT_TRUE(ev.is_object()) << desc << ": a line is not JSON";
      const json::value& obj = ev.at("object");
      std::string type = Str(ev, {"type"});
      (type == "ADDED" ? added : modified).insert(KeyOf(obj));
      std::string t = TenantOf(c.k->cls, obj);
      if (!p.admin()) {
        EXPECT_NE(t, p.Other()) << desc << " shows " << type << " " << KeyOf(obj);
      } else if (c.ask_other && Namespaced(c.k->cls)) {
        EXPECT_EQ(t, p.Other()) << desc << " shows " << type << " " << KeyOf(obj);
      }
    }
    // What must be there: the snapshot and the live changes it may see.
    std::set<std::string> want;
    switch (c.k->cls) {
      case Cls::kInfra:
        // ?tenant= means nothing to shared kinds, as in lists.
        want = {c.k->fixture, "live"};
        break;
      case Cls::kTenant:
        want = {p.Own()};
        if (p.admin()) want.insert("t2");
        break;
      case Cls::kLocalQueue:
      case Cls::kWorkload: {
        std::vector<std::string> ts;
        if (p.admin()) ts = c.ask_other ? std::vector<std::string>{"t2"} : std::vector<std::string>{"t1", "t2"};
        else if (!c.ask_other) ts = {p.Own()};
        for (const std::string& t : ts) {
          want.insert(t + "/" + c.k->fixture);
          want.insert(t + "/live");
        }
        break;
      }
    }
    std::set<std::string> seen = added;
    seen.insert(modified.begin(), modified.end());
    for (const std::string& key : want) {
      EXPECT_EQ(seen.count(key), 1u) << desc << " lacks " << key;
    }
    if (c.k->cls == Cls::kTenant) {
      // The tenants' label change: own tenant (both for the admin) only.
      EXPECT_EQ(modified.count(p.Own()), 1u) << desc << " lacks MODIFIED " << p.Own();
      if (p.admin()) {
        EXPECT_EQ(modified.count("t2"), 1u) << desc << " lacks MODIFIED t2";
      }
    }
    if (!p.admin() && c.ask_other && Namespaced(c.k->cls)) {
      EXPECT_TRUE(seen.empty()) << desc << " shows something";
    }
  }
  std::printf("[ tenancy ] %zu watch cases\n", cases.size());
}

// ---- Priority policy ---------------------------------------------------------

// Members may not outrank others at will: a literal priority is the
// cluster-admin's unless allowed, a tenant or LocalQueue may list the
// classes its members may name and a default, and only a cluster-admin
// sets that policy. A refusal is a 403 naming what is allowed, and stores
// nothing.
TEST_F(ApiTenancy, PriorityPolicyBindsMembers) {
  const Who& tadmin = who_[1];
  const Who& member = who_[2];
  ASSERT_EQ(member.name(), "member@t1");
  ASSERT_EQ(h_->Admin("POST", "/api/v1/apply", R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: WorkloadPriorityClass
metadata: {name: pc2}
value: 1000
)").status, 200);
  auto wl = [](const std::string& name, const std::string& extra) {
    return R"({"apiVersion":"allot.dev/v1","kind":"Workload","metadata":{"name":")" + name +
           R"(","namespace":"t1"},"spec":{"queueName":"q",)" + extra +
           R"("podSets":[{"count":1,"template":{"resources":{"requests":{"nvidia.com/gpu":1}}}}]}})";
  };
  auto refused = [&](const std::string& desc, const net::Response& r, const std::string& field,
                     const std::string& says, const std::string& name) {
    EXPECT_EQ(r.status, 403) << desc << ": " << r.body;
    EXPECT_EQ(Str(Parse(r.body), {"error", "field"}), field) << desc << ": " << r.body;
    EXPECT_NE(r.body.find(says), std::string::npos) << desc << ": " << r.body;
    EXPECT_EQ(h_->Admin("GET", "/api/v1/workloads/t1/" + name).status, 404) << desc;
  };
  // No policy: any class, but a literal priority is a cluster-admin's.
  refused("literal", h_->Call(member.token, "POST", "/api/v1/workloads",
                              wl("lit", R"("priority":2147483647,)")),
          "spec.priority", "a literal spec.priority is for cluster-admins only", "lit");
  EXPECT_EQ(h_->Call(member.token, "POST", "/api/v1/workloads",
                     wl("any", R"("priorityClassName":"pc2",)")).status, 201);
  net::Response r = h_->Admin("POST", "/api/v1/workloads", wl("adm", R"("priority":5000,)"));
  EXPECT_EQ(r.status, 201) << r.body;

  // The tenant allows pc1 only, by default.
  r = h_->Admin("POST", "/api/v1/apply", R"(
apiVersion: v1
kind: Namespace
metadata:
  name: t1
  annotations: {allot.dev/priority-classes: "pc1", allot.dev/default-priority-class: pc1}
)");
  ASSERT_EQ(r.status, 200) << r.body;
  refused("class", h_->Call(member.token, "POST", "/api/v1/workloads",
                            wl("vip", R"("priorityClassName":"pc2",)")),
          "spec.priorityClassName", "is not allowed in LocalQueue t1/q", "vip");
  r = h_->Call(member.token, "POST", "/api/v1/workloads", wl("vip", R"("priorityClassName":"pc2",)"));
  EXPECT_NE(r.body.find("allowed: pc1"), std::string::npos) << r.body;
  r = h_->Call(member.token, "POST", "/api/v1/workloads", wl("plain", ""));
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(Str(Parse(r.body), {"spec", "priorityClassName"}), "pc1") << r.body;
  EXPECT_EQ(json::serialize(Parse(r.body).at("status").at("priority")), "100") << r.body;

  // A tenant-admin may not widen its LocalQueue's policy; a cluster-admin may.
  const std::string lq_literal = R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata:
  name: q
  namespace: t1
  annotations: {allot.dev/allow-literal-priority: "true"}
spec: {clusterQueue: cq1}
)";
  r = h_->Call(tadmin.token, "POST", "/api/v1/apply", lq_literal);
  EXPECT_EQ(r.status, 403) << r.body;
  EXPECT_NE(r.body.find("only a cluster-admin may set the priority policy"), std::string::npos)
      << r.body;
  refused("literal, still", h_->Call(member.token, "POST", "/api/v1/workloads",
                                     wl("lit", R"("priority":7,)")),
          "spec.priority", "cluster-admins only", "lit");
  ASSERT_EQ(h_->Admin("POST", "/api/v1/apply", lq_literal).status, 200);
  r = h_->Call(member.token, "POST", "/api/v1/workloads", wl("lit", R"("priority":7,)"));
  EXPECT_EQ(r.status, 201) << r.body;
  // A tenant-admin's change that keeps the policy is its to make.
  r = h_->Call(tadmin.token, "POST", "/api/v1/apply", lq_literal);
  EXPECT_EQ(r.status, 200) << r.body;

  // The policy is stored with the objects: it holds after a restart.
  ASSERT_TRUE(srv_->Restart()) << srv_->Log();
  h_ = std::make_unique<Harness>(srv_.get());
  refused("class, after a restart", h_->Call(member.token, "POST", "/api/v1/workloads",
                                             wl("vip", R"("priorityClassName":"pc2",)")),
          "spec.priorityClassName", "is not allowed in LocalQueue t1/q", "vip");
  r = h_->Call(member.token, "POST", "/api/v1/workloads", wl("lit2", R"("priority":7,)"));
  EXPECT_EQ(r.status, 201) << r.body;

  // A policy that does not parse is refused where it is written.
  r = h_->Admin("POST", "/api/v1/apply", R"(
apiVersion: v1
kind: Namespace
metadata:
  name: t2
  annotations: {allot.dev/allow-literal-priority: "yes"}
)");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find(R"(allow-literal-priority: must be \"true\" or \"false\", not 'yes')"),
            std::string::npos)
      << r.body;

  // A default the policy does not allow: an apply is refused whole, as a
  // create is (it was checked without the default, then failed submitting).
  ASSERT_EQ(h_->Admin("POST", "/api/v1/apply", R"(
apiVersion: v1
kind: Namespace
metadata:
  name: t1
  annotations: {allot.dev/priority-classes: "pc1", allot.dev/default-priority-class: pc2}
)").status, 200);
  refused("default not allowed, by apply",
          h_->Call(member.token, "POST", "/api/v1/apply", wl("dflt", "")),
          "spec.priorityClassName", "is not allowed in LocalQueue t1/q", "dflt");
  refused("default not allowed", h_->Call(member.token, "POST", "/api/v1/workloads", wl("dflt", "")),
          "spec.priorityClassName", "is not allowed in LocalQueue t1/q", "dflt");
}

// ---- Preemption across tenants names no one ------------------------------------

// t1's high-priority workload preempts t2's in a shared ClusterQueue: t2's
// readers learn that a higher-priority workload of another tenant in that
// ClusterQueue took its place, never its name, in a get, a list or a watch;
// a cluster-admin reads the name in the condition's detail.
TEST_F(ApiTenancy, PreemptionAcrossTenantsNamesNoOne) {
  const std::string shared = R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cqp}
spec:
  namespaceSelector: {}
  preemption: {withinClusterQueue: LowerPriority}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: f1, resources: [{name: nvidia.com/gpu, nominalQuota: 1}]}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: p, namespace: t1}
spec: {clusterQueue: cqp}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: p, namespace: t2}
spec: {clusterQueue: cqp}
)";
  ASSERT_EQ(h_->Admin("POST", "/api/v1/apply", shared).status, 200);
  auto wl = [](const std::string& ns, const std::string& name, const std::string& extra) {
    return R"({"apiVersion":"allot.dev/v1","kind":"Workload","metadata":{"name":")" + name +
           R"(","namespace":")" + ns + R"("},"spec":{"queueName":"p",)" + extra +
           R"("podSets":[{"count":1,"template":{"resources":{"requests":{"nvidia.com/gpu":1}}}}]}})";
  };
  const Who& viewer2 = who_[6];  // viewer@t2
  ASSERT_EQ(viewer2.name(), "viewer@t2");
  ASSERT_EQ(h_->Admin("POST", "/api/v1/workloads", wl("t2", "low", "")).status, 201);
  std::vector<std::unique_ptr<RawWatch>> ws;
  ws.push_back(std::make_unique<RawWatch>(srv_->port(), viewer2.token, "/api/v1/workloads?watch=1"));
  PumpAll(ws, 150, 5000);
  net::Response high = h_->Admin("POST", "/api/v1/workloads",
                                 wl("t1", "vip", R"("priorityClassName":"pc1",)"));
  ASSERT_EQ(high.status, 201) << high.body;
  ASSERT_EQ(Str(Parse(high.body), {"status", "state"}), "Admitted") << high.body;
  PumpAll(ws, 200, 5000);

  const std::string kShown =
      "preempted by a higher-priority workload of another tenant in ClusterQueue cqp";
  net::Response got = h_->Call(viewer2.token, "GET", "/api/v1/workloads/t2/low");
  net::Response list = h_->Call(viewer2.token, "GET", "/api/v1/workloads");
  ASSERT_EQ(got.status, 200) << got.body;
  ASSERT_EQ(list.status, 200) << list.body;
  const std::string watched = ws[0]->Body();
  for (const auto& [what, body] : {std::pair<std::string, std::string>{"get", got.body},
                                   {"list", list.body},
                                   {"watch", watched}}) {
    EXPECT_EQ(body.find("vip"), std::string::npos) << what << " names t1's workload: " << body;
    EXPECT_EQ(body.find("\"detail\""), std::string::npos) << what << ": " << body;
    EXPECT_NE(body.find(kShown), std::string::npos) << what << ": " << body;
  }
  // The admin's view of the same workload names the preemptor.
  net::Response admin = h_->Admin("GET", "/api/v1/workloads/t2/low");
  std::string detail;
  const json::value admin_obj = Parse(admin.body);
  for (const json::value& c : admin_obj.at("status").at("conditions").as_array()) {
    if (Str(c, {"type"}) == "Preempted") detail = Str(c, {"detail"});
  }
  EXPECT_EQ(detail, "preempted by t1/vip") << admin.body;
}

}  // namespace
}  // namespace allot::server
