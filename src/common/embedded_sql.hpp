// Access to the SQL files under sql/, embedded at build time (rendered by
// common/text/sql_template.hpp).
#pragma once

#include <string>
#include <string_view>
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

}  // namespace spool::detail
