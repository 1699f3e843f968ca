#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "store/sqlite_schema.h"
#include "store/store.h"

namespace allot::store {
namespace {

ObjectRow Obj(std::string kind, std::string key, int64_t rv, std::string body) {
  return ObjectRow{std::move(kind), std::move(key), rv, std::move(body)};
}

TokenRow Token(std::string id, std::string hash, std::string user,
               std::string role, std::string tenant, int64_t created,
               bool revoked = false, std::string node = "") {
  return TokenRow{std::move(id),   std::move(hash),   std::move(user),
                  std::move(role), std::move(tenant), created,
                  revoked,         std::move(node)};
}

AuditRow Audit(int64_t seq, int64_t time, std::string principal,
               std::string tenant, std::string verb) {
  return AuditRow{seq,
                  time,
                  std::move(principal),
                  std::move(tenant),
                  std::move(verb),
                  "Workload team-a/w" + std::to_string(seq),
                  "ok",
                  "h" + std::to_string(seq - 1),
                  "h" + std::to_string(seq)};
}

// Rows as strings, so vectors compare with EXPECT_EQ and print readably.
std::string Str(const ObjectRow& o) {
  return o.kind + "|" + o.key + "|" + std::to_string(o.resource_version) + "|" +
         o.body;
}
std::string Str(const TokenRow& t) {
  return t.id + "|" + t.hash + "|" + t.user + "|" + t.role + "|" + t.tenant +
         "|" + std::to_string(t.created_unix_ms) + "|" +
         (t.revoked ? "revoked" : "live") + (t.node.empty() ? "" : "|" + t.node);
}
std::string Str(const AuditRow& a) {
  return std::to_string(a.seq) + "|" + std::to_string(a.time_unix_ms) + "|" +
         a.principal + "|" + a.tenant + "|" + a.verb + "|" + a.object + "|" +
         a.outcome + "|" + a.prev_hash + "|" + a.hash;
}
template <typename T>
std::vector<std::string> Strs(const std::vector<T>& rows) {
  std::vector<std::string> out;
  for (const T& r : rows) out.push_back(Str(r));
  return out;
}
std::vector<int64_t> Seqs(const std::vector<AuditRow>& rows) {
  std::vector<int64_t> out;
  for (const AuditRow& r : rows) out.push_back(r.seq);
  return out;
}

class SqliteStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string base = ::testing::TempDir();
    if (base.empty() || base.back() != '/') base += '/';
    std::string tmpl = base + "allot_store_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  std::string DbPath() const { return dir_ + "/state/allot.db"; }
  std::string Url() const { return "sqlite:" + DbPath(); }

  // Opens the store at DbPath(); fails the test (and returns null) on error.
  std::unique_ptr<Store> Open() {
    Result<std::unique_ptr<Store>> r = OpenStore(Url());
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::move(r).value() : nullptr;
  }

  static Snapshot MustLoad(Store& store) {
    Result<Snapshot> snap = store.Load();
    EXPECT_TRUE(snap.ok()) << snap.status().ToString();
    return snap.ok() ? std::move(snap).value() : Snapshot{};
  }

  std::string dir_;
};

TEST_F(SqliteStoreTest, RoundTripsEveryRowType) {
  std::unique_ptr<Store> store = Open();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->Describe(), Url());

  Batch b;
  // Bodies are opaque: UTF-8, an embedded NUL and a large one survive.
  b.puts = {Obj("Workload", "team-a/train", 7, "{\"gpus\":8}"),
            Obj("ClusterQueue", "gpu", 3, "{}"),
            Obj("Workload", "team-b/eval", 5, std::string("caf\xc3\xa9\0x", 7)),
            Obj("Workload", "team-a/big", 9, std::string(1 << 20, 'x'))};
  b.tokens = {Token("tok-b", "beef", "bob", "member", "team-b", 1000),
              Token("tok-a", "cafe", "alice", "cluster-admin", "", 999, true)};
  b.meta = {{"cluster-id", "c-123"}, {"rv", "9"}};
  b.audit = {Audit(1, 100, "alice", "", "login"),
             Audit(2, 101, "alice", "team-a", "create")};
  ASSERT_TRUE(store->Commit(b).ok());

