// Text helpers of the outbox that are not SQL: UTF-8 checks, hex, the
// error-text sanitiser and RFC 3339 times (base64: common/base64.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace spool::outbox::detail {

// Well-formed UTF-8 (common/utf8.hpp) without NUL: the outbox's text columns.
[[nodiscard]] bool valid_utf8(std::string_view s) noexcept;
[[nodiscard]] std::string hex_encode(std::string_view bytes);
[[nodiscard]] std::string hex_decode(std::string_view hex);
// Ill-formed UTF-8 → U+FFFD, control characters → spaces, URL credentials →
// scheme://***@, cut at max_bytes on a code-point boundary ending in "…".
[[nodiscard]] std::string sanitize_error_text(std::string_view text, std::size_t max_bytes);

}  // namespace spool::outbox::detail
