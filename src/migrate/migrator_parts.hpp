// The migrator's parts (DESIGN.md, Migrations): what both engines' runners
// share (the options' table names, rendering, the ledger, checksums) and the
// two runners, one file each (migrate_postgres.cpp, migrate_sqlite.cpp).
// migrator.cpp is the one place that picks a runner by engine.
// Thread safety: pure functions; the runners serialise themselves (advisory
// lock / BEGIN IMMEDIATE).
#pragma once

#include <fmt/format.h>

#include <map>
#include <string>
#include <vector>

#include "migrate/migration_files.hpp"
#include "spool/migrate.hpp"

namespace spool::detail {
class database_impl;
}
namespace spool::sqlite::detail {
class connection;
}

namespace spool::detail::migration {

// The configured table names every template of one call renders with,
// validated once from the options and passed explicitly (no global state).
struct targets {
  std::string ops_table;  // empty: ops_queue
  detail::outbox_names outbox;
};

// Every component when none is named; unknown names are invalid_argument.
std::vector<std::string> selected_components(const migrate_options& o);
// Validates the schema and table names (invalid_identifier).
targets validate_options(const migrate_options& o);
std::string render(const std::string& sql, const std::string& schema, const targets& t);
std::string target_sql(engine kind, const std::string& component, const std::string& schema, const targets& t);
// The ledger row of one applied file (its applied_at in the engine's form).
std::string ledger_insert(engine kind, const migration_file& m, const std::string& schema, const targets& t);
// invalid_state (migration_checksum_mismatch) when a recorded version's checksum differs from the shipped one.
void check_checksums(const std::vector<migration_file>& files, const std::map<int, std::string>& applied);

// Versions already recorded, by version → checksum.
template <class Query>
std::map<int, std::string> applied_versions(Query&& query, engine kind, const std::string& component,
                                            const std::string& schema, const targets& t) {
  std::map<int, std::string> out;
  for (const auto& r : query(render(
           fmt::format("SELECT version, checksum FROM {{{{s}}}}spool_schema_migrations WHERE component = '{}' AND "
                       "target = {}",
                       component, target_sql(kind, component, schema, t)),
           schema, t))) {
    out[std::stoi(*r[0])] = *r[1];
  }
  return out;
}

// PostgreSQL (migrate_postgres.cpp): under the advisory lock, each pending
// file in its own transaction (or statement by statement when marked
// no-transaction), creating the schema when configured.
std::vector<applied_migration> migrate_postgres(database_impl& db, const std::vector<std::string>& components,
                                                const std::string& configured_schema, const targets& t);
// Deletes the ledger row (del) and runs m's Down section, under the lock.
void revert_postgres(database_impl& db, const std::string& del, const migration_file& m, const std::string& schema,
                     const targets& t);

// SQLite (migrate_sqlite.cpp): every pending file in one BEGIN IMMEDIATE.
std::vector<applied_migration> migrate_sqlite_on(sqlite::detail::connection& c,
                                                 const std::vector<std::string>& components, const targets& t);
void revert_sqlite(database_impl& db, const std::string& del, const migration_file& m, const targets& t);

}  // namespace spool::detail::migration
