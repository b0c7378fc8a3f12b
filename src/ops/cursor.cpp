#include "ops/cursor.hpp"

#include <fmt/format.h>

#include "common/text/base64.hpp"
#include "ops/time.hpp"
#include "ops/validate.hpp"
#include "spool/error.hpp"

namespace spool::ops::detail {

namespace {

constexpr std::string_view prefix = "c1.";

[[noreturn]] void malformed(std::string_view cursor) {
  throw error(
      errc::invalid_argument,
      fmt::format("malformed cursor \"{}\": pass the next_cursor of a previous page", cursor.substr(0, 80)));
}

}  // namespace

std::string encode_cursor(const cursor_key& key) {
  return std::string(prefix) + spool::detail::base64url_encode(key.enqueued_at) + "." +
         spool::detail::base64url_encode(key.id);
}

std::optional<cursor_key> decode_cursor(std::string_view cursor) {
  if (cursor.empty()) return std::nullopt;
  if (cursor.substr(0, prefix.size()) != prefix) malformed(cursor);
  const auto rest = cursor.substr(prefix.size());
  const auto dot = rest.find('.');
  if (dot == std::string_view::npos) malformed(cursor);
  auto at = spool::detail::base64url_decode(rest.substr(0, dot));
  auto id = spool::detail::base64url_decode(rest.substr(dot + 1));
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
