// Canonical JSON (outbox.md §2.4) and RFC 3339 times.
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/text/base64.hpp"
#include "common/text/rfc3339.hpp"
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

}  // namespace

std::string format_time(time_point t) { return spool::detail::format_rfc3339(t); }

time_point parse_time(std::string_view s) {
  // outbox.md §2.4: a zone is required (Z or ±HH:MM); a leap second reads as :59.
  const auto t = spool::detail::parse_rfc3339(s, {false, false, true});
  if (!t) throw error(errc::invalid_argument, fmt::format("\"{}\" is not an RFC 3339 time", s));
  if (*t < min_time() || *t > max_time()) {
    throw error(errc::invalid_argument, fmt::format("\"{}\" is outside 0001..9999", s), "timestamp_out_of_range");
  }
  return *t;
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
  out += spool::detail::base64_encode(e.payload);
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
  auto payload = spool::detail::base64_decode(str("payload"));
  if (!payload) throw error(errc::invalid_argument, "payload is not standard padded base64");
  e.payload = std::move(*payload);
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
