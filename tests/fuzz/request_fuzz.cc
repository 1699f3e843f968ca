// libFuzzer target: what an API request body and URL reach.
//
// src/server/api.cc keeps its helpers private, so this target drives the
// same public pieces in the same order the API does:
//  - net::UrlDecode on the bytes (paths and queries), and the property
//    UrlDecode(UrlEncode(s)) == s;
//  - Quantity::Parse on every whitespace-separated word, and the property
//    Parse(q.ToString()) == q;
//  - a token body ({"user","role","tenant","node"}) read as api.cc reads
//    it, then State::CreateToken; a created token must authenticate as
//    what was asked for (a bound node token may act as its binding's
//    nodes), and stop authenticating once revoked;
//  - a manifest body read as api.cc reads it (ParseManifests, then the
//    same DNS-1123 name checks), then State::Apply or State::Create on a
//    fresh State (store::Snapshot{} plus a small base: tenant team-a, a
//    flavor, a ClusterQueue and LocalQueue team-a/main), as one of the four
//    roles; on success a scheduling turn, Get/List/Snapshot of every
//    object, Replace of each object with itself, a second Apply that must
//    change nothing, and a restart (State::Load of what the turns wrote,
//    as the store would hold it) that must load, keep every object and
//    change nothing when it schedules; then Delete of each object.
// Any crash, sanitizer report, or Internal status (a broken invariant) is
// a finding. The first byte of the input picks the role and the verb; the
// rest is the body.
//
//   build-fuzz/allot_request_fuzz tests/fuzz/corpus/request
#include <boost/json.hpp>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/manifest.h"
#include "core/quantity.h"
#include "fuzz_common.h"
#include "net/http.h"
#include "server/access.h"
#include "server/authz.h"
#include "server/crypto.h"
#include "server/state.h"
#include "store/store.h"

namespace {

using allot::Quantity;
using allot::Result;
using allot::Status;
using allot::StatusCode;
using allot::server::Kind;
using allot::server::Principal;
using allot::server::Role;
using allot::server::State;
using allot::server::Txn;
namespace json = boost::json;
namespace core = allot::core;
namespace store = allot::store;

constexpr int64_t kNow = 1767225600000;  // 2026-01-01T00:00:00Z

[[noreturn]] void Fail(const std::string& what, const std::string& detail = "") {
  std::fprintf(stderr, "request_fuzz: %s\n%s\n", what.c_str(), detail.c_str());
  std::fflush(stderr);
  std::abort();
}

// An Internal status is a broken invariant, whatever the input.
void NotInternal(const Status& s, const char* verb) {
  if (s.code() == StatusCode::kInternal) {
    Fail(std::string(verb) + " returned Internal: " + s.ToString());
  }
}

// ---- The API's request checks (copied from api.cc's private helpers) ------

bool IsDnsLabel(const std::string& s) {
  if (s.empty() || s.size() > 63) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (!alnum && !(c == '-' && i > 0 && i + 1 < s.size())) return false;
  }
  return true;
}
bool IsDnsSubdomain(const std::string& s) {
  if (s.empty() || s.size() > 253) return false;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find('.', start);
    if (end == std::string::npos) end = s.size();
    if (!IsDnsLabel(s.substr(start, end - start))) return false;
    start = end + 1;
  }
  return true;
}
template <typename T>
bool NamesOk(const std::vector<T>& items, bool label_only) {
  for (const T& x : items) {
    if (!(label_only ? IsDnsLabel(x.name) : IsDnsSubdomain(x.name))) return false;
    if constexpr (requires { x.ns; }) {
      if (!IsDnsLabel(x.ns)) return false;
    }
  }
  return true;
}
bool AllNamesOk(const core::Config& c) {
  return NamesOk(c.flavors, false) && NamesOk(c.cohorts, false) &&
         NamesOk(c.cluster_queues, false) && NamesOk(c.local_queues, true) &&
         NamesOk(c.priority_classes, false) && NamesOk(c.namespaces, true) &&
         NamesOk(c.nodes, false) && NamesOk(c.workloads, true);
}

