#include "server/tokens.h"

#include <cctype>

#include "server/crypto.h"

namespace allot::server {

namespace {

Status CheckUserName(const std::string& user) {
  if (user.empty() || user.size() > 128) {
    return Status::InvalidArgument("user must be 1 to 128 characters", "user");
  }
  for (char c : user) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' ||
          c == '.' || c == '@')) {
      return Status::InvalidArgument(
          "user may hold only letters, digits, '-', '_', '.' and '@'", "user");
    }
  }
  return Status::Ok();
}

}  // namespace

void Tokens::Load(const store::TokenRow& row) {
  by_id_[row.id] = row;
  Result<Role> role = ParseRole(row.role);
  if (row.revoked || !role.ok()) {
    by_hash_->Erase(row.hash);
  } else {
    by_hash_->Put(row.hash,
                  Principal{row.user, *role, row.tenant, row.id, row.node});
  }
}

Result<std::pair<std::string, std::string>> Tokens::Create(
    const std::string& user, Role role, const std::string& tenant,
    const std::string& node, bool tenant_exists, int64_t now,
    store::Batch* batch) {
  ALLOT_RETURN_IF_ERROR(CheckUserName(user));
  if (!node.empty() && role != Role::kNode) {
    return Status::InvalidArgument(
        std::string("only a node token is bound to a node, not a ") +
            ToString(role) + " token",
        "node");
  }
  if (!node.empty() && !IsNodeBinding(node)) {
    return Status::InvalidArgument(
        "node must be a node name (a DNS-1123 subdomain, like gpu-07) or a "
        "prefix of one "
        "ending in a single '*' (like sim-*), got '" +
            node + "'",
        "node");
  }
  const bool tenantless = role == Role::kClusterAdmin || role == Role::kNode ||
                          role == Role::kMetrics;
  if (tenantless && !tenant.empty()) {
    return Status::InvalidArgument(
        std::string("a ") + ToString(role) + " token has no tenant", "tenant");
  }
  if (!tenantless) {
    if (tenant.empty()) {
      return Status::InvalidArgument(
          std::string("a ") + ToString(role) + " token needs a tenant",
          "tenant");
    }
    if (!tenant_exists) {
      return Status::NotFound("tenant " + tenant + " does not exist", "tenant");
    }
  }
  std::string secret = "allot_" + RandomHex(32);
  store::TokenRow row;
  do {
    row.id = RandomHex(6);
  } while (by_id_.count(row.id));
  row.hash = Sha256Hex(secret);
  row.user = user;
  row.role = ToString(role);
  row.tenant = tenant;
  row.node = node;
  row.created_unix_ms = now;
  Load(row);
  batch->tokens.push_back(row);
  return std::make_pair(row.id, secret);
}

Status Tokens::AddAdmin(const std::string& secret, const std::string& user,
                        int64_t now, store::Batch* batch) {
  if (secret.size() < 32) {
    return Status::InvalidArgument(
        "the admin token must be at least 32 characters (use 256 random "
        "bits, e.g. allot_ followed by 64 hex digits)");
  }
  std::string hash = Sha256Hex(secret);
  if (by_hash_->Contains(hash)) return Status::Ok();
  store::TokenRow row;
  row.id = RandomHex(6);
  row.hash = hash;
  row.user = user;
  row.role = ToString(Role::kClusterAdmin);
  row.created_unix_ms = now;
  Load(row);
  batch->tokens.push_back(row);
  return Status::Ok();
}

Status Tokens::Revoke(const std::string& id, store::Batch* batch) {
  auto it = by_id_.find(id);
  if (it == by_id_.end() || it->second.revoked) {
    return Status::NotFound("token " + id + " does not exist", "id");
  }
  it->second.revoked = true;
  Load(it->second);
  batch->tokens.push_back(it->second);
  return Status::Ok();
}

void Tokens::RevokeTenant(const std::string& tenant, store::Batch* batch) {
  for (auto& [id, t] : by_id_) {
    if (t.tenant != tenant || t.revoked) continue;
    t.revoked = true;
    Load(t);
    batch->tokens.push_back(t);
  }
}

}  // namespace allot::server
