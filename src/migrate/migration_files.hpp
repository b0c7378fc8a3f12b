// The embedded migration files (sql/<engine>/<component>/NNNN_name.sql),
// parsed into versions with their Up and Down sections.
#pragma once

#include <string>
#include <vector>

#include "spool/database.hpp"

namespace spool::detail {

struct migration_file {
  std::string component;
  int version = 0;
  std::string name;          // file name without extension
  std::string checksum;      // SHA-256 of the file text, hex
  bool transactional = true;                  // false: `-- spool:no-transaction`
  std::vector<std::string> rebuild_invalid;   // `-- spool:rebuild-invalid idx…`
  std::string up, down;
};

// Versions of one component for one engine, in version order.
std::vector<migration_file> migration_files(engine kind, const std::string& component);

// Every component that ships migrations, in dependency order.
const std::vector<std::string>& all_components();

// Splits a no-transaction section into statements (each ends with ';' at a line end).
std::vector<std::string> split_statements(const std::string& sql);

// Fills {{s}} (quoted schema and a dot, or nothing) and {{schema_name}} (the
// schema as an SQL value, or current_schema()).
std::string render_template(std::string sql, const std::string& schema);

// The qualified table a component's ledger rows name, as an SQL expression.
std::string ledger_target_sql(engine kind, const std::string& component, const std::string& schema);

}  // namespace spool::detail