// api.cc's BodyResourceVersion, reduced: metadata.resourceVersion if it is
// a non-negative integer.
std::optional<int64_t> BodyResourceVersion(const std::string& body) {
  try {
    YAML::Node n = YAML::Load(body);
    if (!n.IsMap() || !n["metadata"] || !n["metadata"].IsMap()) return {};
    YAML::Node rv = n["metadata"]["resourceVersion"];
    if (!rv || !rv.IsScalar()) return {};
    const std::string& v = rv.Scalar();
    int64_t out = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    if (ec != std::errc() || p != v.data() + v.size() || out < 0) return {};
    return out;
  } catch (const YAML::Exception&) {
    return {};
  }
}

// ---- An in-memory store: what Commit would leave, for a restart ----------

struct MemStore {
  std::map<std::pair<std::string, std::string>, store::ObjectRow> objects;
  std::map<std::string, store::TokenRow> tokens;
  std::map<std::string, std::string> meta;
  std::optional<store::AuditRow> last_audit;

  void Commit(const store::Batch& b) {
    for (const auto& d : b.deletes) objects.erase(d);
    for (const auto& p : b.puts) objects[{p.kind, p.key}] = p;
    for (const auto& t : b.tokens) tokens[t.id] = t;
    for (const auto& [k, v] : b.meta) meta[k] = v;
    if (!b.audit.empty()) last_audit = b.audit.back();
  }
  store::Snapshot Load() const {
    store::Snapshot s;
    for (const auto& [k, row] : objects) s.objects.push_back(row);
    std::stable_sort(s.objects.begin(), s.objects.end(),
                     [](const store::ObjectRow& a, const store::ObjectRow& b) {
                       return a.kind != b.kind ? a.kind < b.kind
                                               : a.resource_version < b.resource_version;
                     });
    for (const auto& [id, t] : tokens) s.tokens.push_back(t);
    s.meta = meta;
    s.last_audit = last_audit;
    s.schema_version = 1;
    return s;
  }
};

// One owner turn: `fn` mutates, then the scheduler settles and the batch is
// committed. Returns the number of events the turn published.
template <typename F>
size_t Turn(State* st, MemStore* ms, F&& fn) {
  Txn txn;
  txn.now_unix_ms = kNow;
  fn(&txn);
  st->FinishTurn(&txn);
  ms->Commit(txn.batch);
  return txn.events.size();
}

const char kBase[] = R"(
apiVersion: v1
kind: Namespace
metadata: {name: team-a, labels: {team: a}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: base-gpu}
spec: {nodeLabels: {allot.dev/gpu-product: base}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: base-cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu, cpu]
    flavors:
    - name: base-gpu
      resources:
      - {name: nvidia.com/gpu, nominalQuota: 2}
      - {name: cpu, nominalQuota: 8}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: main, namespace: team-a}
spec: {clusterQueue: base-cq}
---
apiVersion: allot.dev/v1
kind: Node
metadata: {name: base-node, labels: {allot.dev/gpu-product: base}}
status:
  capacity: {cpu: 8, memory: 64Gi}
  gpus: [{uuid: GPU-base-0}, {uuid: GPU-base-1}]
)";

const Principal kAdmin{"fuzz-admin", Role::kClusterAdmin, "", "t-admin", ""};

Principal PrincipalFor(uint8_t bits) {
  switch (bits & 3) {
    case 0: return kAdmin;
    case 1: return {"fuzz-ta", Role::kTenantAdmin, "team-a", "t-ta", ""};
    case 2: return {"fuzz-member", Role::kMember, "team-a", "t-m", ""};
    default: return {"fuzz-viewer", Role::kViewer, "team-a", "t-v", ""};
  }
}

