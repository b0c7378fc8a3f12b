#include "ops/time.hpp"

#include <fmt/format.h>

#include <chrono>

#include "spool/error.hpp"

namespace spool::ops {

namespace {

using namespace std::chrono;

bool digits(std::string_view s, std::size_t pos, std::size_t n, int& out) noexcept {
  if (pos + n > s.size()) return false;
  int v = 0;
  for (std::size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  out = v;
  return true;
}

struct civil {
  int year, month, day, hour, minute, second;
  int micros;
};

std::string format(time_point t, bool fraction, char sep, bool zulu) {
  const auto day = floor<days>(t);
  const year_month_day ymd{day};
  const hh_mm_ss<microseconds> hms{t - day};
  std::string out = fmt::format("{:04}-{:02}-{:02}{}{:02}:{:02}:{:02}", static_cast<int>(ymd.year()),
                                static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()), sep,
                                hms.hours().count(), hms.minutes().count(), hms.seconds().count());
  if (fraction) out += fmt::format(".{:06}", hms.subseconds().count());
  if (zulu) out += 'Z';
  return out;
}

}  // namespace

namespace detail {

std::optional<time_point> try_parse_time(std::string_view s) noexcept {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, se = 0;
  if (s.size() < 19 || !digits(s, 0, 4, y) || s[4] != '-' || !digits(s, 5, 2, mo) || s[7] != '-' ||
      !digits(s, 8, 2, d) || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') || !digits(s, 11, 2, h) ||
      s[13] != ':' || !digits(s, 14, 2, mi) || s[16] != ':' || !digits(s, 17, 2, se)) {
    return std::nullopt;
  }
  if (h > 23 || mi > 59 || se > 59) return std::nullopt;
  const year_month_day ymd{year{y}, month{static_cast<unsigned>(mo)}, day{static_cast<unsigned>(d)}};
  if (!ymd.ok()) return std::nullopt;
  std::size_t pos = 19;
  std::int64_t micros = 0;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    int n = 0;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      if (n < 6) micros = micros * 10 + (s[pos] - '0');
      ++n;
      ++pos;
    }
    if (n == 0) return std::nullopt;
    for (int i = n; i < 6; ++i) micros *= 10;
  }
  int offset_min = 0;
  if (pos < s.size()) {
    const char c = s[pos];
    if ((c == 'Z' || c == 'z') && pos + 1 == s.size()) {
      // UTC
    } else if (c == '+' || c == '-') {
      int oh = 0, om = 0;
      if (!digits(s, pos + 1, 2, oh)) return std::nullopt;
      std::size_t mpos = pos + 3;
      if (mpos < s.size() && s[mpos] == ':') ++mpos;
      if (!digits(s, mpos, 2, om) || mpos + 2 != s.size() || oh > 23 || om > 59) return std::nullopt;
      offset_min = (oh * 60 + om) * (c == '-' ? -1 : 1);
    } else {
      return std::nullopt;
    }
  }
  const auto t = sys_days{ymd} + hours{h} + minutes{mi} + seconds{se} + microseconds{micros} - minutes{offset_min};
  return time_point{duration_cast<microseconds>(t.time_since_epoch())};
}

std::string pg_time(time_point t) { return format(t, true, 'T', true); }

std::string sqlite_time_ceil(time_point t) {
  const auto secs = ceil<seconds>(t);
  return format(time_point{duration_cast<microseconds>(secs.time_since_epoch())}, false, ' ', false);
}

}  // namespace detail

std::string format_time(time_point t) {
  std::string out = format(t, true, 'T', false);
  // Trim the fraction: none on SQLite (whole seconds), at most microseconds on PostgreSQL.
  while (out.back() == '0') out.pop_back();
  if (out.back() == '.') out.pop_back();
  return out + 'Z';
}

time_point parse_time(std::string_view text) {
  if (auto t = detail::try_parse_time(text)) return *t;
  throw error(errc::invalid_argument,
              fmt::format("invalid time \"{}\": expected RFC 3339, e.g. 2024-05-01T12:00:00Z or "
                          "2024-05-01T15:00:00+03:00",
                          text.substr(0, 64)));
}

}  // namespace spool::ops
