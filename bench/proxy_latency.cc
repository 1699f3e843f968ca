// `allot_proxy_latency`: what the server's reverse-proxy transport
// (net::Exchange::Tunnel, the notebook proxy's and the router's) adds to a
// round trip, on 127.0.0.1 (docs/decisions/0007-notebooks.md).
//
// Two measures, each direct and through a tunnel, medians over trials:
//  - a WebSocket-like round trip: after one upgrade request, 64 bytes sent
//    and echoed back by a plain TCP echo upstream, many times on one
//    connection (what a kernel's execute request and reply cost);
//  - an HTTP request on a new connection each time (a tunnel ends with its
//    upstream's answer: no keep-alive), against an HttpServer upstream.
//
//   allot_proxy_latency [--trips N] [--requests N] [--trials N]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "net/http.h"

namespace {

using Clock = std::chrono::steady_clock;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}
double Pct(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[std::min(v.size() - 1, size_t(p * double(v.size())))];
}

int Connect(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool ReadN(int fd, char* buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    const ssize_t r = ::recv(fd, buf + got, n - got, 0);
    if (r <= 0) return false;
    got += size_t(r);
  }
  return true;
}

// Echoes what it reads, one thread per connection, until closed.
class Echo {
 public:
  Echo() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    (void)!::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    (void)!::listen(fd_, 64);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] {
      for (int c; (c = ::accept(fd_, nullptr, nullptr)) >= 0;) {
        std::thread([c] {
          const int one = 1;
          ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          char buf[4096];
          for (ssize_t n; (n = ::recv(c, buf, sizeof buf, 0)) > 0;) {
            (void)!::send(c, buf, size_t(n), MSG_NOSIGNAL);
          }
          ::close(c);
        }).detach();
      }
    });
  }
  ~Echo() {
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

// Round trips of 64 bytes on one connection; `upgrade` first (the
// tunnel's head is echoed back and read off).
std::vector<double> Trips(uint16_t port, int trips, const std::string& upgrade,
                          size_t echoed_head) {
  std::vector<double> us;
  const int fd = Connect(port);
  if (fd < 0) return us;
  std::vector<char> buf(std::max<size_t>(echoed_head, 64));
  if (!upgrade.empty()) {
    (void)!::send(fd, upgrade.data(), upgrade.size(), MSG_NOSIGNAL);
    if (!ReadN(fd, buf.data(), echoed_head)) return us;
  }
  const std::string msg(64, 'x');
  for (int i = 0; i < trips; ++i) {
    const auto t0 = Clock::now();
    (void)!::send(fd, msg.data(), msg.size(), MSG_NOSIGNAL);
    if (!ReadN(fd, buf.data(), msg.size())) break;
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  ::close(fd);
  return us;
}

// HTTP GETs, a new connection each.
std::vector<double> Requests(uint16_t port, int n) {
  std::vector<double> us;
  const std::string req = "GET /x HTTP/1.1\r\nHost: b\r\nConnection: close\r\n\r\n";
  char buf[4096];
  for (int i = 0; i < n; ++i) {
    const auto t0 = Clock::now();
    const int fd = Connect(port);
    if (fd < 0) break;
    (void)!::send(fd, req.data(), req.size(), MSG_NOSIGNAL);
    while (::recv(fd, buf, sizeof buf, 0) > 0) {
    }
    ::close(fd);
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  return us;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace allot;
  int trips = 5000, requests = 1000, trials = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string f = argv[i];
    const int v = std::atoi(argv[i + 1]);
    if (f == "--trips") trips = v;
    else if (f == "--requests") requests = v;
    else if (f == "--trials") trials = v;
  }
  Echo echo;
  auto http_up = net::HttpServer::Start({"127.0.0.1:0", 2, 1 << 20, "", ""},
                                        [](std::shared_ptr<net::Exchange> ex) {
                                          net::Response r;
                                          r.content_type = "text/plain";
                                          r.body = "ok";
                                          ex->Reply(std::move(r));
                                        });
  if (!http_up.ok()) return 1;
  const uint16_t http_port = (*http_up)->port();
  const std::string head = "UPGRADED\n";
  auto proxy = net::HttpServer::Start(
      {"127.0.0.1:0", 2, 1 << 20, "", ""}, [&](std::shared_ptr<net::Exchange> ex) {
        net::TunnelTarget t;
        t.host = "127.0.0.1";
        if (ex->request().path == "/ws") {
          t.port = echo.port();
          t.head = head;
        } else {
          t.port = http_port;
          t.head = "GET /x HTTP/1.1\r\nHost: up\r\nConnection: close\r\n\r\n";
        }
        ex->Tunnel(std::move(t));
      });
  if (!proxy.ok()) return 1;
  const uint16_t proxy_port = (*proxy)->port();
  const std::string upgrade =
      "GET /ws HTTP/1.1\r\nHost: p\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n";
  std::vector<double> d50, d99, p50, p99, hd, hp;
  for (int t = 0; t < trials; ++t) {
    const std::vector<double> direct = Trips(echo.port(), trips, "", 0);
    const std::vector<double> tunnelled = Trips(proxy_port, trips, upgrade, head.size());
    d50.push_back(Median(direct));
    d99.push_back(Pct(direct, 0.99));
    p50.push_back(Median(tunnelled));
    p99.push_back(Pct(tunnelled, 0.99));
    hd.push_back(Median(Requests(http_port, requests)));
    hp.push_back(Median(Requests(proxy_port, requests)));
  }
  std::printf("proxy latency on 127.0.0.1, medians of %d trials\n", trials);
  std::printf("  64-byte round trip on one connection (%d each): direct p50 %.1f us p99 %.1f us; "
              "tunnelled p50 %.1f us p99 %.1f us\n",
              trips, Median(d50), Median(d99), Median(p50), Median(p99));
  std::printf("  HTTP GET on a new connection (%d each): direct p50 %.1f us; tunnelled p50 %.1f us\n",
              requests, Median(hd), Median(hp));
  return 0;
}
