// A tenant's Secret as a client writes it: Kubernetes' v1 Secret (a type
// and named values), read from YAML or JSON. The server seals the values
// (server/secrets.h); workloads name them (core::SecretKeyRef).
#pragma once

#include <map>
#include <string>

#include "core/status.h"

namespace allot::core {

struct Secret {
  std::string ns;  // The tenant.
  std::string name;
  std::string type = "Opaque";
  std::map<std::string, std::string> values;  // Decoded: raw bytes.

  bool operator==(const Secret&) const = default;
};

// The Secret types Allot knows, and the key each requires (empty: none).
inline constexpr char kDockerConfigJsonType[] = "kubernetes.io/dockerconfigjson";
inline constexpr char kDockerConfigJsonKey[] = ".dockerconfigjson";
// At most this many bytes of keys and values in one Secret (Kubernetes').
inline constexpr size_t kMaxSecretBytes = 1 << 20;

// Reads one v1 Secret document from `text` (YAML or JSON): metadata.name,
// metadata.namespace (default `default_ns`; when both are given they must
// match), type (Opaque, kubernetes.io/dockerconfigjson,
// kubernetes.io/basic-auth, kubernetes.io/tls; default Opaque), data
// (base64) and stringData (plain; wins over data for the same key), keys of
// [-._a-zA-Z0-9] (at most 253), at most kMaxSecretBytes in all, and what the
// type requires (a .dockerconfigjson with an "auths" object; basic-auth's
// username or password; tls.crt and tls.key). InvalidArgument naming the
// field; messages never quote a value. `file` names the input.
Result<Secret> ParseSecretManifest(const std::string& text, const std::string& file,
                                   const std::string& default_ns);

// The registries of a .dockerconfigjson and their credentials, as a
// container auth file ({"auths": {REGISTRY: {"auth": base64(user:pass)}}})
// merged over `into` (the later file's entry wins). InvalidArgument when
// `json` is not a docker config.
Status MergeDockerConfig(const std::string& json, std::string* into);

}  // namespace allot::core
