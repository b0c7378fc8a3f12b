#include "serve/digests.hpp"

#include <openssl/core_names.h>
#include <openssl/params.h>

#include <array>
#include <memory>
#include <stdexcept>

namespace spool::serve {

namespace {
const EVP_MD& fetched(const char* name) {
  const EVP_MD* md = EVP_MD_fetch(nullptr, name, nullptr);
  if (md == nullptr) throw std::runtime_error(std::string("OpenSSL has no ") + name);
  return *md;
}
}  // namespace

const EVP_MD& md5_digest() {
  static const EVP_MD& md = fetched("MD5");  // never freed: the process ends with it
  return md;
}

const EVP_MD& sha256_digest() {
  static const EVP_MD& md = fetched("SHA256");
  return md;
}

std::string hmac_sha256(std::string_view key, std::string_view data) {
  static EVP_MAC* const mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);  // kept, as the digests are
  if (mac == nullptr) throw std::runtime_error("OpenSSL has no HMAC");
  const std::unique_ptr<EVP_MAC_CTX, decltype(&EVP_MAC_CTX_free)> ctx(EVP_MAC_CTX_new(mac), EVP_MAC_CTX_free);
  std::array<OSSL_PARAM, 2> params{
      OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, const_cast<char*>("SHA256"), 0),
      OSSL_PARAM_construct_end()};
  std::array<unsigned char, EVP_MAX_MD_SIZE> out{};
  std::size_t len = 0;
  if (!ctx ||
      EVP_MAC_init(ctx.get(), reinterpret_cast<const unsigned char*>(key.data()), key.size(),
                   params.data()) != 1 ||
      EVP_MAC_update(ctx.get(), reinterpret_cast<const unsigned char*>(data.data()), data.size()) != 1 ||
      EVP_MAC_final(ctx.get(), out.data(), &len, out.size()) != 1) {
    throw std::runtime_error("OpenSSL failed an HMAC-SHA256");
  }
  return {reinterpret_cast<const char*>(out.data()), len};
}

}  // namespace spool::serve
