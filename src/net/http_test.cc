// Tests of HttpServer and HttpClient against each other on 127.0.0.1.
#include "net/http.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <future>
#include <mutex>
#include <thread>

#include "net/http_wire.h"

namespace allot::net {
namespace {

using namespace std::chrono_literals;
using Headers = std::vector<std::pair<std::string, std::string>>;

// Echoes the request as "method|path|k=v;...|x-test header|body".
void Echo(std::shared_ptr<Exchange> ex) {
  const Request& r = ex->request();
  std::string q;
  for (const auto& [k, v] : r.query) q += k + "=" + v + ";";
  Response res;
  res.content_type = "text/plain";
  res.body = r.method + "|" + r.path + "|" + q + "|" + r.Header("x-test") +
             "|" + r.body;
  res.headers.emplace_back("X-Remote", r.remote);
  ex->Reply(std::move(res));
}

std::unique_ptr<HttpServer> StartServer(Handler handler,
                                        ServerOptions opts = {}) {
  opts.listen = "127.0.0.1:0";
  auto server = HttpServer::Start(opts, std::move(handler));
  EXPECT_TRUE(server.ok()) << server.status().ToString();
  return server.ok() ? std::move(*server) : nullptr;
}

std::unique_ptr<HttpClient> Client(const HttpServer& server,
                                   ClientOptions opts = {}) {
  if (opts.base_url.empty()) {
    opts.base_url = "http://127.0.0.1:" + std::to_string(server.port());
  }
  auto client = HttpClient::Create(opts);
  EXPECT_TRUE(client.ok()) << client.status().ToString();
  return client.ok() ? std::move(*client) : nullptr;
}

std::string HeaderOf(const Response& r, const std::string& name) {
  for (const auto& [k, v] : r.headers) {
    if (k == name) return v;
  }
  return "";
}

// Sends raw bytes on a fresh connection and returns all the server sends
// back until it closes.
// A TCP connection to 127.0.0.1:port (-1: refused).
int ConnectLocal(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

std::string RawExchange(uint16_t port, const std::string& bytes) {
  const int fd = ConnectLocal(port);
  if (fd < 0) return "connect failed";
  (void)!::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

TEST(HttpWireTest, SplitTarget) {
  std::string path;
  std::map<std::string, std::string> query;
  wire::SplitTarget("/a%2Fb+c?x=1&&y&x=2&s=a+b%21", &path, &query);
  EXPECT_EQ(path, "/a/b+c");  // '+' is a space only in queries.
  EXPECT_EQ(query, (std::map<std::string, std::string>{
                       {"x", "1"}, {"y", ""}, {"s", "a b!"}}));
}

TEST(HttpWireTest, ResponseHead) {
  EXPECT_EQ(wire::ResponseHead(404, "application/json",
                               {{"X-A", "1"}, {"content-length", "9"}},
                               /*keep_alive=*/true, 2, false),
            "HTTP/1.1 404 Not Found\r\nServer: allot\r\nContent-Type: "
            "application/json\r\nX-A: 1\r\nContent-Length: 2\r\n\r\n");
  EXPECT_EQ(wire::ResponseHead(204, "", {}, false, 0, false),
            "HTTP/1.1 204 No Content\r\nServer: allot\r\nConnection: "
            "close\r\n\r\n");
  EXPECT_EQ(wire::ResponseHead(7, "", {}, true, -1, true),
            "HTTP/1.1 500 Internal Server Error\r\nServer: "
            "allot\r\nTransfer-Encoding: chunked\r\n\r\n");
  EXPECT_EQ(wire::ErrorBody("X", "say \"hi\"\n"),
            "{\"error\":{\"code\":\"X\",\"message\":\"say "
            "\\\"hi\\\"\\u000a\",\"field\":\"\"}}");
}

TEST(HttpTest, EchoesMethodPathQueryHeadersAndBody) {
  auto server = StartServer(Echo);
  auto client = Client(*server);
  // The path is percent-decoded; in the query '+' is a space too.
  auto r = client->Do("GET", "/api/v1/a%20b?name=x+y&e=%26%3D&flag", {}, "");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->content_type, "text/plain");
  EXPECT_EQ(r->body, "GET|/api/v1/a b|e=&=;flag=;name=x y;||");
  EXPECT_EQ(HeaderOf(*r, "server"), "allot");

  r = client->Do("POST", "/w", {{"X-Test", "hello"}}, "{\"k\":1}");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->body, "POST|/w||hello|{\"k\":1}");

  r = client->Do("PUT", "/empty", {}, "");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->body, "PUT|/empty|||");
}

TEST(HttpTest, ExtraResponseHeadersAndStatus) {
  auto server = StartServer([](std::shared_ptr<Exchange> ex) {
    Response res;
    res.status = 201;
    res.body = "{}";
    res.headers = {{"Location", "/x/1"}, {"Bad", "a\r\nInjected: 1"}};
    ex->Reply(std::move(res));
  });
  auto client = Client(*server);
  auto r = client->Do("POST", "/x", {}, "{}");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 201);
  EXPECT_EQ(r->content_type, "application/json");
  EXPECT_EQ(HeaderOf(*r, "location"), "/x/1");
  EXPECT_EQ(HeaderOf(*r, "injected"), "");
  EXPECT_EQ(HeaderOf(*r, "bad"), "");
}