std::unique_ptr<State> FreshState(MemStore* ms) {
  Result<std::unique_ptr<State>> st = State::Load(store::Snapshot{});
  if (!st.ok()) Fail("State::Load of an empty snapshot: " + st.status().ToString());
  core::Config base;
  Status s = core::ParseManifests(kBase, "base", &base);
  if (!s.ok()) Fail("base manifest: " + s.ToString());
  Turn(st->get(), ms, [&](Txn* txn) {
    auto r = (*st)->Apply(allot::server::Actor::Of(kAdmin), std::move(base), txn);
    if (!r.ok()) Fail("base apply: " + r.status().ToString());
  });
  return std::move(*st);
}

// Every object of a parsed body, as (kind, key).
std::vector<std::pair<Kind, std::string>> Keys(const core::Config& c) {
  std::vector<std::pair<Kind, std::string>> out;
  for (const auto& x : c.flavors) out.push_back({Kind::kResourceFlavor, x.name});
  for (const auto& x : c.cohorts) out.push_back({Kind::kCohort, x.name});
  for (const auto& x : c.cluster_queues) out.push_back({Kind::kClusterQueue, x.name});
  for (const auto& x : c.local_queues)
    out.push_back({Kind::kLocalQueue, x.ns + "/" + x.name});
  for (const auto& x : c.priority_classes)
    out.push_back({Kind::kWorkloadPriorityClass, x.name});
  for (const auto& x : c.namespaces) out.push_back({Kind::kTenant, x.name});
  for (const auto& x : c.nodes) out.push_back({Kind::kNode, x.name});
  for (const auto& x : c.images) out.push_back({Kind::kImage, x.name});
  for (const auto& x : c.workloads) out.push_back({Kind::kWorkload, x.Key()});
  return out;
}

std::string ListAll(const State& st, const Principal& p) {
  std::string all;
  for (int k = 0; k < allot::server::kNumKinds; ++k) {
    Result<std::string> l = st.List(p, Kind(k), {}, kNow);
    if (!l.ok()) Fail("List failed: " + l.status().ToString());
    all += *l;
    all += '\n';
  }
  return all;
}

void ReadEverything(const State& st, const Principal& p,
                    const std::vector<std::pair<Kind, std::string>>& keys) {
  for (const auto& [kind, key] : keys) {
    Result<json::object> o = st.Get(p, kind, key);
    NotInternal(o.status(), "Get");
  }
  ListAll(st, p);
  for (int k = 0; k < allot::server::kNumKinds; ++k) {
    st.Snapshot(p, Kind(k), "");
    st.Snapshot(p, Kind(k), "team-a");
    allot::server::ListOptions o;
    o.limit = 1;
    o.tenant = "team-a";
    o.labels["team"] = "a";
    Result<std::string> l = st.List(p, Kind(k), o, kNow);
    if (!l.ok()) Fail("List failed: " + l.status().ToString());
  }
}

// ---- Bodies ----------------------------------------------------------------

void FuzzUrl(const std::string& s) {
  std::string q = allot::net::UrlDecode(s, true);
  std::string p = allot::net::UrlDecode(s, false);
  if (p.size() > s.size() || q.size() > s.size()) Fail("UrlDecode grew its input");
  std::string enc = allot::net::UrlEncode(s);
  if (allot::net::UrlDecode(enc, false) != s || allot::net::UrlDecode(enc, true) != s) {
    Fail("UrlDecode(UrlEncode(s)) != s", enc);
  }
}

void FuzzQuantities(const std::string& s) {
  std::istringstream in(s);
  std::string word;
  for (int i = 0; i < 32 && in >> word; ++i) {
    Result<Quantity> q = Quantity::Parse(word);
    if (!q.ok()) continue;
    std::string text = q->ToString();
    Result<Quantity> back = Quantity::Parse(text);
    if (!back.ok() || *back != *q) {
      Fail("Quantity round trip: '" + word + "' -> " + std::to_string(q->milli()) +
           "m -> '" + text + "' -> " +
           (back.ok() ? std::to_string(back->milli()) + "m" : back.status().ToString()));
    }
  }
}