  Snapshot snap = MustLoad(*store);
  // Objects: by kind, then resource version within the kind.
  EXPECT_EQ(
      Strs(snap.objects),
      Strs(std::vector<ObjectRow>{b.puts[1], b.puts[2], b.puts[0], b.puts[3]}));
  EXPECT_EQ(snap.objects[1].body.size(), 7u);  // The NUL survives.
  // Tokens: by id.
  EXPECT_EQ(Strs(snap.tokens),
            Strs(std::vector<TokenRow>{b.tokens[1], b.tokens[0]}));
  EXPECT_EQ(snap.meta, b.meta);
  ASSERT_TRUE(snap.last_audit.has_value());
  EXPECT_EQ(Str(*snap.last_audit), Str(b.audit[1]));
  EXPECT_EQ(snap.schema_version, sqlite::kSqliteSchemaVersion);

  Result<std::vector<AuditRow>> all = store->ListAudit(AuditFilter{});
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(Strs(*all), Strs(b.audit));
}

TEST_F(SqliteStoreTest, EmptyStoreLoadsEmpty) {
  std::unique_ptr<Store> store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Commit(Batch{}).ok());
  Snapshot snap = MustLoad(*store);
  EXPECT_TRUE(snap.objects.empty());
  EXPECT_TRUE(snap.tokens.empty());
  EXPECT_TRUE(snap.meta.empty());
  EXPECT_FALSE(snap.last_audit.has_value());
  EXPECT_EQ(snap.schema_version, sqlite::kSqliteSchemaVersion);
}

TEST_F(SqliteStoreTest, PutsReplaceByKindAndKey) {
  std::unique_ptr<Store> store = Open();
  ASSERT_NE(store, nullptr);
  Batch first;
  first.puts = {Obj("Workload", "a/x", 1, "v1"), Obj("Pod", "a/x", 2, "pod")};
  ASSERT_TRUE(store->Commit(first).ok());
  Batch second;
  second.puts = {Obj("Workload", "a/x", 3, "v2")};
  ASSERT_TRUE(store->Commit(second).ok());

  // Same key in another kind is a different object and stays.
  EXPECT_EQ(Strs(MustLoad(*store).objects),
            (std::vector<std::string>{"Pod|a/x|2|pod", "Workload|a/x|3|v2"}));
}

TEST_F(SqliteStoreTest, TokensAndMetaUpsert) {
  std::unique_ptr<Store> store = Open();
  ASSERT_NE(store, nullptr);
  Batch first;
  first.tokens = {Token("t1", "aa", "ann", "viewer", "team-a", 5)};
  first.meta = {{"k", "1"}};
  ASSERT_TRUE(store->Commit(first).ok());
  // Revoking is an upsert of the same id.
  Batch second;
  second.tokens = {Token("t1", "aa", "ann", "viewer", "team-a", 5, true)};
  second.meta = {{"k", "2"}};
  ASSERT_TRUE(store->Commit(second).ok());

  Snapshot snap = MustLoad(*store);
  EXPECT_EQ(Strs(snap.tokens),
            (std::vector<std::string>{"t1|aa|ann|viewer|team-a|5|revoked"}));
  EXPECT_EQ(snap.meta, (std::map<std::string, std::string>{{"k", "2"}}));
}

TEST_F(SqliteStoreTest, DeletesRunBeforePuts) {
  std::unique_ptr<Store> store = Open();
  ASSERT_NE(store, nullptr);
  Batch first;
  first.puts = {Obj("Workload", "a/x", 1, "x"), Obj("Workload", "a/y", 2, "y"),
                Obj("Workload", "a/z", 3, "z")};
  ASSERT_TRUE(store->Commit(first).ok());

  // Deleting a missing key is a no-op; a delete and a put of the same key
  // in one batch leave the put (deletes apply first).
  Batch second;
  second.deletes = {{"Workload", "a/x"},
                    {"Workload", "a/y"},
                    {"Pod", "a/z"},
                    {"Workload", "missing"}};
  second.puts = {Obj("Workload", "a/y", 4, "y2")};
  ASSERT_TRUE(store->Commit(second).ok());

  EXPECT_EQ(
      Strs(MustLoad(*store).objects),
      (std::vector<std::string>{"Workload|a/z|3|z", "Workload|a/y|4|y2"}));
}

