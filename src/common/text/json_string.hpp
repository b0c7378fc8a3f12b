// JSON strings written once for every layer: the message codec's encoder and
// the server's answers (serve/sqs/json_text.cpp) quote text the same way, so
// a body reads the same through the library, the CLI and an SDK.
// Pure functions: thread-safe.
#pragma once

#include <array>
#include <string>
#include <string_view>

namespace spool::detail {

// The bytes a JSON string holds as they are, with no escape and no UTF-8
// check: printable ASCII but the quote and the backslash. The writer below
// and the scanner (json_scanner.hpp) skip runs of them with one look-up each.
inline constexpr std::array<bool, 256> json_plain_ascii = [] {
  std::array<bool, 256> t{};
  for (int c = 0x20; c < 0x80; ++c) t[static_cast<std::size_t>(c)] = c != '"' && c != '\\';
  return t;
}();

// Appends the escape of an ASCII character that may not appear raw in a JSON
// string (`"`, `\` and anything below 0x20): the two-character form where
// JSON has one, else \u00xx in lower-case hex.
void append_json_escape(std::string& out, unsigned char c);

// Appends s as a quoted JSON string, UTF-8 kept as it is. A byte that starts
// no well-formed UTF-8 sequence becomes U+FFFD when replace; otherwise the
// call returns false, leaving out with a partial string the caller drops.
bool append_json_string(std::string& out, std::string_view s, bool replace);

}  // namespace spool::detail
