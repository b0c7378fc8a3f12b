#include "outbox/text.hpp"

#include "common/text/utf8.hpp"
#include "spool/error.hpp"

namespace spool::outbox::detail {

bool valid_utf8(std::string_view s) noexcept {
  return spool::detail::is_utf8(s) && s.find('\0') == std::string_view::npos;
}

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
      clean += spool::detail::utf8_replacement;
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
