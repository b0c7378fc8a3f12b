#include "outbox/text.hpp"

#include <array>

#include "common/utf8.hpp"
#include "spool/error.hpp"

namespace spool::outbox::detail {

namespace {

constexpr char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr char b64url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

std::string encode(std::string_view bytes, const char* alphabet, bool pad) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const std::uint32_t v = (static_cast<unsigned char>(bytes[i]) << 16) |
                            (static_cast<unsigned char>(bytes[i + 1]) << 8) | static_cast<unsigned char>(bytes[i + 2]);
    out += alphabet[(v >> 18) & 63];
    out += alphabet[(v >> 12) & 63];
    out += alphabet[(v >> 6) & 63];
    out += alphabet[v & 63];
  }
  const std::size_t rest = bytes.size() - i;
  if (rest > 0) {
    std::uint32_t v = static_cast<unsigned char>(bytes[i]) << 16;
    if (rest == 2) v |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    out += alphabet[(v >> 18) & 63];
    out += alphabet[(v >> 12) & 63];
    if (rest == 2) out += alphabet[(v >> 6) & 63];
    if (pad) out += rest == 2 ? "=" : "==";
  }
  return out;
}

bool decode(std::string_view text, const char* alphabet, bool padded, std::string& out) {
  std::array<int, 256> map{};
  map.fill(-1);
  for (int k = 0; k < 64; ++k) map[static_cast<unsigned char>(alphabet[k])] = k;
  if (padded) {
    if (text.size() % 4 != 0) return false;
    std::size_t pads = 0;
    while (pads < 2 && pads < text.size() && text[text.size() - 1 - pads] == '=') ++pads;
    text.remove_suffix(pads);
  }
  if (text.size() % 4 == 1) return false;
  out.clear();
  std::uint32_t acc = 0;
  int bits = 0;
  for (char ch : text) {
    const int v = map[static_cast<unsigned char>(ch)];
    if (v < 0) return false;
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  return true;
}

}  // namespace

bool valid_utf8(std::string_view s) noexcept {
  return spool::detail::is_utf8(s) && s.find('\0') == std::string_view::npos;
}

std::string base64_encode(std::string_view bytes) { return encode(bytes, b64, true); }

std::string base64_decode(std::string_view text) {
  std::string out;
  if (!decode(text, b64, true, out)) throw error(errc::invalid_argument, "payload is not standard padded base64");
  return out;
}

std::string base64url_encode(std::string_view bytes) { return encode(bytes, b64url, false); }
bool base64url_decode(std::string_view text, std::string& out) { return decode(text, b64url, false, out); }

std::string hex_encode(std::string_view bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char ch : bytes) {
    const auto u = static_cast<unsigned char>(ch);
    out += digits[u >> 4];
    out += digits[u & 15];
  }
  return out;
}

std::string hex_decode(std::string_view hex) {
  auto val = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  if (hex.size() % 2 != 0) throw error(errc::invalid_state, "malformed hex from the database", "malformed_row");
  std::string out;
  out.reserve(hex.size() / 2);
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    const int hi = val(hex[i]), lo = val(hex[i + 1]);
    if (hi < 0 || lo < 0) throw error(errc::invalid_state, "malformed hex from the database", "malformed_row");
    out += static_cast<char>(hi * 16 + lo);
  }
  return out;
}

std::string sanitize_error_text(std::string_view text, std::size_t max_bytes) {
  // 1. Well-formed UTF-8, control characters as spaces.
  std::string clean;
  clean.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = spool::detail::utf8_sequence(text, i);
    if (n == 0 || text[i] == '\0') {
      clean += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
      continue;
    }
    const auto c = static_cast<unsigned char>(text[i]);
    if (n == 1 && (c < 0x20 || c == 0x7F)) {
      clean += ' ';
    } else if (n == 2 && c == 0xC2 && static_cast<unsigned char>(text[i + 1]) < 0xA0) {
      clean += ' ';  // C1 controls
    } else {
      clean.append(text.substr(i, n));
    }
    i += n;
  }
  // 2. URL credentials: scheme://user:pass@host → scheme://***@host.
  std::string out;
  out.reserve(clean.size());
  for (std::size_t i = 0; i < clean.size();) {
    const std::size_t sep = clean.find("://", i);
    if (sep == std::string::npos) {
      out.append(clean, i, std::string::npos);
      break;
    }
    out.append(clean, i, sep + 3 - i);
    std::size_t j = sep + 3;
    std::size_t end = j;
    while (end < clean.size() && clean[end] != '/' && clean[end] != ' ' && clean[end] != '@' && clean[end] != '?' &&
           clean[end] != '#') {
      ++end;
    }
    if (end < clean.size() && clean[end] == '@' && end > j) {
      out += "***";
      i = end;
    } else {
      i = j;
    }
  }
  // 3. Cut on a code-point boundary, ending in an ellipsis.
  if (out.size() <= max_bytes) return out;
  static constexpr std::string_view ellipsis = "\xE2\x80\xA6";
  out = spool::detail::utf8_truncate(out, max_bytes >= ellipsis.size() ? max_bytes - ellipsis.size() : 0);
  out += ellipsis;
  return out;
}

}  // namespace spool::outbox::detail