TEST(HttpTest, KeepAliveUsesOneConnection) {
  auto server = StartServer(Echo);
  auto client = Client(*server);
  std::string remote;
  for (int i = 0; i < 200; ++i) {
    auto r = client->Do("GET", "/k?i=" + std::to_string(i), {}, "");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->body, "GET|/k|i=" + std::to_string(i) + ";||");
    if (i == 0) remote = HeaderOf(*r, "x-remote");
    ASSERT_EQ(HeaderOf(*r, "x-remote"), remote);  // Same client port.
  }
  EXPECT_NE(remote.find("127.0.0.1:"), std::string::npos);
}

TEST(HttpTest, ConnectionCloseFromServerThenReconnects) {
  auto server = StartServer([](std::shared_ptr<Exchange> ex) {
    Response res;
    res.body = ex->request().remote;
    res.headers = {{"Connection", "close"}};
    ex->Reply(std::move(res));
  });
  auto client = Client(*server);
  auto a = client->Do("GET", "/", {}, "");
  auto b = client->Do("GET", "/", {}, "");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a->body, b->body);  // Two connections.
  EXPECT_EQ(HeaderOf(*a, "connection"), "close");
}

TEST(HttpTest, ReconnectsAfterServerRestart) {
  // The kept connection dies with the first server; the client notices the
  // close and dials the second one on the same port.
  auto first = StartServer(Echo);
  uint16_t port = first->port();
  auto client = Client(*first);
  ASSERT_TRUE(client->Do("GET", "/a", {}, "").ok());
  first.reset();
  ServerOptions opts;
  opts.listen = "127.0.0.1:" + std::to_string(port);
  auto second = HttpServer::Start(opts, Echo);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  auto r = client->Do("GET", "/b", {}, "");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->body, "GET|/b|||");
}

TEST(HttpTest, DeferredReplyFromAnotherThread) {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::shared_ptr<Exchange>> queue;
  bool done = false;
  std::thread worker([&] {
    std::unique_lock lock(mu);
    for (;;) {
      cv.wait(lock, [&] { return done || !queue.empty(); });
      if (queue.empty()) return;
      auto ex = std::move(queue.front());
      queue.pop_front();
      lock.unlock();
      std::this_thread::sleep_for(50ms);
      Echo(std::move(ex));
      lock.lock();
    }
  });
  auto server = StartServer([&](std::shared_ptr<Exchange> ex) {
    std::lock_guard lock(mu);
    queue.push_back(std::move(ex));
    cv.notify_one();
  });
  auto client = Client(*server);
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 3; ++i) {
    auto r = client->Do("POST", "/later", {}, std::to_string(i));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->body, "POST|/later|||" + std::to_string(i));
  }
  EXPECT_GE(std::chrono::steady_clock::now() - start, 150ms);
  {
    std::lock_guard lock(mu);
    done = true;
    cv.notify_one();
  }
  worker.join();
}

TEST(HttpTest, DroppedExchangeAnswers500) {
  auto server = StartServer([](std::shared_ptr<Exchange>) {});
  auto client = Client(*server);
  auto r = client->Do("GET", "/", {}, "");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 500);
  EXPECT_NE(r->body.find("\"code\":\"Internal\""), std::string::npos);
  // The connection is still usable.
  r = client->Do("GET", "/", {}, "");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 500);
}

