// HttpServer on Asio, with Beast's request parser; plain TCP or TLS.
//
// Threads and ownership:
// - One io_context, run by `threads` threads. The acceptor lives on its own
//   strand; each connection is a Session on its own strand, so a session's
//   state is touched by one thread at a time without locks.
// - The server's registry holds every live session (strong reference) until
//   the connection ends; pending asio operations hold them too.
// - Exchange and Stream objects given to handlers hold only a weak reference
//   to their session, plus the shared `Life` flag. They reach the session by
//   posting onto its strand under Life's shared lock; Stop() takes the lock
//   exclusively to end that, so after Stop no user thread can keep a session
//   (and its socket) alive past the io_context.
//
// Each connection is a Session (http_session.cc); what the server and
// its sessions share is in http_server_internal.h.
//
// Stop: no new posts (Life), acceptor closed, every session closed on its
// strand (streams' OnClose run there); the I/O threads then run out of work
// and return. After a 2 s grace the io_context is stopped outright.
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <utility>

#include "net/http.h"
#include "net/http_server_internal.h"

namespace allot::net {
namespace internal {
namespace {

using boost::system::error_code;

constexpr auto kStopGrace = std::chrono::seconds(2);

std::string RemoteString(const tcp::socket& sock) {
  error_code ec;
  tcp::endpoint ep = sock.remote_endpoint(ec);
  if (ec) return "";
  std::string addr = ep.address().to_string();
  if (ep.address().is_v6()) addr = "[" + addr + "]";
  return addr + ":" + std::to_string(ep.port());
}

Result<tcp::endpoint> ParseListen(const std::string& listen) {
  size_t colon = listen.rfind(':');
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("listen address \"" + listen + "\" " + why,
                                   "listen");
  };
  if (colon == std::string::npos) return bad("is not host:port");
  std::string host = listen.substr(0, colon);
  std::string port = listen.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (port.empty() || port.size() > 5 ||
      port.find_first_not_of("0123456789") != std::string::npos ||
      std::stoi(port) > 65535) {
    return bad("has a bad port");
  }
  auto port_num = static_cast<uint16_t>(std::stoi(port));
  if (host.empty() || host == "*") {
    return tcp::endpoint(asio::ip::address_v4::any(), port_num);
  }
  error_code ec;
  asio::ip::address addr = asio::ip::make_address(host, ec);
  if (!ec) return tcp::endpoint(addr, port_num);
  asio::io_context ioc;
  tcp::resolver resolver(ioc);
  auto results = resolver.resolve(host, port, ec);
  if (ec || results.empty()) {
    return bad("cannot be resolved: " + ec.message());
  }
  return results.begin()->endpoint();
}

class ServerImpl final : public HttpServer {
 public:
  ServerImpl(const ServerOptions& opts, Handler handler) : opts_(opts) {
    core_.handler = std::move(handler);
    core_.max_body_bytes = opts.max_body_bytes;
  }

  ~ServerImpl() override {
    Stop();
    // I/O objects before their io_context; the io_context before the
    // registry and handler that its leftover handlers may refer to.
    acceptor_.reset();
    accept_socket_.reset();
    accept_strand_.reset();
    retry_timer_.reset();
    ioc_.reset();
  }

  Status Init() {
    if (opts_.tls_cert_file.empty() != opts_.tls_key_file.empty()) {
      return Status::InvalidArgument(
          "TLS needs both a certificate and a key file", "tls_cert_file");
    }
    if (!opts_.tls_cert_file.empty()) ALLOT_RETURN_IF_ERROR(InitTls());
    Result<tcp::endpoint> ep = ParseListen(opts_.listen);
    if (!ep.ok()) return ep.status();
    int threads = opts_.threads < 1 ? 1 : opts_.threads;
    ioc_ = std::make_unique<asio::io_context>(threads);
    acceptor_.emplace(asio::make_strand(*ioc_));
    retry_timer_.emplace(acceptor_->get_executor());
    error_code ec;
    const char* step = "open";
    acceptor_->open(ep->protocol(), ec);
    if (!ec) {
      step = "bind";
      acceptor_->set_option(tcp::acceptor::reuse_address(true), ec);
      if (!ec) acceptor_->bind(*ep, ec);
    }
    if (!ec) {
      step = "listen";
      acceptor_->listen(asio::socket_base::max_listen_connections, ec);
    }
    if (ec) {
      return Status::FailedPrecondition("cannot " + std::string(step) + " on " +
                                            opts_.listen + ": " + ec.message(),
                                        "listen");
    }
    port_ = acceptor_->local_endpoint(ec).port();
    DoAccept();
    for (int i = 0; i < threads; ++i) {
      threads_.emplace_back([this] {
        ioc_->run();
        std::lock_guard lock(exit_mu_);
        ++exited_;
        exit_cv_.notify_all();
      });
    }
    return Status::Ok();
  }

  uint16_t port() const override { return port_; }

