#include "server/crypto.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace allot::server {
namespace {
std::string Hex(const unsigned char* p, size_t n) {
  static const char kHex[] = "0123456789abcdef";
  std::string out(n * 2, '0');
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = kHex[p[i] >> 4];
    out[2 * i + 1] = kHex[p[i] & 15];
  }
  return out;
}
}  // namespace

std::string Sha256Hex(const std::string& data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr) !=
      1) {
    std::fprintf(stderr, "allot: SHA-256 failed\n");
    std::abort();
  }
  return Hex(md, len);
}

std::string RandomHex(int bytes) {
  std::vector<unsigned char> buf(bytes);
  if (RAND_bytes(buf.data(), bytes) != 1) {
    std::fprintf(stderr, "allot: the random source failed\n");
    std::abort();
  }
  return Hex(buf.data(), buf.size());
}

bool ConstantTimeEquals(const std::string& a, const std::string& b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace allot::server