// A group applies its batches in order, in one transaction: a later
// batch's delete removes an earlier batch's put, audit seqs continue across
// batches, and a bad batch rolls back the good ones before it.
TEST_F(SqliteStoreTest, CommitGroupAppliesBatchesInOrderAllOrNothing) {
  std::unique_ptr<Store> store = Open();
  ASSERT_NE(store, nullptr);
  Batch put_x, delete_x_put_y, put_y_again;
  put_x.puts = {Obj("Workload", "a/x", 1, "x")};
  put_x.audit = {Audit(1, 1, "u", "a", "create")};
  delete_x_put_y.deletes = {{"Workload", "a/x"}};
  delete_x_put_y.puts = {Obj("Workload", "a/y", 2, "y")};
  delete_x_put_y.audit = {Audit(2, 2, "u", "a", "delete")};
  put_y_again.puts = {Obj("Workload", "a/y", 3, "y3")};
  put_y_again.meta = {{"rv", "3"}};
  ASSERT_TRUE(store->CommitGroup({&put_x, &delete_x_put_y, &put_y_again}).ok());
  Snapshot snap = MustLoad(*store);
  EXPECT_EQ(Strs(snap.objects), (std::vector<std::string>{"Workload|a/y|3|y3"}));
  EXPECT_EQ(snap.meta.at("rv"), "3");
  ASSERT_TRUE(snap.last_audit.has_value());
  EXPECT_EQ(snap.last_audit->seq, 2);

  Batch good, bad;
  good.puts = {Obj("Workload", "a/z", 4, "z")};
  good.audit = {Audit(3, 3, "u", "a", "create")};
  bad.audit = {Audit(3, 3, "u", "a", "create")};  // Repeats seq 3.
  EXPECT_EQ(store->CommitGroup({&good, &bad}).code(),
            StatusCode::kFailedPrecondition);
  snap = MustLoad(*store);
  EXPECT_EQ(Strs(snap.objects), (std::vector<std::string>{"Workload|a/y|3|y3"}));
  EXPECT_EQ(snap.last_audit->seq, 2);
  // The failed group did not move the expected next seq.
  ASSERT_TRUE(store->CommitGroup({&good}).ok());
  EXPECT_EQ(MustLoad(*store).last_audit->seq, 3);
}

TEST_F(SqliteStoreTest, AuditSeqMustContinueTheLog) {
  std::unique_ptr<Store> store = Open();
  ASSERT_NE(store, nullptr);

  // The log starts at 1: a first record numbered 2 fails the whole batch,
  // object puts and meta included.
  Batch gap;
  gap.puts = {Obj("Workload", "a/x", 1, "x")};
  gap.meta = {{"k", "v"}};
  gap.audit = {Audit(2, 1, "u", "t", "create")};
  Status s = store->Commit(gap);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find("seq 2"), std::string::npos) << s.message();
  Snapshot snap = MustLoad(*store);
  EXPECT_TRUE(snap.objects.empty());
  EXPECT_TRUE(snap.meta.empty());
  EXPECT_FALSE(snap.last_audit.has_value());

  Batch one;
  one.audit = {Audit(1, 1, "u", "t", "create")};
  ASSERT_TRUE(store->Commit(one).ok());
  EXPECT_EQ(store->Commit(one).code(), StatusCode::kFailedPrecondition);

  // A gap after valid rows of the same batch: row 2 was inserted inside the
  // transaction and must be rolled back with everything else.
  Batch partial;
  partial.puts = {Obj("Workload", "a/y", 2, "y")};
  partial.audit = {Audit(2, 2, "u", "t", "create"),
                   Audit(4, 2, "u", "t", "create")};
  EXPECT_EQ(store->Commit(partial).code(), StatusCode::kFailedPrecondition);
  snap = MustLoad(*store);
  EXPECT_TRUE(snap.objects.empty());
  ASSERT_TRUE(snap.last_audit.has_value());
  EXPECT_EQ(snap.last_audit->seq, 1);

  // The failed commits did not move the expected next seq.
  Batch next;
  next.audit = {Audit(2, 3, "u", "t", "create"),
                Audit(3, 3, "u", "t", "delete")};
  ASSERT_TRUE(store->Commit(next).ok());
  EXPECT_EQ(MustLoad(*store).last_audit->seq, 3);
}

