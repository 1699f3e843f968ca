// The fixture of the cross-tenant tests (api_tenancy*_test.cc): a real
// `allot serve` with two tenants, t1 and t2, holding one object of every
// kind (Cluster, kKinds), the principals of every role as tokens (Who:
// the cluster-admin, and the tenant-admin, member and viewer of each
// tenant), valid bodies of every kind (Body), and RawWatch, a watch read
// from a raw socket. Header-only; tests only.
#pragma once

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/json.hpp>

#include <cctype>
#include <chrono>
#include <cstdlib>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "server/test_server.h"
#include "testing/builders.h"

namespace allot::server::testing {

namespace json = boost::json;

// Tenants t1 and t2, each with LocalQueue q into cq1 (64 GPUs; cq2 of 8
// is its cohort co1's other member), flavor f1 on node n1 (4 GPUs), node
// nc without GPUs, priority class pc1, catalogue Image img1 and a one-GPU
// Workload w in each tenant: each kind's fixture object of kKinds.
inline std::string Cluster() {
  namespace b = allot::testing;
  return b::Namespace("t1") + b::Namespace("t2") +
         b::FlavorSpec("f1", "{nodeLabels: {pool: main}}") + b::Cohort("co1") +
         b::GpuCq("cq1", "co1", "f1", "nominalQuota: 64") +
         b::GpuCq("cq2", "co1", "f1", "nominalQuota: 8") + b::LocalQueue("t1", "q", "cq1") +
         b::LocalQueue("t2", "q", "cq1") + b::PriorityClass("pc1", 100) +
         b::Node("n1", "{pool: main}", "32", "256Gi", b::Uuids("G-", 4)) +
         b::Node("nc", "", "8", "32Gi", {}) +
         "---\napiVersion: allot.dev/v1\nkind: Image\nmetadata: {name: img1}\n"
         "spec: {image: \"example.com/img1:1\"}\n---\n" +
         b::WorkloadJson("t1/w").Doc() +
         b::WorkloadJson("t2/w").Doc();
}

// ---- Kinds and bodies ----------------------------------------------------------

enum class Cls { kInfra, kTenant, kLocalQueue, kWorkload };

struct KindSpec {
  const char* plural;
  Cls cls;
  const char* fixture;  // An existing object (namespaced: its name in each tenant).
};

inline const KindSpec kKinds[] = {
    {"resourceflavors", Cls::kInfra, "f1"},
    {"cohorts", Cls::kInfra, "co1"},
    {"clusterqueues", Cls::kInfra, "cq1"},
    {"workloadpriorityclasses", Cls::kInfra, "pc1"},
    {"nodes", Cls::kInfra, "n1"},
    {"images", Cls::kInfra, "img1"},
    {"tenants", Cls::kTenant, ""},
    {"localqueues", Cls::kLocalQueue, "q"},
    {"workloads", Cls::kWorkload, "w"},
};

inline bool Namespaced(Cls c) { return c == Cls::kLocalQueue || c == Cls::kWorkload; }

// A valid document of `plural` named `name` (in `tenant` when namespaced);
// `variant` changes something a replace can change (a Workload cannot).
inline std::string Body(const std::string& plural, const std::string& name,
                        const std::string& tenant, int variant) {
  const std::string v = std::to_string(variant);
  const std::string md = R"("metadata":{"name":")" + name + R"("})";
  if (plural == "resourceflavors") {
    return R"({"apiVersion":"kueue.x-k8s.io/v1beta1","kind":"ResourceFlavor",)" + md +
           R"(,"spec":{"nodeLabels":{"pool":"p)" + v + R"("}}})";
  }
  if (plural == "cohorts") {
    return R"({"apiVersion":"kueue.x-k8s.io/v1beta1","kind":"Cohort",)" + md +
           R"(,"spec":{"fairSharing":{"weight":")" + std::to_string(variant + 1) + R"("}}})";
  }
  if (plural == "clusterqueues") {
    return R"({"apiVersion":"kueue.x-k8s.io/v1beta1","kind":"ClusterQueue",)" + md +
           R"(,"spec":{"namespaceSelector":{},"resourceGroups":[{"coveredResources":["nvidia.com/gpu"],)"
           R"("flavors":[{"name":"f1","resources":[{"name":"nvidia.com/gpu","nominalQuota":)" +
           std::to_string(4 + variant) + "}]}]}]}}";
  }
  if (plural == "workloadpriorityclasses") {
    return R"({"apiVersion":"kueue.x-k8s.io/v1beta1","kind":"WorkloadPriorityClass",)" + md +
           R"(,"value":)" + std::to_string(10 + variant) + "}";
  }
  if (plural == "nodes") {
    return R"({"apiVersion":"allot.dev/v1","kind":"Node","metadata":{"name":")" + name +
           R"(","labels":{"v":")" + v + R"("}},"status":{"capacity":{"cpu":"4","memory":"16Gi"}}})";
  }
  if (plural == "images") {
    return R"({"apiVersion":"allot.dev/v1","kind":"Image",)" + md +
           R"(,"spec":{"image":"example.com/)" + name + ":" + v + R"("}})";
  }
  if (plural == "tenants") {
    return R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":")" + name +
           R"(","labels":{"v":")" + v + R"("}}})";
  }
  const std::string nmd =
      R"("metadata":{"name":")" + name + R"(","namespace":")" + tenant + R"("})";
  if (plural == "localqueues") {
    return R"({"apiVersion":"kueue.x-k8s.io/v1beta1","kind":"LocalQueue",)" + nmd +
           R"(,"spec":{"clusterQueue":"cq)" + std::to_string(1 + variant % 2) + R"("}})";
  }
  return allot::testing::WorkloadJson(tenant + "/" + name);
}

