// webhook_signature through libcrypto's one-shot HMAC.
#include "webhook_signature.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "outbox/text.hpp"
#include "spool/error.hpp"

namespace spool::outbox::detail {

std::string webhook_signature(std::string_view secret, std::string_view body) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  // An empty body still needs a non-null pointer for OpenSSL.
  static constexpr unsigned char empty = 0;
  const auto* data = body.empty() ? &empty : reinterpret_cast<const unsigned char*>(body.data());
  if (HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()), data, body.size(), mac, &size) ==
      nullptr) {
    throw error(errc::unavailable, "http sink: HMAC-SHA256 failed", "sink_failed");
  }
  return "sha256=" + hex_encode(std::string_view(reinterpret_cast<const char*>(mac), size));
}

}  // namespace spool::outbox::detail
