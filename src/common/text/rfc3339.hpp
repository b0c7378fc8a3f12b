// RFC 3339 times for every layer: one parser with the few dialect choices the
// capabilities' specs differ on, and one formatter. Microsecond resolution,
// UTC results. Pure functions of their arguments (never the host's zone or
// clock): thread-safe.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace spool::detail {

using micros_time = std::chrono::sys_time<std::chrono::microseconds>;

// What a parse accepts beyond "YYYY-MM-DD(T|t| )HH:MM:SS[.fraction](Z|z|±HH:MM)".
struct rfc3339_dialect {
  bool zone_optional = false;   // no zone at all means UTC (op-queue.md §2.4)
  bool compact_offset = false;  // ±HHMM as well as ±HH:MM
  bool leap_second = false;     // :60 is read as :59 (outbox.md §2.4)
};

// The instant, or nullopt for anything else: out-of-range fields, a fraction
// without digits, trailing bytes. Digits beyond microseconds are truncated
// toward the past.
[[nodiscard]] std::optional<micros_time> parse_rfc3339(std::string_view text,
                                                       rfc3339_dialect dialect = {}) noexcept;

// How to write an instant: "YYYY-MM-DD<separator>HH:MM:SS[.ffffff][Z]".
struct rfc3339_style {
  enum class fraction { none, micros, trimmed } digits = fraction::micros;  // trimmed: no trailing zeros
  char separator = 'T';
  bool zulu = true;
};
[[nodiscard]] std::string format_rfc3339(micros_time t, rfc3339_style style = {});

}  // namespace spool::detail
