// Small cryptographic helpers on OpenSSL: hashing and random secrets.
#pragma once

#include <string>

namespace allot::server {

// Lower-case hex SHA-256 of `data`.
std::string Sha256Hex(const std::string& data);
// `bytes` bytes from the OS's CSPRNG, as lower-case hex. Aborts if the
// random source fails (never returns a weak secret).
std::string RandomHex(int bytes);
// Compares in time independent of where the strings differ.
bool ConstantTimeEquals(const std::string& a, const std::string& b);

}  // namespace allot::server
