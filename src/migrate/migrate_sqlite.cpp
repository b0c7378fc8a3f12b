// Migrations on SQLite: every pending file in one BEGIN IMMEDIATE (the
// migration lock), with the Up sections' if-column-missing directive and the
// op queue's malformed-row check.
#include <fmt/format.h>

#include <sstream>
#include <string_view>

#include "common/log.hpp"
#include "engine/database_impl.hpp"
#include "migrate/migrator_parts.hpp"
#include "spool/error.hpp"

namespace spool::detail::migration {

namespace {

// Runs an Up section. SQLite has no ADD COLUMN IF NOT EXISTS, so a statement
// after a line "-- spool:if-column-missing TABLE COLUMN" runs only when TABLE
// lacks COLUMN; everything else runs as written.
void sqlite_run_up(sqlite::detail::connection& conn, const std::string& up) {
  constexpr std::string_view directive = "-- spool:if-column-missing ";
  if (up.find(directive) == std::string::npos) {
    conn.exec_script(up);
    return;
  }
  std::istringstream in(up);
  std::string line, chunk;
  bool conditional = false, skip = false;
  while (std::getline(in, line)) {
    if (line.rfind(directive, 0) == 0) {
      if (!chunk.empty()) conn.exec_script(chunk);
      chunk.clear();
      std::istringstream args(line.substr(directive.size()));
      std::string table, column;
      args >> table >> column;
      skip = !conn.query("SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2", {table, column}).empty();
      conditional = true;
      continue;
    }
    chunk += line + "\n";
    const auto end = line.find_last_not_of(" \t\r");
    if (conditional && end != std::string::npos && line[end] == ';' && line.rfind("--", 0) != 0) {
      if (!skip) conn.exec_script(chunk);
      chunk.clear();
      conditional = skip = false;
    }
  }
  if (!chunk.empty() && !skip) conn.exec_script(chunk);
}

// The SQLite ops/3 step fails on a timestamp in no known form through the
// CHECK constraint spool_malformed_row; name the op and the column.
[[noreturn]] void rethrow_malformed_row(sqlite::detail::connection& conn, const migration_file& m,
                                        const std::string& ops_table) {
  std::string what = "a timestamp in no known form";
  try {
    const auto r = conn.query("SELECT id, col, CAST(v AS TEXT) FROM temp.spool_ops_times WHERE c IS NULL LIMIT 1", {});
    if (!r.empty()) {
      what = fmt::format("op \"{}\" holds {} = \"{}\", a timestamp in no known form", r[0][0].value_or(""),
                         r[0][1].value_or(""), r[0][2].value_or("NULL"));
    }
  } catch (const error&) {
  }
  throw error(errc::invalid_state,
              fmt::format("migration {}/{} ({}) of table {}: {}; fix or delete the row and run `spool migrate` again "
                          "(nothing was changed)",
                          m.component, m.version, m.name, ops_table_or_default(ops_table), what),
              "malformed_row");
}

}  // namespace

std::vector<applied_migration> migrate_sqlite_on(sqlite::detail::connection& c, const std::vector<std::string>& components,
                                                 const targets& t) {
  auto* conn = &c;
  sqlite::detail::immediate_tx tx(*conn);  // the migration lock on SQLite
  std::vector<applied_migration> done;
  for (const auto& component : components) {
    const auto files = migration_files(engine::sqlite, component);
    const bool has_ledger =
        !conn->query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'spool_schema_migrations'", {})
             .empty();
    std::map<int, std::string> applied;
    if (has_ledger) {
      applied = applied_versions([&](const std::string& sql) { return conn->query(sql, {}); }, engine::sqlite,
                                 component, "", t);
    }
    check_checksums(files, applied);
    for (const auto& m : files) {
      if (applied.count(m.version)) continue;
      log().info("applying {}/{} ({})", component, m.version, m.name);
      try {
        sqlite_run_up(*conn, render(m.up, "", t));
      } catch (const error& e) {
        if (e.constraint() == "spool_malformed_row") {
          rethrow_malformed_row(*conn, m, t.ops_table);
        }
        throw;
      }
      conn->exec_script(ledger_insert(engine::sqlite, m, "", t));
      done.push_back({component, m.version, m.name});
    }
  }
  tx.commit();
  return done;
}

void revert_sqlite(database_impl& db, const std::string& del, const migration_file& m, const targets& t) {
  auto conn = db.sqlite_pool().acquire();
  sqlite::detail::immediate_tx tx(*conn);
  conn->exec_script(render(del, "", t));
  conn->exec_script(render(m.down, "", t));
  tx.commit();
}

}  // namespace spool::detail::migration

namespace spool::detail {

std::vector<applied_migration> migrate_sqlite_connection(sqlite::detail::connection& conn,
                                                         const migrate_options& options) {
  const auto t = migration::validate_options(options);
  return migration::migrate_sqlite_on(conn, migration::selected_components(options), t);
}

}  // namespace spool::detail