// ---- Principals ----------------------------------------------------------------

struct Who {
  std::string role;    // cluster-admin, tenant-admin, member, viewer
  std::string tenant;  // "" for the cluster-admin
  std::string token;
  std::string name() const { return tenant.empty() ? role : role + "@" + tenant; }
  bool admin() const { return tenant.empty(); }
  std::string Own() const { return tenant.empty() ? "t1" : tenant; }
  std::string Other() const { return Own() == "t1" ? "t2" : "t1"; }
  int Col(bool other) const {
    if (role == "cluster-admin") return 0;
    int base = role == "tenant-admin" ? 1 : role == "member" ? 3 : 5;
    return base + (other ? 1 : 0);
  }
};

inline json::value Parse(const std::string& s) {
  boost::system::error_code ec;
  json::value v = json::parse(s, ec);
  return ec ? json::value() : v;
}

inline std::string Str(const json::value& v, std::initializer_list<const char*> path) {
  const json::value* cur = &v;
  for (const char* k : path) {
    if (!cur->is_object()) return "";
    cur = cur->as_object().if_contains(k);
    if (cur == nullptr) return "";
  }
  return cur->is_string() ? std::string(cur->as_string()) : "";
}

// The tenant an object of `cls` belongs to ("" for shared infrastructure).
inline std::string TenantOf(Cls cls, const json::value& obj) {
  if (cls == Cls::kTenant) return Str(obj, {"metadata", "name"});
  if (Namespaced(cls)) return Str(obj, {"metadata", "namespace"});
  return "";
}
inline std::string KeyOf(const json::value& obj) {
  std::string ns = Str(obj, {"metadata", "namespace"});
  std::string name = Str(obj, {"metadata", "name"});
  return ns.empty() ? name : ns + "/" + name;
}


class ApiTenancy : public ServerTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(StartServer(Cluster()));
    who_.push_back(MakeToken("ops", "cluster-admin", ""));
    for (const char* t : {"t1", "t2"}) {
      for (const char* role : {"tenant-admin", "member", "viewer"}) {
        who_.push_back(MakeToken(std::string(role) + "-" + t, role, t));
      }
    }
  }
  Who MakeToken(const std::string& user, const std::string& role,
                const std::string& tenant, std::string* id = nullptr) {
    return Who{role, tenant, srv_->NewToken(user, role, tenant, id)};
  }
  std::string Fresh(const std::string& prefix) {
    return prefix + std::to_string(++counter_);
  }

  std::vector<Who> who_;
  int counter_ = 0;
};

