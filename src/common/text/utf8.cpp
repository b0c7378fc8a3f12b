#include "common/text/utf8.hpp"

#include <cstdint>
#include <cstring>

namespace spool::detail {

char32_t utf8_code_point(std::string_view s, std::size_t i, std::size_t n) noexcept {
  const auto b = [&](std::size_t k) { return static_cast<char32_t>(static_cast<unsigned char>(s[i + k])); };
  switch (n) {
    case 1:
      return b(0);
    case 2:
      return ((b(0) & 0x1F) << 6) | (b(1) & 0x3F);
    case 3:
      return ((b(0) & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F);
    default:
      return ((b(0) & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
  }
}

bool is_utf8(std::string_view s) noexcept {
  for (std::size_t i = 0; i < s.size();) {
    // Eight ASCII bytes at a time: every message body and array a batch
    // sends is checked here, and most of it is ASCII (issue 13's profile).
    if (s.size() - i >= 8) {
      std::uint64_t word = 0;
      std::memcpy(&word, s.data() + i, 8);
      if ((word & 0x8080808080808080ULL) == 0) {
        i += 8;
        continue;
      }
    }
    const std::size_t n = utf8_sequence(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string utf8_truncate(std::string_view s, std::size_t max_bytes) {
  if (s.size() <= max_bytes) return std::string(s);
  const auto is_cont = [&](std::size_t k) { return (static_cast<unsigned char>(s[k]) & 0xC0) == 0x80; };
  // Back over at most three continuation bytes to the lead byte of the last
  // sequence that starts before the cut; drop it when it does not fit whole.
  std::size_t lead = max_bytes;
  while (lead > 0 && max_bytes - lead < 3 && is_cont(lead - 1)) --lead;
  std::size_t cut = max_bytes;
  if (lead > 0) {
    const auto c = static_cast<unsigned char>(s[lead - 1]);
    const std::size_t need = c >= 0xF8 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    if (need > max_bytes - (lead - 1)) cut = lead - 1;
  }
  return std::string(s.substr(0, cut));
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    const char b[2] = {static_cast<char>(0xC0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3F))};
    out.append(b, 2);
  } else if (cp < 0x10000) {
    const char b[3] = {static_cast<char>(0xE0 | (cp >> 12)), static_cast<char>(0x80 | ((cp >> 6) & 0x3F)),
                       static_cast<char>(0x80 | (cp & 0x3F))};
    out.append(b, 3);
  } else {
    const char b[4] = {static_cast<char>(0xF0 | (cp >> 18)), static_cast<char>(0x80 | ((cp >> 12) & 0x3F)),
                       static_cast<char>(0x80 | ((cp >> 6) & 0x3F)), static_cast<char>(0x80 | (cp & 0x3F))};
    out.append(b, 4);
  }
}

std::string utf8_repair(std::string_view s, bool drop_nul) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_sequence(s, i);
    if (n == 0) {
      out += utf8_replacement;
      ++i;
      continue;
    }
    if (!(drop_nul && s[i] == '\0')) out.append(s.substr(i, n));
    i += n;
  }
  return out;
}

}  // namespace spool::detail
