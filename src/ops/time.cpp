#include "ops/time.hpp"

#include <fmt/format.h>

#include <chrono>

#include "common/text/rfc3339.hpp"
#include "spool/error.hpp"

namespace spool::ops {

namespace {

using spool::detail::rfc3339_style;

// op-queue.md §2.4: a missing zone means UTC, and ±HHMM is accepted.
constexpr spool::detail::rfc3339_dialect ops_dialect{true, true, false};

}  // namespace

namespace detail {

std::optional<time_point> try_parse_time(std::string_view s) noexcept { return spool::detail::parse_rfc3339(s, ops_dialect); }

std::string pg_time(time_point t) { return spool::detail::format_rfc3339(t); }

std::string sqlite_time_ceil(time_point t) {
  const auto secs = std::chrono::ceil<std::chrono::seconds>(t);
  return spool::detail::format_rfc3339(time_point{secs}, {rfc3339_style::fraction::none, ' ', false});
}

}  // namespace detail

std::string format_time(time_point t) {
  // No fraction on SQLite (whole seconds), at most microseconds on PostgreSQL.
  return spool::detail::format_rfc3339(t, {rfc3339_style::fraction::trimmed, 'T', true});
}

time_point parse_time(std::string_view text) {
  if (auto t = detail::try_parse_time(text)) return *t;
  throw error(errc::invalid_argument,
              fmt::format("invalid time \"{}\": expected RFC 3339, e.g. 2024-05-01T12:00:00Z or "
                          "2024-05-01T15:00:00+03:00",
                          text.substr(0, 64)));
}

}  // namespace spool::ops
