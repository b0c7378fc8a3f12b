#include "ops/cursor.hpp"

#include <fmt/format.h>

#include "ops/time.hpp"
#include "ops/validate.hpp"
#include "spool/error.hpp"

namespace spool::ops::detail {

namespace {

constexpr std::string_view alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
constexpr std::string_view prefix = "c1.";

std::string b64url(std::string_view in) {
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const auto n = (static_cast<unsigned char>(in[i]) << 16) | (static_cast<unsigned char>(in[i + 1]) << 8) |
                   static_cast<unsigned char>(in[i + 2]);
    for (int s : {18, 12, 6, 0}) out += alphabet[(n >> s) & 63];
  }
  if (i + 1 == in.size()) {
    const auto n = static_cast<unsigned char>(in[i]) << 16;
    for (int s : {18, 12}) out += alphabet[(n >> s) & 63];
  } else if (i + 2 == in.size()) {
    const auto n = (static_cast<unsigned char>(in[i]) << 16) | (static_cast<unsigned char>(in[i + 1]) << 8);
    for (int s : {18, 12, 6}) out += alphabet[(n >> s) & 63];
  }
  return out;
}

std::optional<std::string> unb64url(std::string_view in) {
  if (in.size() % 4 == 1) return std::nullopt;
  std::string out;
  std::uint32_t buf = 0;
  int bits = 0;
  for (char c : in) {
    const auto pos = alphabet.find(c);
    if (pos == std::string_view::npos) return std::nullopt;
    buf = (buf << 6) | static_cast<std::uint32_t>(pos);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((buf >> bits) & 0xff);
    }
  }
  return out;
}

[[noreturn]] void malformed(std::string_view cursor) {
  throw error(
      errc::invalid_argument,
      fmt::format("malformed cursor \"{}\": pass the next_cursor of a previous page", cursor.substr(0, 80)));
}

}  // namespace

std::string encode_cursor(const cursor_key& key) {
  return std::string(prefix) + b64url(key.enqueued_at) + "." + b64url(key.id);
}

std::optional<cursor_key> decode_cursor(std::string_view cursor) {
  if (cursor.empty()) return std::nullopt;
  if (cursor.substr(0, prefix.size()) != prefix) malformed(cursor);
  const auto rest = cursor.substr(prefix.size());
  const auto dot = rest.find('.');
  if (dot == std::string_view::npos) malformed(cursor);
  auto at = unb64url(rest.substr(0, dot));
  auto id = unb64url(rest.substr(dot + 1));
  if (!at || !id || id->empty() || !try_parse_time(*at)) malformed(cursor);
  // The id goes to the database as bound text: only what an op id can be
  // (a NUL would cut it short in libpq, invalid UTF-8 fail as a database error).
  try {
    check_name("id", *id);
  } catch (const error&) {
    malformed(cursor);
  }
  return cursor_key{std::move(*at), std::move(*id)};
}

}  // namespace spool::ops::detail
