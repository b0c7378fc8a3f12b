#include "ops/validate.hpp"

#include <fmt/format.h>
#include <sys/random.h>

#include <cerrno>
#include <cstring>
#include <set>

#include "common/text/utf8.hpp"
#include "spool/error.hpp"

namespace spool::ops::detail {

namespace {

// Shows a caller's value in a message: printable ASCII as is, the rest escaped.
std::string shown(std::string_view v) {
  std::string out;
  for (unsigned char c : v.substr(0, 80)) {
    if (c >= 0x20 && c < 0x7f && c != '"') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
  }
  if (v.size() > 80) out += "…";
  return out;
}

bool has_nul(const nlohmann::json& j) {
  if (j.is_string()) return j.get_ref<const std::string&>().find('\0') != std::string::npos;
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) {
      if (k.find('\0') != std::string::npos || has_nul(v)) return true;
    }
  } else if (j.is_array()) {
    for (const auto& v : j) {
      if (has_nul(v)) return true;
    }
  }
  return false;
}

}  // namespace

std::string random_hex(std::size_t bytes) {
  std::string raw(bytes, '\0');
  std::size_t got = 0;
  while (got < bytes) {
    const ssize_t n = ::getrandom(raw.data() + got, bytes - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw error(errc::unavailable, fmt::format("the OS random source failed: {}", std::strerror(errno)),
                  "entropy_unavailable");
    }
    got += static_cast<std::size_t>(n);
  }
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes * 2);
  for (unsigned char c : raw) {
    out += hex[c >> 4];
    out += hex[c & 0xf];
  }
  return out;
}

void check_name(std::string_view what, std::string_view value) {
  auto reject = [&](std::string_view why) {
    throw error(errc::invalid_argument, fmt::format("invalid {} \"{}\": {}", what, shown(value), why));
  };
  if (value.empty()) reject("must not be empty");
  if (value.size() > 255) reject("longer than 255 bytes");
  for (std::size_t i = 0; i < value.size();) {
    const std::size_t n = spool::detail::utf8_sequence(value, i);
    if (n == 0) reject("not valid UTF-8");
    const char32_t cp = spool::detail::utf8_code_point(value, i, n);
    if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f)) reject("contains a control character");
    i += n;
  }
}

std::string encode_payload(const nlohmann::json& payload, std::size_t max_bytes) {
  if (payload.is_null()) return "{}";
  if (!payload.is_object()) {
    throw error(errc::invalid_argument, fmt::format("payload must be a JSON object, got {}", payload.type_name()));
  }
  if (has_nul(payload)) {
    throw error(errc::invalid_argument, "payload contains U+0000 in a string or key, which jsonb cannot store");
  }
  std::string text;
  try {
    text = payload.dump();
  } catch (const nlohmann::json::type_error& e) {
    throw error(errc::invalid_argument, fmt::format("payload is not valid UTF-8: {}", e.what()));
  }
  if (text.size() > max_bytes) {
    throw error(errc::invalid_argument,
                fmt::format("payload of {} bytes exceeds max_payload_bytes {}", text.size(), max_bytes),
                "payload_too_large");
  }
  return text;
}

std::vector<insert_item> prepare_batch(const std::vector<new_op>& ops, std::size_t max_payload_bytes,
                                       bool index_names) {
  std::vector<insert_item> out;
  out.reserve(ops.size());
  std::set<std::string_view> ids;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const new_op& o = ops[i];
    try {
      insert_item item;
      check_name("type", o.type);
      item.type = o.type;
      if (o.id.empty()) {
        item.id = random_hex(16);
      } else {
        check_name("id", o.id);
        item.id = o.id;
        item.caller_id = true;
      }
      if (o.max_attempts < 0) {
        throw error(errc::invalid_argument, fmt::format("max_attempts must not be negative, got {}", o.max_attempts));
      }
      item.max_attempts = o.max_attempts == 0 ? 3 : o.max_attempts;
      item.priority = o.priority;
      if (o.not_before && o.delay) {
        throw error(errc::invalid_argument, "not_before and delay exclude each other");
      }
      if (o.delay && o.delay->count() < 0) {
        throw error(errc::invalid_argument, fmt::format("delay must not be negative, got {} µs", o.delay->count()));
      }
      item.not_before = o.not_before;
      item.delay = o.delay;
      if (!o.dedup_key.empty()) {
        if (!spool::detail::is_utf8(o.dedup_key) || o.dedup_key.find('\0') != std::string::npos) {
          throw error(errc::invalid_argument,
                      fmt::format("invalid dedup_key \"{}\": not valid UTF-8 or contains NUL", shown(o.dedup_key)));
        }
        item.dedup_key = o.dedup_key;
      }
      item.payload = encode_payload(o.payload, max_payload_bytes);
      out.push_back(std::move(item));
    } catch (const error& e) {
      if (!index_names) throw;
      throw error(e, fmt::format("op {} of the batch: {}", i, e.what()));
    }
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (!out[i].caller_id) continue;
    if (!ids.insert(out[i].id).second) {
      throw error(errc::invalid_argument,
                  fmt::format("op {} of the batch: id \"{}\" appears twice in the batch", i, shown(out[i].id)));
    }
  }
  return out;
}

}  // namespace spool::ops::detail