TEST_F(SqliteStoreTest, SqliteErrorRollsBackTheWholeBatch) {
  std::unique_ptr<Store> store = Open();
  ASSERT_NE(store, nullptr);
  Batch first;
  first.tokens = {Token("t1", "same-hash", "ann", "viewer", "", 1)};
  ASSERT_TRUE(store->Commit(first).ok());

  // Token hashes are unique: the second token fails after the object puts
  // and the meta row were already written inside the transaction.
  Batch bad;
  bad.puts = {Obj("Workload", "a/x", 1, "x")};
  bad.meta = {{"k", "v"}};
  bad.tokens = {Token("t2", "same-hash", "bob", "viewer", "", 2)};
  bad.audit = {Audit(1, 1, "u", "t", "create")};
  Status s = store->Commit(bad);
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_NE(s.message().find(Url()), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("UNIQUE"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("t2"), std::string::npos) << s.message();

  Snapshot snap = MustLoad(*store);
  EXPECT_TRUE(snap.objects.empty());
  EXPECT_TRUE(snap.meta.empty());
  EXPECT_EQ(snap.tokens.size(), 1u);
  EXPECT_FALSE(snap.last_audit.has_value());

  // The store is usable afterwards, and seq 1 is still the next one.
  Batch good;
  good.audit = {Audit(1, 1, "u", "t", "create")};
  EXPECT_TRUE(store->Commit(good).ok());
}

TEST_F(SqliteStoreTest, ReopenKeepsEverything) {
  Batch b;
  b.puts = {Obj("Workload", "a/x", 1, "x"), Obj("Node", "n1", 2, "n")};
  b.tokens = {Token("t1", "aa", "ann", "tenant-admin", "team-a", 5)};
  b.meta = {{"cluster-id", "c"}};
  b.audit = {Audit(1, 1, "ann", "team-a", "apply"),
             Audit(2, 2, "ann", "team-a", "apply")};
  {
    std::unique_ptr<Store> store = Open();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->Commit(b).ok());
  }
  std::unique_ptr<Store> store = Open();
  ASSERT_NE(store, nullptr);
  // The last seq is known right after open, before any Load.
  Batch repeat;
  repeat.audit = {Audit(2, 3, "ann", "team-a", "apply")};
  EXPECT_EQ(store->Commit(repeat).code(), StatusCode::kFailedPrecondition);

  Snapshot snap = MustLoad(*store);
  EXPECT_EQ(Strs(snap.objects),
            Strs(std::vector<ObjectRow>{b.puts[1], b.puts[0]}));
  EXPECT_EQ(Strs(snap.tokens), Strs(b.tokens));
  EXPECT_EQ(snap.meta, b.meta);
  ASSERT_TRUE(snap.last_audit.has_value());
  EXPECT_EQ(Str(*snap.last_audit), Str(b.audit[1]));

  Batch next;
  next.audit = {Audit(3, 3, "ann", "team-a", "apply")};
  EXPECT_TRUE(store->Commit(next).ok());
}

TEST_F(SqliteStoreTest, RefusesNewerSchema) {
  { ASSERT_NE(Open(), nullptr); }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(DbPath().c_str(), &db), SQLITE_OK);
  ASSERT_EQ(
      sqlite3_exec(db, "PRAGMA user_version = 99", nullptr, nullptr, nullptr),
      SQLITE_OK);
  sqlite3_close(db);

  Result<std::unique_ptr<Store>> r = OpenStore(Url());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  const std::string want =
      "store " + Url() + " has schema version 99, this allot knows up to " +
      std::to_string(sqlite::kSqliteSchemaVersion) + "; upgrade allot";
  EXPECT_EQ(r.status().message(), want);
}

