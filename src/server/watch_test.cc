// Watches of `allot serve` (integration, the real binary on loopback):
// GET /api/v1/{plural}?watch=1 streams newline-delimited JSON events
// {"type":"ADDED|MODIFIED|DELETED","object":{...}}: first the objects that
// exist (ADDED), then every change; ?resourceVersion=N replays exactly the
// events after N (410 Gone, "list again", when they are no longer kept,
// e.g. after a restart); a tenant-bound token sees only its tenant's workloads;
// revoking a token (or deleting its tenant) ends its watches with a last
// {"type":"ERROR"} line, and answers its pending log reads, at once.
#include <gtest/gtest.h>

#include <fcntl.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "server/test_server.h"
#include "testing/builders.h"

namespace allot::server {
namespace {

using testing::TestServer;
namespace json = boost::json;
using std::chrono::seconds;

constexpr seconds kWait{60};  // Only against hangs.

std::string Str(const json::value& v) {
  return v.is_string() ? std::string(v.as_string()) : json::serialize(v);
}

// One parsed event line.
struct Event {
  std::string line;  // As received, without the newline.
  std::string type;
  std::string key;  // "ns/name" or "name".
  int64_t rv = -1;
  std::string state;  // Workloads: status.state.
  json::value object;
};

Event Parse(const std::string& line) {
  Event e;
  e.line = line;
  boost::system::error_code ec;
  json::value v = json::parse(line, ec);
  if (ec || !v.is_object()) {
    ADD_FAILURE() << "not a JSON object: " << line;
    return e;
  }
  const json::object& o = v.as_object();
  if (!o.contains("type") || !o.contains("object") || !o.at("object").is_object()) {
    ADD_FAILURE() << "not an event: " << line;
    return e;
  }
  e.type = Str(o.at("type"));
  e.object = o.at("object");
  if (e.type == "ERROR") return e;  // A Status, not an object: why the watch ended.
  const json::object& obj = e.object.as_object();
  const json::object& md = obj.at("metadata").as_object();
  e.key = (md.contains("namespace") ? Str(md.at("namespace")) + "/" : "") +
          Str(md.at("name"));
  if (md.contains("resourceVersion")) {
    e.rv = std::stoll(Str(md.at("resourceVersion")));
  }
  if (const json::value* st = obj.if_contains("status"); st && st->is_object()) {
    if (const json::value* s = st->as_object().if_contains("state")) e.state = Str(*s);
  }
  return e;
}

// A watch stream read on its own thread, with its own client.
class Watch {
 public:
  Watch(const TestServer& srv, const std::string& target, const std::string& token)
      : target_(target) {
    std::unique_ptr<net::HttpClient> client = srv.NewClient();
    thread_ = std::thread([this, token, client = std::move(client)] {
      Status s = client ? client->Stream(target_, {{"Authorization", "Bearer " + token}},
                                         [this](const std::string& data) {
                                           Feed(data);
                                           return true;
                                         })
                        : Status::Internal("no client");
      std::lock_guard<std::mutex> l(mu_);
      status_ = s;
      done_ = true;
      cv_.notify_all();
    });
  }
  ~Watch() {
    if (thread_.joinable()) thread_.join();
  }

  // The events so far, once there are at least `n` (or the stream ended or
  // the wait ran out: the caller's checks then fail with the details).
  std::vector<Event> Wait(size_t n) {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait_for(l, kWait, [&] { return events_.size() >= n || done_; });
    EXPECT_GE(events_.size(), n) << target_ << ": waited for " << n << " events, got:\n"
                                 << Dump(events_);
    return events_;
  }
  // Waits for the stream to end; its status.
  Status WaitDone() {
    std::unique_lock<std::mutex> l(mu_);
    bool done = cv_.wait_for(l, kWait, [&] { return done_; });
    EXPECT_TRUE(done) << target_ << ": the stream did not end";
    return status_;
  }
  std::vector<Event> Events() {
    std::lock_guard<std::mutex> l(mu_);
    return events_;
  }

  static std::string Dump(const std::vector<Event>& evs) {
    std::string s;
    for (const Event& e : evs) s += "  " + e.line + "\n";
    return s;
  }

