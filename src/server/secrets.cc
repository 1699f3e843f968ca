#include "server/secrets.h"

#include <boost/json.hpp>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/encoding.h"
#include "server/crypto.h"

namespace allot::server {
namespace json = boost::json;

namespace {

int64_t IntOf(const json::object& o, const char* k) {
  const json::value* v = o.if_contains(k);
  return v && v->is_int64() ? v->as_int64() : 0;
}
std::string StrOf(const json::object& o, const char* k) {
  const json::value* v = o.if_contains(k);
  return v && v->is_string() ? std::string(v->as_string()) : "";
}

// Where a pod set's reference sits, for messages.
std::string Where(const core::PodSet& ps, const std::string& field) {
  return "podSets[" + ps.name + "]." + field;
}

std::string Trimmed(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

}  // namespace

Result<std::string> LoadSecretKey(const std::string& file, const std::string& store_url) {
  std::string path = file;
  const std::string sqlite = "sqlite:";
  if (path.empty() && store_url.rfind(sqlite, 0) == 0 &&
      store_url.size() > sqlite.size() && store_url != "sqlite::memory:") {
    path = store_url.substr(sqlite.size()) + ".secret-key";
  }
  if (path.empty()) {
    Result<std::string> key = HexDecode(RandomHex(int(kSealKeyBytes)));
    return key;
  }
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT && file.empty()) {
    // First start: a fresh key, whole or not at all.
    const std::string hex = RandomHex(int(kSealKeyBytes)) + "\n";
    const std::string tmp = path + ".tmp";
    int w = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (w < 0 || ::write(w, hex.data(), hex.size()) != ssize_t(hex.size()) ||
        ::fsync(w) != 0 || ::close(w) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
      if (w >= 0) ::close(w);
      return Status::Internal("cannot write the secret key file " + path + ": " +
                              std::strerror(errno));
    }
    const std::string dir = path.find('/') == std::string::npos
                                ? "."
                                : path.substr(0, path.rfind('/') + 1);
    if (int d = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); d >= 0) {
      ::fsync(d);
      ::close(d);
    }
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  }
  if (fd < 0) {
    return Status::NotFound("cannot read the secret key file " + path + ": " +
                            std::strerror(errno));
  }
  struct stat st {};
  std::string text(256, '\0');
  ssize_t n = ::read(fd, text.data(), text.size());
  const bool stat_ok = ::fstat(fd, &st) == 0;
  ::close(fd);
  text.resize(n > 0 ? size_t(n) : 0);
  Result<std::string> key = HexDecode(Trimmed(text));
  if (!key.ok() || key->size() != kSealKeyBytes) {
    return Status::InvalidArgument("the secret key file " + path + " must hold " +
                                   std::to_string(2 * kSealKeyBytes) +
                                   " hex digits (openssl rand -hex 32)");
  }
  if (stat_ok && (st.st_mode & 077) != 0) {
    std::fprintf(stderr, "allot: warning: the secret key file %s is readable by others "
                         "(chmod 600 it)\n", path.c_str());
  }
  return key;
}

std::string Secrets::Aad(const Record& r) {
  return "allot Secret " + r.ns + "/" + r.name + " " + r.type;
}

json::object Secrets::Meta(const Record& r) {
  json::object o;
  o["namespace"] = r.ns;
  o["name"] = r.name;
  o["type"] = r.type;
  json::object keys;
  for (const auto& [k, n] : r.sizes) keys[k] = n;
  o["keys"] = std::move(keys);
  o["createdBy"] = r.created_by;
  o["createdAtMs"] = r.created_unix_ms;
  o["updatedAtMs"] = r.updated_unix_ms;
  o["resourceVersion"] = r.rv;
  return o;
}

