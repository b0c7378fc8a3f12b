// The one identifier rule for every configured SQL name (outbox.md §3.1,
// DESIGN.md "Names and identifiers").
#pragma once

#include <string>
#include <string_view>

namespace spool::detail {

// Throws error(invalid_argument, reason invalid_identifier) naming the setting
// and the value unless value is 1..max_bytes of [a-z0-9_], not starting with a
// digit, "pg_" or "sqlite_".
void validate_identifier(std::string_view setting, std::string_view value, std::size_t max_bytes = 63);

// "name" with embedded quotes doubled; only ever applied to validated names.
[[nodiscard]] std::string quote_identifier(std::string_view value);

}  // namespace spool::detail
