// Applies, prints and reverts the embedded migrations (DESIGN.md, Migrations).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <fmt/ranges.h>

#include <chrono>
#include <map>
#include <sstream>
#include <string_view>
#include <thread>

#include "common/log.hpp"
#include "common/identifier.hpp"
#include "engine/database_impl.hpp"
#include "migrate/migration_files.hpp"
#include "spool/error.hpp"
#include "spool/migrate.hpp"

namespace spool {

namespace {

using detail::migration_file;
using pg::detail::intent;

// A fixed advisory-lock key shared by every Spool migrator ("spool" in ASCII).
constexpr std::int64_t migration_lock_key = 0x73706f6f6c;
constexpr auto migration_lock_wait = std::chrono::seconds(60);

std::vector<std::string> selected_components(const migrate_options& o) {
  if (o.components.empty()) return detail::all_components();
  for (const auto& c : o.components) {
    const auto& all = detail::all_components();
    if (std::find(all.begin(), all.end(), c) == all.end()) {
      throw error(errc::invalid_argument,
                  fmt::format("unknown component \"{}\" (known: {})", c, fmt::join(all, ", ")));
    }
  }
  return o.components;
}

// The configured table names every template of one call renders with,
// validated once from the options and passed explicitly (no global state).
struct targets {
  std::string ops_table;  // empty: ops_queue
  detail::outbox_names outbox;
};

targets validate_options(const migrate_options& o) {
  if (!o.schema.empty()) detail::validate_identifier("schema", o.schema);
  // idx_<table>_running_heartbeat must fit PostgreSQL's 63-byte names.
  if (!o.ops_table.empty()) detail::validate_identifier("ops_table", o.ops_table, 41);
  return targets{o.ops_table, detail::outbox_names_of(o.outbox_table, o.outbox_audit_table)};
}

std::string render(const std::string& sql, const std::string& schema, const targets& t) {
  return detail::render_template(sql, schema, t.ops_table, &t.outbox);
}

std::string target_sql(engine kind, const std::string& component, const std::string& schema, const targets& t) {
  return detail::ledger_target_sql(kind, component, schema, t.ops_table, &t.outbox);
}

std::string ledger_insert(engine kind, const migration_file& m, const std::string& schema, const targets& t) {
  const std::string applied =
      kind == engine::postgres ? "now()" : "CAST((julianday('now') - 2440587.5) * 86400000000 AS INTEGER)";
  return render(
      fmt::format("INSERT INTO {{{{s}}}}spool_schema_migrations (component, target, version, checksum, applied_at) "
                  "VALUES ('{}', {}, {}, '{}', {}) ON CONFLICT DO NOTHING;\n",
                  m.component, target_sql(kind, m.component, schema, t), m.version, m.checksum, applied),
      schema, t);
}

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

void check_checksums(const std::vector<migration_file>& files, const std::map<int, std::string>& applied) {
  for (const auto& m : files) {
    auto it = applied.find(m.version);
    if (it != applied.end() && it->second != m.checksum) {
      throw error(errc::invalid_state,
                  fmt::format("migration {}/{} ({}) was applied with checksum {} but this Spool ships {}",
                              m.component, m.version, m.name, it->second, m.checksum),
                  "migration_checksum_mismatch");
    }
  }
}

// ---- PostgreSQL ----

class pg_migration_session {
 public:
  explicit pg_migration_session(detail::database_impl& db) : conn_(db.pg_connect(10)) {
    const auto deadline = std::chrono::steady_clock::now() + migration_lock_wait;
    for (;;) {
      // Polling pg_try_advisory_lock, never a blocking pg_advisory_lock: a
      // waiting statement's snapshot would deadlock CREATE INDEX CONCURRENTLY.
      const auto r = conn_->query("SELECT pg_try_advisory_lock($1)", {migration_lock_key}, intent::read);
      if (r.at(0).at(0) == "t") break;
      if (std::chrono::steady_clock::now() >= deadline) {
        throw error(errc::unavailable, "another `spool migrate` holds the migration lock; gave up after 60 s",
                    "lock_timeout");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
  }
  ~pg_migration_session() {
    try {
      if (conn_->healthy()) conn_->query("SELECT pg_advisory_unlock($1)", {migration_lock_key}, intent::read);
    } catch (...) {
    }
  }
  pg::detail::connection& conn() { return *conn_; }

 private:
  std::unique_ptr<pg::detail::connection> conn_;
};

void pg_drop_invalid(pg::detail::connection& c, const migration_file& m, const std::string& schema) {
  for (const auto& idx : m.rebuild_invalid) {
    const auto r = c.query(
        "SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = "
        "c.relnamespace WHERE c.relname = $1 AND n.nspname = $2 AND NOT i.indisvalid",
        {idx, schema}, intent::read);
    if (!r.empty()) {
      spool::detail::log().warn("dropping invalid index {}.{} left by an interrupted build; rebuilding it", schema, idx);
      c.exec_script(fmt::format("DROP INDEX CONCURRENTLY IF EXISTS {}.{}", detail::quote_identifier(schema),
                                detail::quote_identifier(idx)));
    }
  }
}

void pg_apply(pg::detail::connection& c, const migration_file& m, const std::string& schema, const targets& t) {
  const std::string up = render(m.up, schema, t);
  if (m.transactional) {
    c.exec_script("BEGIN");
    try {
      c.exec_script(up);
      c.exec_script(ledger_insert(engine::postgres, m, schema, t));
      c.exec_script("COMMIT");
    } catch (...) {
      if (c.healthy()) c.exec_script("ROLLBACK");
      throw;
    }
    return;
  }
  pg_drop_invalid(c, m, schema);
  for (const auto& stmt : detail::split_statements(up)) c.exec_script(stmt);
  c.exec_script(ledger_insert(engine::postgres, m, schema, t));
}

std::vector<applied_migration> migrate_postgres(detail::database_impl& db, const std::vector<std::string>& components,
                                                const std::string& configured_schema, const targets& t) {
  pg_migration_session session(db);
  auto& c = session.conn();
  std::string schema = configured_schema;
  if (schema.empty()) {
    const auto r = c.query("SELECT current_schema()", {}, intent::read);
    if (!r.at(0).at(0)) throw error(errc::invalid_state, "the connection has no current schema (empty search_path)");
    schema = *r.at(0).at(0);
  } else {
    c.exec_script(fmt::format("CREATE SCHEMA IF NOT EXISTS {}", detail::quote_identifier(schema)));
  }
  std::vector<applied_migration> done;
  for (const auto& component : components) {
    const auto files = detail::migration_files(engine::postgres, component);
    const bool has_ledger =
        c.query("SELECT to_regclass($1) IS NOT NULL", {detail::quote_identifier(schema) + ".spool_schema_migrations"},
                intent::read)
            .at(0)
            .at(0) == "t";
    std::map<int, std::string> applied;
    if (has_ledger) {
      applied = applied_versions([&](const std::string& sql) { return c.query(sql, {}, intent::read); },
                                 engine::postgres, component, schema, t);
    }
    check_checksums(files, applied);
    for (const auto& m : files) {
      if (applied.count(m.version)) continue;
      spool::detail::log().info("applying {}/{} ({}) to schema {}", component, m.version, m.name, schema);
      pg_apply(c, m, schema, t);
      done.push_back({component, m.version, m.name});
    }
  }
  return done;
}

// ---- SQLite ----

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
                          m.component, m.version, m.name, detail::ops_table_or_default(ops_table), what),
              "malformed_row");
}

std::vector<applied_migration> migrate_sqlite_on(sqlite::detail::connection& c, const std::vector<std::string>& components,
                                                 const targets& t) {
  auto* conn = &c;
  sqlite::detail::immediate_tx tx(*conn);  // the migration lock on SQLite
  std::vector<applied_migration> done;
  for (const auto& component : components) {
    const auto files = detail::migration_files(engine::sqlite, component);
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
      spool::detail::log().info("applying {}/{} ({})", component, m.version, m.name);
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

}  // namespace

std::vector<applied_migration> detail::migrate_sqlite_connection(sqlite::detail::connection& conn,
                                                                 const migrate_options& options) {
  const auto t = validate_options(options);
  return migrate_sqlite_on(conn, selected_components(options), t);
}

std::vector<applied_migration> migrate(database& db, const migrate_options& options) {
  const auto t = validate_options(options);
  const auto components = selected_components(options);
  if (db.kind() == engine::postgres) return migrate_postgres(db.impl(), components, options.schema, t);
  auto conn = db.impl().sqlite_pool().acquire();
  return migrate_sqlite_on(*conn, components, t);
}

std::string migration_script(engine kind, const migrate_options& options) {
  const auto t = validate_options(options);
  const std::string schema = kind == engine::postgres ? options.schema : "";
  std::string out = fmt::format("-- Spool migrations for {} (generated by `spool migrate --print`).\n",
                                kind == engine::postgres ? "PostgreSQL" : "SQLite");
  if (kind == engine::postgres && !schema.empty()) {
    out += fmt::format("CREATE SCHEMA IF NOT EXISTS {};\n", detail::quote_identifier(schema));
  }
  for (const auto& component : selected_components(options)) {
    for (const auto& m : detail::migration_files(kind, component)) {
      out += fmt::format("\n-- {}/{} ({}) checksum {}\n", component, m.version, m.name, m.checksum);
      if (m.transactional) out += kind == engine::postgres ? "BEGIN;\n" : "BEGIN IMMEDIATE;\n";
      out += render(m.up, schema, t);
      out += ledger_insert(kind, m, schema, t);
      if (m.transactional) out += "COMMIT;\n";
    }
  }
  return out;
}

void revert_migration(database& db, const std::string& component_version, bool confirm_data_loss,
                      const migrate_options& options) {
  const auto slash = component_version.find('/');
  if (slash == std::string::npos) {
    throw error(errc::invalid_argument,
                fmt::format("expected COMPONENT/VERSION (e.g. mq/2), got \"{}\"", component_version));
  }
  const std::string component = component_version.substr(0, slash);
  migrate_options only;
  only.components = {component};
  selected_components(only);
  int version = 0;
  try {
    version = std::stoi(component_version.substr(slash + 1));
  } catch (const std::exception&) {
    throw error(errc::invalid_argument, fmt::format("invalid version in \"{}\"", component_version));
  }
  if (!confirm_data_loss) {
    throw error(errc::invalid_argument,
                fmt::format("reverting {} may destroy data; confirm with --confirm-data-loss", component_version));
  }
  const auto t = validate_options(options);
  const auto files = detail::migration_files(db.kind(), component);
  auto it = std::find_if(files.begin(), files.end(), [&](const auto& m) { return m.version == version; });
  if (it == files.end()) throw error(errc::invalid_argument, fmt::format("no migration {}", component_version));
  const std::string del = fmt::format(
      "DELETE FROM {{{{s}}}}spool_schema_migrations WHERE component = '{}' AND version = {} AND target = {}",
      component, version, target_sql(db.kind(), component, options.schema, t));
  if (db.kind() == engine::postgres) {
    pg_migration_session session(db.impl());
    auto& c = session.conn();
    // The ledger row goes first; the ledger table itself is shared by every
    // component and is never dropped by a Down section.
    c.exec_script(render(del, options.schema, t));
    for (const auto& stmt : detail::split_statements(render(it->down, options.schema, t))) {
      c.exec_script(stmt);
    }
  } else {
    auto conn = db.impl().sqlite_pool().acquire();
    sqlite::detail::immediate_tx tx(*conn);
    conn->exec_script(render(del, "", t));
    conn->exec_script(render(it->down, "", t));
    tx.commit();
  }
}

namespace mq {
std::vector<applied_migration> migrate(database& db, std::string schema) {
  migrate_options options;
  options.components = {"mq"};
  options.schema = std::move(schema);
  return spool::migrate(db, options);
}
}  // namespace mq

}  // namespace spool