Status Secrets::Load(const store::ObjectRow& row) {
  boost::system::error_code ec;
  json::value v = json::parse(row.body, ec);
  const std::string where = "store: Secret " + row.key;
  if (ec || !v.is_object()) return Status::Internal(where + ": not a JSON object");
  const json::object& o = v.as_object();
  Record r;
  r.ns = StrOf(o, "namespace");
  r.name = StrOf(o, "name");
  r.type = StrOf(o, "type");
  r.created_by = StrOf(o, "createdBy");
  r.created_unix_ms = IntOf(o, "createdAtMs");
  r.updated_unix_ms = IntOf(o, "updatedAtMs");
  r.rv = row.resource_version;
  if (const json::value* k = o.if_contains("keys"); k && k->is_object()) {
    for (const auto& [key, n] : k->as_object()) {
      r.sizes[std::string(key)] = n.is_int64() ? n.as_int64() : 0;
    }
  }
  Result<std::string> sealed = core::Base64Decode(StrOf(o, "sealed"));
  if (!sealed.ok() || r.ns + "/" + r.name != row.key || r.type.empty()) {
    return Status::Internal(where + ": not a Secret this server wrote");
  }
  r.sealed = std::move(*sealed);
  by_key_[row.key] = std::move(r);
  return Status::Ok();
}

Status Secrets::CheckKey() const {
  for (const auto& [key, r] : by_key_) {
    Result<std::map<std::string, std::string>> v = Values(r);
    if (!v.ok()) {
      return Status::FailedPrecondition(
          "Secret " + key + " does not open with this server's secret key: " +
          v.status().message() +
          ". Start the server with the key file that sealed it (--secret-key-file)");
    }
  }
  return Status::Ok();
}

Result<std::map<std::string, std::string>> Secrets::Values(const Record& r) const {
  Result<std::string> plain = Open(key_, Aad(r), r.sealed);
  if (!plain.ok()) return plain.status();
  boost::system::error_code ec;
  json::value v = json::parse(*plain, ec);
  if (ec || !v.is_object()) return Status::Internal("Secret " + r.name + ": bad sealed values");
  std::map<std::string, std::string> out;
  for (const auto& [k, b] : v.as_object()) {
    Result<std::string> raw =
        core::Base64Decode(b.is_string() ? std::string_view(b.as_string()) : "?");
    if (!raw.ok()) return Status::Internal("Secret " + r.name + ": bad sealed values");
    out[std::string(k)] = std::move(*raw);
  }
  return out;
}

const Secrets::Record* Secrets::Find(const std::string& ns,
                                     const std::string& name) const {
  auto it = by_key_.find(ns + "/" + name);
  return it == by_key_.end() ? nullptr : &it->second;
}

Result<std::string> Secrets::Put(const core::Secret& in, bool replace,
                                 const std::string& by, int64_t now_unix_ms,
                                 int64_t rv, store::Batch* batch) {
  const std::string key = in.ns + "/" + in.name;
  Record* old = nullptr;
  if (auto it = by_key_.find(key); it != by_key_.end()) old = &it->second;
  if (old != nullptr && !replace) {
    return Status::AlreadyExists("Secret " + key + " already exists", "metadata.name");
  }
  if (old != nullptr && old->type == in.type) {
    Result<std::map<std::string, std::string>> before = Values(*old);
    if (before.ok() && *before == in.values) return std::string("unchanged");
  }
  Record r;
  r.ns = in.ns;
  r.name = in.name;
  r.type = in.type;
  r.created_by = old ? old->created_by : by;
  r.created_unix_ms = old ? old->created_unix_ms : now_unix_ms;
  r.updated_unix_ms = now_unix_ms;
  r.rv = rv;
  json::object plain;
  for (const auto& [k, v] : in.values) {
    r.sizes[k] = int64_t(v.size());
    plain[k] = core::Base64Encode(v);
  }
  r.sealed = Seal(key_, Aad(r), json::serialize(plain));
  json::object body = Meta(r);
  body.erase("resourceVersion");
  body["sealed"] = core::Base64Encode(r.sealed);
  batch->puts.push_back({kSecretKind, key, rv, json::serialize(body)});
  const bool created = old == nullptr;
  by_key_[key] = std::move(r);
  return std::string(created ? "created" : "configured");
}