TEST_F(SqliteStoreTest, CreatesParentDirectoriesAndAcceptsRelativePaths) {
  const std::filesystem::path old_cwd = std::filesystem::current_path();
  std::filesystem::current_path(dir_);
  Result<std::unique_ptr<Store>> r = OpenStore("sqlite:rel/deeper/a.db");
  std::filesystem::current_path(old_cwd);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->Describe(), "sqlite:rel/deeper/a.db");
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/rel/deeper/a.db"));
}

TEST_F(SqliteStoreTest, UncreatableDirectoryIsAnError) {
  std::ofstream(dir_ + "/file") << "not a directory";
  Result<std::unique_ptr<Store>> r = OpenStore("sqlite:" + dir_ + "/file/a.db");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find(dir_ + "/file/a.db"), std::string::npos)
      << r.status().message();
}

TEST_F(SqliteStoreTest, NotADatabaseIsAnInternalError) {
  std::filesystem::create_directories(dir_ + "/state");
  std::ofstream(DbPath()) << std::string(4096, 'g');
  Result<std::unique_ptr<Store>> r = OpenStore(Url());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
  EXPECT_NE(r.status().message().find(Url()), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("not a database"), std::string::npos)
      << r.status().message();
}

TEST(OpenStoreTest, RejectsBadUrls) {
  for (const std::string url :
       {"", "sqlite:", "/var/lib/allot/allot.db", "postgres://db/allot",
        "postgresql://db/allot", "mysql:x", "SQLITE:/x.db"}) {
    SCOPED_TRACE(url);
    Result<std::unique_ptr<Store>> r = OpenStore(url);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    const std::string& msg = r.status().message();
    EXPECT_NE(msg.find("\"" + url + "\""), std::string::npos) << msg;
    EXPECT_NE(msg.find("sqlite:PATH"), std::string::npos) << msg;
    EXPECT_NE(msg.find("postgres"), std::string::npos) << msg;
  }
}

