// Reading a Kubernetes v1 Secret (core/secret.h).
#include <boost/json.hpp>

#include "core/encoding.h"
#include "core/manifest_internal.h"
#include "core/names.h"
#include "core/secret.h"

namespace allot::core {
namespace json = boost::json;
using internal::Quote;
using internal::Tree;
using internal::Val;

namespace {

bool IsSecretKey(const std::string& k) {
  if (k.empty() || k.size() > 253 || k == "." || k == "..") return false;
  for (char c : k) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
    if (!ok) return false;
  }
  return true;
}

// data (base64) or stringData (plain) into *values.
Status ReadValues(const Val& v, bool base64, std::map<std::string, std::string>* values) {
  std::vector<std::pair<std::string, Val>> entries;
  ALLOT_RETURN_IF_ERROR(v.Entries(&entries));
  for (const auto& [key, val] : entries) {
    if (!IsSecretKey(key)) {
      return val.Error("is not a valid key: 1 to 253 of A-Z a-z 0-9 - _ .");
    }
    std::string text;
    ALLOT_RETURN_IF_ERROR(val.Get(&text));
    if (!base64) {
      (*values)[key] = std::move(text);
      continue;
    }
    Result<std::string> raw = Base64Decode(text);
    if (!raw.ok()) return val.Error(raw.status().message());
    values->emplace(key, std::move(*raw));  // stringData, read first, wins.
  }
  return Status::Ok();
}

Status CheckType(const Val& root, const Secret& s) {
  auto need = [&](const char* key) -> Status {
    if (s.values.count(key)) return Status::Ok();
    return root["data"].Error(std::string("a Secret of type ") + s.type +
                              " needs the key " + key);
  };
  if (s.type == "Opaque") return Status::Ok();
  if (s.type == kDockerConfigJsonType) {
    ALLOT_RETURN_IF_ERROR(need(kDockerConfigJsonKey));
    std::string merged;
    Status st = MergeDockerConfig(s.values.at(kDockerConfigJsonKey), &merged);
    if (!st.ok()) {
      return root["data"].Error(std::string(kDockerConfigJsonKey) + ": " + st.message());
    }
    return Status::Ok();
  }
  if (s.type == "kubernetes.io/basic-auth") {
    if (s.values.count("username") || s.values.count("password")) return Status::Ok();
    return root["data"].Error(
        "a Secret of type kubernetes.io/basic-auth needs username or password");
  }
  if (s.type == "kubernetes.io/tls") {
    ALLOT_RETURN_IF_ERROR(need("tls.crt"));
    return need("tls.key");
  }
  return root["type"].Error("unsupported Secret type " + Quote(s.type) +
                            " (expected Opaque, kubernetes.io/dockerconfigjson, "
                            "kubernetes.io/basic-auth or kubernetes.io/tls)");
}

}  // namespace

Status MergeDockerConfig(const std::string& text, std::string* into) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  const json::object* auths = nullptr;
  if (!ec && v.is_object()) {
    if (const json::value* a = v.as_object().if_contains("auths"); a && a->is_object()) {
      auths = &a->as_object();
    }
  }
  if (auths == nullptr) {
    return Status::InvalidArgument(
        "must be a docker config: a JSON object with an \"auths\" object of "
        "registries");
  }
  json::object out;
  if (!into->empty()) {
    json::value old = json::parse(*into, ec);
    if (!ec && old.is_object()) out = std::move(old.as_object());
  }
  json::value& all = out["auths"];
  if (!all.is_object()) all.emplace_object();
  json::object& merged = all.as_object();
  for (const auto& [registry, entry] : *auths) {
    if (!entry.is_object()) {
      return Status::InvalidArgument("auths[" + std::string(registry) +
                                     "] must be an object");
    }
    const json::object& e = entry.as_object();
    json::object cred;
    if (const json::value* a = e.if_contains("auth"); a && a->is_string()) {
      cred["auth"] = a->as_string();
    } else {
      const json::value* u = e.if_contains("username");
      const json::value* p = e.if_contains("password");
      if (u == nullptr || p == nullptr || !u->is_string() || !p->is_string()) {
        return Status::InvalidArgument("auths[" + std::string(registry) +
                                       "] needs auth, or username and password");
      }
      cred["auth"] = Base64Encode(std::string(u->as_string()) + ":" +
                                  std::string(p->as_string()));
    }
    merged[registry] = std::move(cred);
  }
  *into = json::serialize(out);
  return Status::Ok();
}

Result<Secret> ParseSecretManifest(const std::string& text, const std::string& file,
                                   const std::string& default_ns) {
  ALLOT_RETURN_IF_ERROR(internal::CheckText(text, file));
  ParseLimits limits;
  std::vector<Tree> docs;
  bool is_json = false;
  ALLOT_RETURN_IF_ERROR(internal::TryJson(text, file, limits, &docs, &is_json));
  if (!is_json) ALLOT_RETURN_IF_ERROR(internal::ParseYamlText(text, file, limits, &docs));
  if (docs.size() != 1) {
    return Status::InvalidArgument(file + ": expected one Secret document, got " +
                                   std::to_string(docs.size()));
  }
  Val root(&docs[0], "");
  auto at = [&](const Status& s) {
    return Status::InvalidArgument(file + ": " + s.field() + ": " + s.message(), s.field());
  };
  Secret s;
  std::string api, kind;
  if (Status st = root.CheckFields({"apiVersion", "kind", "metadata", "type", "data",
                                    "stringData"});
      !st.ok()) {
    return at(st);
  }
  if (Status st = root["apiVersion"].Get(&api); !st.ok()) return at(st);
  if (Status st = root["kind"].Get(&kind); !st.ok()) return at(st);
  if (api != "v1" || kind != "Secret") {
    return at(root["kind"].Error("expected apiVersion v1 and kind Secret, got " +
                                 Quote(api) + " " + Quote(kind)));
  }
  Val meta = root["metadata"];
  if (Status st = meta.CheckFields({"name", "namespace"}, {"labels", "annotations"});
      !st.ok()) {
    return at(st);
  }
  if (Status st = meta.Require(); !st.ok()) return at(st);
  if (Status st = meta["name"].Require(); !st.ok()) return at(st);
  if (Status st = meta["name"].GetName(&s.name); !st.ok()) return at(st);
  s.ns = default_ns;
  if (!meta["namespace"].unset()) {
    if (Status st = meta["namespace"].GetName(&s.ns); !st.ok()) return at(st);
    if (!default_ns.empty() && s.ns != default_ns) {
      return at(meta["namespace"].Error("is " + Quote(s.ns) + " but the Secret is written to tenant " +
                                        Quote(default_ns)));
    }
  }
  if (!root["type"].unset()) {
    if (Status st = root["type"].Get(&s.type); !st.ok()) return at(st);
  }
  if (Status st = ReadValues(root["stringData"], false, &s.values); !st.ok()) return at(st);
  if (Status st = ReadValues(root["data"], true, &s.values); !st.ok()) return at(st);
  size_t total = 0;
  for (const auto& [k, v] : s.values) total += k.size() + v.size();
  if (total > kMaxSecretBytes) {
    return at(root["data"].Error(std::to_string(total) + " bytes; a Secret holds at most " +
                                 std::to_string(kMaxSecretBytes)));
  }
  if (Status st = CheckType(root, s); !st.ok()) return at(st);
  return s;
}

}  // namespace allot::core
