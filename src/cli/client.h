// The CLI's connection to an Allot server.
//
// The server URL and token come from, in order: flags (--server, --token),
// the environment (ALLOT_SERVER, ALLOT_TOKEN), and the config file
// ~/.config/allot/config (or $XDG_CONFIG_HOME/allot/config), whose lines
// are `server: URL`, `token: TOKEN`, `ca: FILE`, `insecure: true`. The
// default server is http://127.0.0.1:8470.
#pragma once

#include <boost/json/value.hpp>

#include <functional>
#include <initializer_list>
#include <memory>
#include <string>

#include "core/status.h"
#include "net/http.h"

namespace allot::cli {

struct ClientFlags {
  std::string server;
  std::string token;
  std::string ca_file;
  bool insecure = false;
};

// The value at `path` (keys of nested objects) in `v`; null when absent.
const boost::json::value* JsonAt(const boost::json::value& v,
                                 std::initializer_list<const char*> path);
// The same as text: a string as it is, another value serialized, "" when
// absent or null.
std::string JsonStr(const boost::json::value& v,
                    std::initializer_list<const char*> path);
// A workload condition's text: its "detail" when the server sent one (to a
// cluster-admin: it names another tenant's workload), else its "message".
std::string ConditionMessage(const boost::json::value& condition);

class Client {
 public:
  static Result<std::unique_ptr<Client>> Connect(const ClientFlags& flags);
  // Sends a request; a non-2xx answer becomes an error Status carrying the
  // server's message (and field), with the HTTP code in front.
  Result<boost::json::value> Call(const std::string& method,
                                  const std::string& target,
                                  const std::string& body = "",
                                  const std::string& content_type =
                                      "application/json");
  // Streams newline-delimited JSON; `on_line` returns false to stop.
  Status Watch(const std::string& target,
               const std::function<bool(const boost::json::value&)>& on_line);
  const std::string& server() const { return server_; }
  // The tenant a command acts in: `flag` (-t) when given, else the tenant
  // the token is bound to (GET /api/v1/whoami, asked once), else
  // "default" (a cluster-admin's token has no tenant).
  Result<std::string> Tenant(const std::string& flag);

 private:
  std::unique_ptr<net::HttpClient> http_;
  std::string server_;
  std::string token_;
  std::string token_tenant_;
  bool asked_tenant_ = false;
};

}  // namespace allot::cli