TEST_F(SqliteStoreTest, ListAuditFilters) {
  std::unique_ptr<Store> store = Open();
  ASSERT_NE(store, nullptr);
  // seq: time, principal, tenant, verb
  Batch b;
  b.audit = {Audit(1, 100, "alice", "team-a", "create"),
             Audit(2, 110, "bob", "team-b", "create"),
             Audit(3, 120, "alice", "team-b", "delete"),
             Audit(4, 130, "-", "", "login"),
             Audit(5, 140, "alice", "team-a", "delete"),
             Audit(6, 150, "bob", "team-a", "create")};
  ASSERT_TRUE(store->Commit(b).ok());

  struct Case {
    std::string name;
    AuditFilter filter;
    std::vector<int64_t> seqs;
  };
  auto since = [](int64_t t) {
    AuditFilter f;
    f.since_unix_ms = t;
    return f;
  };
  AuditFilter window = since(110);
  window.until_unix_ms = 140;  // Exclusive: 140 is out.
  AuditFilter alice;
  alice.principal = "alice";
  AuditFilter team_a_create;
  team_a_create.tenant = "team-a";
  team_a_create.verb = "create";
  AuditFilter page;
  page.after_seq = 2;
  page.limit = 2;
  AuditFilter alice_after;
  alice_after.principal = "alice";
  alice_after.after_seq = 1;
  alice_after.until_unix_ms = 140;
  AuditFilter nobody;
  nobody.principal = "carol";
  const std::vector<Case> cases = {
      {"all", AuditFilter{}, {1, 2, 3, 4, 5, 6}},
      {"since", since(130), {4, 5, 6}},
      {"window", window, {2, 3, 4}},
      {"principal", alice, {1, 3, 5}},
      {"tenant+verb", team_a_create, {1, 6}},
      {"page", page, {3, 4}},
      {"principal+after+until", alice_after, {3}},
      {"no match", nobody, {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Result<std::vector<AuditRow>> rows = store->ListAudit(c.filter);
    ASSERT_TRUE(rows.ok()) << rows.status().ToString();
    EXPECT_EQ(Seqs(*rows), c.seqs);
  }
  // Rows come back whole.
  Result<std::vector<AuditRow>> rows = store->ListAudit(alice_after);
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(Str(rows->at(0)), Str(b.audit[2]));

  AuditFilter negative;
  negative.limit = -1;
  EXPECT_EQ(store->ListAudit(negative).status().code(),
            StatusCode::kInvalidArgument);
}

// The child of the kill -9 test: commits batch n = last + 1, last + 2, ...
// forever and writes n to `fd` after each Commit returns. Batch n puts
// Counter/a, Counter/b and Counter/c at resource version n, the object
// Batch/n, meta "last" = n and audit record n, so a partial batch shows as
// counters that disagree or a count that does not match.
[[noreturn]] void CommitForever(const std::string& url, int fd) {
  Result<std::unique_ptr<Store>> store = OpenStore(url);
  if (!store.ok()) _exit(2);
  Result<Snapshot> snap = (*store)->Load();
  if (!snap.ok()) _exit(3);
  int64_t n = snap->last_audit ? snap->last_audit->seq : 0;
  for (;;) {
    ++n;
    const std::string body = "{\"batch\":" + std::to_string(n) + "}";
    Batch b;
    for (const char* key : {"a", "b", "c"}) {
      b.puts.push_back(Obj("Counter", key, n, body));
    }
    b.puts.push_back(Obj("Batch", std::to_string(n), n, body));
    b.meta["last"] = std::to_string(n);
    b.audit.push_back(Audit(n, n, "writer", "", "create"));
    if (!(*store)->Commit(b).ok()) _exit(4);
    if (write(fd, &n, sizeof n) != sizeof n) _exit(5);
  }
}

TEST_F(SqliteStoreTest, KillNineLosesNoAcknowledgedBatch) {
  { ASSERT_NE(Open(), nullptr); }  // No connection is open across fork().
  int64_t acked = 0;
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      CommitForever(Url(), fds[1]);
    }
    close(fds[1]);
    // Kill soon after an acknowledgement: the child is then inside its next
    // Commit. Acks still in the pipe were acknowledged too, so drain it.
    const int64_t target = acked + 20 + 7 * round;
    int64_t n = 0;
    while (acked < target && read(fds[0], &n, sizeof n) == sizeof n) acked = n;
    ASSERT_EQ(kill(pid, SIGKILL), 0);
    while (read(fds[0], &n, sizeof n) == sizeof n) acked = n;
    close(fds[0]);
    int wstatus = 0;
    ASSERT_EQ(waitpid(pid, &wstatus, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL)
        << "child exited on its own, status " << wstatus;
    ASSERT_GE(acked, target);

    std::unique_ptr<Store> store = Open();
    ASSERT_NE(store, nullptr);
    Snapshot snap = MustLoad(*store);
    ASSERT_TRUE(snap.last_audit.has_value());
    // The batch in flight at the kill may have committed without its ack.
    const int64_t last = snap.last_audit->seq;
    EXPECT_GE(last, acked);
    EXPECT_LE(last, acked + 1);
    const std::string body = "{\"batch\":" + std::to_string(last) + "}";
    std::vector<std::string> want;
    for (int64_t i = 1; i <= last; ++i) {
      want.push_back("Batch|" + std::to_string(i) + "|" + std::to_string(i) +
                     "|{\"batch\":" + std::to_string(i) + "}");
    }
    for (const char* key : {"a", "b", "c"}) {
      want.push_back("Counter|" + std::string(key) + "|" +
                     std::to_string(last) + "|" + body);
    }
    EXPECT_EQ(Strs(snap.objects), want);
    EXPECT_EQ(snap.meta["last"], std::to_string(last));
    Result<std::vector<AuditRow>> audit = store->ListAudit(AuditFilter{});
    ASSERT_TRUE(audit.ok());
    ASSERT_EQ(static_cast<int64_t>(audit->size()), last);
    EXPECT_EQ(audit->back().seq, last);
    acked = last;  // The next child continues from the store.
  }
}

// Not a test: prints commit rates on this machine. Run with
//   allot_store_tests --gtest_also_run_disabled_tests
//       --gtest_filter='*DISABLED_CommitRates'
UsageRow Usage(const std::string& tenant, const std::string& wl, int64_t start,
               int64_t end) {
  UsageRow u;
  u.tenant = tenant;
  u.workload = wl;
  u.attempt = 1;
  u.local_queue = "q";
  u.cluster_queue = "cq";
  u.user = "ann";
  u.flavor = "h100";
  u.resource = "nvidia.com/gpu";
  u.quantity_milli = 2000;
  u.start_unix_ms = start;
  u.end_unix_ms = end;
  u.util_milli_ms = 7;
  u.price_micros_per_hour = 2500000;
  return u;
}
std::vector<std::string> Keys(const std::vector<UsageRow>& rows) {
  std::vector<std::string> out;
  for (const UsageRow& u : rows) {
    out.push_back(u.tenant + "/" + u.workload + ":" + std::to_string(u.start_unix_ms) + "-" +
                  std::to_string(u.end_unix_ms) + ":" + u.user + u.flavor + u.resource +
                  std::to_string(u.quantity_milli + u.util_milli_ms + u.attempt +
                                 u.price_micros_per_hour) + u.local_queue + u.cluster_queue +
                  ":kind" + std::to_string(int(u.kind)));
  }
  return out;
}

TEST_F(SqliteStoreTest, UsageRowsAreAppendedAndListedByWindowAndTenant) {
  Batch b;
  b.usage = {Usage("team-a", "x", 100, 200), Usage("team-b", "y", 150, 400),
             Usage("team-a", "z", 300, 500)};
  b.usage[1].kind = UsageKind::kParked;
  b.usage[2].kind = UsageKind::kOnParked;
  {
    std::unique_ptr<Store> store = Open();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->Commit(b).ok());
  }
  std::unique_ptr<Store> store = Open();  // Reopened: still there.
  ASSERT_NE(store, nullptr);
  auto all = store->ListUsage({});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(Keys(*all), Keys(b.usage));  // Oldest end first, every field kept.
  // Rows that overlap [since, until): touching ends do not count.
  auto mid = store->ListUsage({200, 300, ""});
  ASSERT_TRUE(mid.ok());
  EXPECT_EQ(Keys(*mid), Keys({b.usage[1]}));
  auto a = store->ListUsage({0, 1000, "team-a"});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(Keys(*a), Keys({b.usage[0], b.usage[2]}));
  auto empty = store->ListUsage({500, 500, ""});
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);
}

