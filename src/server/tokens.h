// Tokens: every API token by id, and the live ones by the SHA-256 of their
// secret. A part of the state (server/state.h): owner thread only, except
// the TokenIndex it shares with the network threads (thread-safe), which
// they read to turn away a request without a live token before parsing it.
//
// Tokens checks what a token is (a user name, a role that takes a tenant or
// none, a node binding); who may create or revoke one is decided at the
// API edge (server/access.h) before it is asked.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "core/status.h"
#include "server/authz.h"
#include "store/store.h"

namespace allot::server {

class Tokens {
 public:
  // A token as the store has it (loading, or after a change): indexed when
  // live, dropped from the index when revoked.
  void Load(const store::TokenRow& row);

  // A new token; returns (id, secret): the secret is shown once and stored
  // only hashed. `node`: a node token's binding (IsNodeBinding), empty for
  // none; other roles take none. A tenant-bound role needs an existing
  // tenant (`tenant_exists`), the others none (InvalidArgument).
  Result<std::pair<std::string, std::string>> Create(
      const std::string& user, Role role, const std::string& tenant,
      const std::string& node, bool tenant_exists, int64_t now,
      store::Batch* batch);
  // Registers `secret` as a cluster-admin token (bootstrap); nothing when
  // it is one already.
  Status AddAdmin(const std::string& secret, const std::string& user,
                  int64_t now, store::Batch* batch);
  // NotFound when `id` does not exist or is revoked.
  Status Revoke(const std::string& id, store::Batch* batch);
  // Revokes every live token bound to `tenant`.
  void RevokeTenant(const std::string& tenant, store::Batch* batch);

  // The token `id`, revoked or not (nullptr: none).
  const store::TokenRow* Find(const std::string& id) const {
    auto it = by_id_.find(id);
    return it == by_id_.end() ? nullptr : &it->second;
  }
  // Whether `id` exists and is not revoked.
  bool Live(const std::string& id) const {
    const store::TokenRow* t = Find(id);
    return t != nullptr && !t->revoked;
  }
  bool empty() const { return by_id_.empty(); }
  const std::map<std::string, store::TokenRow>& all() const { return by_id_; }
  // The principal of the live token whose secret hashes to `hash`.
  std::optional<Principal> Authenticate(const std::string& hash) const {
    return by_hash_->Find(hash);
  }
  std::shared_ptr<const TokenIndex> index() const { return by_hash_; }
  // The index itself, for a credential the server makes and keeps out of
  // the store (the local pool provider's agents' token): any thread.
  std::shared_ptr<TokenIndex> internal_index() const { return by_hash_; }

 private:
  std::map<std::string, store::TokenRow> by_id_;
  std::shared_ptr<TokenIndex> by_hash_ = std::make_shared<TokenIndex>();
};

}  // namespace allot::server
