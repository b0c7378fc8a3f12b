// UTF-8 (RFC 3629) for every layer: one decoder, one validator, one cut and
// one repair, so the engines and the three capabilities agree on what is
// well-formed and where a text may be cut. Pure functions: thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace spool::detail {

// U+FFFD REPLACEMENT CHARACTER in UTF-8: what every repair writes for a bad byte.
inline constexpr std::string_view utf8_replacement = "\xEF\xBF\xBD";

// Length of the well-formed sequence starting at s[i] (1 for ASCII, NUL
// included), or 0 when the bytes there start none: a stray continuation
// byte, an overlong form, a UTF-16 surrogate, a code point above U+10FFFF, or
// a sequence cut short by the end of s. Inline: the message codec calls it
// for every non-ASCII byte. Requires i < s.size().
[[nodiscard]] inline std::size_t utf8_sequence(std::string_view s, std::size_t i) noexcept {
  const auto at = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const auto cont = [&](std::size_t k) { return i + k < s.size() && (at(k) & 0xC0) == 0x80; };
  const unsigned char c = at(0);
  if (c < 0x80) return 1;
  if (c < 0xC2) return 0;  // a continuation byte, or an overlong two-byte form
  if (c < 0xE0) return cont(1) ? 2 : 0;
  if (!cont(1)) return 0;
  if (c < 0xF0) {
    if ((c == 0xE0 && at(1) < 0xA0) || (c == 0xED && at(1) > 0x9F)) return 0;  // overlong, surrogate
    return cont(2) ? 3 : 0;
  }
  if (c > 0xF4 || (c == 0xF0 && at(1) < 0x90) || (c == 0xF4 && at(1) > 0x8F))
    return 0;  // overlong, > U+10FFFF
  return cont(2) && cont(3) ? 4 : 0;
}

// The code point of the well-formed sequence of length n at s[i] (n from
// utf8_sequence, not 0).
[[nodiscard]] char32_t utf8_code_point(std::string_view s, std::size_t i, std::size_t n) noexcept;

// Appends code point cp (at most U+10FFFF, no surrogate) as UTF-8.
void append_utf8(std::string& out, char32_t cp);

// True when s is well-formed UTF-8 throughout. NUL is a valid code point here.
[[nodiscard]] bool is_utf8(std::string_view s) noexcept;

// s cut to at most max_bytes without splitting a sequence: a last sequence
// that does not fit whole is dropped. Stray continuation bytes (ill-formed
// input) are no partial sequence and are kept, so the cut moves back at most
// three bytes.
[[nodiscard]] std::string utf8_truncate(std::string_view s, std::size_t max_bytes);

// s with each byte that starts no well-formed sequence replaced by U+FFFD,
// and NUL removed when drop_nul.
[[nodiscard]] std::string utf8_repair(std::string_view s, bool drop_nul);

}  // namespace spool::detail