// ---- Watches ----------------------------------------------------------------------

// A watch read from a raw socket, so that a quiet stream cannot block.
class RawWatch {
 public:
  RawWatch(uint16_t port, const std::string& token, const std::string& target) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      Close();
      return;
    }
    std::string req = "GET " + target +
                      " HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " +
                      token + "\r\n\r\n";
    if (::send(fd_, req.data(), req.size(), MSG_NOSIGNAL) != ssize_t(req.size())) {
      Close();
      return;
    }
    ::fcntl(fd_, F_SETFL, O_NONBLOCK);
  }
  ~RawWatch() { Close(); }
  int fd() const { return fd_; }
  bool HeadDone() const { return raw_.find("\r\n\r\n") != std::string::npos; }
  // Reads what is there: the number of bytes, 0 at end of stream.
  ssize_t ReadSome() {
    char buf[65536];
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n > 0) raw_.append(buf, size_t(n));
    if (n == 0) Close();
    return n;
  }
  int Status() const {
    if (raw_.size() < 12 || raw_.compare(0, 5, "HTTP/") != 0) return 0;
    return std::atoi(raw_.c_str() + 9);
  }
  // The body, de-chunked when chunked.
  std::string Body() const {
    size_t head = raw_.find("\r\n\r\n");
    if (head == std::string::npos) return "";
    std::string headers = raw_.substr(0, head);
    for (char& c : headers) c = char(std::tolower(static_cast<unsigned char>(c)));
    std::string rest = raw_.substr(head + 4);
    if (headers.find("transfer-encoding: chunked") == std::string::npos) return rest;
    std::string out;
    size_t at = 0;
    for (;;) {
      size_t eol = rest.find("\r\n", at);
      if (eol == std::string::npos) break;
      size_t n = std::strtoul(rest.substr(at, eol - at).c_str(), nullptr, 16);
      if (n == 0 || eol + 2 + n > rest.size()) break;
      out += rest.substr(eol + 2, n);
      at = eol + 2 + n + 2;
    }
    return out;
  }
  std::vector<json::value> Events() const {
    std::vector<json::value> out;
    std::string body = Body();
    size_t at = 0;
    while (at < body.size()) {
      size_t eol = body.find('\n', at);
      if (eol == std::string::npos) break;  // A partial line: not yet.
      std::string line = body.substr(at, eol - at);
      if (!line.empty()) out.push_back(Parse(line));
      at = eol + 1;
    }
    return out;
  }

 private:
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  int fd_ = -1;
  std::string raw_;
};

// Reads every watch until each has its head and nothing arrived for
// `idle_ms` (or `max_ms` passed).
inline void PumpAll(std::vector<std::unique_ptr<RawWatch>>& ws, int idle_ms, int max_ms) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  auto last = start;
  while (Clock::now() - start < std::chrono::milliseconds(max_ms)) {
    std::vector<pollfd> fds;
    std::vector<RawWatch*> owners;
    for (auto& w : ws) {
      if (w->fd() >= 0) {
        fds.push_back({w->fd(), POLLIN, 0});
        owners.push_back(w.get());
      }
    }
    if (fds.empty()) return;
    if (::poll(fds.data(), fds.size(), 10) > 0) {
      for (size_t i = 0; i < fds.size(); ++i) {
        if (fds[i].revents != 0 && owners[i]->ReadSome() > 0) last = Clock::now();
      }
    }
    bool heads = true;
    for (auto& w : ws) heads = heads && (w->HeadDone() || w->fd() < 0);
    if (heads && Clock::now() - last >= std::chrono::milliseconds(idle_ms)) return;
  }
}

}  // namespace allot::server::testing
