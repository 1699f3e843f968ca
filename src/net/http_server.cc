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
// A session's life: [TLS handshake] -> read request -> call handler ->
// (reply: write, then read the next request if keep-alive | stream: write
// head and chunks while a read waits for the client to go away) -> linger
// (half-close, drain what the client still sends, then close). Beast only
// parses requests; responses are framed by http_wire. Timeouts: 120 s idle
// between requests, 60 s to write a response, 10 s for a TLS handshake.
//
// Stop: no new posts (Life), acceptor closed, every session closed on its
// strand (streams' OnClose run there); the I/O threads then run out of work
// and return. After a 2 s grace the io_context is stopped outright.
#include <array>
#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <thread>
#include <unordered_map>
#include <utility>

#include "net/http.h"
#include "net/http_wire.h"

namespace allot::net {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using Strand = asio::strand<asio::io_context::executor_type>;
using Headers = std::vector<std::pair<std::string, std::string>>;
using TlsStream = asio::ssl::stream<tcp::socket>;

constexpr auto kIdleTimeout = std::chrono::seconds(120);  // Between requests.
constexpr auto kWriteTimeout = std::chrono::seconds(60);  // One response.
constexpr auto kHandshakeTimeout = std::chrono::seconds(10);
constexpr auto kLingerTimeout = std::chrono::seconds(5);
constexpr auto kStopGrace = std::chrono::seconds(2);
constexpr uint32_t kHeaderLimit = 16 << 10;
// A stream client this far behind is dropped rather than buffered forever.
constexpr size_t kMaxStreamBacklog = 16 << 20;

// Whether handlers' Exchange and Stream objects may still post to sessions.
struct Life {
  std::shared_mutex mu;
  bool running = true;  // Guarded by mu.
};

Response ErrorResponse(int status, const std::string& code,
                       const std::string& message) {
  Response r;
  r.status = status;
  r.body = wire::ErrorBody(code, message);
  return r;
}

Request ToRequest(http::request<http::string_body>&& msg,
                  const std::string& remote) {
  Request r;
  r.method = std::string(msg.method_string());
  r.target = std::string(msg.target());
  wire::SplitTarget(r.target, &r.path, &r.query);
  for (const auto& field : msg) {
    auto [it, fresh] = r.headers.emplace(wire::ToLower(field.name_string()),
                                         std::string(field.value()));
    if (!fresh) it->second += ", " + std::string(field.value());
  }
  r.body = std::move(msg.body());
  r.remote = remote;
  return r;
}

std::string RemoteString(const tcp::socket& sock) {
  error_code ec;
  tcp::endpoint ep = sock.remote_endpoint(ec);
  if (ec) return "";
  std::string addr = ep.address().to_string();
  if (ep.address().is_v6()) addr = "[" + addr + "]";
  return addr + ":" + std::to_string(ep.port());
}

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
  // Closes the connection now (server stopping).
  virtual void Shutdown() = 0;

 protected:
  Strand strand_;
};

// Runs fn(session) on the session's strand. False when the server stopped
// or the connection is gone.
template <typename F>
bool PostToSession(Life& life, const std::weak_ptr<SessionBase>& weak, F&& fn) {
  std::shared_lock lock(life.mu);
  if (!life.running) return false;
  std::shared_ptr<SessionBase> s = weak.lock();
  if (!s) return false;
  asio::post(s->strand(), [s, fn = std::forward<F>(fn)]() mutable { fn(*s); });
  return true;
}

class StreamImpl final : public Stream {
 public:
  StreamImpl(std::shared_ptr<Life> life, std::weak_ptr<SessionBase> session)
      : life_(std::move(life)), session_(std::move(session)) {}

  bool Write(std::string chunk) override {
    if (closed_.load()) return false;
    if (chunk.empty()) return true;  // An empty chunk would end the body.
    bool posted = PostToSession(*life_, session_,
                                [c = std::move(chunk)](SessionBase& s) mutable {
                                  s.SendChunk(std::move(c));
                                });
    if (!posted) closed_ = true;
    return posted;
  }