TEST(HttpTest, ConcurrentLoad) {
  // 16 clients x 200 requests, each with its own body, all echoed back.
  ServerOptions opts;
  opts.threads = 2;
  auto server = StartServer(Echo, opts);
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([&, t] {
      auto client = Client(*server);
      for (int i = 0; i < 200; ++i) {
        std::string body = std::to_string(t) + "-" + std::to_string(i);
        auto r = client->Do("POST", "/load", {}, body);
        if (r.ok() && r->body == "POST|/load|||" + body) ++ok;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 16 * 200);
}

TEST(HttpTest, BodyOverLimitIs413) {
  std::atomic<int> calls{0};
  auto server = StartServer([&](std::shared_ptr<Exchange> ex) {
    ++calls;
    Echo(std::move(ex));
  });
  auto client = Client(*server);
  auto r = client->Do("POST", "/big", {}, std::string(2 << 20, 'x'));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 413);
  EXPECT_EQ(r->body,
            "{\"error\":{\"code\":\"PayloadTooLarge\",\"message\":\"request "
            "body over 1048576 bytes\",\"field\":\"\"}}");
  EXPECT_EQ(calls.load(), 0);
  // A body at the limit passes, on a new connection.
  r = client->Do("POST", "/ok", {}, std::string(1 << 20, 'y'));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(calls.load(), 1);
}

TEST(HttpTest, ChunkedBodyOverLimitIs413) {
  auto server = StartServer(Echo);
  std::string chunk(600 << 10, 'z');
  char size[32];
  std::snprintf(size, sizeof size, "%zx\r\n", chunk.size());
  std::string req =
      "POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 2; ++i) req += size + chunk + "\r\n";
  req += "0\r\n\r\n";
  std::string out = RawExchange(server->port(), req);
  EXPECT_EQ(out.rfind("HTTP/1.1 413 Payload Too Large\r\n", 0), 0u) << out;
}

TEST(HttpTest, GarbageIs400) {
  std::atomic<int> calls{0};
  auto server = StartServer([&](std::shared_ptr<Exchange> ex) {
    ++calls;
    Echo(std::move(ex));
  });
  std::string out =
      RawExchange(server->port(), "\x01\x02 this is not http\r\n\r\n");
  EXPECT_EQ(out.rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u) << out;
  EXPECT_NE(out.find("\"code\":\"BadRequest\""), std::string::npos) << out;
  EXPECT_NE(out.find("Connection: close"), std::string::npos) << out;
  out = RawExchange(server->port(), "GET / HTTP/9.x\r\n\r\n");
  EXPECT_EQ(out.rfind("HTTP/1.1 400 ", 0), 0u) << out;
  EXPECT_EQ(calls.load(), 0);
}

TEST(HttpTest, Http10ClosesAfterResponse) {
  auto server = StartServer(Echo);
  std::string out = RawExchange(server->port(), "GET /old HTTP/1.0\r\n\r\n");
  EXPECT_EQ(out.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << out;
  EXPECT_NE(out.find("Connection: close"), std::string::npos);
  EXPECT_NE(out.find("GET|/old|||"), std::string::npos);
}

TEST(HttpTest, ExpectContinue) {
  auto server = StartServer(Echo);
  std::string out =
      RawExchange(server->port(),
                  "POST /e HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nExpect: "
                  "100-continue\r\nConnection: close\r\n\r\nhi");
  EXPECT_EQ(out.rfind("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n", 0),
            0u)
      << out;
  EXPECT_NE(out.find("POST|/e|||hi"), std::string::npos);
}

TEST(HttpTest, StreamDeliversChunksInOrder) {
  std::thread writer;
  auto server = StartServer([&](std::shared_ptr<Exchange> ex) {
    if (ex->request().path != "/watch") return Echo(std::move(ex));
    auto stream = ex->StartStream(200, "text/plain");
    writer = std::thread([stream] {
      for (int i = 0; i < 100; ++i) {
        EXPECT_TRUE(stream->Write("chunk-" + std::to_string(i) + "\n"));
        if (i % 10 == 0) std::this_thread::sleep_for(1ms);
      }
      stream->Close();
      EXPECT_FALSE(stream->Write("late"));
    });
  });
  std::string want;
  for (int i = 0; i < 100; ++i) want += "chunk-" + std::to_string(i) + "\n";
  auto client = Client(*server);
  std::string got;
  Status s = client->Stream("/watch", {}, [&](const std::string& data) {
    got += data;
    return true;
  });
  writer.join();
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(got, want);
  // The client carries on after a stream.
  auto r = client->Do("GET", "/", {}, "");
  EXPECT_TRUE(r.ok()) << r.status().ToString();
}

TEST(HttpTest, StreamErrorStatusCarriesServerMessage) {
  auto server = StartServer([](std::shared_ptr<Exchange> ex) {
    Response res;
    res.status = 404;
    res.body =
        "{\"error\":{\"code\":\"NotFound\",\"message\":\"workload \\\"w\\\" "
        "not found\",\"field\":\"name\"}}";
    ex->Reply(std::move(res));
  });
  auto client = Client(*server);
  Status s = client->Stream("/watch", {}, [](const std::string&) {
    ADD_FAILURE() << "no data expected";
    return true;
  });
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "workload \"w\" not found");
  EXPECT_EQ(s.field(), "name");
}

TEST(HttpTest, ClientGoneClosesStream) {
  std::promise<std::shared_ptr<Stream>> started;
  std::promise<void> closed;
  auto server = StartServer([&](std::shared_ptr<Exchange> ex) {
    auto stream = ex->StartStream(200, "application/x-ndjson");
    stream->OnClose([&] { closed.set_value(); });
    EXPECT_TRUE(stream->Write("first\n"));
    started.set_value(stream);
  });
  auto client = Client(*server);
  std::string got;
  Status s = client->Stream("/watch", {}, [&](const std::string& data) {
    got += data;
    return false;  // Hang up after the first piece.
  });
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(got, "first\n");
  auto stream = started.get_future().get();
  ASSERT_EQ(closed.get_future().wait_for(5s), std::future_status::ready);
  EXPECT_TRUE(stream->closed());
  EXPECT_FALSE(stream->Write("more\n"));
}

TEST(HttpTest, StopWithOpenStreamIsPrompt) {
  std::promise<void> started;
  std::promise<void> closed;
  std::shared_ptr<Stream> kept;
  auto server = StartServer([&](std::shared_ptr<Exchange> ex) {
    kept = ex->StartStream(200, "text/plain");
    kept->OnClose([&] { closed.set_value(); });
    kept->Write("hello\n");
    started.set_value();
  });
  auto client = Client(*server);
  std::thread reader([&] {
    Status s =
        client->Stream("/watch", {}, [](const std::string&) { return true; });
    (void)s;  // Either outcome is fine; it must return.
  });
  started.get_future().wait();
  auto t0 = std::chrono::steady_clock::now();
  server->Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
  EXPECT_EQ(closed.get_future().wait_for(0s), std::future_status::ready);
  EXPECT_FALSE(kept->Write("after stop"));
  reader.join();
  server->Stop();  // Twice is fine.
  server.reset();
  EXPECT_FALSE(kept->Write("after destruction"));
}

TEST(HttpTest, ReplyAfterServerGoneIsHarmless) {
  std::promise<std::shared_ptr<Exchange>> got;
  auto server = StartServer(
      [&](std::shared_ptr<Exchange> ex) { got.set_value(std::move(ex)); });
  ClientOptions opts;
  opts.timeout_ms = 5000;
  auto client = Client(*server, opts);
  std::thread caller([&] { (void)client->Do("GET", "/", {}, ""); });
  auto ex = got.get_future().get();
  server.reset();
  caller.join();
  ex->Reply(Response{});  // Dropped quietly.
  EXPECT_EQ(ex->request().path, "/");
}

TEST(HttpTest, ConnectionRefused) {
  uint16_t port;
  {
    auto server = StartServer(Echo);
    port = server->port();
  }
  ClientOptions opts;
  opts.base_url = "http://127.0.0.1:" + std::to_string(port);
  auto client = HttpClient::Create(opts);
  ASSERT_TRUE(client.ok());
  auto r = (*client)->Do("GET", "/", {}, "");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "cannot reach allot server at " +
                                      opts.base_url + ": Connection refused");
  Status s =
      (*client)->Stream("/", {}, [](const std::string&) { return true; });
  EXPECT_EQ(s.message(), r.status().message());
}

