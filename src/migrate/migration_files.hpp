// The embedded migration files (sql/<engine>/<component>/NNNN_name.sql),
// parsed into versions with their Up and Down sections.
#pragma once

#include <string>
#include <vector>

#include "spool/database.hpp"
#include "spool/migrate.hpp"

namespace spool::sqlite::detail {
class connection;
}

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

struct outbox_names;

// Fills {{s}} (quoted schema and a dot, or nothing), {{schema_name}} (the
// schema as an SQL value, or current_schema()), {{ops}} (the quoted op-queue
// table), {{ops_raw}} (its validated name, inside quoted index names),
// {{outbox}} / {{outbox_audit}} (the quoted outbox tables) and {{outbox_raw}}
// (the outbox table's validated name). ops_table and outbox must already be
// validated; empty ops_table means "ops_queue", a null outbox the defaults.
std::string render_template(std::string sql, const std::string& schema, const std::string& ops_table = {},
                            const outbox_names* outbox = nullptr);

// The qualified table a component's ledger rows name, as an SQL expression
// (ops: the configured table, default ops_queue; outbox: outbox->table, by
// default outbox_messages).
std::string ledger_target_sql(engine kind, const std::string& component, const std::string& schema,
                              const std::string& ops_table = {}, const outbox_names* outbox = nullptr);

// The op-queue table's name: ops_table, or "ops_queue" when empty.
[[nodiscard]] std::string ops_table_or_default(const std::string& ops_table);

// The outbox's table names for templates ({{outbox}}, {{outbox_raw}},
// {{outbox_audit}}) and its ledger target, taken from migrate_options and
// passed explicitly to render_template / ledger_target_sql.
struct outbox_names {
  std::string table = "outbox_messages";
  std::string audit_table = "outbox_messages_replay_audit";
};
// Validates options.outbox_table / outbox_audit_table (invalid_identifier)
// and fills the defaults.
[[nodiscard]] outbox_names outbox_names_of(const std::string& table, const std::string& audit_table);

// spool::migrate on one SQLite connection (an adopted handle), under BEGIN IMMEDIATE.
std::vector<applied_migration> migrate_sqlite_connection(sqlite::detail::connection& conn,
                                                         const migrate_options& options);

}  // namespace spool::detail
