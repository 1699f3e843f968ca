// Internal to src/net: what the two halves of HttpServer share, the server
// (http_server.cc: listening, TLS set-up, accepting, the I/O threads, Stop)
// and its connections (http_session.cc: a Session per connection, and the
// Exchange and Stream objects that handlers hold). Includes Asio; only
// those two files include it.
//
// Threads: a SessionBase's methods run on its strand, except strand();
// ServerCore's registry is guarded by its mutex and Life's flag by Life's
// own; everything else in ServerCore is constant after Start.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/strand.hpp>
#include <cstddef>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "net/http.h"

namespace allot::net::internal {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Strand = asio::strand<asio::io_context::executor_type>;
using Headers = std::vector<std::pair<std::string, std::string>>;
using TlsStream = asio::ssl::stream<tcp::socket>;

// Whether handlers' Exchange and Stream objects may still post to sessions.
struct Life {
  std::shared_mutex mu;
  bool running = true;  // Guarded by mu.
};

class StreamImpl;

// What exchanges and streams see of a connection. Every method except
// strand() runs on the session's strand.
class SessionBase : public std::enable_shared_from_this<SessionBase> {
 public:
  explicit SessionBase(Strand strand) : strand_(std::move(strand)) {}
  virtual ~SessionBase() = default;
  const Strand& strand() const { return strand_; }

  virtual void Start() = 0;
  virtual void SendResponse(Response r) = 0;
  virtual void SendStreamHead(int status, std::string content_type,
                              Headers headers,
                              std::shared_ptr<StreamImpl> stream) = 0;
  virtual void SendChunk(std::string chunk) = 0;
  virtual void SendEnd() = 0;
  virtual void StartTunnel(TunnelTarget target) = 0;
  // Closes the connection now (server stopping).
  virtual void Shutdown() = 0;

 protected:
  Strand strand_;
};

// What sessions share: constant after Start except the registry.
struct ServerCore {
  Handler handler;
  size_t max_body_bytes = 0;
  std::shared_ptr<Life> life = std::make_shared<Life>();

  std::mutex mu;
  bool stopping = false;  // Guarded by mu.
  std::unordered_map<SessionBase*, std::shared_ptr<SessionBase>>
      sessions;  // Guarded by mu.

  bool Add(std::shared_ptr<SessionBase> s) {
    std::lock_guard lock(mu);
    if (stopping) return false;
    SessionBase* key = s.get();
    sessions.emplace(key, std::move(s));
    return true;
  }
  void Remove(SessionBase* s) {
    std::shared_ptr<SessionBase> keep;  // Released after the lock.
    std::lock_guard lock(mu);
    auto it = sessions.find(s);
    if (it == sessions.end()) return;
    keep = std::move(it->second);
    sessions.erase(it);
  }
};

// The session of a connection just accepted on `strand`, plain or TLS
// (its handshake not yet done). Not started: the caller adds it to the
// core's registry, then posts Start() onto its strand.
std::shared_ptr<SessionBase> NewSession(ServerCore& core, Strand strand,
                                        tcp::socket sock, std::string remote);
std::shared_ptr<SessionBase> NewTlsSession(ServerCore& core, Strand strand,
                                           TlsStream stream,
                                           std::string remote);

}  // namespace allot::net::internal
