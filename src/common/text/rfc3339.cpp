#include "common/text/rfc3339.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

namespace spool::detail {

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

}  // namespace

std::optional<micros_time> parse_rfc3339(std::string_view s, rfc3339_dialect dialect) noexcept {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, se = 0;
  if (s.size() < 19 || !digits(s, 0, 4, y) || s[4] != '-' || !digits(s, 5, 2, mo) || s[7] != '-' ||
      !digits(s, 8, 2, d) || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') || !digits(s, 11, 2, h) ||
      s[13] != ':' || !digits(s, 14, 2, mi) || s[16] != ':' || !digits(s, 17, 2, se)) {
    return std::nullopt;
  }
  if (h > 23 || mi > 59 || se > (dialect.leap_second ? 60 : 59)) return std::nullopt;
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
  if (pos == s.size()) {
    if (!dialect.zone_optional) return std::nullopt;
  } else if ((s[pos] == 'Z' || s[pos] == 'z') && pos + 1 == s.size()) {
    // UTC
  } else if (s[pos] == '+' || s[pos] == '-') {
    int oh = 0, om = 0;
    if (!digits(s, pos + 1, 2, oh)) return std::nullopt;
    std::size_t mpos = pos + 3;
    if (mpos < s.size() && s[mpos] == ':') {
      ++mpos;
    } else if (!dialect.compact_offset) {
      return std::nullopt;
    }
    if (!digits(s, mpos, 2, om) || mpos + 2 != s.size() || oh > 23 || om > 59) return std::nullopt;
    offset_min = (oh * 60 + om) * (s[pos] == '-' ? -1 : 1);
  } else {
    return std::nullopt;
  }
  const auto t = sys_days{ymd} + hours{h} + minutes{mi} + seconds{std::min(se, 59)} + microseconds{micros} -
                 minutes{offset_min};
  return micros_time{duration_cast<microseconds>(t.time_since_epoch())};
}

std::string format_rfc3339(micros_time t, rfc3339_style style) {
  const auto day = floor<days>(t);
  const year_month_day ymd{day};
  const hh_mm_ss<microseconds> hms{t - day};
  std::string out =
      fmt::format("{:04}-{:02}-{:02}{}{:02}:{:02}:{:02}", static_cast<int>(ymd.year()),
                  static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()), style.separator,
                  hms.hours().count(), hms.minutes().count(), hms.seconds().count());
  if (style.digits != rfc3339_style::fraction::none) {
    std::string f = fmt::format(".{:06}", hms.subseconds().count());
    if (style.digits == rfc3339_style::fraction::trimmed) {
      while (f.back() == '0') f.pop_back();
      if (f == ".") f.clear();
    }
    out += f;
  }
  if (style.zulu) out += 'Z';
  return out;
}

}  // namespace spool::detail
