#include "common/identifier.hpp"

#include <fmt/format.h>

#include "spool/error.hpp"

namespace spool::detail {

void validate_identifier(std::string_view setting, std::string_view value, std::size_t max_bytes) {
  auto reject = [&](std::string_view why) {
    // The value is printed escaped: it may be hostile.
    std::string shown;
    for (unsigned char c : value.substr(0, 80)) {
      if (c >= 0x20 && c < 0x7f && c != '"') {
        shown += static_cast<char>(c);
      } else {
        shown += fmt::format("\\x{:02x}", c);
      }
    }
    throw error(errc::invalid_argument, fmt::format("invalid {} \"{}\": {}", setting, shown, why), "invalid_identifier");
  };
  if (value.empty()) reject("must not be empty");
  if (value.size() > max_bytes) reject(fmt::format("longer than {} bytes", max_bytes));
  for (char c : value) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) reject("only [a-z0-9_] are allowed");
  }
  if (value.front() >= '0' && value.front() <= '9') reject("must not start with a digit");
  if (value.substr(0, 3) == "pg_" || value.substr(0, 7) == "sqlite_") reject("must not start with pg_ or sqlite_");
}

std::string quote_identifier(std::string_view value) {
  std::string out = "\"";
  for (char c : value) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

}  // namespace spool::detail
