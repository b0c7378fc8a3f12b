// Access to the SQL files under sql/, embedded at build time.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace spool::detail {

struct embedded_sql_file {
  std::string_view path;  // relative to sql/, e.g. "postgres/mq/claim.sql"
  std::string_view text;
};

// All embedded files, sorted by path. Immutable; safe from any thread.
const std::vector<embedded_sql_file>& embedded_sql_files();

// The text of one file; throws std::logic_error when it is missing (a build bug).
std::string_view embedded_sql(std::string_view path);

// The one template renderer of the embedded SQL: every placeholder (given
// with its braces, "{{s}}") replaced by its value, key by key in the order
// given; a value is inserted verbatim and not scanned again for its key, so
// identifiers must be validated and quoted before. Pure: thread-safe.
[[nodiscard]] std::string fill_placeholders(
    std::string sql, std::initializer_list<std::pair<std::string_view, std::string_view>> values);

// The value of {{s}}: the quoted schema and a dot, or nothing for the
// connection's current schema. Errors: as quote_identifier.
[[nodiscard]] std::string schema_prefix(const std::string& schema);

}  // namespace spool::detail
