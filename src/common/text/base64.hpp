// base64 (RFC 4648) for every layer: the outbox's canonical JSON carries
// payloads as standard padded base64, and the outbox's and the op queue's
// keyset cursors are URL-safe text without padding. One codec, so the two
// cursor formats cannot drift apart. Pure functions: thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace spool::detail {

// The standard alphabet (RFC 4648 §4), padded with '=' to a multiple of four.
[[nodiscard]] std::string base64_encode(std::string_view bytes);
// The inverse of base64_encode, or nullopt when text is not padded standard
// base64 (a length that is no multiple of four, a character outside the
// alphabet, '=' other than as one or two trailing pads).
[[nodiscard]] std::optional<std::string> base64_decode(std::string_view text);

// The URL-safe alphabet (RFC 4648 §5: '-' and '_' for '+' and '/'), without
// padding, so the text can go into a query string as it is.
[[nodiscard]] std::string base64url_encode(std::string_view bytes);
// The inverse of base64url_encode, or nullopt when text is malformed (a
// character outside the URL-safe alphabet, '=' included, or a length that
// leaves a lone character at the end).
[[nodiscard]] std::optional<std::string> base64url_decode(std::string_view text);

}  // namespace spool::detail
