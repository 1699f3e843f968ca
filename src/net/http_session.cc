// HttpServer's connections (see http.h for the contract, and
// http_server.cc for the threads and Stop): one Session per connection, on
// its own strand, and what handlers hold of it, an ExchangeImpl per request
// and a StreamImpl per streamed response, which reach the session only by
// posting onto its strand while the server's Life allows.
//
// A session's life: [TLS handshake] -> read request -> call handler ->
// (reply: write, then read the next request if keep-alive | stream: write
// head and chunks while a read waits for the client to go away) -> linger
// (half-close, drain what the client still sends, then close). Beast only
// parses requests; responses are framed by http_wire. Timeouts: 120 s idle
// between requests, 60 s to write a response, 10 s for a TLS handshake.
#include <array>
#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <type_traits>
#include <utility>

#include "net/http.h"
#include "net/http_server_internal.h"
#include "net/http_wire.h"

namespace allot::net::internal {
namespace {

namespace beast = boost::beast;
namespace http = boost::beast::http;
using boost::system::error_code;

constexpr auto kIdleTimeout = std::chrono::seconds(120);  // Between requests.
constexpr auto kWriteTimeout = std::chrono::seconds(60);  // One response.
constexpr auto kHandshakeTimeout = std::chrono::seconds(10);
constexpr auto kLingerTimeout = std::chrono::seconds(5);
constexpr uint32_t kHeaderLimit = 16 << 10;
// A stream client this far behind is dropped rather than buffered forever.
constexpr size_t kMaxStreamBacklog = 16 << 20;

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

}  // namespace

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

namespace {

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

