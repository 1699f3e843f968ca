#include "cli/client.h"

#include <boost/json.hpp>

#include <cstdlib>
#include <fstream>

namespace allot::cli {
namespace json = boost::json;

namespace {
std::string Env(const char* k) {
  const char* v = std::getenv(k);
  return v == nullptr ? "" : v;
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r' || s.back() == '\t'))
    s.pop_back();
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  return s.substr(i);
}

// Reads `key: value` lines of the config file into *f where unset.
void ReadConfigFile(ClientFlags* f) {
  std::string dir = Env("XDG_CONFIG_HOME");
  if (dir.empty()) {
    std::string home = Env("HOME");
    if (home.empty()) return;
    dir = home + "/.config";
  }
  std::ifstream in(dir + "/allot/config");
  std::string line;
  while (std::getline(in, line)) {
    size_t colon = line.find(':');
    if (line.empty() || line[0] == '#' || colon == std::string::npos) continue;
    std::string k = Trim(line.substr(0, colon)), v = Trim(line.substr(colon + 1));
    if (k == "server" && f->server.empty()) f->server = v;
    if (k == "token" && f->token.empty()) f->token = v;
    if (k == "ca" && f->ca_file.empty()) f->ca_file = v;
    if (k == "insecure" && v == "true") f->insecure = true;
  }
}
}  // namespace

const json::value* JsonAt(const json::value& v, std::initializer_list<const char*> path) {
  const json::value* cur = &v;
  for (const char* k : path) {
    if (!cur->is_object()) return nullptr;
    cur = cur->as_object().if_contains(k);
    if (cur == nullptr) return nullptr;
  }
  return cur;
}

std::string JsonStr(const json::value& v, std::initializer_list<const char*> path) {
  const json::value* x = JsonAt(v, path);
  if (x == nullptr || x->is_null()) return "";
  if (x->is_string()) return std::string(x->as_string());
  return json::serialize(*x);
}

std::string ConditionMessage(const json::value& condition) {
  std::string detail = JsonStr(condition, {"detail"});
  return detail.empty() ? JsonStr(condition, {"message"}) : detail;
}

Result<std::unique_ptr<Client>> Client::Connect(const ClientFlags& flags) {
  ClientFlags f = flags;
  if (f.server.empty()) f.server = Env("ALLOT_SERVER");
  if (f.token.empty()) f.token = Env("ALLOT_TOKEN");
  ReadConfigFile(&f);
  if (f.server.empty()) f.server = "http://127.0.0.1:8470";
  net::ClientOptions o;
  o.base_url = f.server;
  o.ca_file = f.ca_file;
  o.insecure = f.insecure;
  auto http = net::HttpClient::Create(o);
  if (!http.ok()) return http.status();
  auto c = std::unique_ptr<Client>(new Client());
  c->http_ = std::move(*http);
  c->server_ = f.server;
  c->token_ = f.token;
  return c;
}

Result<std::string> Client::Tenant(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (!asked_tenant_) {
    Result<json::value> me = Call("GET", "/api/v1/whoami");
    if (!me.ok()) return me.status();
    token_tenant_ = JsonStr(*me, {"tenant"});
    asked_tenant_ = true;
  }
  return token_tenant_.empty() ? std::string("default") : token_tenant_;
}

Result<json::value> Client::Call(const std::string& method,
                                 const std::string& target,
                                 const std::string& body,
                                 const std::string& content_type) {
  std::vector<std::pair<std::string, std::string>> headers;
  if (!token_.empty()) headers.push_back({"Authorization", "Bearer " + token_});
  if (!body.empty()) headers.push_back({"Content-Type", content_type});
  auto r = http_->Do(method, target, headers, body);
  if (!r.ok()) return r.status();
  boost::system::error_code ec;
  json::value v = json::parse(r->body, ec);
  if (r->status >= 200 && r->status < 300) {
    if (ec) return Status::Internal("the server answered with invalid JSON");
    return v;
  }
  std::string msg = "HTTP " + std::to_string(r->status);
  std::string field;
  if (!ec && v.is_object()) {
    if (const json::value* e = v.as_object().if_contains("error");
        e && e->is_object()) {
      if (const json::value* m = e->as_object().if_contains("message");
          m && m->is_string()) {
        msg += ": " + std::string(m->as_string());
      }
      if (const json::value* fl = e->as_object().if_contains("field");
          fl && fl->is_string()) {
        field = std::string(fl->as_string());
      }
    }
  } else {
    msg += ": " + r->body;
  }
  return Status::InvalidArgument(msg, field);
}

Status Client::Watch(const std::string& target,
                     const std::function<bool(const json::value&)>& on_line) {
  std::vector<std::pair<std::string, std::string>> headers;
  if (!token_.empty()) headers.push_back({"Authorization", "Bearer " + token_});
  std::string buf;
  Status ended;  // An ERROR line from the server: why it ended the watch.
  Status s = http_->Stream(target, headers, [&](const std::string& data) {
    buf += data;
    size_t nl;
    while ((nl = buf.find('\n')) != std::string::npos) {
      std::string line = buf.substr(0, nl);
      buf.erase(0, nl + 1);
      if (line.empty()) continue;
      boost::system::error_code ec;
      json::value v = json::parse(line, ec);
      if (ec) continue;
      if (const json::value* type = v.is_object() ? v.as_object().if_contains("type") : nullptr;
          type != nullptr && type->is_string() && type->as_string() == "ERROR") {
        const json::value* m = v.as_object().if_contains("object");
        const json::value* msg = m && m->is_object() ? m->as_object().if_contains("message")
                                                      : nullptr;
        ended = Status::Unauthenticated(
            "the server ended the watch: " +
            std::string(msg && msg->is_string() ? msg->as_string().c_str() : "no reason given"));
        return false;
      }
      if (!on_line(v)) return false;
    }
    return true;
  });
  return ended.ok() ? s : ended;
}

}  // namespace allot::cli
