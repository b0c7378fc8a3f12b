#include "common/embedded_sql.hpp"

#include <stdexcept>
#include <string>

#include "common/identifier.hpp"

namespace spool::detail {

std::string_view embedded_sql(std::string_view path) {
  for (const auto& f : embedded_sql_files()) {
    if (f.path == path) return f.text;
  }
  throw std::logic_error("embedded SQL file missing: " + std::string(path));
}

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
