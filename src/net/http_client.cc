// HttpClient: a blocking HTTP/1.1 client on one kept-alive connection.
//
// Every operation is an Asio async operation run to completion on the
// client's own io_context by the calling thread; a deadline bounds the run,
// and on expiry the socket is closed, which ends the operation. Requests are
// formatted here; Beast only parses responses (one parser type, read with
// async_read_some, for both Do and Stream).
#include <sys/socket.h>

#include <array>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <cerrno>
#include <chrono>
#include <optional>

#include "net/http.h"
#include "net/http_wire.h"

namespace allot::net {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using Clock = std::chrono::steady_clock;
using Headers = std::vector<std::pair<std::string, std::string>>;
using TlsStream = asio::ssl::stream<tcp::socket>;
using Parser = http::response_parser<http::buffer_body>;

// Error bodies are read whole up to this size; the rest is dropped.
constexpr size_t kMaxErrorBody = 64 << 10;

struct Url {
  bool tls = false;
  std::string host;    // Without brackets.
  std::string port;    // Digits.
  std::string prefix;  // Path prefix without a trailing '/', maybe "".
  std::string host_header;
};

Result<Url> ParseUrl(const std::string& url) {
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument(
        "bad server URL \"" + url + "\": " + why +
            " (want http://host[:port] or https://host[:port])",
        "base_url");
  };
  Url u;
  std::string rest;
  if (url.rfind("http://", 0) == 0) {
    rest = url.substr(7);
  } else if (url.rfind("https://", 0) == 0) {
    u.tls = true;
    rest = url.substr(8);
  } else {
    return bad("unknown scheme");
  }
  size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  if (slash != std::string::npos) u.prefix = rest.substr(slash);
  while (!u.prefix.empty() && u.prefix.back() == '/') u.prefix.pop_back();
  if (u.prefix.find_first_of("?# ") != std::string::npos) {
    return bad("a query or fragment is not allowed");
  }
  if (authority.find('@') != std::string::npos) {
    return bad("user info is not supported");
  }
  std::string port;
  if (!authority.empty() && authority[0] == '[') {
    size_t close = authority.find(']');
    if (close == std::string::npos) return bad("unclosed '['");
    u.host = authority.substr(1, close - 1);
    std::string after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') return bad("junk after ']'");
      port = after.substr(1);
    }
  } else {
    size_t colon = authority.rfind(':');
    u.host = authority.substr(0, colon);
    if (colon != std::string::npos) port = authority.substr(colon + 1);
  }
  if (u.host.empty()) return bad("no host");
  if (u.host.find_first_of(" /?#[]") != std::string::npos) {
    return bad("bad host");
  }
  bool default_port = port.empty();
  if (default_port) port = u.tls ? "443" : "80";
  if (port.size() > 5 ||
      port.find_first_not_of("0123456789") != std::string::npos ||
      std::stoi(port) == 0 || std::stoi(port) > 65535) {
    return bad("bad port");
  }
  u.port = port;
  u.host_header =
      u.host.find(':') != std::string::npos ? "[" + u.host + "]" : u.host;
  if (!default_port) u.host_header += ":" + port;
  return u;
}

bool IsIpLiteral(const std::string& host) {
  error_code ec;
  asio::ip::make_address(host, ec);
  return !ec;
}

StatusCode CodeForHttpStatus(int status) {
  switch (status) {
    case 400:
    case 413:
    case 422:
      return StatusCode::kInvalidArgument;
    case 404:
      return StatusCode::kNotFound;
    case 409:
      return StatusCode::kAlreadyExists;
    case 401:
    case 403:
    case 412:
    case 428:
      return StatusCode::kFailedPrecondition;
    default:
      return StatusCode::kInternal;
  }
}

Status MakeStatus(StatusCode code, std::string msg, std::string field) {
  switch (code) {
    case StatusCode::kInvalidArgument:
      return Status::InvalidArgument(std::move(msg), std::move(field));
    case StatusCode::kNotFound:
      return Status::NotFound(std::move(msg), std::move(field));
    case StatusCode::kAlreadyExists:
      return Status::AlreadyExists(std::move(msg), std::move(field));
    case StatusCode::kFailedPrecondition:
      return Status::FailedPrecondition(std::move(msg), std::move(field));
    default:
      return Status::Internal(std::move(msg));
  }
}