Status Secrets::Delete(const std::string& ns, const std::string& name,
                       store::Batch* batch) {
  auto it = by_key_.find(ns + "/" + name);
  if (it == by_key_.end()) {
    return Status::NotFound("Secret " + ns + "/" + name + " not found");
  }
  batch->deletes.emplace_back(kSecretKind, it->first);
  by_key_.erase(it);
  return Status::Ok();
}

void Secrets::DeleteTenant(const std::string& ns, store::Batch* batch) {
  const std::string prefix = ns + "/";
  for (auto it = by_key_.lower_bound(prefix);
       it != by_key_.end() && it->first.compare(0, prefix.size(), prefix) == 0;) {
    batch->deletes.emplace_back(kSecretKind, it->first);
    it = by_key_.erase(it);
  }
}

json::array Secrets::List(const std::string& ns) const {
  json::array out;
  for (const auto& [key, r] : by_key_) {
    if (ns.empty() || r.ns == ns) out.push_back(Meta(r));
  }
  return out;
}

Result<json::object> Secrets::Describe(const std::string& ns,
                                       const std::string& name) const {
  const Record* r = Find(ns, name);
  if (r == nullptr) return Status::NotFound("Secret " + ns + "/" + name + " not found");
  return Meta(*r);
}

Result<json::object> Secrets::Reveal(const std::string& ns,
                                     const std::string& name) const {
  const Record* r = Find(ns, name);
  if (r == nullptr) return Status::NotFound("Secret " + ns + "/" + name + " not found");
  Result<std::map<std::string, std::string>> values = Values(*r);
  if (!values.ok()) return values.status();
  json::object o = Meta(*r);
  json::object data;
  for (const auto& [k, v] : *values) data[k] = core::Base64Encode(v);
  o["data"] = std::move(data);
  return o;
}

Status Secrets::CheckRefs(const core::Workload& w) const {
  for (const core::PodSet& ps : w.pod_sets) {
    auto need = [&](const std::string& secret, const std::string& field) -> Status {
      if (Find(w.ns, secret) != nullptr) return Status::Ok();
      return Status::NotFound("Secret " + w.ns + "/" + secret + " not found (" +
                                  Where(ps, field) + "); create it first with "
                                  "`allot secret create`",
                              Where(ps, field));
    };
    for (const core::SecretEnvVar& e : ps.env_secrets) {
      if (e.ref.optional) continue;
      ALLOT_RETURN_IF_ERROR(need(e.ref.secret, "env[" + e.name + "]"));
      const Record* r = Find(w.ns, e.ref.secret);
      if (!r->sizes.count(e.ref.key)) {
        return Status::InvalidArgument("Secret " + w.ns + "/" + e.ref.secret +
                                           " has no key " + e.ref.key,
                                       Where(ps, "env[" + e.name + "]"));
      }
    }
    for (const core::SecretEnvFrom& e : ps.env_from) {
      if (!e.optional) ALLOT_RETURN_IF_ERROR(need(e.secret, "envFrom"));
    }
    for (const std::string& s : ps.image_pull_secrets) {
      ALLOT_RETURN_IF_ERROR(need(s, "imagePullSecrets"));
      if (Find(w.ns, s)->type != core::kDockerConfigJsonType) {
        return Status::InvalidArgument(
            "Secret " + w.ns + "/" + s + " is of type " + Find(w.ns, s)->type +
                "; an imagePullSecret must be of type " + core::kDockerConfigJsonType,
            Where(ps, "imagePullSecrets"));
      }
    }
    for (const core::Volume& v : ps.volumes) {
      if (v.type == core::Volume::Type::kSecret) {
        ALLOT_RETURN_IF_ERROR(need(v.secret, "volumes[" + v.name + "]"));
      }
    }
  }
  return Status::Ok();
}