  void Stop() override {
    std::lock_guard stop_lock(stop_mu_);
    if (stopped_) return;
    stopped_ = true;
    for (const auto& t : threads_) {
      ALLOT_CHECK(t.get_id() != std::this_thread::get_id());
    }
    {
      std::unique_lock lock(core_.life->mu);
      core_.life->running = false;
    }
    std::vector<std::shared_ptr<SessionBase>> sessions;
    {
      std::lock_guard lock(core_.mu);
      core_.stopping = true;
      for (const auto& [key, s] : core_.sessions) sessions.push_back(s);
    }
    if (ioc_ == nullptr) return;
    asio::post(acceptor_->get_executor(), [this] {
      error_code ec;
      acceptor_->close(ec);
      retry_timer_->cancel();
    });
    for (auto& s : sessions) {
      asio::post(s->strand(), [s] { s->Shutdown(); });
    }
    sessions.clear();
    // Threads end when no work is left; a handler that blocks an I/O thread
    // is cut short after a grace period.
    {
      std::unique_lock lock(exit_mu_);
      if (!exit_cv_.wait_for(lock, kStopGrace,
                             [&] { return exited_ == threads_.size(); })) {
        ioc_->stop();
      }
    }
    for (auto& t : threads_) t.join();
    std::unordered_map<SessionBase*, std::shared_ptr<SessionBase>> left;
    {
      std::lock_guard lock(core_.mu);
      left.swap(core_.sessions);
    }
  }

 private:
  Status InitTls() {
    tls_.emplace(asio::ssl::context::tls_server);
    tls_->set_options(asio::ssl::context::default_workarounds |
                      asio::ssl::context::no_sslv2 |
                      asio::ssl::context::no_sslv3);
    SSL_CTX_set_min_proto_version(tls_->native_handle(), TLS1_2_VERSION);
    error_code ec;
    tls_->use_certificate_chain_file(opts_.tls_cert_file, ec);
    if (ec) {
      return Status::InvalidArgument("cannot load TLS certificate " +
                                         opts_.tls_cert_file + ": " +
                                         ec.message(),
                                     "tls_cert_file");
    }
    tls_->use_private_key_file(opts_.tls_key_file, asio::ssl::context::pem, ec);
    if (ec) {
      return Status::InvalidArgument(
          "cannot load TLS key " + opts_.tls_key_file + ": " + ec.message(),
          "tls_key_file");
    }
    if (SSL_CTX_check_private_key(tls_->native_handle()) != 1) {
      return Status::InvalidArgument("TLS key " + opts_.tls_key_file +
                                         " does not match certificate " +
                                         opts_.tls_cert_file,
                                     "tls_key_file");
    }
    return Status::Ok();
  }

  // On the acceptor's strand from here on.
  void DoAccept() {
    accept_strand_.emplace(asio::make_strand(*ioc_));
    accept_socket_.emplace(*accept_strand_);
    acceptor_->async_accept(*accept_socket_,
                            [this](error_code ec) { OnAccept(ec); });
  }

  void OnAccept(error_code ec) {
    if (ec == asio::error::operation_aborted || !acceptor_->is_open()) return;
    if (ec) {
      // Out of descriptors and the like: breathe, then try again.
      retry_timer_->expires_after(std::chrono::milliseconds(50));
      retry_timer_->async_wait([this](error_code ec) {
        if (!ec && acceptor_->is_open()) DoAccept();
      });
      return;
    }
    tcp::socket sock = std::move(*accept_socket_);
    Strand strand = *accept_strand_;
    sock.set_option(tcp::no_delay(true), ec);
    std::string remote = RemoteString(sock);
    std::shared_ptr<SessionBase> session;
    if (tls_) {
      session = NewTlsSession(core_, strand, TlsStream(std::move(sock), *tls_),
                              remote);
    } else {
      session = NewSession(core_, strand, std::move(sock), remote);
    }
    if (core_.Add(session)) {
      asio::post(strand, [session] { session->Start(); });
    }
    DoAccept();
  }

  const ServerOptions opts_;
  ServerCore core_;
  std::optional<asio::ssl::context> tls_;
  std::unique_ptr<asio::io_context> ioc_;
  std::optional<tcp::acceptor> acceptor_;
  std::optional<asio::steady_timer> retry_timer_;
  std::optional<Strand> accept_strand_;
  std::optional<tcp::socket> accept_socket_;
  uint16_t port_ = 0;
  std::vector<std::thread> threads_;

  std::mutex exit_mu_;
  std::condition_variable exit_cv_;
  size_t exited_ = 0;  // Guarded by exit_mu_.

  std::mutex stop_mu_;
  bool stopped_ = false;  // Guarded by stop_mu_.
};

}  // namespace
}  // namespace internal

Result<std::unique_ptr<HttpServer>> HttpServer::Start(const ServerOptions& opts,
                                                      Handler handler) {
  auto server = std::make_unique<internal::ServerImpl>(opts, std::move(handler));
  Status s = server->Init();
  if (!s.ok()) return s;
  return std::unique_ptr<HttpServer>(std::move(server));
}

}  // namespace allot::net
