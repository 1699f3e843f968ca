// HTTP/1.1 server and client for Allot, on Boost.Beast / Asio.
//
// This header is deliberately light (no Boost): the server's API code, the
// CLI and tests include it; only src/net/*.cc include Beast and Asio.
//
// Server: a fixed pool of I/O threads accepts connections (keep-alive,
// pipelining not required) and hands each parsed request to one Handler as
// an Exchange. The handler may answer at once or later, from any thread
// (the state owner answers after its group commit). It may instead turn the
// exchange into a stream (chunked transfer encoding) for watches and log
// follow: chunks are written in order; the stream ends when the server
// side closes it or the client goes away (then Write returns false and the
// on-close callback runs once).
//
// Limits: a body over `max_body_bytes` is answered 413 by the server
// itself, a malformed request 400, both with Allot's error JSON
// {"error":{"code","message","field"}}; the handler is not called.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace allot::net {

struct Request {
  std::string method;  // "GET", "POST", ...
  std::string target;  // Path and query, as sent: "/api/v1/x?watch=1".
  std::string path;    // Decoded path without the query: "/api/v1/x".
  std::map<std::string, std::string> query;    // Decoded query parameters.
  std::map<std::string, std::string> headers;  // Names in lower case.
  std::string body;
  std::string remote;  // "127.0.0.1:53412".
  // The header's value or "" (name in lower case).
  const std::string& Header(const std::string& name) const;
};

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // Extra ones.
  // In HttpClient::Do's answers, `headers` holds every header received
  // (names in lower case), Content-Type included.
};

// A chunked response in progress. Thread-safe. The connection closes
// after a stream (no keep-alive). A client that falls 16 MiB behind is
// disconnected rather than buffered for.
class Stream {
 public:
  virtual ~Stream() = default;
  // Queues one chunk. False once the stream is closed (by Close or by the
  // client); the chunk is then dropped.
  virtual bool Write(std::string chunk) = 0;
  // Ends the response (the terminating chunk is sent after queued ones).
  virtual void Close() = 0;
  virtual bool closed() const = 0;
  // Runs once, on an I/O thread, when the stream closes for any reason.
  // Set it right after StartStream. (Set after the close, it runs at once:
  // posted to an I/O thread while the server runs, else in the caller.)
  virtual void OnClose(std::function<void()> fn) = 0;
};

// A tunnelled request's upstream (Exchange::Tunnel), for a reverse proxy:
// the server connects to host:port, writes `head` (the request as the
// upstream must see it: request line, headers, blank line, body), then
// relays bytes both ways, unchanged, until the upstream closes or the
// client goes away: plain answers, chunked or streamed ones and WebSocket
// upgrades alike. Bytes the client sent after its request (a WebSocket's
// first frames) follow the head. The client's connection ends with the
// tunnel (no keep-alive). An upstream that cannot be reached in
// `connect_timeout_ms` is answered 502 with Allot's error JSON.
struct TunnelTarget {
  std::string host;  // A name or address.
  uint16_t port = 0;
  std::string head;
  int connect_timeout_ms = 10000;
  // After each relayed read, on an I/O thread: bytes just sent up (client
  // to upstream) and down. Cheap, it runs often.
  std::function<void(int64_t up, int64_t down)> on_traffic;
  // Once, when the tunnel ends (on an I/O thread; in Tunnel's caller when
  // the client's connection was already gone): bytes relayed each way, and
  // why it failed ("" when it ran and a side closed).
  std::function<void(int64_t up, int64_t down, const std::string& error)> on_close;
};

// One request in flight. Exactly one of Reply, StartStream or Tunnel must
// be called, once, from any thread; an exchange dropped without either is
// answered 500. (A second call is ignored; StartStream then returns a
// closed stream.) Answers given after the server stopped are dropped.
class Exchange {
 public:
  virtual ~Exchange() = default;
  virtual const Request& request() const = 0;
  virtual void Reply(Response response) = 0;
  virtual std::shared_ptr<Stream> StartStream(
      int status, const std::string& content_type,
      std::vector<std::pair<std::string, std::string>> headers = {}) = 0;
  // Relays the connection to `target` (see TunnelTarget). The default
  // answers 501: an exchange that cannot tunnel.
  virtual void Tunnel(TunnelTarget target);
};

using Handler = std::function<void(std::shared_ptr<Exchange>)>;

struct ServerOptions {
  std::string listen = "127.0.0.1:8470";  // "host:port"; port 0 = any free.
  int threads = 2;
  size_t max_body_bytes = 1 << 20;
  std::string tls_cert_file;  // Both set: HTTPS only.
  std::string tls_key_file;
};

class HttpServer {
 public:
  // Binds and starts the I/O threads. Errors: a bad address, a port in
  // use, unreadable or mismatched TLS files.
  static Result<std::unique_ptr<HttpServer>> Start(const ServerOptions& opts,
                                                   Handler handler);
  virtual ~HttpServer() = default;
  virtual uint16_t port() const = 0;
  // Stops accepting, closes open connections and streams (their OnClose
  // callbacks run), joins threads. Idempotent; the destructor calls it.
  // NOTE: not from a handler or OnClose callback (an I/O thread): that
  // would join itself and aborts. Stop waits for handlers running on I/O
  // threads to return.
  virtual void Stop() = 0;
};

struct ClientOptions {
  // "http://127.0.0.1:8470" or "https://host:port".
  std::string base_url;
  std::string ca_file;     // HTTPS: trust this CA (PEM); empty: system CAs.
  bool insecure = false;   // HTTPS: skip certificate verification.
  int timeout_ms = 30000;  // Per request (not for streams).
};

// A blocking client that keeps one connection alive and reconnects when
// the server closed it. Not thread-safe: one per thread.
class HttpClient {
 public:
  static Result<std::unique_ptr<HttpClient>> Create(const ClientOptions& o);
  virtual ~HttpClient() = default;
  // `target` is path and query ("/api/v1/workloads?limit=10"). Transport
  // errors are Status errors (naming the server); any HTTP status is a
  // Response.
  virtual Result<Response> Do(
      const std::string& method, const std::string& target,
      const std::vector<std::pair<std::string, std::string>>& headers,
      const std::string& body) = 0;
  // Sends a GET and feeds the body to `on_data` as it arrives (chunk
  // boundaries are not preserved) until the server ends the response or
  // on_data returns false. A non-2xx status is returned as an error Status
  // carrying the body's error message.
  virtual Status Stream(
      const std::string& target,
      const std::vector<std::pair<std::string, std::string>>& headers,
      const std::function<bool(const std::string&)>& on_data) = 0;
};

// Percent-decoding for paths and query strings ('+' is a space in queries).
std::string UrlDecode(const std::string& s, bool query);
std::string UrlEncode(const std::string& s);

}  // namespace allot::net
