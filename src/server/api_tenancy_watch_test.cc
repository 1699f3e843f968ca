// Watches across tenants against a real `allot serve` (tenancy_test_util.h):
// every role watches every kind, with and without ?tenant= of the other
// tenant, while objects of both tenants and of the shared infrastructure
// change; no stream shows another tenant's objects, and each shows what its
// principal may see.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "server/tenancy_test_util.h"

namespace allot::server {
namespace {

using namespace testing;  // The tenancy fixture: tenancy_test_util.h.
namespace json = boost::json;

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
      {"/api/v1/images", Body("images", "live", "", 0)},
      {"/api/v1/localqueues", Body("localqueues", "live", "t1", 0)},
      {"/api/v1/localqueues", Body("localqueues", "live", "t2", 0)},
      {"/api/v1/workloads", Body("workloads", "live", "t1", 0)},
      {"/api/v1/workloads", Body("workloads", "live", "t2", 0)},
  };
  for (const auto& [target, body] : live) {
    ASSERT_EQ(srv_->Admin("POST", target, body).status, 201) << target;
  }
  for (const char* t : {"t1", "t2"}) {
    ASSERT_EQ(srv_->Admin("PUT", std::string("/api/v1/tenants/") + t, Body("tenants", t, "", 7)).status, 200);
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

}  // namespace
}  // namespace allot::server