// A non-2xx answer as a Status: Allot's {"error":{"message","field"}} when
// the body is that, else the status and the start of the body.
Status ErrorFromBody(int status, const std::string& body) {
  std::string message, field;
  error_code ec;
  boost::json::value v = boost::json::parse(body, ec);
  if (!ec && v.is_object()) {
    const boost::json::value* e = v.as_object().if_contains("error");
    if (e != nullptr && e->is_object()) {
      const boost::json::object& o = e->as_object();
      if (const auto* m = o.if_contains("message"); m && m->is_string()) {
        message = std::string(m->as_string());
      }
      if (const auto* f = o.if_contains("field"); f && f->is_string()) {
        field = std::string(f->as_string());
      }
    }
  }
  if (message.empty()) {
    message = "HTTP " + std::to_string(status);
    if (!body.empty()) message += ": " + body.substr(0, 200);
  }
  return MakeStatus(CodeForHttpStatus(status), std::move(message),
                    std::move(field));
}

class ClientImpl final : public HttpClient {
 public:
  ClientImpl(ClientOptions opts, Url url)
      : opts_(std::move(opts)), url_(std::move(url)) {}

  ~ClientImpl() override { Disconnect(); }

  Status Init() {
    if (!url_.tls) return Status::Ok();
    tls_ctx_.emplace(asio::ssl::context::tls_client);
    SSL_CTX_set_min_proto_version(tls_ctx_->native_handle(), TLS1_2_VERSION);
    if (opts_.insecure) {
      tls_ctx_->set_verify_mode(asio::ssl::verify_none);
      return Status::Ok();
    }
    tls_ctx_->set_verify_mode(asio::ssl::verify_peer);
    error_code ec;
    if (!opts_.ca_file.empty()) {
      tls_ctx_->load_verify_file(opts_.ca_file, ec);
      if (ec) {
        return Status::InvalidArgument(
            "cannot load CA file " + opts_.ca_file + ": " + ec.message(),
            "ca_file");
      }
    } else {
      tls_ctx_->set_default_verify_paths(ec);
      if (ec) {
        return Status::Internal("cannot load the system's CA certificates: " +
                                ec.message());
      }
    }
    return Status::Ok();
  }

  Result<Response> Do(const std::string& method, const std::string& target,
                      const Headers& headers,
                      const std::string& body) override {
    const Clock::time_point deadline =
        Clock::now() + std::chrono::milliseconds(opts_.timeout_ms);
    Result<std::string> head = FormatRequest(method, target, headers, &body);
    if (!head.ok()) return head.status();
    for (int attempt = 0;; ++attempt) {
      bool reused = false;
      Status s = Prepare(deadline, &reused);
      if (!s.ok()) return s;
      Parser parser;
      if (method == "HEAD") parser.skip(true);
      std::string out;
      bool lost = false;
      s = RoundTrip(
          *head, body, deadline, parser,
          [&](const char* data, size_t n) {
            out.append(data, n);
            return true;
          },
          &lost);
      if (!s.ok()) {
        // The server may have closed the idle connection as we sent:
        // one more try on a fresh one.
        if (reused && lost && attempt == 0) continue;
        return s;
      }
      auto& res = parser.get();
      if (!res.keep_alive()) Disconnect();
      Response r;
      r.status = static_cast<int>(res.result_int());
      r.content_type = std::string(res[http::field::content_type]);
      for (const auto& f : res) {
        r.headers.emplace_back(wire::ToLower(f.name_string()),
                               std::string(f.value()));
      }
      r.body = std::move(out);
      return r;
    }
  }

  Status Stream(
      const std::string& target, const Headers& headers,
      const std::function<bool(const std::string&)>& on_data) override {
    const Clock::time_point deadline =
        Clock::now() + std::chrono::milliseconds(opts_.timeout_ms);
    Result<std::string> head = FormatRequest("GET", target, headers, nullptr);
    if (!head.ok()) return head.status();
    for (int attempt = 0;; ++attempt) {
      bool reused = false;
      Status s = Prepare(deadline, &reused);
      if (!s.ok()) return s;
      Parser parser;
      std::string error_body;
      bool stopped = false;
      bool lost = false;
      s = RoundTrip(
          *head, "", deadline, parser,
          [&](const char* data, size_t n) {
            int status = static_cast<int>(parser.get().result_int());
            if (status < 200 || status > 299) {
              size_t room = kMaxErrorBody - error_body.size();
              error_body.append(data, std::min(n, room));
              return error_body.size() < kMaxErrorBody;
            }
            if (on_data(std::string(data, n))) return true;
            stopped = true;
            return false;
          },
          &lost, /*stream=*/true);
      if (!s.ok()) {
        if (reused && lost && attempt == 0) continue;
        return s;
      }
      int status = static_cast<int>(parser.get().result_int());
      if (stopped || !parser.is_done() || !parser.get().keep_alive()) {
        Disconnect();
      }
      if (status < 200 || status > 299) {
        return ErrorFromBody(status, error_body);
      }
      return Status::Ok();
    }
  }