void FuzzTokenBody(const std::string& body, const Principal& p) {
  // As api.cc's POST /api/v1/tokens.
  boost::system::error_code ec;
  json::value v = json::parse(body, ec);
  if (ec || !v.is_object()) return;
  std::string user, role_s, tenant, node;
  for (const auto& [k, val] : v.as_object()) {
    if (!val.is_string()) return;
    std::string sv(val.as_string());
    if (k == "user") user = sv;
    else if (k == "role") role_s = sv;
    else if (k == "tenant") tenant = sv;
    else if (k == "node") node = sv;
    else return;
  }
  Result<Role> role = allot::server::ParseRole(role_s);
  if (!role.ok()) return;
  MemStore ms;
  std::unique_ptr<State> st = FreshState(&ms);
  Result<std::pair<std::string, std::string>> secret =
      Status::InvalidArgument("unset");
  Turn(st.get(), &ms, [&](Txn* txn) {
    // As the API edge does: who may grant what first (server/access.h).
    Status may = allot::server::MayCreateToken(p, *role, tenant);
    secret = may.ok() ? st->CreateToken(user, *role, tenant, node, txn)
                      : Result<std::pair<std::string, std::string>>(may);
  });
  NotInternal(secret.status(), "CreateToken");
  if (!secret.ok()) return;
  std::optional<Principal> who = st->Authenticate(allot::server::Sha256Hex(secret->second));
  if (!who || who->user != user || who->role != *role || who->tenant != tenant ||
      who->token_id != secret->first || who->node != node) {
    Fail("a created token does not authenticate as asked: " + body);
  }
  const std::string own = !node.empty() && node.back() == '*'
                              ? node.substr(0, node.size() - 1) + "x"
                              : node;
  if (!node.empty() && (!allot::server::MayActAsNode(*who, own) ||
                        allot::server::MayActAsNode(*who, "-" + own))) {
    Fail("a bound node token does not act as just its binding: " + body);
  }
  Status rv;
  Turn(st.get(), &ms, [&](Txn* txn) {
    rv = allot::server::MayRevokeToken(p, secret->first, *st);
    if (rv.ok()) rv = st->RevokeToken(secret->first, txn);
  });
  if (!rv.ok()) Fail("the creator cannot revoke its token: " + rv.ToString());
  if (st->Authenticate(allot::server::Sha256Hex(secret->second))) Fail("a revoked token authenticates");
}