  void Tunnel(TunnelTarget target) override {
    if (answered_.exchange(true)) return;
    auto on_close = target.on_close;
    const bool posted = PostToSession(
        *life_, session_,
        [t = std::move(target)](SessionBase& s) mutable { s.StartTunnel(std::move(t)); });
    if (!posted && on_close) on_close(0, 0, "the client's connection is gone");
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

  void StartTunnel(TunnelTarget t) override {
    if (finished_ || state_ != State::kHandling) {
      if (t.on_close) t.on_close(0, 0, "the client's connection is gone");
      return;
    }
    state_ = State::kTunneling;
    keep_alive_ = false;
    tunnel_ = std::move(t);
    // What the client sent after its request goes up after the head.
    const auto extra = buffer_.data();
    tunnel_.head.append(static_cast<const char*>(extra.data()), extra.size());
    buffer_.consume(buffer_.size());
    upstream_.emplace(strand_);
    resolver_.emplace(strand_);
    // The connection's time limit: past it, what is pending is cancelled
    // and its handler answers 502.
    const uint64_t gen = ++timer_gen_;
    timer_.expires_after(std::chrono::milliseconds(tunnel_.connect_timeout_ms));
    timer_.async_wait([self = Self(), gen](error_code ec) {
      if (ec || gen != self->timer_gen_ || self->finished_) return;
      self->connect_timed_out_ = true;
      self->resolver_->cancel();
      self->upstream_->close(ec);
    });
    resolver_->async_resolve(
        tunnel_.host, std::to_string(tunnel_.port),
        [self = Self()](error_code ec, tcp::resolver::results_type results) {
          if (self->finished_) return;
          if (ec) return self->TunnelFailed(self->connect_timed_out_ ? "" : "cannot resolve " + self->tunnel_.host + ": " + ec.message());
          asio::async_connect(*self->upstream_, results,
                              [self](error_code ec, const tcp::endpoint&) {
                                if (self->finished_) return;
                                if (ec) return self->TunnelFailed(self->connect_timed_out_ ? "" : ec.message());
                                self->DisarmTimer();
                                asio::async_write(*self->upstream_, asio::buffer(self->tunnel_.head),
                                                  [self](error_code ec, size_t) {
                                                    if (self->finished_) return;
                                                    if (ec) return self->TunnelFailed(ec.message());
                                                    self->tunnel_.head.clear();
                                                    self->PumpUp();
                                                    self->PumpDown();
                                                  });
                              });
        });
  }

 private:
  enum class State {
    kReading,
    kHandling,
    kWriting,
    kStreaming,
    kTunneling,
    kLingering,
    kDone
  };

  // The upstream could not be reached (or the connection timed out):
  // 502, and the tunnel's end is told.
  void TunnelFailed(std::string why) {
    DisarmTimer();
    if (why.empty()) why = "no connection within " + std::to_string(tunnel_.connect_timeout_ms) + " ms";
    if (upstream_) {
      error_code ec;
      upstream_->close(ec);
    }
    const std::string where = tunnel_.host + ":" + std::to_string(tunnel_.port);
    EndTunnel("cannot reach " + where + ": " + why);
    WriteResponse(ErrorResponse(502, "BadGateway", "the upstream " + where +
                                                       " cannot be reached: " + why));
  }

  // Client to upstream. Once the upstream has gone, what the client
  // still sends is dropped until it closes. A client that half-closes
  // (sent all it will) gets the rest of the answer: the upstream is told
  // the same and the tunnel ends with it.
  void PumpUp() {
    stream_.async_read_some(asio::buffer(up_buf_), [self = Self()](error_code ec, size_t n) {
      if (self->finished_) return;
      if (ec == asio::error::eof && !self->upstream_done_) {
        self->client_eof_ = true;
        error_code ignored;
        self->upstream_->shutdown(tcp::socket::shutdown_send, ignored);
        return;
      }
      if (ec) {  // The client went away (or closed after the answer).
        self->EndTunnel("");
        return self->Finish();
      }
      if (self->upstream_done_) return self->PumpUp();
      self->up_bytes_ += int64_t(n);
      if (self->tunnel_.on_traffic) self->tunnel_.on_traffic(int64_t(n), 0);
      asio::async_write(*self->upstream_, asio::buffer(self->up_buf_.data(), n),
                        [self](error_code ec, size_t) {
                          if (self->finished_) return;
                          if (ec) self->UpstreamDone();
                          self->PumpUp();
                        });
    });
  }

  // Upstream to client, until the upstream closes: then the client gets a
  // half-close and a moment to read the rest (Linger's reasons).
  void PumpDown() {
    upstream_->async_read_some(asio::buffer(down_buf_), [self = Self()](error_code ec, size_t n) {
      if (self->finished_) return;
      if (ec) return self->UpstreamDone();
      self->down_bytes_ += int64_t(n);
      if (self->tunnel_.on_traffic) self->tunnel_.on_traffic(0, int64_t(n));
      asio::async_write(self->stream_, asio::buffer(self->down_buf_.data(), n),
                        [self](error_code ec, size_t) {
                          if (self->finished_) return;
                          if (ec) {
                            self->EndTunnel("");
                            return self->Finish();
                          }
                          self->PumpDown();
                        });
    });
  }

  void UpstreamDone() {
    if (upstream_done_) return;
    upstream_done_ = true;
    error_code ec;
    upstream_->close(ec);
    EndTunnel("");
    if (client_eof_) return Finish();  // Both sides are done.
    HalfClose();  // PumpUp's read ends when the client closes (or the timer).
  }

  // Tells the tunnel's end, once.
  void EndTunnel(const std::string& error) {
    if (tunnel_ended_) return;
    tunnel_ended_ = true;
    if (tunnel_.on_close) tunnel_.on_close(up_bytes_, down_bytes_, error);
  }

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
    const bool tunnel = state_ == State::kTunneling;
    state_ = State::kDone;
    DisarmTimer();
    error_code ec;
    Lowest().close(ec);
    if (upstream_) upstream_->close(ec);
    if (resolver_) resolver_->cancel();
    if (tunnel) EndTunnel("closed");
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
  // Tunnelling.
  TunnelTarget tunnel_;
  std::optional<tcp::socket> upstream_;
  std::optional<tcp::resolver> resolver_;
  bool upstream_done_ = false, tunnel_ended_ = false, connect_timed_out_ = false;
  bool client_eof_ = false;
  int64_t up_bytes_ = 0, down_bytes_ = 0;
  std::array<char, 16384> up_buf_, down_buf_;
};

}  // namespace

}  // namespace allot::net::internal

namespace allot::net {

void Exchange::Tunnel(TunnelTarget target) {
  Response r;
  r.status = 501;
  r.body = wire::ErrorBody("NotImplemented", "this exchange cannot be tunnelled");
  Reply(std::move(r));
  if (target.on_close) target.on_close(0, 0, "not supported");
}

}  // namespace allot::net

namespace allot::net::internal {

std::shared_ptr<SessionBase> NewSession(ServerCore& core, Strand strand,
                                        tcp::socket sock, std::string remote) {
  return std::make_shared<Session<tcp::socket>>(core, strand, std::move(sock),
                                                std::move(remote));
}

std::shared_ptr<SessionBase> NewTlsSession(ServerCore& core, Strand strand,
                                           TlsStream stream,
                                           std::string remote) {
  return std::make_shared<Session<TlsStream>>(core, strand, std::move(stream),
                                              std::move(remote));
}

}  // namespace allot::net::internal
