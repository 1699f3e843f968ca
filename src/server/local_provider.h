// The `local` provider of autoscaled NodePools (docs/autoscaling.md): each
// node of the pool is an `allot agent` process with simulated GPUs (the
// pool's node shape) on this machine, started by `allot serve` itself, for
// demos and tests. It answers the calls an exec program answers (resume,
// suspend, list) on the provider runner's thread.
//
// The agents run in their own process groups and outlive the server: a
// restarted server finds them by their pid files (`list`) and they
// reconnect, so their workloads keep running. They present one node token
// kept in DIR/node.token (0600; created on first use; the server accepts
// it as a node principal, "pool-provider:local", without storing it) and
// write their logs under DIR/NODE/.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>

#include "core/status.h"
#include "server/provider.h"

namespace allot::server {

class LocalProvider {
 public:
  // `dir`: empty when the server has none (no sqlite file to put it
  // beside and no --pool-dir): every call then fails saying so. `exe`:
  // the allot binary the agents run.
  LocalProvider(std::string dir, std::string exe);

  // Called with the agents' token whenever it is read or made (the server
  // accepts it); at once when DIR/node.token exists already.
  void SetOnSecret(std::function<void(const std::string&)> fn);
  // The agents' token (created in DIR/node.token when missing).
  Result<std::string> Secret();
  // Where the agents connect; calls wait (up to their timeout) until it is
  // known (the server listens after its owner starts).
  void SetServerUrl(const std::string& url);

  // resume: starts an agent per node not running (after the pool's
  // bootDelay, as a machine would boot); suspend: stops them (SIGTERM,
  // SIGKILL after 10 s); list: "NODE on|off" per node asked about.
  ProviderResult Run(const ProviderCall& call);

  const std::string& dir() const { return dir_; }

 private:
  // The pid of node's agent when it runs, else 0 (reaps a child that
  // exited).
  pid_t Running(const std::string& node);
  Result<std::string> ReadOrMakeSecret();

  std::string dir_, exe_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::string url_;
  std::function<void(const std::string&)> on_secret_;
};

}  // namespace allot::server