 private:
  // The request head (and Content-Length when `body` is given).
  Result<std::string> FormatRequest(const std::string& method,
                                    const std::string& target,
                                    const Headers& headers,
                                    const std::string* body) {
    if (method.empty() || wire::HasCrLf(method) ||
        method.find(' ') != std::string::npos) {
      return Status::InvalidArgument("bad HTTP method \"" + method + "\"");
    }
    if (target.empty() || target[0] != '/' ||
        target.find_first_of(" \r\n") != std::string::npos) {
      return Status::InvalidArgument("bad request target \"" + target +
                                     "\" (want /path?query)");
    }
    std::string head = method + " " + url_.prefix + target + " HTTP/1.1\r\n";
    head += "Host: " + url_.host_header + "\r\n";
    bool user_agent = false;
    for (const auto& [name, value] : headers) {
      if (name.empty() || wire::HasCrLf(name) || wire::HasCrLf(value) ||
          name.find(':') != std::string::npos) {
        return Status::InvalidArgument("bad header \"" + name + "\"");
      }
      if (wire::IEquals(name, "host") ||
          wire::IEquals(name, "content-length") ||
          wire::IEquals(name, "transfer-encoding")) {
        continue;
      }
      if (wire::IEquals(name, "user-agent")) user_agent = true;
      head += name + ": " + value + "\r\n";
    }
    if (!user_agent) head += "User-Agent: allot\r\n";
    if (body != nullptr &&
        (!body->empty() || (method != "GET" && method != "HEAD" &&
                            method != "DELETE" && method != "OPTIONS"))) {
      head += "Content-Length: " + std::to_string(body->size()) + "\r\n";
    }
    head += "\r\n";
    return head;
  }

  std::string Where() const { return "allot server at " + opts_.base_url; }

  Status Unreachable(const std::string& why) const {
    return Status::Internal("cannot reach " + Where() + ": " + why);
  }

  Status TimedOut(const char* doing) const {
    return Status::Internal("timed out after " +
                            std::to_string(opts_.timeout_ms) + " ms " + doing +
                            " " + Where());
  }

  tcp::socket& Lowest() { return tls_ ? tls_->next_layer() : *tcp_; }

  // Calls f with the connection's stream (plain or TLS).
  template <typename F>
  void WithStream(F&& f) {
    if (tls_) {
      f(*tls_);
    } else {
      f(*tcp_);
    }
  }

  // Runs the io_context until `done` or the deadline (none: no limit). On
  // expiry closes the socket, lets the aborted operation finish, and
  // returns false.
  bool Run(const bool& done, std::optional<Clock::time_point> deadline) {
    ioc_.restart();
    if (deadline) {
      ioc_.run_until(*deadline);
    } else {
      ioc_.run();
    }
    if (done) return true;
    error_code ec;
    Lowest().close(ec);
    ioc_.restart();
    ioc_.run();
    return false;
  }

  void Disconnect() {
    if (tcp_ || tls_) {
      error_code ec;
      Lowest().close(ec);
    }
    tls_.reset();
    tcp_.reset();
    buffer_.clear();
  }

  // Whether the kept connection still looks usable: not closed by the
  // server, nothing unexpected waiting.
  bool IdleConnectionAlive() {
    if (buffer_.size() > 0) return false;
    char c;
    ssize_t n =
        ::recv(Lowest().native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0) return false;
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK;
    return tls_.has_value();  // TLS: likely a session ticket; plain: junk.
  }

  // Makes sure a connection is open; `reused` tells an old one.
  Status Prepare(Clock::time_point deadline, bool* reused) {
    if (tcp_ || tls_) {
      if (IdleConnectionAlive()) {
        *reused = true;
        return Status::Ok();
      }
      Disconnect();
    }
    *reused = false;
    return Connect(deadline);
  }

