// The audit log end to end: what `allot serve` records, GET /api/v1/audit
// and its filters, GET /api/v1/audit/verify, and `allot audit verify
// --store` on a store file tampered with through SQLite directly. Secrets
// never reach the log output, the audit records or the store. The hash
// chain on hand-built records is in audit_chain_test.cc.
#include <gtest/gtest.h>

#include <sqlite3.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "server/audit.h"
#include "server/test_server.h"
#include "store/store.h"
#include "testing/builders.h"
#include "testing/process.h"

namespace allot::server {
namespace {

using allot::testing::WorkloadJson;
using store::AuditRow;
using testing::TestServer;
namespace json = boost::json;

std::string Str(const json::value& v) {
  return v.is_string() ? std::string(v.as_string()) : json::serialize(v);
}

std::pair<int, std::string> VerifyStore(const std::string& path) {
  const char* bin = std::getenv("ALLOT_BIN");
  allot::testing::Ran r = allot::testing::Run(
      {bin ? bin : "allot", "audit", "verify", "--store", "sqlite:" + path}, nullptr,
      /*merge_stderr=*/true);
  return {r.code, r.out};
}

// The same check in this process (VerifyAuditStore, as `allot audit
// verify --store` does), where a subprocess
// per case would cost more than the check: (0, "audit log OK...") or
// (1, "audit log BROKEN: ...").
std::pair<int, std::string> VerifyHere(const std::string& path) {
  auto st = store::OpenStore("sqlite:" + path);
  if (!st.ok()) return {2, st.status().ToString()};
  size_t records = 0;
  Status s = VerifyAuditStore(**st, "sqlite:" + path, &records);
  if (!s.ok()) return {1, "audit log BROKEN: " + s.message()};
  return {0, "audit log OK: " + std::to_string(records) + " records verified"};
}

// A small sqlite3 handle for tampering.
class Db {
 public:
  explicit Db(const std::string& path) {
    if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) {
      ADD_FAILURE() << "cannot open " << path << ": " << sqlite3_errmsg(db_);
    }
  }
  ~Db() { sqlite3_close(db_); }
  void Exec(const std::string& sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      ADD_FAILURE() << sql << ": " << (err ? err : "?");
    }
    sqlite3_free(err);
  }
  std::optional<AuditRow> Row(int64_t seq) {
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(db_,
                       "SELECT seq, time_ms, principal, tenant, verb, object, outcome, "
                       "prev_hash, hash FROM audit WHERE seq = ?",
                       -1, &st, nullptr);
    sqlite3_bind_int64(st, 1, seq);
    std::optional<AuditRow> r;
    if (sqlite3_step(st) == SQLITE_ROW) {
      auto text = [&](int i) {
        const unsigned char* t = sqlite3_column_text(st, i);
        return t ? std::string(reinterpret_cast<const char*>(t)) : std::string();
      };
      r.emplace();
      r->seq = sqlite3_column_int64(st, 0);
      r->time_unix_ms = sqlite3_column_int64(st, 1);
      r->principal = text(2);
      r->tenant = text(3);
      r->verb = text(4);
      r->object = text(5);
      r->outcome = text(6);
      r->prev_hash = text(7);
      r->hash = text(8);
    }
    sqlite3_finalize(st);
    return r;
  }
  void Insert(const AuditRow& r) {
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(db_,
                       "INSERT INTO audit (seq, time_ms, principal, tenant, verb, object, "
                       "outcome, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       -1, &st, nullptr);
    sqlite3_bind_int64(st, 1, r.seq);
    sqlite3_bind_int64(st, 2, r.time_unix_ms);
    int i = 3;
    for (const std::string* s : {&r.principal, &r.tenant, &r.verb, &r.object, &r.outcome,
                                 &r.prev_hash, &r.hash}) {
      sqlite3_bind_text(st, i++, s->c_str(), -1, SQLITE_TRANSIENT);
    }
    EXPECT_EQ(sqlite3_step(st), SQLITE_DONE) << sqlite3_errmsg(db_);
    sqlite3_finalize(st);
  }

 private:
  sqlite3* db_ = nullptr;
};

// Appends to the store's log a forged record after record `last`, chained
// and hashed correctly: only a head can tell.
void AppendForged(Db& d, int64_t last) {
  std::optional<AuditRow> prev = d.Row(last);
  ASSERT_TRUE(prev.has_value());
  AuditRow f = *prev;
  f.seq = last + 1;
  f.object = "Workload t1/forged";
  f.prev_hash = prev->hash;
  f.hash = AuditHash(f);
  d.Insert(f);
}

// Tenants t1 and t2, each with LocalQueue q into ClusterQueue cq (8 GPUs);
// node n1 with 4: seven objects.
std::string Cluster() {
  namespace b = allot::testing;
  return b::Namespace("t1") + b::Namespace("t2") + b::Flavor("h100", "") +
         b::GpuCq("cq", "", "h100", "nominalQuota: 8") + b::LocalQueue("t1", "q", "cq") +
         b::LocalQueue("t2", "q", "cq") + b::Node("n1", "", "64", "512Gi", b::Uuids("G", 4));
}

json::array AuditItems(TestServer& srv, const std::string& query) {
  int code = 0;
  json::value v = srv.Json("GET", "/api/v1/audit" + query, "", &code);
  EXPECT_EQ(code, 200) << query << ": " << json::serialize(v);
  if (code != 200 || !v.is_object() || !v.as_object().contains("items")) return {};
  return v.at("items").as_array();
}

std::vector<int64_t> Seqs(const json::array& items) {
  std::vector<int64_t> out;
  for (const json::value& i : items) out.push_back(i.at("seq").as_int64());
  return out;
}

TEST(AuditLog, RecordsFiltersVerifiesAndDetectsTampering) {
  auto srv = TestServer::StartWith(Cluster());
  ASSERT_NE(srv, nullptr);
  const std::string admin = srv->admin_token();
  int code = 0;
  std::string alice_id;
  const std::string alice = srv->NewToken("alice", "member", "t1", &alice_id);
  ASSERT_FALSE(alice.empty());
  json::value r;

  // Mutations, allowed and refused.
  net::Response resp = srv->Call(alice, "POST", "/api/v1/workloads", WorkloadJson("t1/w1"));
  EXPECT_EQ(resp.status, 201) << resp.body;
  resp = srv->Call(alice, "POST", "/api/v1/workloads", WorkloadJson("t2/w2"));
  EXPECT_EQ(resp.status, 404) << resp.body;  // Not her tenant.
  resp = srv->Call(admin, "POST", "/api/v1/workloads", WorkloadJson("t2/w3"));
  EXPECT_EQ(resp.status, 201) << resp.body;
  resp = srv->Call(admin, "DELETE", "/api/v1/workloads/t2/w3");
  EXPECT_EQ(resp.status, 200) << resp.body;
  // Failed authentications: none, unknown, revoked.
  const std::string bogus = "allot_" + std::string(64, 'b');
  resp = srv->Call("", "GET", "/api/v1/whoami");
  EXPECT_EQ(resp.status, 401) << resp.body;
  resp = srv->Call(bogus, "POST", "/api/v1/workloads", WorkloadJson("t1/w4"));
  EXPECT_EQ(resp.status, 401) << resp.body;
  // Only a cluster-admin reads the log.
  resp = srv->Call(alice, "GET", "/api/v1/audit");
  EXPECT_EQ(resp.status, 403) << resp.body;
  resp = srv->Call(admin, "DELETE", "/api/v1/tokens/" + alice_id);
  EXPECT_EQ(resp.status, 200) << resp.body;
  resp = srv->Call(alice, "GET", "/api/v1/workloads");
  EXPECT_EQ(resp.status, 401) << resp.body;
  resp = srv->Call(admin, "GET", "/api/v1/audit?limit=x");
  EXPECT_EQ(resp.status, 400) << resp.body;

  // Everything, in order, from 1 without gaps.
  json::array all = AuditItems(*srv, "");
  ASSERT_GE(all.size(), 10u);
  const int64_t total = int64_t(all.size());
  for (int64_t i = 0; i < total; ++i) {
    EXPECT_EQ(all[i].at("seq").as_int64(), i + 1) << json::serialize(all[i]);
    EXPECT_EQ(Str(all[i].at("hash")).size(), 64u);
  }
  EXPECT_EQ(Str(all[0].at("verb")), "bootstrap") << json::serialize(all[0]);
  std::vector<std::string> lines;
  for (const json::value& a : all) {
    lines.push_back(Str(a.at("principal")) + "|" + Str(a.at("tenant")) + "|" +
                    Str(a.at("verb")) + "|" + Str(a.at("object")) + "|" +
                    Str(a.at("outcome")).substr(0, 3));
  }
  const std::vector<std::string> want = {
      "-||bootstrap|Token admin|ok",
      "admin||apply|7 object(s)|ok",
      "admin||create|Token for alice (member t1)|ok",
      "alice|t1|create|Workload t1/w1|ok",
      "alice|t1|create|Workload t2/w2|404",
      "admin||create|Workload t2/w3|ok",
      "admin||delete|Workload t2/w3|ok",
      "-||authenticate|GET /api/v1/whoami|401",
      "-||authenticate|POST /api/v1/workloads|401",
      "admin||revoke|Token " + alice_id + "|ok",
      "-||authenticate|GET /api/v1/workloads|401",
  };
  EXPECT_EQ(lines, want);
  const json::value* unauth = nullptr;
  for (const json::value& a : all) {
    if (Str(a.at("verb")) == "authenticate") {
      unauth = &a;
      break;
    }
  }
  ASSERT_NE(unauth, nullptr);
  EXPECT_EQ(Str(unauth->at("outcome")), "401 no bearer token");
  const int64_t unauth_seq = unauth->at("seq").as_int64();

  // Filters.
  json::array items = AuditItems(*srv, "?verb=authenticate");
  EXPECT_EQ(items.size(), 3u);
  for (const json::value& a : items) {
    EXPECT_EQ(Str(a.at("verb")), "authenticate");
    EXPECT_EQ(Str(a.at("principal")), "-");
  }
  items = AuditItems(*srv, "?principal=alice");
  EXPECT_EQ(items.size(), 2u);
  for (const json::value& a : items) EXPECT_EQ(Str(a.at("principal")), "alice");
  items = AuditItems(*srv, "?principal=-&verb=authenticate&limit=2");
  EXPECT_EQ(Seqs(items), (std::vector<int64_t>{8, 9}));
  items = AuditItems(*srv, "?tenant=t1");
  EXPECT_EQ(Seqs(items), (std::vector<int64_t>{4, 5}));
  items = AuditItems(*srv, "?limit=3");
  EXPECT_EQ(Seqs(items), (std::vector<int64_t>{1, 2, 3}));
  items = AuditItems(*srv, "?after=8");
  EXPECT_EQ(int64_t(items.size()), total - 8);
  if (!items.empty()) {
    EXPECT_EQ(items[0].at("seq").as_int64(), 9);
  }
  items = AuditItems(*srv, "?after=3&limit=2");
  EXPECT_EQ(Seqs(items), (std::vector<int64_t>{4, 5}));
  items = AuditItems(*srv, "?verb=create&after=4");
  EXPECT_EQ(Seqs(items), (std::vector<int64_t>{5, 6}));
  items = AuditItems(*srv, "?after=" + std::to_string(total));
  EXPECT_TRUE(items.empty());
  items = AuditItems(*srv, "?principal=nobody");
  EXPECT_TRUE(items.empty());

  r = srv->Json("GET", "/api/v1/audit/verify", "", &code);
  EXPECT_EQ(code, 200) << json::serialize(r);
  EXPECT_EQ(json::serialize(r), "{\"ok\":true,\"records\":" + std::to_string(total) + "}");

  // No secret anywhere: not in the log, not in the audit records.
  const std::string all_json = json::serialize(all);
  for (const std::string* secret : {&admin, &alice, &bogus}) {
    EXPECT_EQ(srv->Log().find(*secret), std::string::npos) << "a token is in the server's log";
    EXPECT_EQ(all_json.find(*secret), std::string::npos) << "a token is in the audit log";
  }
  EXPECT_EQ(srv->Log().find("bootstrap cluster-admin token"), std::string::npos) << srv->Log();

  // The store, read directly after a clean stop.
  srv->Stop();
  const std::string db = srv->dir() + "/allot.db";
  for (const std::string* secret : {&admin, &alice, &bogus}) {
    for (const char* suffix : {"", "-wal"}) {
      EXPECT_EQ(allot::testing::ReadFile(db + suffix).find(*secret), std::string::npos)
          << "a token is stored in clear in allot.db" << suffix;
    }
  }
  const std::string d = srv->dir();
  auto copy = [&](const std::string& name) {
    std::string path = d + "/" + name + ".db";
    Db src(db);
    src.Exec("VACUUM INTO '" + path + "'");
    return path;
  };

  {
    std::string clean = copy("clean");
    auto [rc, out] = VerifyStore(clean);
    EXPECT_EQ(rc, 0) << out;
    EXPECT_NE(out.find("audit log OK: " + std::to_string(total) + " records"), std::string::npos)
        << out;
  }
  {  // One record's outcome edited.
    std::string path = copy("edited");
    Db(path).Exec("UPDATE audit SET outcome = 'ok' WHERE seq = " + std::to_string(unauth_seq));
    auto [rc, out] = VerifyStore(path);
    EXPECT_NE(rc, 0) << out;
    EXPECT_NE(out.find("audit record " + std::to_string(unauth_seq) + ":"), std::string::npos)
        << out;
  }
  {  // Edited and re-hashed: the next record gives it away.
    std::string path = copy("rehashed");
    Db t(path);
    std::optional<AuditRow> row = t.Row(unauth_seq);
    ASSERT_TRUE(row.has_value());
    row->outcome = "ok";
    row->hash = AuditHash(*row);
    t.Exec("UPDATE audit SET outcome = 'ok', hash = '" + row->hash +
           "' WHERE seq = " + std::to_string(unauth_seq));
    auto [rc, out] = VerifyHere(path);
    EXPECT_NE(rc, 0) << out;
    EXPECT_NE(out.find("audit record " + std::to_string(unauth_seq + 1) + ":"),
              std::string::npos)
        << out;
  }
  {  // A forged record inserted after record 4, the later ones renumbered.
    std::string path = copy("inserted");
    Db t(path);
    std::optional<AuditRow> prev = t.Row(4);
    ASSERT_TRUE(prev.has_value());
    t.Exec("UPDATE audit SET seq = -seq - 1 WHERE seq > 4");
    t.Exec("UPDATE audit SET seq = -seq WHERE seq < 0");
    AuditRow forged;
    forged.seq = 5;
    forged.time_unix_ms = prev->time_unix_ms;
    forged.principal = "admin";
    forged.verb = "delete";
    forged.object = "Workload t1/evidence";
    forged.outcome = "ok";
    forged.prev_hash = prev->hash;
    forged.hash = AuditHash(forged);
    t.Insert(forged);
    auto [rc, out] = VerifyStore(path);
    EXPECT_NE(rc, 0) << out;
    EXPECT_NE(out.find("audit record 6:"), std::string::npos) << out;
  }
  {  // A forged record appended, chained correctly: the head tells.
    std::string path = copy("appended");
    {
      Db t(path);
      AppendForged(t, total);
    }
    auto [rc, out] = VerifyHere(path);
    EXPECT_NE(rc, 0) << out;
    EXPECT_NE(out.find("record " + std::to_string(total + 1)), std::string::npos) << out;
  }
  {  // A middle record deleted.
    std::string path = copy("deleted");
    Db(path).Exec("DELETE FROM audit WHERE seq = 5");
    auto [rc, out] = VerifyStore(path);
    EXPECT_NE(rc, 0) << out;
    EXPECT_NE(out.find("audit record 6: expected record 5"), std::string::npos) << out;
  }
  {  // The last record deleted: the store's head names it.
    std::string path = copy("tail");
    Db(path).Exec("DELETE FROM audit WHERE seq = " + std::to_string(total));
    auto [rc, out] = VerifyStore(path);
    EXPECT_NE(rc, 0) << out;
    EXPECT_NE(out.find("head says " + std::to_string(total)), std::string::npos) << out;
  }
  {  // Two records swapped (by content).
    std::string path = copy("swapped");
    Db t(path);
    t.Exec("UPDATE audit SET seq = -1 WHERE seq = 6");
    t.Exec("UPDATE audit SET seq = 6 WHERE seq = 7");
    t.Exec("UPDATE audit SET seq = 7 WHERE seq = -1");
    auto [rc, out] = VerifyHere(path);
    EXPECT_NE(rc, 0) << out;
    EXPECT_NE(out.find("audit record 6:"), std::string::npos) << out;
  }

  // The untouched store still verifies, and the server comes back on it
  // and keeps chaining.
  {
    auto [rc, out] = VerifyHere(db);
    EXPECT_EQ(rc, 0) << out;
  }
  ASSERT_TRUE(srv->Restart()) << srv->Log();
  resp = srv->Call(bogus, "GET", "/api/v1/whoami");
  EXPECT_EQ(resp.status, 401);
  r = srv->Json("GET", "/api/v1/audit/verify", "", &code);
  EXPECT_EQ(json::serialize(r), "{\"ok\":true,\"records\":" + std::to_string(total + 1) + "}");
  items = AuditItems(*srv, "?after=" + std::to_string(total));
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(Str(items[0].at("verb")), "authenticate");
  for (const std::string* secret : {&admin, &alice, &bogus}) {
    EXPECT_EQ(srv->Log().find(*secret), std::string::npos) << "a token is in the server's log";
  }
  srv->Stop();
  auto [rc, out] = VerifyHere(db);
  EXPECT_EQ(rc, 0) << out;
}

// GET /api/v1/audit/verify while the server runs: the server knows its
// newest record (audit.h: it keeps the head and passes it), so a record
// removed from the end of the store's log is reported, and so is an edit.
// (Only reads follow the tampering: the next append would not continue the
// store's log, and a failed commit stops the server by design.)
TEST(AuditLog, VerifyEndpointSeesTamperingOfTheLiveStore) {
  auto srv = TestServer::StartWith(Cluster());
  ASSERT_NE(srv, nullptr);
  int code = 0;
  net::Response resp = srv->Call("", "GET", "/api/v1/whoami");
  EXPECT_EQ(resp.status, 401);
  resp = srv->Call(srv->admin_token(), "POST", "/api/v1/workloads", WorkloadJson("t1/w1"));
  EXPECT_EQ(resp.status, 201) << resp.body;
  json::value r = srv->Json("GET", "/api/v1/audit/verify", "", &code);
  EXPECT_EQ(json::serialize(r), "{\"ok\":true,\"records\":4}");

  const std::string db = srv->dir() + "/allot.db";
  {
    Db t(db);
    t.Exec("UPDATE audit SET outcome = 'ok' WHERE seq = 3");
  }
  r = srv->Json("GET", "/api/v1/audit/verify", "", &code);
  EXPECT_EQ(code, 200);
  EXPECT_EQ(Str(r.at("ok")), "false") << json::serialize(r);
  EXPECT_NE(json::serialize(r).find("audit record 3:"), std::string::npos)
      << json::serialize(r);
  {
    Db t(db);
    t.Exec("UPDATE audit SET outcome = '401 no bearer token' WHERE seq = 3");
  }
  r = srv->Json("GET", "/api/v1/audit/verify", "", &code);
  EXPECT_EQ(json::serialize(r), "{\"ok\":true,\"records\":4}");

  {
    Db t(db);
    t.Exec("DELETE FROM audit WHERE seq = 4");
  }
  r = srv->Json("GET", "/api/v1/audit/verify", "", &code);
  EXPECT_EQ(code, 200);
  EXPECT_EQ(Str(r.at("ok")), "false")
      << "the newest record was deleted from the store, yet the server says: "
      << json::serialize(r);
  EXPECT_NE(json::serialize(r).find("4"), std::string::npos) << json::serialize(r);
  // The offline check sees it (the store's head).
  srv->Kill9();
  auto [rc, out] = VerifyStore(db);
  EXPECT_NE(rc, 0) << out;
  EXPECT_NE(out.find("head says 4"), std::string::npos) << out;
}

// A store whose log lost its tail, or gained a forged one, while the server
// was down: the server starts, says what is wrong, refuses changes (they
// could not be audited) and keeps `audit verify` failing, through restarts
// and on the file, until a cluster-admin acknowledges the break, which the
// log then records. Before, the server chained onto whatever tail it found
// and one write made even the offline check pass.
TEST(AuditLog, ABrokenTailStopsAppendsUntilAcknowledged) {
  namespace fs = std::filesystem;
  auto base = TestServer::StartWith(Cluster());
  ASSERT_NE(base, nullptr);
  int code = 0;
  const std::string alice = base->NewToken("alice", "member", "t1");
  ASSERT_FALSE(alice.empty());
  json::value r;
  for (int i = 0; i < 4; ++i) {
    net::Response resp =
        base->Call(alice, "POST", "/api/v1/workloads", WorkloadJson("t1/w" + std::to_string(i)));
    ASSERT_EQ(resp.status, 201) << resp.body;
  }
  const int64_t total = int64_t(AuditItems(*base, "").size());
  ASSERT_GE(total, 7);
  base->Stop();
  ASSERT_TRUE(fs::exists(base->dir() + "/allot.db.audit-head"));

  struct Case {
    std::string name;
    std::function<void(const std::string& db)> tamper;
    std::string says;
  };
  auto cut = [](int n) {
    return [n](const std::string& db) {
      Db(db).Exec("DELETE FROM audit WHERE seq > (SELECT MAX(seq) FROM audit) - " +
                  std::to_string(n));
    };
  };
  const std::string t = std::to_string(total);
  std::vector<Case> cases = {
      {"last record deleted", cut(1), "record " + t + " was deleted"},
      {"last 3 deleted", cut(3), std::to_string(total - 2) + " to " + t + " were deleted"},
      {"all deleted", cut(int(total)), "the log has no records"},
      {"forged record appended",
       [total](const std::string& db) {
         Db d(db);
         AppendForged(d, total);
       },
       "record " + std::to_string(total + 1) + " was added outside the server"},
      {"last 3 deleted and the store's head rewritten",
       [total](const std::string& db) {
         Db d(db);
         d.Exec("DELETE FROM audit WHERE seq > " + std::to_string(total - 3));
         std::optional<AuditRow> last = d.Row(total - 3);
         ASSERT_TRUE(last.has_value());
         d.Exec("UPDATE meta SET v = '" + std::to_string(total - 3) + ":" + last->hash +
                "' WHERE k = 'audit_head'");
       },
       "the head file"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::string dir = base->dir() + "-" + std::to_string(&c - cases.data());
    fs::remove_all(dir);
    fs::copy(base->dir(), dir, fs::copy_options::recursive);
    c.tamper(dir + "/allot.db");
    auto srv = TestServer::Start(dir);
    ASSERT_NE(srv, nullptr);
    EXPECT_NE(srv->Log().find("AUDIT LOG BROKEN: "), std::string::npos) << srv->Log();
    EXPECT_NE(srv->Log().find(c.says), std::string::npos) << srv->Log();
    r = srv->Json("GET", "/api/v1/audit/verify", "", &code);
    EXPECT_EQ(Str(r.at("ok")), "false") << json::serialize(r);
    EXPECT_NE(json::serialize(r).find(c.says), std::string::npos) << json::serialize(r);
    // Reads work; changes are refused and change nothing.
    net::Response resp = srv->Call(alice, "GET", "/api/v1/workloads/t1/w0");
    EXPECT_EQ(resp.status, 200) << resp.body;
    resp = srv->Call(alice, "POST", "/api/v1/workloads", WorkloadJson("t1/after"));
    EXPECT_EQ(resp.status, 503) << resp.body;
    EXPECT_NE(resp.body.find("the audit log is broken"), std::string::npos) << resp.body;
    EXPECT_NE(resp.body.find("allot audit acknowledge"), std::string::npos) << resp.body;
    EXPECT_EQ(srv->Call(alice, "GET", "/api/v1/workloads/t1/after").status, 404);
    EXPECT_EQ(srv->Call("", "GET", "/api/v1/whoami").status, 401);  // Not appended either.
    // A restart does not launder it, nor does the file check pass.
    ASSERT_TRUE(srv->Restart()) << srv->Log();
    r = srv->Json("GET", "/api/v1/audit/verify", "", &code);
    EXPECT_EQ(Str(r.at("ok")), "false") << json::serialize(r);
    srv->Stop();
    auto [rc, out] = VerifyHere(dir + "/allot.db");
    EXPECT_EQ(rc, 1) << out;
    ASSERT_TRUE(srv->Restart()) << srv->Log();

    // Only a cluster-admin acknowledges, with a reason.
    resp = srv->Call(alice, "POST", "/api/v1/audit/acknowledge", R"({"reason":"me"})");
    EXPECT_EQ(resp.status, 403) << resp.body;
    resp = srv->Call(srv->admin_token(), "POST", "/api/v1/audit/acknowledge", "{}");
    EXPECT_EQ(resp.status, 400) << resp.body;
    resp = srv->Call(srv->admin_token(), "POST", "/api/v1/audit/acknowledge",
                     R"({"reason":"restored from backup, INC-42"})");
    ASSERT_EQ(resp.status, 200) << resp.body;
    r = srv->Json("GET", "/api/v1/audit/verify", "", &code);
    EXPECT_EQ(Str(r.at("ok")), "true") << json::serialize(r);
    json::array all = AuditItems(*srv, "");
    ASSERT_FALSE(all.empty());
    EXPECT_EQ(Str(all.back().at("verb")), "acknowledge");
    EXPECT_NE(Str(all.back().at("outcome")).find(c.says), std::string::npos)
        << json::serialize(all.back());
    EXPECT_NE(Str(all.back().at("outcome")).find("INC-42"), std::string::npos);
    resp = srv->Call(srv->admin_token(), "POST", "/api/v1/audit/acknowledge",
                     R"({"reason":"again"})");
    EXPECT_EQ(resp.status, 409) << resp.body;
    resp = srv->Call(alice, "POST", "/api/v1/workloads", WorkloadJson("t1/after"));
    EXPECT_EQ(resp.status, 201) << resp.body;
    ASSERT_TRUE(srv->Restart()) << srv->Log();
    EXPECT_EQ(srv->Log().find("AUDIT LOG BROKEN"), std::string::npos)
        << "broken again after the acknowledgement: " << srv->Log();
    r = srv->Json("GET", "/api/v1/audit/verify", "", &code);
    EXPECT_EQ(Str(r.at("ok")), "true") << json::serialize(r);
    srv->Stop();
    std::tie(rc, out) = VerifyHere(dir + "/allot.db");
    EXPECT_EQ(rc, 0) << out;
  }
}

}  // namespace
}  // namespace allot::server