Status Secrets::Resolve(const std::string& ns, const core::PodSet& ps,
                        proto::DesiredPod* d) const {
  std::map<std::string, std::map<std::string, std::string>> opened;
  // The values of Secret `name`, nullptr when it does not exist.
  auto values = [&](const std::string& name)
      -> Result<const std::map<std::string, std::string>*> {
    if (auto it = opened.find(name); it != opened.end()) return &it->second;
    const Record* r = Find(ns, name);
    if (r == nullptr) return static_cast<const std::map<std::string, std::string>*>(nullptr);
    Result<std::map<std::string, std::string>> v = Values(*r);
    if (!v.ok()) return v.status();
    return &(opened[name] = std::move(*v));
  };
  auto missing = [&](const std::string& name, const std::string& field) {
    return Status::NotFound("Secret " + ns + "/" + name + " not found (" +
                            Where(ps, field) + ")");
  };
  auto text = [&](const std::string& name, const std::string& key,
                  const std::string& value) -> Status {
    if (core::IsUtf8(value) && value.find('\0') == std::string::npos) return Status::Ok();
    return Status::InvalidArgument("key " + key + " of Secret " + ns + "/" + name +
                                   " is binary and cannot be an environment "
                                   "variable; mount it as a file");
  };
  std::vector<std::pair<std::string, std::string>> env;
  for (const core::SecretEnvFrom& e : ps.env_from) {
    auto got = values(e.secret);
    if (!got.ok()) return got.status();
    const auto* vals = *got;
    if (vals == nullptr) {
      if (e.optional) continue;
      return missing(e.secret, "envFrom");
    }
    for (const auto& [k, v] : *vals) {
      ALLOT_RETURN_IF_ERROR(text(e.secret, k, v));
      env.emplace_back(e.prefix + k, v);
    }
  }
  env.insert(env.end(), d->env.begin(), d->env.end());
  for (const core::SecretEnvVar& e : ps.env_secrets) {
    auto got = values(e.ref.secret);
    if (!got.ok()) return got.status();
    const auto* vals = *got;
    const std::string field = "env[" + e.name + "]";
    if (vals == nullptr) {
      if (e.ref.optional) continue;
      return missing(e.ref.secret, field);
    }
    auto v = vals->find(e.ref.key);
    if (v == vals->end()) {
      if (e.ref.optional) continue;
      return Status::NotFound("Secret " + ns + "/" + e.ref.secret + " has no key " +
                              e.ref.key + " (" + Where(ps, field) + ")");
    }
    ALLOT_RETURN_IF_ERROR(text(e.ref.secret, e.ref.key, v->second));
    env.emplace_back(e.name, v->second);
  }
  d->env = std::move(env);
  for (const core::Volume& vol : ps.volumes) {
    if (vol.type != core::Volume::Type::kSecret) continue;
    auto got = values(vol.secret);
    if (!got.ok()) return got.status();
    const auto* vals = *got;
    if (vals == nullptr) return missing(vol.secret, "volumes[" + vol.name + "]");
    for (const auto& [k, v] : *vals) d->files.push_back({vol.name, k, v});
  }
  for (const std::string& s : ps.image_pull_secrets) {
    auto got = values(s);
    if (!got.ok()) return got.status();
    const auto* vals = *got;
    if (vals == nullptr) return missing(s, "imagePullSecrets");
    auto cfg = vals->find(core::kDockerConfigJsonKey);
    if (cfg == vals->end()) {
      return Status::InvalidArgument("Secret " + ns + "/" + s + " has no " +
                                     core::kDockerConfigJsonKey);
    }
    ALLOT_RETURN_IF_ERROR(core::MergeDockerConfig(cfg->second, &d->registry_auth));
  }
  return Status::Ok();
}

}  // namespace allot::server
