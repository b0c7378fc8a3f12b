#include "common/text/sql_template.hpp"

#include "common/identifier.hpp"

namespace spool::detail {

std::string fill_placeholders(std::string sql,
                              std::initializer_list<std::pair<std::string_view, std::string_view>> values) {
  for (const auto& [key, value] : values) {
    for (std::size_t pos = 0; (pos = sql.find(key, pos)) != std::string::npos; pos += value.size()) {
      sql.replace(pos, key.size(), value);
    }
  }
  return sql;
}

std::string schema_prefix(const std::string& schema) {
  return schema.empty() ? std::string() : quote_identifier(schema) + ".";
}

}  // namespace spool::detail
