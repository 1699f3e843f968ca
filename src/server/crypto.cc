#include "server/crypto.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
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

std::string HmacSha256Hex(const std::string& key, const std::string& data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), int(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &len);
  return Hex(out, len);
}

bool ConstantTimeEquals(const std::string& a, const std::string& b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

Result<std::string> HexDecode(const std::string& hex) {
  auto digit = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  if (hex.size() % 2 != 0) return Status::InvalidArgument("odd number of hex digits");
  std::string out(hex.size() / 2, '\0');
  for (size_t i = 0; i < out.size(); ++i) {
    const int hi = digit(hex[2 * i]), lo = digit(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return Status::InvalidArgument("not a hex digit");
    out[i] = char(hi << 4 | lo);
  }
  return out;
}

namespace {
constexpr int kNonceBytes = 12;
constexpr int kTagBytes = 16;
using CipherCtx = std::unique_ptr<EVP_CIPHER_CTX, decltype(&EVP_CIPHER_CTX_free)>;
const unsigned char* U(const std::string& s) {
  return reinterpret_cast<const unsigned char*>(s.data());
}
}  // namespace

std::string Seal(const std::string& key, const std::string& aad,
                 const std::string& plaintext) {
  std::string out(kNonceBytes + plaintext.size() + kTagBytes, '\0');
  auto* o = reinterpret_cast<unsigned char*>(out.data());
  CipherCtx ctx(EVP_CIPHER_CTX_new(), EVP_CIPHER_CTX_free);
  int n = 0, m = 0;
  if (key.size() != kSealKeyBytes || ctx == nullptr ||
      RAND_bytes(o, kNonceBytes) != 1 ||
      EVP_EncryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, U(key), o) != 1 ||
      EVP_EncryptUpdate(ctx.get(), nullptr, &n, U(aad), int(aad.size())) != 1 ||
      EVP_EncryptUpdate(ctx.get(), o + kNonceBytes, &n, U(plaintext),
                        int(plaintext.size())) != 1 ||
      EVP_EncryptFinal_ex(ctx.get(), o + kNonceBytes + n, &m) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, kTagBytes,
                          o + kNonceBytes + n + m) != 1) {
    // Only a wrong key length (a bug) or a broken OpenSSL gets here.
    std::fprintf(stderr, "allot: AES-256-GCM sealing failed\n");
    std::abort();
  }
  return out;
}

Result<std::string> Open(const std::string& key, const std::string& aad,
                         const std::string& sealed) {
  if (key.size() != kSealKeyBytes) {
    return Status::InvalidArgument("the key must be " +
                                   std::to_string(kSealKeyBytes) + " bytes");
  }
  if (sealed.size() < size_t(kNonceBytes + kTagBytes)) {
    return Status::FailedPrecondition("sealed data is too short");
  }
  const size_t len = sealed.size() - kNonceBytes - kTagBytes;
  std::string out(len, '\0');
  auto* o = reinterpret_cast<unsigned char*>(out.data());
  const unsigned char* s = U(sealed);
  std::string tag = sealed.substr(kNonceBytes + len);
  CipherCtx ctx(EVP_CIPHER_CTX_new(), EVP_CIPHER_CTX_free);
  int n = 0, m = 0;
  if (ctx == nullptr ||
      EVP_DecryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, U(key), s) != 1 ||
      EVP_DecryptUpdate(ctx.get(), nullptr, &n, U(aad), int(aad.size())) != 1 ||
      EVP_DecryptUpdate(ctx.get(), o, &n, s + kNonceBytes, int(len)) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, kTagBytes,
                          tag.data()) != 1 ||
      EVP_DecryptFinal_ex(ctx.get(), o + n, &m) != 1) {
    return Status::FailedPrecondition(
        "sealed data does not open with this key (another key, or the data "
        "was changed)");
  }
  return out;
}

}  // namespace allot::server
