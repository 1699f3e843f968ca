// The cross-tenant matrix against a real `allot serve`: every role (the
// cluster-admin, and the tenant-admin, member and viewer of t1 and of t2,
// each a token made through POST /api/v1/tokens) against every endpoint,
// on objects of its own tenant and of the other one. The expectations
// follow server/authz.h: another tenant's objects are 404, never 403;
// lists and watches never show them. Watches, and the priority policy and
// cross-tenant preemption, have files of their own
// (api_tenancy_{watch,priority}_test.cc).
#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "server/tenancy_test_util.h"

namespace allot::server {
namespace {

using namespace testing;  // The tenancy fixture: tenancy_test_util.h.
namespace json = boost::json;

// ---- Verbs and expectations ----------------------------------------------------

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

// The list resourceVersion: it grows with every change of an object.
std::string Rv(TestServer& srv) {
  return Str(Parse(srv.Admin("GET", "/api/v1/tenants?limit=1").body), {"resourceVersion"});
}
size_t TokenCount(TestServer& srv) {
  json::value v = Parse(srv.Admin("GET", "/api/v1/tokens").body);
  return v.is_object() && v.at("items").is_array() ? v.at("items").as_array().size() : 0;
}

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
            net::Response made = srv_->Admin("POST", std::string("/api/v1/") + k.plural,
                                           Body(k.plural, name, tenant, 0));
            ASSERT_EQ(made.status, 201) << desc << ": setup: " << made.body;
          }
          const std::string path = ObjPath(k, tenant, name);
          const std::string rv = Rv(*srv_);
          net::Response r;
          switch (verb) {
            case kGet: r = srv_->Call(p.token, "GET", path); break;
            case kCreate:
              r = srv_->Call(p.token, "POST", std::string("/api/v1/") + k.plural,
                           Body(k.plural, name, tenant, 0));
              break;
            case kReplace: r = srv_->Call(p.token, "PUT", path, Body(k.plural, name, tenant, 1)); break;
            case kDelete: r = srv_->Call(p.token, "DELETE", path); break;
            case kApplyNew:
              r = srv_->Call(p.token, "POST", "/api/v1/apply", Body(k.plural, name, tenant, 0));
              break;
            case kApplyExisting:
              r = srv_->Call(p.token, "POST", "/api/v1/apply",
                           Body(k.plural, name, tenant, k.cls == Cls::kWorkload ? 0 : 1));
              break;
            case kNumVerbs: break;
          }
          Expect(desc + " (" + path + ")", StatusFor(e, verb), CodeFor(e), r);
          if (e != 'A') {
            EXPECT_EQ(Rv(*srv_), rv) << desc << ": a refused request changed the state";
          }
          if (e == 'A' && verb == kDelete) {
            EXPECT_EQ(srv_->Admin("GET", path).status, 404) << desc << ": still there";
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
      ASSERT_EQ(srv_->Admin("POST", "/api/v1/workloads",
                          Body("workloads", "lw" + std::to_string(i), t, 0)).status, 201);
      ASSERT_EQ(srv_->Admin("POST", "/api/v1/localqueues",
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
        net::Response r = srv_->Call(p.token, "GET", target);
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
        json::value v = Parse(srv_->Call(p.token, "GET", target).body);
        ASSERT_TRUE(v.is_object()) << p.name() << " " << target;
        for (const json::value& item : v.at("items").as_array()) paged.insert(KeyOf(item));
        cont = Str(v, {"continue"});
        if (cont.empty()) break;
      }
      json::value all = Parse(srv_->Call(p.token, "GET", std::string("/api/v1/") + plural).body);
      std::set<std::string> listed;
      for (const json::value& item : all.at("items").as_array()) listed.insert(KeyOf(item));
      EXPECT_EQ(paged, listed) << p.name() << " paging " << plural;
      if (!p.admin()) {
        ++cases;
        std::string target = std::string("/api/v1/") + plural + "?continue=" +
                             net::UrlEncode(p.Other() + "/");
        json::value v = Parse(srv_->Call(p.token, "GET", target).body);
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
      const size_t before = TokenCount(*srv_);
      net::Response r = srv_->Call(p.token, "POST", "/api/v1/tokens",
                                 R"({"user":"u)" + std::to_string(++counter_) + R"(","role":")" +
                                     grants[i].role + R"(","tenant":")" + grants[i].tenant + R"("})");
      Expect(p.name() + " creates a " + grants[i].role + " token for '" + grants[i].tenant + "'",
             e == 'A' ? 201 : StatusFor(e, kGet), CodeFor(e), r);
      EXPECT_EQ(TokenCount(*srv_), before + (e == 'A' ? 1 : 0)) << p.name();
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
      net::Response r = srv_->Call(p.token, "DELETE", "/api/v1/tokens/" + id);
      Expect(p.name() + " revokes a " + targets[i].role + " token of '" + targets[i].tenant + "'",
             StatusFor(e, kGet), CodeFor(e), r);
    }
    // The token list shows only what the principal may grant.
    ++cases;
    net::Response r = srv_->Call(p.token, "GET", "/api/v1/tokens");
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
      r = srv_->Call(p.token, "GET", target);
      Expect(p.name() + " GET " + target, p.admin() ? 200 : 403, p.admin() ? "" : "Forbidden", r);
    }
    // Node actions: the cluster-admin only; a missing node is 404 for all.
    for (const char* action : {"cordon", "drain", "uncordon"}) {
      ++cases;
      const std::string rv = Rv(*srv_);
      r = srv_->Call(p.token, "POST", std::string("/api/v1/nodes/nc/") + action);
      Expect(p.name() + " " + action + " nc", p.admin() ? 200 : 403, p.admin() ? "" : "Forbidden", r);
      if (!p.admin()) {
        EXPECT_EQ(Rv(*srv_), rv) << p.name() << " " << action;
      }
      ++cases;
      r = srv_->Call(p.token, "POST", std::string("/api/v1/nodes/ghost/") + action);
      Expect(p.name() + " " + action + " ghost", 404, "NotFound", r);
    }
    ++cases;
    r = srv_->Call(p.token, "GET", "/api/v1/whoami");
    ASSERT_EQ(r.status, 200) << r.body;
    json::value me = Parse(r.body);
    EXPECT_EQ(Str(me, {"role"}), p.role);
    EXPECT_EQ(Str(me, {"tenant"}), p.tenant);
  }
  // A node left cordoned would change what others see; the last uncordon
  // was the cluster-admin's.
  EXPECT_EQ(Parse(srv_->Admin("GET", "/api/v1/nodes/nc").body).at("spec").as_object().count("unschedulable"), 0u);
  std::printf("[ tenancy ] %d token/audit/node/whoami cases\n", cases);
}

}  // namespace
}  // namespace allot::server