void FuzzManifestBody(const std::string& body, uint8_t flags) {
  core::Config doc;
  if (!core::ParseManifests(body, "request body", &doc).ok()) return;
  if (!AllNamesOk(doc)) return;  // api.cc answers 400 before State.
  const Principal p = PrincipalFor(flags);
  const allot::server::Actor actor = allot::server::Actor::Of(p);
  const auto keys = Keys(doc);
  MemStore ms;
  std::unique_ptr<State> st = FreshState(&ms);

  Status s;
  const bool create = flags & 4;
  if (create) {
    // POST /api/v1/{plural}: the kind comes from the URL.
    Kind kind = Kind((flags >> 3) % allot::server::kNumKinds);
    if (!keys.empty() && (flags & 0x40)) kind = keys[0].first;  // The usual case.
    Turn(st.get(), &ms, [&](Txn* txn) {
      s = allot::server::MayCreateOrApply(p, doc, *st);
      if (s.ok()) s = st->Create(actor, kind, doc, txn);
    });
    NotInternal(s, "Create");
  } else {
    // POST /api/v1/apply.
    Turn(st.get(), &ms, [&](Txn* txn) {
      s = allot::server::MayCreateOrApply(p, doc, *st);
      if (s.ok()) s = st->Apply(actor, doc, txn).status();
    });
    NotInternal(s, "Apply");
  }
  if (std::getenv("ALLOT_FUZZ_VERBOSE")) {
    std::fprintf(stderr, "request_fuzz: %s as %s: %s\n", create ? "create" : "apply",
                 allot::server::ToString(p.role), s.ToString().c_str());
  }
  ReadEverything(*st, p, keys);
  ReadEverything(*st, kAdmin, keys);
  if (!s.ok()) return;

  if (!create) {
    // Applying the same documents again changes nothing.
    std::vector<allot::server::ApplyResult> again;
    size_t events = Turn(st.get(), &ms, [&](Txn* txn) {
      Result<std::vector<allot::server::ApplyResult>> r = st->Apply(actor, doc, txn);
      if (!r.ok()) Fail("a second apply of the same body fails: " + r.status().ToString());
      again = std::move(*r);
    });
    for (const auto& a : again) {
      if (a.action != "unchanged") {
        Fail("a second apply of the same body reports " + a.key + " " + a.action);
      }
    }
    if (events != 0) Fail("a second apply of the same body published events");
  }

  // Restart: what the store holds loads, holds the same, and is settled.
  {
    std::string before = ListAll(*st, kAdmin);
    Result<std::unique_ptr<State>> re = State::Load(ms.Load());
    if (!re.ok()) Fail("restart: State::Load fails: " + re.status().ToString(), body);
    if ((*re)->resource_version() != st->resource_version() ||
        (*re)->WorkloadCount() != st->WorkloadCount()) {
      Fail("restart: resource version or workload count differs", body);
    }
    // A server's first turn follows its load (node conditions date from it).
    MemStore ms2 = ms;
    size_t events = Turn(re->get(), &ms2, [](Txn*) {});
    if (events != 0) {
      Fail("restart: the reloaded state schedules differently",
           "before:\n" + before + "after:\n" + ListAll(**re, kAdmin));
    }
    std::string after = ListAll(**re, kAdmin);
    if (after != before) {
      Fail("restart: the lists differ", "before:\n" + before + "after:\n" + after);
    }
  }

  // PUT each object with the JSON its GET returned (a read-modify-write
  // with nothing modified): for a cluster-admin it must succeed, and change
  // nothing, except that a Workload cannot be replaced at all.
  for (const auto& [kind, key] : keys) {
    Result<json::object> o = st->Get(kAdmin, kind, key);
    if (!o.ok()) continue;  // Create made at most one of them.
    if (kind == Kind::kWorkload) o->erase("status");  // Server-owned.
    std::string put = json::serialize(*o);
    core::Config one;
    if (!core::ParseManifests(put, "get", &one).ok()) {
      Fail("the JSON of GET does not parse as a manifest", put);
    }
    std::optional<int64_t> rv = BodyResourceVersion(put);
    if (!rv) Fail("the JSON of GET has no metadata.resourceVersion", put);
    Status r;
    size_t events = Turn(st.get(), &ms, [&](Txn* txn) {
      r = allot::server::MayWriteObject(p, kind, key, "change", *st);
      if (r.ok()) r = allot::server::MayCreateOrApply(p, one, *st);
      if (r.ok()) r = st->Replace(actor, kind, key, one, rv, txn);
    });
    NotInternal(r, "Replace");
    if (p.role == Role::kClusterAdmin && kind != Kind::kWorkload) {
      if (!r.ok()) Fail("PUT of an object's own GET JSON fails: " + r.ToString(), put);
      if (events != 0) Fail("PUT of an object's own GET JSON published events", put);
    }
  }

  // DELETE each object, last first, with ?drain=true on flag 0x80.
  for (auto it = keys.rbegin(); it != keys.rend(); ++it) {
    Turn(st.get(), &ms, [&](Txn* txn) {
      Status d = allot::server::MayWriteObject(p, it->first, it->second, "delete", *st);
      if (d.ok()) d = st->Delete(actor, it->first, it->second, flags & 0x80, txn);
      NotInternal(d, "Delete");
    });
  }
  ReadEverything(*st, p, keys);
  Result<std::unique_ptr<State>> re = State::Load(ms.Load());
  if (!re.ok()) Fail("restart after deletes: " + re.status().ToString(), body);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t flags = data[0];
  std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);
  FuzzUrl(body);
  FuzzQuantities(body);
  if (!body.empty() && body[0] == '{') FuzzTokenBody(body, PrincipalFor(flags));
  FuzzManifestBody(body, flags);
  return 0;
}
