// Small cryptographic helpers on OpenSSL: hashing, random secrets,
// authenticated encryption.
#pragma once

#include <string>

#include "core/status.h"

namespace allot::server {

// Lower-case hex SHA-256 of `data`.
std::string Sha256Hex(const std::string& data);
// `bytes` bytes from the OS's CSPRNG, as lower-case hex. Aborts if the
// random source fails (never returns a weak secret).
std::string RandomHex(int bytes);
// Lower-case hex HMAC-SHA-256 of `data` under `key`.
std::string HmacSha256Hex(const std::string& key, const std::string& data);
// Compares in time independent of where the strings differ.
bool ConstantTimeEquals(const std::string& a, const std::string& b);

// The bytes of lower- or upper-case hex `hex`; InvalidArgument for an odd
// length or a non-hex digit.
Result<std::string> HexDecode(const std::string& hex);

// The length of a key for Seal and Open (AES-256).
inline constexpr size_t kSealKeyBytes = 32;
// AES-256-GCM of `plaintext` under `key` (kSealKeyBytes), bound to `aad`
// (authenticated, not encrypted): a fresh random 12-byte nonce, then the
// ciphertext, then the 16-byte tag.
std::string Seal(const std::string& key, const std::string& aad,
                 const std::string& plaintext);
// The plaintext Seal sealed; FailedPrecondition when the key, the aad or a byte of
// `sealed` differ from those it was sealed with.
Result<std::string> Open(const std::string& key, const std::string& aad,
                         const std::string& sealed);

}  // namespace allot::server