 private:
  void Feed(const std::string& data) {
    std::lock_guard<std::mutex> l(mu_);
    buf_ += data;
    size_t nl;
    while ((nl = buf_.find('\n')) != std::string::npos) {
      std::string line = buf_.substr(0, nl);
      buf_.erase(0, nl + 1);
      if (!line.empty()) events_.push_back(Parse(line));
    }
    cv_.notify_all();
  }

  std::string target_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::string buf_;
  std::vector<Event> events_;
  bool done_ = false;
  Status status_;
  std::thread thread_;
};

// Watches must end before their threads are joined: keep them in a Watches
// declared BEFORE the server, so that the server stops (ending the streams)
// first.
using Watches = std::vector<std::unique_ptr<Watch>>;
Watch* StartWatch(Watches* ws, const TestServer& srv, const std::string& target,
                  const std::string& token) {
  ws->push_back(std::make_unique<Watch>(srv, target, token));
  return ws->back().get();
}

// Tenants t1 and t2, each with LocalQueue q into ClusterQueue cq
// (BestEffortFIFO, 8 GPUs); node n1 with 8.
std::string Cluster() {
  namespace b = allot::testing;
  return b::Namespace("t1") + b::Namespace("t2") + b::Flavor("h100", "") +
         b::GpuCq("cq", "", "h100", "nominalQuota: 8", "  queueingStrategy: BestEffortFIFO\n") +
         b::LocalQueue("t1", "q", "cq") + b::LocalQueue("t2", "q", "cq") +
         b::Node("n1", "", "64", "512Gi", b::Uuids("G", 8));
}

std::string Workload(const std::string& ns, const std::string& name, int gpus) {
  return allot::testing::WorkloadJson(ns + "/" + name).Gpus(gpus);
}

void Submit(TestServer& srv, const std::string& ns, const std::string& name, int gpus) {
  int code = 0;
  json::value r = srv.Json("POST", "/api/v1/workloads", Workload(ns, name, gpus), &code);
  EXPECT_EQ(code, 201) << ns << "/" << name << ": " << json::serialize(r);
}
void Delete(TestServer& srv, const std::string& path) {
  int code = 0;
  json::value r = srv.Json("DELETE", "/api/v1/" + path, "", &code);
  EXPECT_EQ(code, 200) << path << ": " << json::serialize(r);
}
int64_t ListRv(TestServer& srv, const std::string& plural, const std::string& token = "") {
  net::Response r = srv.Call(token.empty() ? srv.admin_token() : token, "GET",
                             "/api/v1/" + plural);
  EXPECT_EQ(r.status, 200) << r.body;
  boost::system::error_code ec;
  json::value v = json::parse(r.body, ec);
  if (ec || !v.is_object() || !v.as_object().contains("resourceVersion")) {
    ADD_FAILURE() << "no resourceVersion in " << r.body;
    return -1;
  }
  return std::stoll(Str(v.at("resourceVersion")));
}

// "TYPE key state" per event, for readable comparisons.
std::vector<std::string> Summary(const std::vector<Event>& evs, size_t from = 0) {
  std::vector<std::string> out;
  for (size_t i = from; i < evs.size(); ++i) {
    out.push_back(evs[i].type + " " + evs[i].key +
                  (evs[i].state.empty() ? "" : " " + evs[i].state));
  }
  return out;
}
std::vector<std::string> Lines(const std::vector<Event>& evs) {
  std::vector<std::string> out;
  for (const Event& e : evs) out.push_back(e.line);
  return out;
}
std::vector<std::string> LinesAfter(const std::vector<Event>& evs, int64_t rv) {
  std::vector<std::string> out;
  for (const Event& e : evs) {
    if (e.rv > rv) out.push_back(e.line);
  }
  return out;
}
void ExpectIncreasingRv(const std::vector<Event>& evs, size_t from) {
  for (size_t i = from + 1; i < evs.size(); ++i) {
    EXPECT_LT(evs[i - 1].rv, evs[i].rv) << "events out of order:\n" << Watch::Dump(evs);
  }
}

TEST(Watch, WorkloadEventsResumeAndRestart) {
  Watches watches;
  auto srv = TestServer::StartWith(Cluster());
  ASSERT_NE(srv, nullptr);
  const std::string admin = srv->admin_token();
  int code = 0;
  Submit(*srv, "t1", "a", 8);  // Admitted: the queue is full.
  Submit(*srv, "t1", "b", 4);  // Pending.

  // Existing objects first, as ADDED, in their current state.
  Watch* w1 = StartWatch(&watches, *srv, "/api/v1/workloads?watch=1", admin);
  std::vector<Event> ev = w1->Wait(2);
  ASSERT_EQ(Summary(ev), (std::vector<std::string>{"ADDED t1/a Admitted",
                                                   "ADDED t1/b Pending"}));

  Submit(*srv, "t1", "c", 4);  // Pending.
  Submit(*srv, "t2", "x", 1);  // Pending.
  ev = w1->Wait(4);
  EXPECT_EQ(Summary(ev, 2),
            (std::vector<std::string>{"ADDED t1/c Pending", "ADDED t2/x Pending"}));

  // A delete frees 8 GPUs: b and c are admitted in the same turn.
  Delete(*srv, "workloads/t1/a");
  ev = w1->Wait(7);
  EXPECT_EQ(Summary(ev, 4),
            (std::vector<std::string>{"DELETED t1/a Admitted", "MODIFIED t1/b Admitted",
                                      "MODIFIED t1/c Admitted"}));
  const int64_t n = ListRv(*srv, "workloads");
  ASSERT_GE(n, ev.back().rv);

  Delete(*srv, "workloads/t1/c");  // x is admitted.
  Submit(*srv, "t1", "e", 1);      // Admitted in the turn that adds it.
  ev = w1->Wait(10);
  ASSERT_EQ(ev.size(), 10u) << Watch::Dump(ev);
  EXPECT_EQ(Summary(ev, 7),
            (std::vector<std::string>{"DELETED t1/c Admitted", "MODIFIED t2/x Admitted",
                                      "ADDED t1/e Admitted"}));
  ExpectIncreasingRv(ev, 2);
  for (size_t i = 2; i < ev.size(); ++i) EXPECT_GT(ev[i].rv, 0) << ev[i].line;
  // Each event's object is the workload as GET shows it then (minus what
  // GET computes on the spot).
  {
    json::value e = srv->Json("GET", "/api/v1/workloads/t1/e", "", &code);
    ASSERT_EQ(code, 200);
    EXPECT_EQ(json::serialize(e.at("status").at("admission")),
              json::serialize(ev[9].object.at("status").at("admission")));
    EXPECT_EQ(Str(e.at("metadata").at("resourceVersion")), std::to_string(ev[9].rv));
  }

  // Resuming replays exactly the events after N, then follows.
  Watch* w2 = StartWatch(&watches, *srv,
                         "/api/v1/workloads?watch=1&resourceVersion=" + std::to_string(n),
                         admin);
  std::vector<Event> ev2 = w2->Wait(3);
  // From the middle of the stream: after c was added.
  const int64_t mid = ev[2].rv;
  Watch* w3 = StartWatch(&watches, *srv,
                         "/api/v1/workloads?watch=1&resourceVersion=" + std::to_string(mid),
                         admin);
  std::vector<Event> ev3 = w3->Wait(LinesAfter(ev, mid).size());
  Submit(*srv, "t1", "f", 8);  // Pending; every watcher sees it.
  ev = w1->Wait(11);
  ev2 = w2->Wait(4);
  ev3 = w3->Wait(LinesAfter(ev, mid).size());
  EXPECT_EQ(Summary(ev, 10), (std::vector<std::string>{"ADDED t1/f Pending"}));
  EXPECT_EQ(Lines(ev2), LinesAfter(ev, n)) << "resume from " << n;
  EXPECT_EQ(Lines(ev3), LinesAfter(ev, mid)) << "resume from " << mid;
  // From the newest version: nothing replayed, then what follows.
  const int64_t now = ListRv(*srv, "workloads");
  EXPECT_EQ(now, ev.back().rv);
  Watch* w4 = StartWatch(&watches, *srv,
                         "/api/v1/workloads?watch=1&resourceVersion=" + std::to_string(now),
                         admin);
  Delete(*srv, "workloads/t1/f");
  ev = w1->Wait(12);
  std::vector<Event> ev4 = w4->Wait(1);
  EXPECT_EQ(Lines(ev4), LinesAfter(ev, now));
  EXPECT_EQ(Summary(ev4), (std::vector<std::string>{"DELETED t1/f Pending"}));

  // A restart ends the streams and forgets the events: resuming from
  // before it is refused, and the client must list again.
  ASSERT_TRUE(srv->Restart()) << srv->Log();
  for (Watch* w : {w1, w2, w3, w4}) (void)w->WaitDone();
  net::Response old = srv->Call(admin, "GET",
                                "/api/v1/workloads?watch=1&resourceVersion=" + std::to_string(n));
  // Kubernetes' answer: 410 Gone, and the message says what to do.
  EXPECT_EQ(old.status, 410) << old.body;
  EXPECT_NE(old.body.find("\"code\":\"Gone\""), std::string::npos) << old.body;
  EXPECT_NE(old.body.find("list again"), std::string::npos) << old.body;
  {
    auto client = srv->NewClient();
    ASSERT_NE(client, nullptr);
    Status s = client->Stream(
        "/api/v1/workloads?watch=1&resourceVersion=" + std::to_string(mid),
        {{"Authorization", "Bearer " + admin}}, [](const std::string&) { return false; });
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.message().find("list again"), std::string::npos) << s.ToString();
  }

