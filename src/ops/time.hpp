// Times of the op queue: RFC 3339 text for PostgreSQL parameters and JSON,
// canonical "YYYY-MM-DD HH:MM:SS" UTC text for SQLite (op-queue.md §2.4).
// Pure functions of their arguments: never the host's time zone or clock.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "spool/ops/op.hpp"

namespace spool::ops::detail {

// Parses "YYYY-MM-DD" then "T", "t" or a space, "HH:MM:SS", an optional
// fraction and an optional zone (Z, ±HH:MM or ±HHMM; none means UTC).
// nullopt for anything else (including out-of-range fields).
[[nodiscard]] std::optional<time_point> try_parse_time(std::string_view text) noexcept;

// "YYYY-MM-DDTHH:MM:SS.ffffffZ": a PostgreSQL timestamptz parameter, exact to the microsecond.
[[nodiscard]] std::string pg_time(time_point t);

// "YYYY-MM-DD HH:MM:SS" in UTC, rounded up to the next whole second when t
// has a fraction (a not_before is never released early).
[[nodiscard]] std::string sqlite_time_ceil(time_point t);

}  // namespace spool::ops::detail
