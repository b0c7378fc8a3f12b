// classify_http_status and parse_retry_after.
#include "http_status.hpp"

#include <fmt/format.h>

#include <charconv>
#include <ctime>
#include <string>

#include "outbox/text.hpp"

namespace spool::outbox::detail {

namespace {

constexpr std::chrono::seconds retry_after_cap = std::chrono::hours(24);

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::optional<std::chrono::milliseconds> parse_retry_after(std::string_view value,
                                                           std::chrono::system_clock::time_point now) {
  value = trimmed(value);
  if (value.empty()) return std::nullopt;
  if (value.find_first_not_of("0123456789") == std::string_view::npos) {
    if (value.size() > 9) return retry_after_cap;  // more than 31 years: the cap anyway
    long long secs = 0;
    (void)std::from_chars(value.data(), value.data() + value.size(), secs);
    return std::min<std::chrono::milliseconds>(std::chrono::seconds(secs), retry_after_cap);
  }
  // IMF-fixdate, e.g. "Sun, 06 Nov 1994 08:49:37 GMT" (always GMT).
  std::tm tm{};
  const std::string text(value);
  const char* end = ::strptime(text.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (end == nullptr || *end != '\0') return std::nullopt;
  // In whole seconds: a date centuries ahead (year 9999, or more digits)
  // does not fit system_clock's nanoseconds, so it never becomes a time_point
  // (found by fuzz/http_inputs).
  const long long at = ::timegm(&tm);
  const long long now_s = std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  if (at <= now_s) return std::chrono::milliseconds(0);
  if (at - now_s >= retry_after_cap.count()) return retry_after_cap;
  const auto ahead = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::seconds(at - now_s) - (now.time_since_epoch() - std::chrono::seconds(now_s)));
  return std::max(ahead, std::chrono::milliseconds(0));
}

sink_outcome classify_http_status(int status, std::string_view reason, std::string_view retry_after,
                                  std::chrono::system_clock::time_point now) {
  if (status >= 200 && status < 300) return sink_outcome::delivered();
  const std::string code = fmt::format("http_{}", status);
  // The reason phrase comes from the server: sanitised, and short.
  std::string message = std::to_string(status);
  if (const auto r = trimmed(reason); !r.empty()) message += " " + sanitize_error_text(r, 128);
  if (status >= 400 && status < 500 && status != 408 && status != 429) {
    return sink_outcome::permanent(code, message);
  }
  return sink_outcome::transient(code, message, parse_retry_after(retry_after, now));
}

}  // namespace spool::outbox::detail