  // After a restart: a plain watch starts from what exists, a watch from a
  // fresh list's version gets only what follows.
  const int64_t n2 = ListRv(*srv, "workloads");
  Watch* w5 = StartWatch(&watches, *srv, "/api/v1/workloads?watch=1", admin);
  Watch* w6 = StartWatch(&watches, *srv,
                         "/api/v1/workloads?watch=1&resourceVersion=" + std::to_string(n2),
                         admin);
  std::vector<Event> ev5 = w5->Wait(3);
  ASSERT_EQ(Summary(ev5), (std::vector<std::string>{"ADDED t1/b Admitted", "ADDED t1/e Admitted",
                                                    "ADDED t2/x Admitted"}));
  json::value list = srv->Json("GET", "/api/v1/workloads", "", &code);
  ASSERT_EQ(code, 200);
  ASSERT_EQ(list.at("items").as_array().size(), 3u);
  for (size_t i = 0; i < 3 && i < ev5.size(); ++i) {
    EXPECT_EQ(json::serialize(ev5[i].object), json::serialize(list.at("items").at(i)));
  }
  Submit(*srv, "t2", "g", 2);
  ev5 = w5->Wait(4);
  std::vector<Event> ev6 = w6->Wait(1);
  ASSERT_EQ(Summary(ev6), (std::vector<std::string>{"ADDED t2/g Admitted"}));
  EXPECT_GT(ev6[0].rv, n2);
  EXPECT_EQ(Lines(ev6), LinesAfter(ev5, n2));
  srv->Stop();
  EXPECT_EQ(w5->Events().size(), 4u) << Watch::Dump(w5->Events());
  EXPECT_EQ(w6->Events().size(), 1u) << Watch::Dump(w6->Events());
}

TEST(Watch, TenantBoundWatcherSeesOnlyItsTenant) {
  Watches watches;
  auto srv = TestServer::StartWith(Cluster());
  ASSERT_NE(srv, nullptr);
  const std::string admin = srv->admin_token();
  const std::string alice = srv->NewToken("alice", "member", "t1");
  ASSERT_FALSE(alice.empty());
  Submit(*srv, "t1", "a", 4);
  Submit(*srv, "t2", "b", 4);
  Submit(*srv, "t2", "c", 2);  // Pending.
  const int64_t n0 = ListRv(*srv, "workloads", alice);

  // alice asking for t2 explicitly still sees nothing of it.
  Watch* other = StartWatch(&watches, *srv, "/api/v1/workloads?watch=1&tenant=t2", alice);
  Watch* from0 = StartWatch(&watches, *srv, "/api/v1/workloads?watch=1&resourceVersion=0", alice);
  Watch* wa = StartWatch(&watches, *srv, "/api/v1/workloads?watch=1", alice);
  Watch* wadm = StartWatch(&watches, *srv, "/api/v1/workloads?watch=1", admin);
  EXPECT_EQ(Summary(wa->Wait(1)), (std::vector<std::string>{"ADDED t1/a Admitted"}));
  EXPECT_EQ(Summary(wadm->Wait(3)),
            (std::vector<std::string>{"ADDED t1/a Admitted", "ADDED t2/b Admitted",
                                      "ADDED t2/c Pending"}));

  Submit(*srv, "t2", "d", 1);
  Submit(*srv, "t1", "e", 1);
  Delete(*srv, "workloads/t2/b");  // c is admitted.
  Delete(*srv, "workloads/t1/a");
  Submit(*srv, "t1", "f", 1);  // The last event: everyone has the rest by then.
  std::vector<Event> all = wadm->Wait(11);
  EXPECT_EQ(Summary(all, 3),
            (std::vector<std::string>{"ADDED t2/d Pending", "ADDED t1/e Pending",
                                      "DELETED t2/b Admitted", "MODIFIED t1/e Admitted",
                                      "MODIFIED t2/c Admitted", "MODIFIED t2/d Admitted",
                                      "DELETED t1/a Admitted", "ADDED t1/f Admitted"}))
      << Watch::Dump(all);
  std::vector<Event> mine;
  for (const Event& e : all) {
    if (e.key.rfind("t1/", 0) == 0) mine.push_back(e);
  }
  std::vector<Event> seen = wa->Wait(mine.size());
  EXPECT_EQ(Lines(seen), Lines(mine)) << "alice's stream differs from the admin's "
                                         "stream filtered to t1:\n"
                                      << Watch::Dump(seen);
  // Resumed from a version she listed: only t1's events after it.
  std::vector<Event> resumed_want;
  for (const Event& e : mine) {
    if (e.rv > n0) resumed_want.push_back(e);
  }
  Watch* resumed = StartWatch(&watches, *srv,
                              "/api/v1/workloads?watch=1&resourceVersion=" + std::to_string(n0),
                              alice);
  EXPECT_EQ(Lines(resumed->Wait(resumed_want.size())), Lines(resumed_want));
  // From 0 (everything kept since the start): t1's events only.
  std::vector<Event> f0 = from0->Wait(5);
  EXPECT_EQ(Summary(f0), (std::vector<std::string>{"ADDED t1/a Admitted", "ADDED t1/e Pending",
                                                   "MODIFIED t1/e Admitted",
                                                   "DELETED t1/a Admitted",
                                                   "ADDED t1/f Admitted"}))
      << Watch::Dump(f0);

  // Her list agrees.
  json::value list = json::parse(srv->Call(alice, "GET", "/api/v1/workloads").body);
  for (const json::value& w : list.at("items").as_array()) {
    EXPECT_EQ(Str(w.at("metadata").at("namespace")), "t1") << json::serialize(w);
  }
  srv->Stop();
  for (const Event& e : wa->Events()) {
    EXPECT_EQ(e.key.rfind("t1/", 0), 0u) << "alice saw " << e.line;
  }
  EXPECT_TRUE(other->Events().empty()) << "alice saw t2's workloads:\n"
                                       << Watch::Dump(other->Events());
}

// Revoking a token ends what it holds open in the same turn: its watches
// end with an ERROR line and its pending log read is answered 401 (not the
// 504 it would get 10 s later). Deleting a tenant revokes its tokens, and
// creating the tenant again does not revive them.
TEST(Watch, RevokedTokensLoseTheirWatchesAndLogReads) {
  Watches watches;
  auto srv = TestServer::StartWith(Cluster());
  ASSERT_NE(srv, nullptr);
  int code = 0;
  // The test plays n1's agent: one sync, then silence, so a log read of a
  // pod there waits for a next poll that does not come.
  std::string gpus;
  for (int i = 0; i < 8; ++i) gpus += std::string(i ? "," : "") + R"({"uuid":"G)" + std::to_string(i) + R"("})";
  json::value r = srv->Json("POST", "/api/v1/agents/sync",
                R"({"node":{"apiVersion":"allot.dev/v1","kind":"Node","metadata":{"name":"n1"},)"
                R"("status":{"capacity":{"cpu":"64","memory":"512Gi"},"gpus":[)" + gpus +
                    "]}},\"simulated\":true}",
                &code);
  ASSERT_EQ(code, 200) << json::serialize(r);
  auto token = [&](const std::string& body, std::string* id) {
    json::value t = srv->Json("POST", "/api/v1/tokens", body, &code);
    EXPECT_EQ(code, 201) << json::serialize(t);
    *id = code == 201 ? Str(t.at("id")) : "";
    return code == 201 ? Str(t.at("token")) : "";
  };
  std::string alice_id, bob_id;
  const std::string alice = token(R"({"user":"alice","role":"member","tenant":"t1"})", &alice_id);
  const std::string bob = token(R"({"user":"bob","role":"viewer","tenant":"t2"})", &bob_id);
  Submit(*srv, "t1", "a", 1);

  Watch* wa = StartWatch(&watches, *srv, "/api/v1/workloads?watch=1", alice);
  Watch* wb = StartWatch(&watches, *srv, "/api/v1/localqueues?watch=1", bob);
  EXPECT_EQ(Summary(wa->Wait(1)), (std::vector<std::string>{"ADDED t1/a Admitted"}));
  EXPECT_EQ(Summary(wb->Wait(1)), (std::vector<std::string>{"ADDED t2/q"}));
  net::Response log;
  std::thread reader([&] {
    std::unique_ptr<net::HttpClient> c = srv->NewClient();
    auto got = c->Do("GET", "/api/v1/workloads/t1/a/log",
                     {{"Authorization", "Bearer " + alice}}, "");
    log = got.ok() ? *got : net::Response{0, "", got.status().message(), {}};
  });
  // Sent after the read: whichever the server takes first, the read ends
  // now with 401 (if the read came first, it was waiting).
  ListRv(*srv, "workloads", alice);
  r = srv->Json("DELETE", "/api/v1/tokens/" + alice_id, "", &code);
  EXPECT_EQ(code, 200) << json::serialize(r);
  EXPECT_TRUE(wa->WaitDone().ok());
  std::vector<Event> ea = wa->Events();
  ASSERT_FALSE(ea.empty());
  EXPECT_EQ(ea.back().type, "ERROR") << Watch::Dump(ea);
  EXPECT_NE(ea.back().line.find("revoked"), std::string::npos) << ea.back().line;
  reader.join();
  EXPECT_EQ(log.status, 401) << log.body;
  EXPECT_NE(log.body.find("revoked"), std::string::npos) << log.body;
  Submit(*srv, "t1", "b", 1);  // After the end: alice's stream saw none of it.
  EXPECT_EQ(wa->Events().size(), ea.size());

  // bob's tenant goes: its LocalQueue first (he sees it go), then the
  // tenant itself, which ends his watch and his token.
  Delete(*srv, "localqueues/t2/q");
  EXPECT_EQ(Summary(wb->Wait(2)), (std::vector<std::string>{"ADDED t2/q", "DELETED t2/q"}));
  EXPECT_EQ(srv->Call(bob, "GET", "/api/v1/whoami").status, 200);
  Delete(*srv, "tenants/t2");
  EXPECT_TRUE(wb->WaitDone().ok());
  std::vector<Event> eb = wb->Events();
  ASSERT_EQ(eb.size(), 3u) << Watch::Dump(eb);
  EXPECT_EQ(eb.back().type, "ERROR");
  EXPECT_EQ(srv->Call(bob, "GET", "/api/v1/whoami").status, 401);
  r = srv->Json("POST", "/api/v1/apply", "apiVersion: v1\nkind: Namespace\nmetadata: {name: t2}\n",
                &code);
  ASSERT_EQ(code, 200) << json::serialize(r);
  EXPECT_EQ(srv->Call(bob, "GET", "/api/v1/whoami").status, 401);
  json::value list = srv->Json("GET", "/api/v1/tokens");
  for (const json::value& t : list.at("items").as_array()) {
    if (Str(t.at("id")) == bob_id || Str(t.at("id")) == alice_id) {
      EXPECT_TRUE(t.at("revoked").as_bool()) << json::serialize(t);
    }
  }
}

// ClusterQueue cq2 (no cohort) of `quota` GPUs.
std::string Cq2(int quota) {
  return allot::testing::GpuCq("cq2", "", "h100", "nominalQuota: " + std::to_string(quota));
}

TEST(Watch, ClusterQueues) {
  Watches watches;
  auto srv = TestServer::StartWith(Cluster());
  ASSERT_NE(srv, nullptr);
  const std::string admin = srv->admin_token();
  int code = 0;
  const std::string bob = srv->NewToken("bob", "member", "t2");
  ASSERT_FALSE(bob.empty());
  json::value r;

  Watch* w = StartWatch(&watches, *srv, "/api/v1/clusterqueues?watch=1", admin);
  Watch* wb = StartWatch(&watches, *srv, "/api/v1/clusterqueues?watch=1", bob);
  Watch* lq = StartWatch(&watches, *srv, "/api/v1/localqueues?watch=1", bob);
  std::vector<Event> ev = w->Wait(1);
  ASSERT_EQ(Summary(ev), (std::vector<std::string>{"ADDED cq"}));
  EXPECT_EQ(Summary(wb->Wait(1)), (std::vector<std::string>{"ADDED cq"}));
  EXPECT_EQ(Summary(lq->Wait(1)), (std::vector<std::string>{"ADDED t2/q"}));
  // The initial object carries its status (usage), as GET shows it.
  EXPECT_TRUE(ev[0].object.as_object().contains("status")) << ev[0].line;

  r = srv->Json("POST", "/api/v1/clusterqueues", Cq2(4), &code);
  ASSERT_EQ(code, 201) << json::serialize(r);
  Submit(*srv, "t1", "a", 1);  // Not a ClusterQueue event.
  r = srv->Json("PUT", "/api/v1/clusterqueues/cq2", Cq2(6), &code);
  ASSERT_EQ(code, 200) << json::serialize(r);
  r = srv->Json("POST", "/api/v1/apply",
                "apiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueue\n"
                "metadata: {name: q2, namespace: t2}\nspec: {clusterQueue: cq2}\n---\n"
                "apiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueue\n"
                "metadata: {name: q2, namespace: t1}\nspec: {clusterQueue: cq2}\n",
                &code);
  ASSERT_EQ(code, 200) << json::serialize(r);
  Delete(*srv, "localqueues/t1/q2");
  Delete(*srv, "localqueues/t2/q2");
  Delete(*srv, "clusterqueues/cq2");
  ev = w->Wait(4);
  EXPECT_EQ(Summary(ev), (std::vector<std::string>{"ADDED cq", "ADDED cq2", "MODIFIED cq2",
                                                   "DELETED cq2"}))
      << Watch::Dump(ev);
  ExpectIncreasingRv(ev, 1);
  if (ev.size() >= 3) {
    EXPECT_NE(ev[2].line.find("\"nominalQuota\":\"6\""), std::string::npos) << ev[2].line;
  }
  // A member sees cluster-scoped kinds whole, and only its tenant's
  // LocalQueues.
  EXPECT_EQ(Lines(wb->Wait(4)), Lines(ev));
  std::vector<Event> lqs = lq->Wait(3);
  EXPECT_EQ(Summary(lqs), (std::vector<std::string>{"ADDED t2/q", "ADDED t2/q2", "DELETED t2/q2"}))
      << Watch::Dump(lqs);
  srv->Stop();
  EXPECT_EQ(w->Events().size(), 4u) << Watch::Dump(w->Events());
  EXPECT_EQ(lq->Events().size(), 3u) << Watch::Dump(lq->Events());
}

}  // namespace
}  // namespace allot::server
