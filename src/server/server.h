// Server: `allot serve` assembled: store, state, owner, API, HTTP.
#pragma once

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>

#include "core/status.h"

namespace allot::server {

struct ServeOptions {
  std::string listen = "127.0.0.1:8470";
  std::string store_url;  // Empty: store::DefaultStoreUrl().
  std::string tls_cert_file;
  std::string tls_key_file;
  // A file holding the bootstrap cluster-admin token. Given: that token is
  // registered (idempotent). Not given and the store has no token: one is
  // generated and printed once.
  std::string admin_token_file;
  // The key that seals tenants' Secrets at rest (64 hex digits). Empty:
  // the file beside a sqlite store (PATH.secret-key), created with a fresh
  // random key on first start (mode 0600); another store needs the flag.
  // Kept apart from the store, so a copy of the database alone does not
  // reveal a Secret.
  std::string secret_key_file;
  // The local NodePool provider's directory (server/local_provider.h).
  // Empty: STORE_PATH.pools beside a sqlite store, else none (local pools
  // then fail to boot, saying so).
  std::string pool_dir;
  int threads = 2;
  // An agent-run node silent for this long becomes NotReady and its
  // workloads go back to their queues.
  int64_t node_timeout_ms = 15000;
  int idle_util_pct = 5;  // Under this a GPU counts as idle (usage idle).
  int64_t telemetry_retention_ms = 30LL * 86400000;
  // How often each running notebook's Jupyter is asked for its kernels'
  // and terminals' activity (docs/notebooks.md).
  int64_t notebook_probe_ms = 30000;
};

class Server {
 public:
  // Opens and loads the store, bootstraps the admin token, starts the owner
  // and the HTTP server. Writes start-up lines (and a generated token) to
  // `out`.
  static Result<std::unique_ptr<Server>> Start(const ServeOptions& opts,
                                               std::ostream& out);
  virtual ~Server() = default;
  virtual uint16_t port() const = 0;
  // Stops taking requests, finishes queued commands, closes the store.
  virtual void Stop() = 0;
};

}  // namespace allot::server
