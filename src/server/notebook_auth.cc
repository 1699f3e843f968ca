#include "server/notebook_auth.h"

#include <charconv>
#include <map>
#include <vector>

#include "server/access.h"
#include "server/crypto.h"
#include "server/state.h"

namespace allot::server {

namespace {

std::string Signature(const State& st, const std::string& token_id, const std::string& kind,
                      const std::string& key, int64_t expires_ms) {
  return st.secrets().Derive("notebook-" + kind + "|" + token_id + "|" + key + "|" +
                             std::to_string(expires_ms));
}

// A Cookie header's "name=value" pairs, trimmed, empty ones left out.
std::vector<std::string> CookiePairs(const std::string& header) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= header.size()) {
    size_t end = header.find(';', at);
    if (end == std::string::npos) end = header.size();
    const size_t b = header.find_first_not_of(' ', at);
    if (b != std::string::npos && b < end) {
      out.push_back(header.substr(b, header.find_last_not_of(' ', end - 1) - b + 1));
    }
    at = end + 1;
  }
  return out;
}

}  // namespace

Status MayOpenNotebook(const State& st, const Principal& p, const std::string& key) {
  const WorkloadRecord* rec = st.FindWorkload(key);
  const Status missing = Status::NotFound("no notebook " + key);
  if (rec == nullptr || rec->spec.type != "notebook") return missing;
  if (!MayWriteObject(p, Kind::kWorkload, key, "open", st).ok()) return missing;
  auto tenant = st.objects().tenants.find(rec->spec.ns);
  if (tenant != st.objects().tenants.end()) {
    auto priv = tenant->second.obj.annotations.find(kPrivateNotebooksAnnotation);
    if (priv != tenant->second.obj.annotations.end() && priv->second == "true" &&
        rec->submitted_by != p.user) {
      return missing;
    }
  }
  return Status::Ok();
}

std::string NotebookJupyterToken(const State& st, const std::string& pod_id) {
  return st.secrets().Derive("notebook-jupyter-token|" + pod_id);
}

std::string NotebookCookie(const std::string& cookie_header) {
  const std::string want = std::string(kNotebookCookieName) + "=";
  for (const std::string& pair : CookiePairs(cookie_header)) {
    if (pair.starts_with(want)) return pair.substr(want.size());
  }
  return "";
}

std::string WithoutNotebookCookie(const std::string& cookie_header) {
  const std::string want = std::string(kNotebookCookieName) + "=";
  std::string out;
  for (const std::string& pair : CookiePairs(cookie_header)) {
    if (!pair.starts_with(want)) out += (out.empty() ? "" : "; ") + pair;
  }
  return out;
}

std::string NotebookCredential::Make(const State& st, const std::string& token_id,
                                     const std::string& kind, const std::string& key,
                                     int64_t expires_ms) {
  return token_id + "." + std::to_string(expires_ms) + "." +
         Signature(st, token_id, kind, key, expires_ms);
}

std::optional<Principal> NotebookCredential::Check(const State& st, const std::string& value,
                                                   const std::string& kind,
                                                   const std::string& key, int64_t now_ms) {
  const size_t sig_at = value.rfind('.');
  if (sig_at == std::string::npos || sig_at == 0) return std::nullopt;
  const size_t exp_at = value.rfind('.', sig_at - 1);
  if (exp_at == std::string::npos) return std::nullopt;
  const std::string token_id = value.substr(0, exp_at);
  const std::string exp_s = value.substr(exp_at + 1, sig_at - exp_at - 1);
  int64_t expires = 0;
  auto [p, ec] = std::from_chars(exp_s.data(), exp_s.data() + exp_s.size(), expires);
  if (ec != std::errc() || p != exp_s.data() + exp_s.size() || expires < now_ms) {
    return std::nullopt;
  }
  if (!ConstantTimeEquals(value.substr(sig_at + 1),
                          Signature(st, token_id, kind, key, expires))) {
    return std::nullopt;
  }
  if (kind == "ticket") {
    // Once: a ticket seen is remembered until it expires (owner thread).
    static std::map<std::string, int64_t> used;
    std::erase_if(used, [&](const auto& u) { return u.second < now_ms; });
    if (!used.emplace(value, expires).second) return std::nullopt;
  }
  const store::TokenRow* row = st.tokens().Find(token_id);
  if (row == nullptr || row->revoked) return std::nullopt;
  return st.Authenticate(row->hash);
}

std::string NotebookCredential::CookieHeader(const std::string& value, const std::string& path,
                                             int64_t max_age_ms) {
  return std::string(kNotebookCookieName) + "=" + value + "; Path=" + path +
         "; Max-Age=" + std::to_string(max_age_ms / 1000) + "; HttpOnly; SameSite=Lax";
}

}  // namespace allot::server
