// X-Spool-Signature of the HTTP sink (outbox.md §8).
#pragma once

#include <string>
#include <string_view>

namespace spool::outbox::detail {

// "sha256=" followed by the lowercase hex HMAC-SHA256 of body under secret.
// Errors: unavailable when OpenSSL fails (it does not for SHA-256).
[[nodiscard]] std::string webhook_signature(std::string_view secret, std::string_view body);

}  // namespace spool::outbox::detail