// A store of schema version 1 (before usage) is migrated when opened.
TEST_F(SqliteStoreTest, MigratesAVersionOneStore) {
  {
    std::unique_ptr<Store> store = Open();
    ASSERT_NE(store, nullptr);
    Batch b;
    b.puts = {Obj("Workload", "a/x", 1, "x")};
    ASSERT_TRUE(store->Commit(b).ok());
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(DbPath().c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "DROP TABLE usage; DROP TABLE gpu_rollup; "
                         "ALTER TABLE tokens DROP COLUMN node; PRAGMA user_version = 1",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  std::unique_ptr<Store> store = Open();
  ASSERT_NE(store, nullptr);
  Snapshot snap = MustLoad(*store);
  EXPECT_EQ(snap.schema_version, sqlite::kSqliteSchemaVersion);
  EXPECT_EQ(snap.objects.size(), 1u);
  Batch u;
  u.usage = {Usage("team-a", "x", 1, 2)};
  EXPECT_TRUE(store->Commit(u).ok());
  EXPECT_EQ(store->ListUsage({})->size(), 1u);
}

// A store of schema version 3 (tokens without a node binding) is migrated
// when opened: its tokens bind no node, new ones keep theirs.
TEST_F(SqliteStoreTest, MigratesAVersionThreeStoreTokens) {
  {
    std::unique_ptr<Store> store = Open();
    ASSERT_NE(store, nullptr);
    Batch b;
    b.tokens = {Token("t1", "aa", "agents", "node", "", 5)};
    ASSERT_TRUE(store->Commit(b).ok());
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(DbPath().c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "ALTER TABLE tokens DROP COLUMN node; ALTER TABLE usage DROP COLUMN "
                         "kind; PRAGMA user_version = 3",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  Batch b;
  b.tokens = {Token("t2", "bb", "gpu-07", "node", "", 6, false, "gpu-07"),
              Token("t3", "cc", "sims", "node", "", 7, false, "sim-*")};
  {
    std::unique_ptr<Store> store = Open();
    ASSERT_NE(store, nullptr);
    Snapshot snap = MustLoad(*store);
    EXPECT_EQ(snap.schema_version, sqlite::kSqliteSchemaVersion);
    EXPECT_EQ(Strs(snap.tokens), Strs(std::vector<TokenRow>{Token("t1", "aa", "agents", "node", "", 5)}));
    ASSERT_TRUE(store->Commit(b).ok());
  }
  std::unique_ptr<Store> store = Open();  // Reopened: the bindings are kept.
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(Strs(MustLoad(*store).tokens),
            Strs(std::vector<TokenRow>{Token("t1", "aa", "agents", "node", "", 5), b.tokens[0],
                                       b.tokens[1]}));
}

// A store of schema version 4 (usage rows without a kind) is migrated when
// opened: its rows are runs, new rows keep their kind.
TEST_F(SqliteStoreTest, MigratesAVersionFourStoreUsage) {
  Batch old;
  old.usage = {Usage("team-a", "x", 1, 2)};
  {
    std::unique_ptr<Store> store = Open();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->Commit(old).ok());
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(DbPath().c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "ALTER TABLE usage DROP COLUMN kind; PRAGMA user_version = 4",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  std::unique_ptr<Store> store = Open();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(MustLoad(*store).schema_version, sqlite::kSqliteSchemaVersion);
  Batch parked;
  parked.usage = {Usage("team-a", "x", 2, 9)};
  parked.usage[0].kind = UsageKind::kParked;
  ASSERT_TRUE(store->Commit(parked).ok());
  auto rows = store->ListUsage({});
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(Keys(*rows), Keys({old.usage[0], parked.usage[0]}));
}

TEST_F(SqliteStoreTest, DISABLED_CommitRates) {
  std::unique_ptr<Store> store = Open();
  ASSERT_NE(store, nullptr);
  const std::string body(400, 'j');  // About a small Workload's JSON.
  using Clock = std::chrono::steady_clock;
  const auto seconds = [](Clock::duration d) {
    return std::chrono::duration<double>(d).count();
  };
  int64_t rv = 0;

  const int kSingles = 2000;
  auto start = Clock::now();
  for (int i = 0; i < kSingles; ++i) {
    Batch b;
    b.puts.push_back(
        Obj("Workload", "ns/w" + std::to_string(i % 500), ++rv, body));
    ASSERT_TRUE(store->Commit(b).ok());
  }
  const double single_s = seconds(Clock::now() - start);

  const int kBatches = 200;
  const int kPerBatch = 256;
  start = Clock::now();
  for (int i = 0; i < kBatches; ++i) {
    Batch b;
    for (int j = 0; j < kPerBatch; ++j) {
      b.puts.push_back(
          Obj("Workload", "ns/b" + std::to_string(j + i * 7), ++rv, body));
    }
    Status st = store->Commit(b);
    ASSERT_TRUE(st.ok()) << st.ToString();
  }
  const double batch_s = seconds(Clock::now() - start);

  std::printf("1-object commits: %.0f commits/s (%d in %.2f s)\n",
              kSingles / single_s, kSingles, single_s);
  std::printf("256-object commits: %.0f commits/s, %.0f objects/s\n",
              kBatches / batch_s, kBatches * kPerBatch / batch_s);
}

}  // namespace
}  // namespace allot::store
