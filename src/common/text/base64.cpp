#include "common/text/base64.hpp"

#include <array>
#include <cstdint>

namespace spool::detail {

namespace {

constexpr std::string_view standard_alphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr std::string_view url_alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

// Each byte's six-bit value in the alphabet, -1 for bytes outside it.
constexpr std::array<int, 256> reverse(std::string_view alphabet) {
  std::array<int, 256> map{};
  for (auto& v : map) v = -1;
  for (std::size_t k = 0; k < alphabet.size(); ++k)
    map[static_cast<unsigned char>(alphabet[k])] = static_cast<int>(k);
  return map;
}

constexpr auto standard_values = reverse(standard_alphabet);
constexpr auto url_values = reverse(url_alphabet);

std::string encode(std::string_view bytes, std::string_view alphabet, bool pad) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const std::uint32_t v = (static_cast<unsigned char>(bytes[i]) << 16) |
                            (static_cast<unsigned char>(bytes[i + 1]) << 8) |
                            static_cast<unsigned char>(bytes[i + 2]);
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

// Bits left over after the last whole byte are dropped unchecked: both
// cursors and payloads have always decoded that way.
std::optional<std::string> decode(std::string_view text, const std::array<int, 256>& values) {
  if (text.size() % 4 == 1) return std::nullopt;
  std::string out;
  out.reserve(text.size() / 4 * 3 + 2);
  std::uint32_t acc = 0;
  int bits = 0;
  for (char ch : text) {
    const int v = values[static_cast<unsigned char>(ch)];
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  return out;
}

}  // namespace

std::string base64_encode(std::string_view bytes) { return encode(bytes, standard_alphabet, true); }

std::optional<std::string> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::size_t pads = 0;
  while (pads < 2 && pads < text.size() && text[text.size() - 1 - pads] == '=') ++pads;
  text.remove_suffix(pads);
  return decode(text, standard_values);
}

std::string base64url_encode(std::string_view bytes) { return encode(bytes, url_alphabet, false); }

std::optional<std::string> base64url_decode(std::string_view text) { return decode(text, url_values); }

}  // namespace spool::detail