  void Close() override {
    if (closed_.exchange(true)) return;
    PostToSession(*life_, session_, [](SessionBase& s) { s.SendEnd(); });
  }

  bool closed() const override { return closed_.load(); }

  void OnClose(std::function<void()> fn) override {
    {
      std::lock_guard lock(mu_);
      if (!fired_) {
        on_close_ = std::move(fn);
        return;
      }
    }
    // Already closed: run it on the I/O thread if one still serves the
    // connection, else here.
    if (!PostToSession(*life_, session_, [fn](SessionBase&) { fn(); })) fn();
  }

  // Marks the stream closed and runs the callback, once. Called on the
  // session's strand (or before the session ever saw the stream).
  void FireClose() {
    closed_ = true;
    std::function<void()> fn;
    {
      std::lock_guard lock(mu_);
      if (fired_) return;
      fired_ = true;
      fn.swap(on_close_);
    }
    if (fn) fn();
  }

 private:
  const std::shared_ptr<Life> life_;
  const std::weak_ptr<SessionBase> session_;
  std::atomic<bool> closed_{false};
  std::mutex mu_;
  bool fired_ = false;              // Guarded by mu_.
  std::function<void()> on_close_;  // Guarded by mu_.
};

class ExchangeImpl final : public Exchange {
 public:
  ExchangeImpl(std::shared_ptr<Life> life, std::weak_ptr<SessionBase> session,
               Request request)
      : life_(std::move(life)),
        session_(std::move(session)),
        request_(std::move(request)) {}

  ~ExchangeImpl() override {
    if (!answered_.exchange(true)) {
      Post(ErrorResponse(500, "Internal",
                         "the server dropped the request without answering"));
    }
  }

  const Request& request() const override { return request_; }

  // A second answer is ignored.
  void Reply(Response response) override {
    if (answered_.exchange(true)) return;
    Post(std::move(response));
  }

  std::shared_ptr<Stream> StartStream(int status,
                                      const std::string& content_type,
                                      Headers headers) override {
    auto stream = std::make_shared<StreamImpl>(life_, session_);
    if (answered_.exchange(true)) {
      stream->FireClose();
      return stream;
    }
    bool posted = PostToSession(
        *life_, session_,
        [stream, status, ct = content_type,
         h = std::move(headers)](SessionBase& s) mutable {
          s.SendStreamHead(status, std::move(ct), std::move(h), stream);
        });
    if (!posted) stream->FireClose();
    return stream;
  }

 private:
  void Post(Response r) {
    PostToSession(*life_, session_, [r = std::move(r)](SessionBase& s) mutable {
      s.SendResponse(std::move(r));
    });
  }

  const std::shared_ptr<Life> life_;
  const std::weak_ptr<SessionBase> session_;
  const Request request_;
  std::atomic<bool> answered_{false};
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

// One connection. `S` is tcp::socket or TlsStream.
template <typename S>
class Session final : public SessionBase {
 public:
  static constexpr bool kTls = std::is_same_v<S, TlsStream>;

  Session(ServerCore& core, Strand strand, S stream, std::string remote)
      : SessionBase(strand),
        core_(core),
        stream_(std::move(stream)),
        timer_(strand),
        remote_(std::move(remote)) {}

  void Start() override {
    if constexpr (kTls) {
      ArmTimer(kHandshakeTimeout);
      stream_.async_handshake(asio::ssl::stream_base::server,
                              [self = Self()](error_code ec) {
                                if (self->finished_) return;
                                self->DisarmTimer();
                                if (ec) return self->Finish();
                                self->DoRead();
                              });
    } else {
      DoRead();
    }
  }

  void SendResponse(Response r) override {
    if (finished_ || state_ != State::kHandling) return;
    for (const auto& [name, value] : r.headers) {
      if (wire::IEquals(name, "connection") && wire::IEquals(value, "close"))
        keep_alive_ = false;
    }
    WriteResponse(std::move(r));
  }