TEST(HttpTest, ClientTimeout) {
  std::promise<std::shared_ptr<Exchange>> got;
  auto server = StartServer(
      [&](std::shared_ptr<Exchange> ex) { got.set_value(std::move(ex)); });
  ClientOptions opts;
  opts.timeout_ms = 200;
  auto client = Client(*server, opts);
  auto r = client->Do("GET", "/slow", {}, "");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("timed out after 200 ms"),
            std::string::npos)
      << r.status().ToString();
}

TEST(HttpTest, BadClientUrls) {
  for (const char* url : {"ftp://x", "127.0.0.1:80", "http://", "http://h:0",
                          "http://h:99999", "http://u@h", "https://[::1"}) {
    ClientOptions opts;
    opts.base_url = url;
    auto c = HttpClient::Create(opts);
    ASSERT_FALSE(c.ok()) << url;
    EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(c.status().message().find(url), std::string::npos);
  }
  ClientOptions opts;
  opts.base_url = "http://[::1]:8470/prefix/";
  EXPECT_TRUE(HttpClient::Create(opts).ok());
}

TEST(HttpTest, BadListenAddresses) {
  for (const char* listen : {"nocolon", "127.0.0.1:x", "127.0.0.1:70000"}) {
    ServerOptions opts;
    opts.listen = listen;
    auto s = HttpServer::Start(opts, Echo);
    ASSERT_FALSE(s.ok()) << listen;
    EXPECT_NE(s.status().message().find(listen), std::string::npos);
  }
  auto first = StartServer(Echo);
  ServerOptions opts;
  opts.listen = "127.0.0.1:" + std::to_string(first->port());
  auto s = HttpServer::Start(opts, Echo);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("in use"), std::string::npos)
      << s.status().ToString();
}

