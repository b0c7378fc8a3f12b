#include "common/embedded_sql.hpp"

#include <stdexcept>
#include <string>

namespace spool::detail {

std::string_view embedded_sql(std::string_view path) {
  for (const auto& f : embedded_sql_files()) {
    if (f.path == path) return f.text;
  }
  throw std::logic_error("embedded SQL file missing: " + std::string(path));
}

}  // namespace spool::detail