  void SendStreamHead(int status, std::string content_type, Headers headers,
                      std::shared_ptr<StreamImpl> stream) override {
    if (finished_ || state_ != State::kHandling) {
      stream->FireClose();
      return;
    }
    state_ = State::kStreaming;
    stream_impl_ = std::move(stream);
    keep_alive_ = false;
    chunked_ = !http10_;
    pending_ =
        wire::ResponseHead(status, content_type, headers, /*keep_alive=*/false,
                           /*content_length=*/-1, chunked_);
    WriteNext();
    DrainRead();  // Its end tells that the client went away.
  }

  void SendChunk(std::string chunk) override {
    if (finished_ || state_ != State::kStreaming || end_queued_) return;
    if (chunked_) {
      char size[20];
      std::snprintf(size, sizeof size, "%zx\r\n", chunk.size());
      pending_ += size;
      pending_ += chunk;
      pending_ += "\r\n";
    } else {
      pending_ += chunk;
    }
    if (pending_.size() > kMaxStreamBacklog) return Finish();
    WriteNext();
  }

  void SendEnd() override {
    if (finished_ || state_ != State::kStreaming || end_queued_) return;
    end_queued_ = true;
    if (chunked_) pending_ += "0\r\n\r\n";
    WriteNext();
  }

  void Shutdown() override { Finish(); }

 private:
  enum class State {
    kReading,
    kHandling,
    kWriting,
    kStreaming,
    kLingering,
    kDone
  };

  std::shared_ptr<Session> Self() {
    return std::static_pointer_cast<Session>(shared_from_this());
  }
  tcp::socket::lowest_layer_type& Lowest() { return stream_.lowest_layer(); }

  void ArmTimer(std::chrono::steady_clock::duration d) {
    uint64_t gen = ++timer_gen_;
    timer_.expires_after(d);
    timer_.async_wait([self = Self(), gen](error_code ec) {
      if (!ec && gen == self->timer_gen_) self->Finish();
    });
  }
  void DisarmTimer() {
    ++timer_gen_;
    timer_.cancel();
  }

  void DoRead() {
    state_ = State::kReading;
    parser_.emplace();
    parser_->body_limit(core_.max_body_bytes);
    parser_->header_limit(kHeaderLimit);
    ArmTimer(kIdleTimeout);
    http::async_read_header(
        stream_, buffer_, *parser_,
        [self = Self()](error_code ec, size_t) { self->OnHeader(ec); });
  }

  void OnHeader(error_code ec) {
    if (finished_) return;
    if (ec) return OnReadError(ec);
    if (!parser_->is_done() &&
        wire::IEquals(parser_->get()[http::field::expect], "100-continue")) {
      static const char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
      asio::async_write(stream_, asio::buffer(kContinue, sizeof kContinue - 1),
                        [self = Self()](error_code ec, size_t) {
                          if (self->finished_) return;
                          if (ec) return self->Finish();
                          self->ReadBody();
                        });
      return;
    }
    ReadBody();
  }

  void ReadBody() {
    if (parser_->is_done()) return OnRequest();
    http::async_read(stream_, buffer_, *parser_,
                     [self = Self()](error_code ec, size_t) {
                       if (self->finished_) return;
                       if (ec) return self->OnReadError(ec);
                       self->OnRequest();
                     });
  }

  void OnReadError(error_code ec) {
    DisarmTimer();
    static const auto& kHttpCategory =
        http::make_error_code(http::error::end_of_stream).category();
    if (ec == http::error::end_of_stream) return Linger();
    if (ec == http::error::body_limit) {
      return SendError(413, "PayloadTooLarge",
                       "request body over " +
                           std::to_string(core_.max_body_bytes) + " bytes");
    }
    if (ec.category() == kHttpCategory) {
      return SendError(400, "BadRequest", "malformed request: " + ec.message());
    }
    Finish();  // A network or TLS error: nobody to answer.
  }

  void SendError(int status, const std::string& code,
                 const std::string& message) {
    keep_alive_ = false;
    WriteResponse(ErrorResponse(status, code, message));
  }