class HttpsTest : public testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/allot_net_tls_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    cert_ = dir_ + "/c.pem";
    key_ = dir_ + "/k.pem";
    std::string cmd =
        "openssl req -x509 -newkey rsa:2048 -nodes -keyout " + key_ + " -out " +
        cert_ +
        " -days 1 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 "
        ">/dev/null 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    ServerOptions opts;
    opts.tls_cert_file = cert_;
    opts.tls_key_file = key_;
    server_ = StartServer(
        [](std::shared_ptr<Exchange> ex) {
          if (ex->request().path != "/stream") return Echo(std::move(ex));
          auto stream = ex->StartStream(200, "text/plain");
          for (const char* c : {"a\n", "b\n", "c\n"}) stream->Write(c);
          stream->Close();
        },
        opts);
    ASSERT_NE(server_, nullptr);
    url_ = "https://127.0.0.1:" + std::to_string(server_->port());
  }
  void TearDown() override {
    server_.reset();
    std::filesystem::remove_all(dir_);
  }

  std::string dir_, cert_, key_, url_;
  std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpsTest, TrustedCaSucceeds) {
  ClientOptions opts;
  opts.base_url = url_;
  opts.ca_file = cert_;
  auto client = Client(*server_, opts);
  for (int i = 0; i < 5; ++i) {
    auto r = client->Do("POST", "/tls?i=1", {}, "secret");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->body, "POST|/tls|i=1;||secret");
  }
  std::string got;
  Status s = client->Stream("/stream", {}, [&](const std::string& data) {
    got += data;
    return true;
  });
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(got, "a\nb\nc\n");
  auto r = client->Do("GET", "/again", {}, "");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
}

TEST_F(HttpsTest, UntrustedFailsClearly) {
  ClientOptions opts;
  opts.base_url = url_;
  auto client = Client(*server_, opts);
  auto r = client->Do("GET", "/", {}, "");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("cannot reach allot server at " + url_ +
                                      ": TLS certificate verification failed"),
            std::string::npos)
      << r.status().message();
}

TEST_F(HttpsTest, InsecureSucceeds) {
  ClientOptions opts;
  opts.base_url = url_;
  opts.insecure = true;
  auto client = Client(*server_, opts);
  auto r = client->Do("GET", "/i", {}, "");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->body, "GET|/i|||");
}

TEST_F(HttpsTest, PlainClientGetsNoAnswer) {
  ClientOptions opts;
  opts.base_url = "http://127.0.0.1:" + std::to_string(server_->port());
  opts.timeout_ms = 3000;
  auto client = Client(*server_, opts);
  auto r = client->Do("GET", "/", {}, "");
  EXPECT_FALSE(r.ok() && r->status == 200);
}

