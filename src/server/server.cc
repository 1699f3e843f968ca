#include "server/server.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "agent/heartbeat.h"
#include "ctrl/registry.h"
#include "net/http.h"
#include "server/api.h"
#include "server/audit_anchor.h"
#include "server/crypto.h"
#include "server/local_provider.h"
#include "server/notebook_probe.h"
#include "server/owner.h"
#include "server/secrets.h"
#include "server/state.h"
#include "server/work_pool.h"
#include "store/store.h"

namespace allot::server {
namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool IsLoopback(const std::string& listen) {
  return listen.rfind("127.", 0) == 0 || listen.rfind("localhost:", 0) == 0 ||
         listen.rfind("[::1]:", 0) == 0;
}

// Request bodies waiting for the body pool (each at most 1 MiB) before new
// ones are answered 503.
constexpr size_t kMaxQueuedBodies = 64;

class ServerImpl : public Server {
 public:
  std::unique_ptr<Owner> owner;
  std::unique_ptr<Api> api;
  std::unique_ptr<net::HttpServer> http;
  // Reads request bodies (manifests) off the network threads.
  std::unique_ptr<WorkPool> bodies;
  // Autoscaled pools' exec provider calls (they post their results to the
  // owner).
  std::unique_ptr<ProviderRunner> providers;
  std::unique_ptr<LocalProvider> local;  // Used by `providers`.
  std::unique_ptr<NotebookProbe> notebooks;  // Posts to the owner.

  uint16_t port() const override { return http->port(); }
  void Stop() override {
    if (http) http->Stop();
    if (bodies) bodies->Stop();
    providers.reset();  // Kills a call that runs; before the owner stops.
    notebooks.reset();
    if (owner && !stopped) {
      owner->Stop();
      stopped = true;
      // One line on how the state owner and the committer spent their time.
      OwnerStats s = owner->stats();
      std::fprintf(
          stderr,
          "allot: owner: %lld turns, %lld commands, %lld store transactions; "
          "owner thread: waiting for commands %.3f s, running them %.3f s, "
          "scheduling %.3f s, replies %.3f s, waiting for the committer "
          "%.3f s; committer: committing %.3f s, sending %.3f s\n",
          (long long)s.turns, (long long)s.commands, (long long)s.groups,
          s.wait_ns / 1e9, s.run_ns / 1e9, s.finish_ns / 1e9, s.after_ns / 1e9,
          s.handoff_ns / 1e9, s.commit_ns / 1e9, s.deliver_ns / 1e9);
    }
  }
  bool stopped = false;
  ~ServerImpl() override { Stop(); }
};

}  // namespace

