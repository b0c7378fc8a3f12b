// Canonical JSON (outbox.md §2.4) and RFC 3339 times.
#include <date/date.h>
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "outbox/text.hpp"
#include "spool/error.hpp"
#include "spool/outbox/envelope.hpp"

namespace spool::outbox {

namespace {

void append_string(std::string& out, std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  out += '"';
  for (char ch : s) {
    const auto u = static_cast<unsigned char>(ch);
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\t': out += "\\t"; break;
      case '\n': out += "\\n"; break;
      case '\f': out += "\\f"; break;
      case '\r': out += "\\r"; break;
      default:
        if (u < 0x20) {
          out += "\\u00";
          out += hex[u >> 4];
          out += hex[u & 15];
        } else {
          out += ch;
        }
    }
  }
  out += '"';
}

[[noreturn]] void bad_time(std::string_view text) {
  throw error(errc::invalid_argument, fmt::format("\"{}\" is not an RFC 3339 time", text));
}

}  // namespace

std::string format_time(time_point t) { return date::format("%FT%TZ", t); }

time_point parse_time(std::string_view s) {
  // YYYY-MM-DDTHH:MM:SS[.f…](Z|±HH:MM)
  auto digits = [&](std::size_t pos, std::size_t n) -> int {
    if (pos + n > s.size()) bad_time(s);
    int v = 0;
    for (std::size_t i = pos; i < pos + n; ++i) {
      if (s[i] < '0' || s[i] > '9') bad_time(s);
      v = v * 10 + (s[i] - '0');
    }
    return v;
  };
  if (s.size() < 20 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') || s[13] != ':' ||
      s[16] != ':') {
    bad_time(s);
  }
  const int y = digits(0, 4), mo = digits(5, 2), d = digits(8, 2), h = digits(11, 2), mi = digits(14, 2),
            sec = digits(17, 2);
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
    if (n == 0) bad_time(s);
    for (int k = n; k < 6; ++k) micros *= 10;  // finer digits are truncated toward the past
  }
  if (pos >= s.size()) bad_time(s);
  std::chrono::minutes offset{0};
  if (s[pos] == 'Z' || s[pos] == 'z') {
    ++pos;
  } else if (s[pos] == '+' || s[pos] == '-') {
    if (pos + 6 != s.size() || s[pos + 3] != ':') bad_time(s);
    offset = std::chrono::hours(digits(pos + 1, 2)) + std::chrono::minutes(digits(pos + 4, 2));
    if (s[pos] == '-') offset = -offset;
    pos += 6;
  } else {
    bad_time(s);
  }
  if (pos != s.size()) bad_time(s);
  const date::year_month_day ymd{date::year(y), date::month(static_cast<unsigned>(mo)),
                                 date::day(static_cast<unsigned>(d))};
  if (!ymd.ok() || h > 23 || mi > 59 || sec > 60) bad_time(s);
  const auto t = time_point(date::sys_days(ymd).time_since_epoch()) + std::chrono::hours(h) +
                 std::chrono::minutes(mi) + std::chrono::seconds(std::min(sec, 59)) +
                 std::chrono::microseconds(micros) - offset;
  if (t < min_time() || t > max_time()) {
    throw error(errc::invalid_argument, fmt::format("\"{}\" is outside 0001..9999", s), "timestamp_out_of_range");
  }
  return t;
}

std::string canonical_json(const envelope& e) {
  if (!e.created_at) {
    throw error(errc::invalid_argument, "canonical JSON needs created_at (set at insert)", "created_at_required");
  }
  std::string out = "{\"id\":";
  append_string(out, e.id);
  out += ",\"topic\":";
  append_string(out, e.topic);
  out += ",\"payload\":\"";
  out += detail::base64_encode(e.payload);
  out += "\",\"payload_version\":";
  out += std::to_string(e.payload_version);
  bool any = false;
  // std::map orders keys bytewise (std::string compares as unsigned char).
  for (const auto& [k, v] : e.metadata) {
    if (k.empty()) continue;
    out += any ? "," : ",\"metadata\":{";
    any = true;
    append_string(out, k);
    out += ':';
    append_string(out, v);
  }
  if (any) out += '}';
  out += ",\"ordering_key\":";
  append_string(out, e.ordering_key);
  out += ",\"idempotency_key\":";
  append_string(out, e.idempotency_key);
  out += ",\"created_at\":\"";
  out += format_time(*e.created_at);
  out += "\"}";
  return out;
}

envelope parse_canonical_json(std::string_view text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& ex) {
    throw error(errc::invalid_argument, fmt::format("canonical JSON: {}", ex.what()));
  }
  if (!j.is_object()) throw error(errc::invalid_argument, "canonical JSON: not an object");
  auto str = [&](const char* key) -> std::string {
    auto it = j.find(key);
    if (it == j.end() || !it->is_string()) {
      throw error(errc::invalid_argument, fmt::format("canonical JSON: \"{}\" must be a string", key));
    }
    return it->get<std::string>();
  };
  envelope e;
  e.id = str("id");
  e.topic = str("topic");
  e.payload = detail::base64_decode(str("payload"));
  const auto v = j.find("payload_version");
  if (v == j.end() || !v->is_number_unsigned() || v->get<std::uint64_t>() < 1 || v->get<std::uint64_t>() > 65535) {
    throw error(errc::invalid_argument, "canonical JSON: \"payload_version\" must be 1..65535");
  }
  e.payload_version = static_cast<std::uint16_t>(v->get<std::uint64_t>());
  if (auto m = j.find("metadata"); m != j.end()) {
    if (!m->is_object()) throw error(errc::invalid_argument, "canonical JSON: \"metadata\" must be an object");
    for (const auto& [k, val] : m->items()) {
      if (!val.is_string()) throw error(errc::invalid_argument, "canonical JSON: metadata values must be strings");
      e.metadata[k] = val.get<std::string>();
    }
  }
  e.ordering_key = str("ordering_key");
  e.idempotency_key = str("idempotency_key");
  e.created_at = parse_time(str("created_at"));
  return e;
}

}  // namespace spool::outbox
