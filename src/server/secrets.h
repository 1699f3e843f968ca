// Secrets: each tenant's Secret objects (Kubernetes' v1 Secret: a type and
// named values), sealed at rest with the server's key. A part of the state
// (server/state.h): owner thread only.
//
// Guarantees:
//  - The store holds a Secret's values only sealed (AES-256-GCM under the
//    server key, bound to the Secret's tenant, name and type, so a row
//    copied under another name does not open); its type and key names are
//    in the clear. Memory holds them sealed too: Reveal and Resolve open
//    them when a tenant admin reads them or a pod starts.
//  - No list, log or audit record carries a value: Describe shows the type,
//    the keys and their sizes.
//  - A workload holds references only (core::SecretKeyRef ...); its pods
//    get the values when they start (Resolve), so a replaced Secret reaches
//    the next pod, and a deleted one fails it with the Secret's name.
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/secret.h"
#include "core/status.h"
#include "proto/agent_protocol.h"
#include "server/crypto.h"
#include "store/store.h"

namespace allot::server {

// The store's kind for Secret rows (not a config Kind: State::Load hands
// these rows here).
inline constexpr char kSecretKind[] = "Secret";

// The server key from `file` (64 hex digits); `file` empty: the file
// beside the sqlite store of `store_url` (PATH.secret-key), created with a
// fresh random key (mode 0600, synced) when missing; a store without a path
// gets a key that lives as long as the process. InvalidArgument when the
// file is not a key; a key file readable by others is used with a warning.
Result<std::string> LoadSecretKey(const std::string& file,
                                  const std::string& store_url);

class Secrets {
 public:
  // The server key (kSealKeyBytes) that seals and opens every value.
  void SetKey(std::string key) { key_ = std::move(key); }
  // A row as the store has it; Internal when it is not a Secret row this
  // binary wrote.
  Status Load(const store::ObjectRow& row);
  // FailedPrecondition naming the first Secret whose values do not open
  // with the key (another key file than the one that sealed them).
  Status CheckKey() const;
  // A secret derived from the server key for `purpose` (HMAC-SHA-256, hex):
  // the same after a restart, never stored (a notebook's Jupyter token,
  // its sign-in cookies).
  std::string Derive(const std::string& purpose) const {
    return HmacSha256Hex(key_, purpose);
  }

  // Creates (`replace` false: AlreadyExists when it exists) or replaces
  // (creates when missing) a Secret, sealed, as resource version `rv`.
  // Returns "created", "configured" or "unchanged" (same type and values:
  // nothing is written).
  Result<std::string> Put(const core::Secret& in, bool replace, const std::string& by,
             int64_t now_unix_ms, int64_t rv, store::Batch* batch);
  // NotFound when it does not exist.
  Status Delete(const std::string& ns, const std::string& name,
                store::Batch* batch);
  // Deletes every Secret of `ns` (its tenant is being deleted).
  void DeleteTenant(const std::string& ns, store::Batch* batch);

  bool Exists(const std::string& ns, const std::string& name) const {
    return by_key_.count(ns + "/" + name) > 0;
  }
  // The tenant's Secrets (`ns` empty: all), without values.
  boost::json::array List(const std::string& ns) const;
  // One Secret without values; NotFound.
  Result<boost::json::object> Describe(const std::string& ns,
                                       const std::string& name) const;
  // One Secret with its values (Kubernetes' data, base64): for its
  // tenant's admins only (the caller checks). NotFound.
  Result<boost::json::object> Reveal(const std::string& ns,
                                     const std::string& name) const;

  // Checks the references of a workload's pod sets: every Secret that is
  // not optional exists in the workload's tenant, a secretKeyRef's key is in
  // it, and an imagePullSecret is of type kubernetes.io/dockerconfigjson.
  // NotFound / InvalidArgument naming the pod set's field.
  Status CheckRefs(const core::Workload& w) const;
  // Gives pod `d` of pod set `ps` of tenant `ns` its secrets: envFrom
  // before the pod set's env, secretKeyRef values after it (d->env holds
  // the pod set's env on entry and gets the server's variables after this),
  // secret volumes' files, and the registry credentials of its
  // imagePullSecrets. A missing Secret or key that is not optional: an
  // error naming it (the pod fails to start with it).
  Status Resolve(const std::string& ns, const core::PodSet& ps,
                 proto::DesiredPod* d) const;

 private:
  struct Record {
    std::string ns, name, type;
    std::map<std::string, int64_t> sizes;  // key -> bytes.
    std::string sealed;                    // The values, sealed.
    std::string created_by;
    int64_t created_unix_ms = 0;
    int64_t updated_unix_ms = 0;
    int64_t rv = 0;
  };
  static std::string Aad(const Record& r);
  static boost::json::object Meta(const Record& r);
  Result<std::map<std::string, std::string>> Values(const Record& r) const;
  const Record* Find(const std::string& ns, const std::string& name) const;

  std::string key_;
  std::map<std::string, Record> by_key_;  // "ns/name"
};

}  // namespace allot::server