Result<std::unique_ptr<Server>> Server::Start(const ServeOptions& opts,
                                              std::ostream& out) {
  std::string url =
      opts.store_url.empty() ? store::DefaultStoreUrl() : opts.store_url;
  auto st = store::OpenStore(url);
  if (!st.ok()) return st.status();
  auto snap = (*st)->Load();
  if (!snap.ok()) return snap.status();
  auto state = State::Load(*snap);
  if (!state.ok()) return state.status();
  {
    Result<std::string> key = LoadSecretKey(opts.secret_key_file, url);
    if (!key.ok()) return key.status();
    (*state)->SetSecretKey(std::move(*key));
    ALLOT_RETURN_IF_ERROR((*state)->CheckSecretKey());
  }
  const std::string head_file = AuditHeadFileFor(url);
  if (std::string broken = CheckAuditAtStart(**st, *snap, head_file); !broken.empty()) {
    std::fprintf(stderr,
                 "allot: AUDIT LOG BROKEN: %s. Changes are refused (503) and `allot audit "
                 "verify` fails until a cluster-admin runs `allot audit acknowledge --reason "
                 "TEXT`, which records the break in the log.\n",
                 broken.c_str());
    (*state)->SetAuditBroken(std::move(broken));
  }
  auto anchor = std::make_shared<AuditAnchor>(head_file, (*state)->AuditHead().first);
  {
    auto [seq, hash] = (*state)->AuditHead();
    std::fprintf(stderr, "allot: audit head: record %lld, hash %s%s%s\n", (long long)seq,
                 hash.empty() ? "-" : hash.c_str(), head_file.empty() ? "" : ", anchored in ",
                 head_file.c_str());
  }

  // Bootstrap the first cluster-admin token.
  Txn txn;
  txn.now_unix_ms = NowMs();
  if (!opts.admin_token_file.empty()) {
    std::ifstream f(opts.admin_token_file);
    if (!f) {
      return Status::NotFound("cannot read the admin token file " +
                              opts.admin_token_file);
    }
    std::stringstream ss;
    ss << f.rdbuf();
    std::string secret = ss.str();
    while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r' ||
                               secret.back() == ' ')) {
      secret.pop_back();
    }
    Status s = (*state)->AddAdminToken(secret, "admin", &txn);
    if (!s.ok()) {
      return Status::InvalidArgument(opts.admin_token_file + ": " + s.message());
    }
  } else if (!(*state)->HasTokens()) {
    std::string secret = "allot_" + RandomHex(32);
    ALLOT_RETURN_IF_ERROR((*state)->AddAdminToken(secret, "admin", &txn));
    out << "bootstrap cluster-admin token (shown once; keep it safe):\n  "
        << secret << "\n";
  }
  if (!txn.batch.empty()) {
    (*state)->Audit("-", "", "bootstrap", "Token admin", "ok", &txn);
    ALLOT_RETURN_IF_ERROR((*st)->Commit(txn.batch));
    anchor->Committed({&txn.batch});
  }

  auto impl = std::make_unique<ServerImpl>();
  ServerImpl* raw = impl.get();
  {
    std::string dir = opts.pool_dir;
    const std::string sqlite = "sqlite:";
    if (dir.empty() && url.rfind(sqlite, 0) == 0 && url.size() > sqlite.size() &&
        url != "sqlite::memory:") {
      dir = url.substr(sqlite.size()) + ".pools";
    }
    char exe[4096];
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    impl->local = std::make_unique<LocalProvider>(
        dir, n > 0 ? std::string(exe, size_t(n)) : std::string("allot"));
    // Its agents' token: accepted as a node principal, never stored.
    std::shared_ptr<TokenIndex> index = (*state)->internal_token_index();
    impl->local->SetOnSecret([index](const std::string& secret) {
      index->Put(Sha256Hex(secret),
                 Principal{"pool-provider:local", Role::kNode, "", "", ""});
    });
  }
  std::string describe = (*st)->Describe();
  std::shared_ptr<const TokenIndex> tokens = (*state)->token_index();
  std::shared_ptr<metrics::Metrics> metrics = (*state)->metrics();
  (*state)->SetIdleThreshold(opts.idle_util_pct);
  (*state)->SetTelemetryRetention(opts.telemetry_retention_ms);
  impl->owner = std::make_unique<Owner>(std::move(*st), std::move(*state), NowMs);
  impl->api = std::make_unique<Api>(impl->owner.get(), std::move(tokens),
                                    std::move(metrics), opts.node_timeout_ms);
  Api* hooked = impl->api.get();
  impl->owner->SetTurnHook([hooked](Turn& t) { hooked->OnTurnEnd(t); });
  ctrl::Options copts;
  copts.node_timeout_ms = opts.node_timeout_ms;
  copts.agent_max_backoff_ms = agent::kMaxReconnectBackoffMs;
  impl->owner->SetControllers(std::make_unique<ctrl::Runner>(ctrl::DefaultControllers(copts)));
  impl->owner->SetCommitHook(
      [anchor](const std::vector<const store::Batch*>& b) { anchor->Committed(b); });
  impl->providers = std::make_unique<ProviderRunner>(
      [raw](ProviderResult r) {
        raw->owner->Post([r = std::move(r)](Turn& t) { t.state.PoolCallDone(r, &t.txn); });
      },
      impl->local.get());
  impl->owner->Post([raw](Turn& t) {
    // Calls made at load (the pools' first `list`) run now.
    t.state.SetProviderRunner([raw](ProviderCall c) {
      if (raw->providers) raw->providers->Run(std::move(c));
    });
  });
  impl->owner->Start();
  impl->owner->Post([](Turn&) {});  // A first turn schedules what loaded.
  impl->notebooks = std::make_unique<NotebookProbe>(impl->owner.get(), opts.notebook_probe_ms);
  net::ServerOptions so;
  so.listen = opts.listen;
  so.threads = opts.threads;
  so.tls_cert_file = opts.tls_cert_file;
  so.tls_key_file = opts.tls_key_file;
  Api* api = impl->api.get();
  // A request with a body is handled on the body pool: reading a manifest
  // is the one CPU-heavy step before the owner (bounded by
  // core::ParseLimits, but up to ~0.4 s for a hostile 1 MiB body), and the
  // network threads must stay free for heartbeats, lists and watches.
  impl->bodies = std::make_unique<WorkPool>(opts.threads, kMaxQueuedBodies);
  WorkPool* bodies = impl->bodies.get();
  auto http = net::HttpServer::Start(
      so, [api, bodies](std::shared_ptr<net::Exchange> ex) {
        if (ex->request().body.empty()) return api->Handle(std::move(ex));
        if (!bodies->Submit([api, ex] { api->Handle(ex); })) {
          net::Response r;
          r.status = 503;
          r.content_type = "application/json";
          r.body = "{\"error\":{\"code\":\"Unavailable\",\"message\":\"the server has " +
                   std::to_string(kMaxQueuedBodies) +
                   " request bodies waiting to be read; retry shortly\",\"field\":\"\"}}";
          r.headers.emplace_back("Retry-After", "1");
          ex->Reply(std::move(r));
        }
      });
  if (!http.ok()) {
    impl->owner->Stop();
    return http.status();
  }
  impl->http = std::move(*http);
  bool tls = !opts.tls_cert_file.empty();
  std::string host = opts.listen.substr(0, opts.listen.rfind(':'));
  impl->local->SetServerUrl(std::string(tls ? "https" : "http") + "://" +
                            (host == "0.0.0.0" || host == "[::]" ? "127.0.0.1" : host) + ":" +
                            std::to_string(impl->http->port()));
  out << "allot " << kVersion << " serving on " << (tls ? "https" : "http")
      << "://" << host << ":" << impl->http->port() << " (store " << describe
      << ")\n";
  if (!tls && !IsLoopback(opts.listen)) {
    out << "WARNING: serving plain HTTP on a non-loopback address: tokens "
           "cross the network in clear text; use --tls-cert and --tls-key\n";
  }
  out.flush();
  return std::unique_ptr<Server>(std::move(impl));
}

}  // namespace allot::server