  Status Connect(Clock::time_point deadline) {
    error_code ec;
    tcp::resolver resolver(ioc_);
    tcp::resolver::results_type endpoints =
        resolver.resolve(url_.host, url_.port, ec);
    if (ec) return Unreachable(ec.message());
    if (url_.tls) {
      tls_.emplace(ioc_, *tls_ctx_);
    } else {
      tcp_.emplace(ioc_);
    }
    bool done = false;
    asio::async_connect(Lowest(), endpoints,
                        [&](error_code e, const tcp::endpoint&) {
                          ec = e;
                          done = true;
                        });
    if (!Run(done, deadline)) {
      Disconnect();
      return Unreachable("timed out connecting");
    }
    if (ec) {
      Disconnect();
      return Unreachable(ec.message());
    }
    Lowest().set_option(tcp::no_delay(true), ec);
    if (!tls_) return Status::Ok();
    SSL* ssl = tls_->native_handle();
    if (IsIpLiteral(url_.host)) {
      X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), url_.host.c_str());
    } else {
      SSL_set_tlsext_host_name(ssl, url_.host.c_str());
      SSL_set1_host(ssl, url_.host.c_str());
    }
    done = false;
    tls_->async_handshake(asio::ssl::stream_base::client, [&](error_code e) {
      ec = e;
      done = true;
    });
    if (!Run(done, deadline)) {
      Disconnect();
      return Unreachable("timed out in the TLS handshake");
    }
    if (ec) {
      long verify = SSL_get_verify_result(ssl);
      std::string why =
          verify != X509_V_OK
              ? std::string("TLS certificate verification failed: ") +
                    X509_verify_cert_error_string(verify) +
                    " (trust the server's CA with ca_file, or set insecure)"
              : "TLS handshake failed: " + ec.message();
      Disconnect();
      return Unreachable(why);
    }
    return Status::Ok();
  }

  // Writes the request and reads the response, handing body bytes to
  // on_body until it returns false. `stream`: the deadline bounds only
  // sending. `lost`: the connection failed before any byte of a response
  // came back (worth a retry on a fresh connection when it was a kept one).
  template <typename OnBody>
  Status RoundTrip(const std::string& head, const std::string& body,
                   Clock::time_point deadline, Parser& parser, OnBody&& on_body,
                   bool* lost, bool stream = false) {
    parser.body_limit(boost::none);
    error_code ec;
    bool done = false;
    std::array<asio::const_buffer, 2> bufs = {asio::buffer(head),
                                              asio::buffer(body)};
    WithStream([&](auto& s) {
      asio::async_write(s, bufs, [&](error_code e, size_t) {
        ec = e;
        done = true;
      });
    });
    if (!Run(done, deadline)) {
      Disconnect();
      return TimedOut("sending to");
    }
    if (ec) {
      Disconnect();
      *lost = true;
      return Unreachable(ec.message());
    }
    char chunk[16384];
    while (!parser.is_done()) {
      if (parser.is_header_done()) {
        parser.get().body().data = chunk;
        parser.get().body().size = sizeof chunk;
      }
      done = false;
      WithStream([&](auto& s) {
        http::async_read_some(s, buffer_, parser, [&](error_code e, size_t) {
          ec = e;
          done = true;
        });
      });
      bool header_before = parser.is_header_done();
      std::optional<Clock::time_point> limit;
      if (!stream) limit = deadline;
      if (!Run(done, limit)) {
        Disconnect();
        return TimedOut("waiting for");
      }
      if (ec == http::error::need_buffer) ec = {};
      if (ec) {
        Disconnect();
        if (!parser.got_some()) {
          *lost = true;
          return Unreachable(ec.message());
        }
        return Status::Internal("reading the response from " + Where() + ": " +
                                ec.message());
      }
      if (header_before) {
        size_t n = sizeof chunk - parser.get().body().size;
        if (n > 0 && !on_body(chunk, n)) return Status::Ok();
      }
    }
    return Status::Ok();
  }

  const ClientOptions opts_;
  const Url url_;
  asio::io_context ioc_{1};
  std::optional<asio::ssl::context> tls_ctx_;
  // The connection: at most one of these.
  std::optional<tcp::socket> tcp_;
  std::optional<TlsStream> tls_;
  beast::flat_buffer buffer_;
};

}  // namespace

Result<std::unique_ptr<HttpClient>> HttpClient::Create(const ClientOptions& o) {
  Result<Url> url = ParseUrl(o.base_url);
  if (!url.ok()) return url.status();
  auto client = std::make_unique<ClientImpl>(o, std::move(*url));
  Status s = client->Init();
  if (!s.ok()) return s;
  return std::unique_ptr<HttpClient>(std::move(client));
}

}  // namespace allot::net
