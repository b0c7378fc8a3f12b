// The message codec's JSON text toolkit (message-queue.md §3): the nine known keys, character classes and the
// appenders that the scanner, the decoder and the encoder share. Thread safety: pure functions.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/text/json_string.hpp"
#include "common/text/utf8.hpp"

namespace spool::mq::detail::codec {

inline constexpr std::size_t kMaxDepth = 10000;  // Go's encoding/json limit; the payload object is level 1
inline constexpr std::string_view kReplacement = spool::detail::utf8_replacement;
inline constexpr char kHex[] = "0123456789abcdef";

// The nine known keys, in wire order; kUnknown for any other key.
enum field : int {
  kId,
  kPoolCode,
  kAuthToken,
  kSigningSecret,
  kMediationType,
  kMediationTarget,
  kMessageGroupId,
  kHighPriority,
  kDispatchMode,
  kUnknown
};
inline constexpr std::array<std::string_view, kUnknown> kFieldNames = {"id",
                                                                "poolCode",
                                                                "authToken",
                                                                "signingSecret",
                                                                "mediationType",
                                                                "mediationTarget",
                                                                "messageGroupId",
                                                                "highPriority",
                                                                "dispatchMode"};


// JSON's two-character escapes: the letter after the backslash and the character it stands for.
inline constexpr char kShortEscapes[][2] = {{'"', '"'},  {'\\', '\\'}, {'b', '\b'}, {'f', '\f'},
                                            {'n', '\n'}, {'r', '\r'},  {'t', '\t'}};

inline bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
inline bool is_digit(char c) { return c >= '0' && c <= '9'; }
inline char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }
// The value of one hex digit, or -1.
int hex_value(char c);
// Length of the well-formed UTF-8 sequence starting at p (1 for ASCII), or 0 (common/utf8.hpp).
std::size_t utf8_seq_len(const char* p, const char* end) noexcept;
// Appends code point cp as UTF-8.
void append_utf8(std::string& out, std::uint32_t cp);
// The escape and the quoted string: one writer for the codec and the server (common/text/json_string.hpp).
using spool::detail::append_json_escape;
using spool::detail::append_json_string;
// The field a (decoded) key names: an exact match first, else a match under case folding.
field match_field(std::string_view key);
// Appends one byte of the payload for an error text: printable ASCII as is, anything else as \xNN.
void append_quoted_char(std::string& out, unsigned char c);
// The JSON type a value starting with c has, for type errors; null when c starts no value (or null).
const char* json_kind(char c);

}  // namespace spool::mq::detail::codec
