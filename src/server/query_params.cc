#include "server/query_params.h"

#include <initializer_list>

#include "server/authz.h"

namespace allot::server {
namespace {

using Names = std::initializer_list<const char*>;

// The parameters of `method /api/v1/<seg...>`; false for a route that does
// not exist.
bool RouteParams(const std::string& method, const std::vector<std::string>& seg,
                 std::vector<const char*>* out) {
  auto take = [out](Names n) {
    out->assign(n.begin(), n.end());
    return true;
  };
  if (seg.empty()) return take({});  // /metrics
  const std::string& top = seg[0];
  const size_t n = seg.size();
  if (top == "whoami" || top == "tokens") return take({});
  if (top == "apply") return take({"skipUnsupported"});
  if (top == "audit") {
    if (n == 2 && (seg[1] == "verify" || seg[1] == "acknowledge")) return take({});
    return n == 1 && take({"sinceUnixMs", "untilUnixMs", "after", "limit", "principal",
                           "tenant", "verb"});
  }
  if (top == "agents") {
    if (n == 2 && seg[1] == "sync") return take({"wait"});
    return n == 2 && seg[1] == "logs" && take({});
  }
  if (top == "usage") {
    return (n == 1 || (n == 2 && seg[1] == "idle")) &&
           take({"sinceUnixMs", "untilUnixMs", "minutes", "by", "tenant"});
  }
  if (top == "telemetry") return n == 1 && take({"sinceUnixMs", "untilUnixMs", "node", "uuid"});
  if (top == "overview") return n == 1 && take({"idleMinutes"});
  Result<Kind> kind = KindFromPlural(top);
  if (!kind.ok()) return false;
  if (n == 3 && *kind == Kind::kNode) return take({});  // cordon, uncordon, drain
  if (n == 4 && *kind == Kind::kWorkload && seg[3] == "log") {
    return take({"pod", "attempt", "offset", "limit"});
  }
  if (*kind == Kind::kWorkload &&
      ((n == 4 && seg[3] == "wake") || (n == 3 && seg[2].ends_with(":wake")))) {
    return take({"timeoutSeconds"});
  }
  if (n == 1) {
    if (method != "GET") return take({});
    if (*kind == Kind::kWorkload) {
      return take({"tenant", "queue", "state", "label", "limit", "continue", "watch",
                   "resourceVersion"});
    }
    return take({"tenant", "label", "limit", "continue", "watch", "resourceVersion"});
  }
  if (method == "DELETE") return take({"drain"});
  return take({});
}

bool IsFlag(const std::string& name) { return name == "watch" || name == "drain"; }

}  // namespace

bool QueryFlag(const std::string& v) { return v == "true" || v == "1"; }

Status CheckQuery(const std::string& method, const std::vector<std::string>& seg,
                  const std::map<std::string, std::string>& query) {
  if (query.empty()) return Status::Ok();
  std::vector<const char*> takes;
  if (!RouteParams(method, seg, &takes)) return Status::Ok();
  std::string route = seg.empty() ? "/metrics" : "/api/v1/" + seg[0];
  if (seg.size() > 1) route += "/...";
  for (const auto& [k, v] : query) {
    bool known = false;
    for (const char* t : takes) known = known || k == t;
    if (!known) {
      std::string list;
      for (const char* t : takes) list += std::string(list.empty() ? "" : ", ") + t;
      return Status::InvalidArgument(
          "unknown query parameter '" + k + "' for " + method + " " + route +
              (takes.size() == 0 ? ", which takes none" : ", which takes " + list),
          k);
    }
    if (IsFlag(k) && v != "true" && v != "false" && v != "1" && v != "0") {
      return Status::InvalidArgument(k + " must be true or false, not '" + v + "'", k);
    }
  }
  return Status::Ok();
}

}  // namespace allot::server