TEST_F(HttpsTest, BadFilesNameTheFile) {
  ServerOptions opts;
  opts.listen = "127.0.0.1:0";
  opts.tls_cert_file = dir_ + "/missing.pem";
  opts.tls_key_file = key_;
  auto s = HttpServer::Start(opts, Echo);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find(opts.tls_cert_file), std::string::npos)
      << s.status().ToString();
  opts.tls_cert_file = cert_;
  opts.tls_key_file = cert_;  // A certificate is not a key.
  s = HttpServer::Start(opts, Echo);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find(cert_), std::string::npos)
      << s.status().ToString();
}

// Requests/s of a trivial handler: 64 client threads, each with its own
// kept-alive client, against a 2-thread server. Run by hand:
//   allot_net_tests --gtest_also_run_disabled_tests
//       --gtest_filter=*DISABLED_Throughput*
// A plain TCP upstream on 127.0.0.1 that echoes what it reads, for one
// connection, until the peer closes.
class EchoUpstream {
 public:
  EchoUpstream() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(::listen(fd_, 4), 0);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] {
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      char buf[4096];
      for (;;) {
        const ssize_t n = ::recv(c, buf, sizeof buf, 0);
        if (n <= 0) break;
        (void)!::send(c, buf, size_t(n), MSG_NOSIGNAL);
      }
      ::close(c);
    });
  }
  ~EchoUpstream() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  uint16_t port() const { return port_; }

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
};

struct TunnelEnd {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  int64_t up = 0, down = 0;
  std::string error;
  void Set(int64_t u, int64_t d, const std::string& e) {
    std::lock_guard<std::mutex> l(mu);
    up = u;
    down = d;
    error = e;
    done = true;
    cv.notify_all();
  }
  bool Wait() {
    std::unique_lock<std::mutex> l(mu);
    return cv.wait_for(l, 10s, [&] { return done; });
  }
};

TEST(HttpTunnelTest, ARequestGoesUpRewrittenAndItsAnswerComesBack) {
  auto upstream = StartServer(Echo);
  ASSERT_NE(upstream, nullptr);
  TunnelEnd end;
  auto proxy = StartServer([&](std::shared_ptr<Exchange> ex) {
    TunnelTarget t;
    t.host = "127.0.0.1";
    t.port = upstream->port();
    t.head = "POST /inner?x=1 HTTP/1.1\r\nHost: up\r\nX-Test: added\r\nContent-Length: " +
             std::to_string(ex->request().body.size()) + "\r\nConnection: close\r\n\r\n" +
             ex->request().body;
    t.on_close = [&](int64_t u, int64_t d, const std::string& e) { end.Set(u, d, e); };
    ex->Tunnel(std::move(t));
  });
  ASSERT_NE(proxy, nullptr);
  auto client = Client(*proxy);
  auto r = client->Do("POST", "/outer", {}, "payload");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "POST|/inner|x=1;|added|payload");
  ASSERT_TRUE(end.Wait());
  EXPECT_EQ(end.error, "");
  EXPECT_GT(end.down, 30);  // The upstream's whole answer.
  // The client's next request reconnects (no keep-alive after a tunnel).
  r = client->Do("POST", "/again", {}, "x");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->body, "POST|/inner|x=1;|added|x");
}

TEST(HttpTunnelTest, AfterAnUpgradeBytesFlowBothWaysUntilTheClientCloses) {
  EchoUpstream upstream;
  TunnelEnd end;
  std::atomic<int64_t> traffic{0};
  auto proxy = StartServer([&](std::shared_ptr<Exchange> ex) {
    TunnelTarget t;
    t.host = "localhost";
    t.port = upstream.port();
    t.head = "UPGRADED\n";
    t.on_traffic = [&](int64_t u, int64_t d) { traffic += u + d; };
    t.on_close = [&](int64_t u, int64_t d, const std::string& e) { end.Set(u, d, e); };
    ex->Tunnel(std::move(t));
  });
  ASSERT_NE(proxy, nullptr);
  const int fd = ConnectLocal(proxy->port());
  ASSERT_GE(fd, 0);
  auto read_until = [&](const std::string& want) {
    std::string got;
    char buf[256];
    while (got.find(want) == std::string::npos) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      got.append(buf, size_t(n));
    }
    return got;
  };
  // The request and a first frame in one write: the frame follows the head.
  const std::string req =
      "GET /ws HTTP/1.1\r\nHost: p\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\nframe-1";
  ASSERT_EQ(::send(fd, req.data(), req.size(), MSG_NOSIGNAL), ssize_t(req.size()));
  EXPECT_EQ(read_until("frame-1"), "UPGRADED\nframe-1");
  ASSERT_EQ(::send(fd, "frame-2", 7, MSG_NOSIGNAL), 7);
  EXPECT_EQ(read_until("frame-2"), "frame-2");
  ::close(fd);
  ASSERT_TRUE(end.Wait());
  EXPECT_EQ(end.up, 7);  // frame-2 (frame-1 went with the head).
  EXPECT_EQ(end.down, int64_t(std::string("UPGRADED\nframe-1frame-2").size()));
  EXPECT_EQ(traffic.load(), end.up + end.down);
}