  void OnRequest() {
    DisarmTimer();
    http::request<http::string_body> msg = parser_->release();
    parser_.reset();
    http10_ = msg.version() < 11;
    keep_alive_ = msg.keep_alive() && !http10_;
    state_ = State::kHandling;
    auto exchange = std::make_shared<ExchangeImpl>(
        core_.life, weak_from_this(), ToRequest(std::move(msg), remote_));
    try {
      core_.handler(std::move(exchange));
    } catch (...) {
      // The project does not use exceptions, but one escaping a handler
      // must not end an I/O thread; the dropped exchange answers 500.
    }
  }

  void WriteResponse(Response r) {
    state_ = State::kWriting;
    head_ = wire::ResponseHead(r.status, r.content_type, r.headers, keep_alive_,
                               static_cast<int64_t>(r.body.size()), false);
    if (r.status != 204 && r.status != 304) body_ = std::move(r.body);
    std::array<asio::const_buffer, 2> bufs = {asio::buffer(head_),
                                              asio::buffer(body_)};
    ArmTimer(kWriteTimeout);
    asio::async_write(stream_, bufs, [self = Self()](error_code ec, size_t) {
      self->OnWritten(ec);
    });
  }

  void OnWritten(error_code ec) {
    if (finished_) return;
    DisarmTimer();
    if (ec) return Finish();
    head_.clear();
    body_ = std::string();
    if (keep_alive_) {
      DoRead();
    } else {
      Linger();
    }
  }

  // Writes what is pending, one write at a time.
  void WriteNext() {
    if (writing_ || finished_) return;
    if (pending_.empty()) return;
    writing_ = true;
    wbuf_.swap(pending_);
    pending_.clear();
    asio::async_write(stream_, asio::buffer(wbuf_),
                      [self = Self()](error_code ec, size_t) {
                        if (self->finished_) return;
                        self->writing_ = false;
                        if (ec) return self->Finish();
                        self->wbuf_.clear();
                        if (!self->pending_.empty()) return self->WriteNext();
                        if (self->end_queued_) self->HalfClose();
                      });
  }

  // Response complete and no more requests: half-close and wait (briefly)
  // for the client to close, so that unread input does not reset the
  // connection before the client read the response.
  void Linger() {
    state_ = State::kLingering;
    HalfClose();
    DrainRead();
  }

  void HalfClose() {
    error_code ec;
    Lowest().shutdown(tcp::socket::shutdown_send, ec);
    ArmTimer(kLingerTimeout);
  }

  // Reads and drops input until the connection ends.
  void DrainRead() {
    stream_.async_read_some(asio::buffer(scratch_),
                            [self = Self()](error_code ec, size_t) {
                              if (self->finished_) return;
                              if (ec) return self->Finish();
                              self->DrainRead();
                            });
  }

  void Finish() {
    if (finished_) return;
    finished_ = true;
    state_ = State::kDone;
    DisarmTimer();
    error_code ec;
    Lowest().close(ec);
    if (stream_impl_) std::exchange(stream_impl_, nullptr)->FireClose();
    core_.Remove(this);
  }

  ServerCore& core_;
  S stream_;
  asio::steady_timer timer_;
  uint64_t timer_gen_ = 0;
  const std::string remote_;
  State state_ = State::kReading;
  bool finished_ = false;
  bool keep_alive_ = true;
  bool http10_ = false;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::string head_, body_;  // The response being written.
  std::array<char, 4096> scratch_;
  // Streaming.
  std::shared_ptr<StreamImpl> stream_impl_;
  bool chunked_ = true;
  bool writing_ = false;
  bool end_queued_ = false;
  std::string pending_;  // Framed bytes not yet written.
  std::string wbuf_;     // Bytes being written.
};

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
      session = std::make_shared<Session<TlsStream>>(
          core_, strand, TlsStream(std::move(sock), *tls_), remote);
    } else {
      session = std::make_shared<Session<tcp::socket>>(core_, strand,
                                                       std::move(sock), remote);
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

Result<std::unique_ptr<HttpServer>> HttpServer::Start(const ServerOptions& opts,
                                                      Handler handler) {
  auto server = std::make_unique<ServerImpl>(opts, std::move(handler));
  Status s = server->Init();
  if (!s.ok()) return s;
  return std::unique_ptr<HttpServer>(std::move(server));
}

}  // namespace allot::net
