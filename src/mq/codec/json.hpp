// The message codec's JSON toolkit (message-queue.md §3): the nine known keys and how a key names one, over
// the scanner and writer of common/text. Thread safety: pure functions.
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "common/text/json_scanner.hpp"
#include "common/text/json_string.hpp"

namespace spool::mq::detail::codec {

// The JSON scanner and string writer the codec shares with the server (common/text/json_scanner.hpp,
// json_string.hpp).
using scanner = spool::detail::json_scanner;
using spool::detail::append_json_escape;
using spool::detail::append_json_string;
using spool::detail::json_lex::is_digit;
using spool::detail::json_lex::kMaxDepth;
using spool::detail::str_mode;

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

inline char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }
// The field a (decoded) key names: an exact match first, else a match under case folding.
field match_field(std::string_view key);
// The JSON type a value starting with c has, for type errors; null when c starts no value (or null).
const char* json_kind(char c);

}  // namespace spool::mq::detail::codec