TEST(HttpTunnelTest, AClientThatHalfClosesAfterItsRequestStillGetsTheAnswer) {
  auto upstream = StartServer(Echo);
  ASSERT_NE(upstream, nullptr);
  TunnelEnd end;
  auto proxy = StartServer([&](std::shared_ptr<Exchange> ex) {
    TunnelTarget t;
    t.host = "127.0.0.1";
    t.port = upstream->port();
    t.head = "GET /half HTTP/1.1\r\nHost: up\r\n\r\n";  // Keep-alive upstream.
    t.on_close = [&](int64_t u, int64_t d, const std::string& e) { end.Set(u, d, e); };
    ex->Tunnel(std::move(t));
  });
  ASSERT_NE(proxy, nullptr);
  const int fd = ConnectLocal(proxy->port());
  ASSERT_GE(fd, 0);
  const std::string req = "GET /x HTTP/1.1\r\nHost: p\r\n\r\n";
  ASSERT_EQ(::send(fd, req.data(), req.size(), MSG_NOSIGNAL), ssize_t(req.size()));
  ::shutdown(fd, SHUT_WR);  // All it will send.
  std::string got;
  char buf[1024];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) got.append(buf, size_t(n));
  ::close(fd);
  EXPECT_NE(got.find("GET|/half|||"), std::string::npos) << got;
  ASSERT_TRUE(end.Wait());
  EXPECT_EQ(end.error, "");
}

TEST(HttpTunnelTest, AnUpstreamThatCannotBeReachedIs502) {
  // A port nothing listens on.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const uint16_t port = ntohs(addr.sin_port);
  ::close(fd);
  TunnelEnd end;
  auto proxy = StartServer([&](std::shared_ptr<Exchange> ex) {
    TunnelTarget t;
    t.host = "127.0.0.1";
    t.port = port;
    t.head = "GET / HTTP/1.1\r\n\r\n";
    t.on_close = [&](int64_t u, int64_t d, const std::string& e) { end.Set(u, d, e); };
    ex->Tunnel(std::move(t));
  });
  ASSERT_NE(proxy, nullptr);
  auto r = Client(*proxy)->Do("GET", "/x", {}, "");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 502);
  EXPECT_NE(r->body.find("cannot be reached"), std::string::npos) << r->body;
  ASSERT_TRUE(end.Wait());
  EXPECT_NE(end.error.find("cannot reach 127.0.0.1:" + std::to_string(port)), std::string::npos)
      << end.error;
}

TEST(HttpBench, DISABLED_Throughput) {
  ServerOptions opts;
  opts.threads = 2;
  auto server = StartServer(
      [](std::shared_ptr<Exchange> ex) {
        Response res;
        res.body = "{}";
        ex->Reply(std::move(res));
      },
      opts);
  std::atomic<bool> stop{false};
  std::atomic<long> count{0}, errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 64; ++t) {
    threads.emplace_back([&] {
      auto client = Client(*server);
      while (!stop.load(std::memory_order_relaxed)) {
        auto r = client->Do("GET", "/ping", {}, "");
        if (r.ok() && r->status == 200) {
          count.fetch_add(1, std::memory_order_relaxed);
        } else {
          errors.fetch_add(1, std::memory_order_relaxed);
        }
      }
    });
  }
  std::this_thread::sleep_for(1s);  // Warm up.
  long start = count.load();
  auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(5s);
  long n = count.load() - start;
  double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  stop = true;
  for (auto& t : threads) t.join();
  std::printf(
      "throughput: %.0f requests/s (64 clients, 2 server threads), "
      "%ld errors\n",
      static_cast<double>(n) / secs, errors.load());
  EXPECT_EQ(errors.load(), 0);
}

}  // namespace
}  // namespace allot::net
