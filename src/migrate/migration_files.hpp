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

// Fills {{s}} (quoted schema and a dot, or nothing), {{schema_name}} (the
// schema as an SQL value, or current_schema()), {{ops}} (the quoted op-queue
// table) and {{ops_raw}} (its validated name, inside quoted index names).
// ops_table must already be validated; empty means "ops_queue".
std::string render_template(std::string sql, const std::string& schema, const std::string& ops_table = {});

// The qualified table a component's ledger rows name, as an SQL expression
// (ops: the configured table, default ops_queue).
std::string ledger_target_sql(engine kind, const std::string& component, const std::string& schema,
                              const std::string& ops_table = {});

// The op-queue table's name: ops_table, or "ops_queue" when empty.
[[nodiscard]] std::string ops_table_or_default(const std::string& ops_table);

}  // namespace spool::detail
