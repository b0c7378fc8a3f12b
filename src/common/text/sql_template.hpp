// The one renderer of Spool's SQL templates (the files under sql/, embedded
// at build time; see common/embedded_sql.hpp): placeholders such as {{s}} or
// {{t}} replaced by validated, quoted identifiers.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace spool::detail {

// Every placeholder (given with its braces, "{{s}}") replaced by its value,
// key by key in the order given; a value is inserted verbatim and not
// scanned again for its key, so identifiers must be validated and quoted
// before. Pure: thread-safe.
[[nodiscard]] std::string fill_placeholders(
    std::string sql, std::initializer_list<std::pair<std::string_view, std::string_view>> values);

// The value of {{s}}: the quoted schema and a dot, or nothing for the
// connection's current schema. Errors: as quote_identifier.
[[nodiscard]] std::string schema_prefix(const std::string& schema);

}  // namespace spool::detail
