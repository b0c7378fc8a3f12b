// Applies, prints and reverts the embedded migrations (DESIGN.md, Migrations).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <map>
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
      throw error(errc::invalid_argument, fmt::format("unknown component \"{}\" (known: mq)", c));
    }
  }
  return o.components;
}

std::string ledger_insert(engine kind, const migration_file& m, const std::string& schema) {
  const std::string applied =
      kind == engine::postgres ? "now()" : "CAST((julianday('now') - 2440587.5) * 86400000000 AS INTEGER)";
  return detail::render_template(
      fmt::format("INSERT INTO {{{{s}}}}spool_schema_migrations (component, target, version, checksum, applied_at) "
                  "VALUES ('{}', {}, {}, '{}', {}) ON CONFLICT DO NOTHING;\n",
                  m.component, detail::ledger_target_sql(kind, m.component, schema), m.version, m.checksum, applied),
      schema);
}

// Versions already recorded, by version → checksum.
template <class Query>
std::map<int, std::string> applied_versions(Query&& query, engine kind, const std::string& component,
                                            const std::string& schema) {
  std::map<int, std::string> out;
  for (const auto& r : query(detail::render_template(
           fmt::format("SELECT version, checksum FROM {{{{s}}}}spool_schema_migrations WHERE component = '{}' AND "
                       "target = {}",
                       component, detail::ledger_target_sql(kind, component, schema)),
           schema))) {
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

void pg_apply(pg::detail::connection& c, const migration_file& m, const std::string& schema) {
  const std::string up = detail::render_template(m.up, schema);
  if (m.transactional) {
    c.exec_script("BEGIN");
    try {
      c.exec_script(up);
      c.exec_script(ledger_insert(engine::postgres, m, schema));
      c.exec_script("COMMIT");
    } catch (...) {
      if (c.healthy()) c.exec_script("ROLLBACK");
      throw;
    }
    return;
  }
  pg_drop_invalid(c, m, schema);
  for (const auto& stmt : detail::split_statements(up)) c.exec_script(stmt);
  c.exec_script(ledger_insert(engine::postgres, m, schema));
}

std::vector<applied_migration> migrate_postgres(detail::database_impl& db, const std::vector<std::string>& components,
                                                const std::string& configured_schema) {
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
                                 engine::postgres, component, schema);
    }
    check_checksums(files, applied);
    for (const auto& m : files) {
      if (applied.count(m.version)) continue;
      spool::detail::log().info("applying {}/{} ({}) to schema {}", component, m.version, m.name, schema);
      pg_apply(c, m, schema);
      done.push_back({component, m.version, m.name});
    }
  }
  return done;
}

// ---- SQLite ----

std::vector<applied_migration> migrate_sqlite(detail::database_impl& db, const std::vector<std::string>& components) {
  auto conn = db.sqlite_pool().acquire();
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
                                 component, "");
    }
    check_checksums(files, applied);
    for (const auto& m : files) {
      if (applied.count(m.version)) continue;
      spool::detail::log().info("applying {}/{} ({})", component, m.version, m.name);
      conn->exec_script(m.up);
      conn->exec_script(ledger_insert(engine::sqlite, m, ""));
      done.push_back({component, m.version, m.name});
    }
  }
  tx.commit();
  return done;
}

}  // namespace

std::vector<applied_migration> migrate(database& db, const migrate_options& options) {
  if (!options.schema.empty()) detail::validate_identifier("schema", options.schema);
  const auto components = selected_components(options);
  if (db.kind() == engine::postgres) return migrate_postgres(db.impl(), components, options.schema);
  return migrate_sqlite(db.impl(), components);
}

std::string migration_script(engine kind, const migrate_options& options) {
  if (!options.schema.empty()) detail::validate_identifier("schema", options.schema);
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
      out += detail::render_template(m.up, schema);
      out += ledger_insert(kind, m, schema);
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
  selected_components({{component}, {}});
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
  if (!options.schema.empty()) detail::validate_identifier("schema", options.schema);
  const auto files = detail::migration_files(db.kind(), component);
  auto it = std::find_if(files.begin(), files.end(), [&](const auto& m) { return m.version == version; });
  if (it == files.end()) throw error(errc::invalid_argument, fmt::format("no migration {}", component_version));
  const std::string del = fmt::format(
      "DELETE FROM {{{{s}}}}spool_schema_migrations WHERE component = '{}' AND version = {} AND target = {}",
      component, version, detail::ledger_target_sql(db.kind(), component, options.schema));
  if (db.kind() == engine::postgres) {
    pg_migration_session session(db.impl());
    auto& c = session.conn();
    // The ledger may be dropped by the Down section itself (version 1).
    c.exec_script(detail::render_template(del, options.schema));
    for (const auto& stmt : detail::split_statements(detail::render_template(it->down, options.schema))) {
      c.exec_script(stmt);
    }
  } else {
    auto conn = db.impl().sqlite_pool().acquire();
    sqlite::detail::immediate_tx tx(*conn);
    conn->exec_script(detail::render_template(del, ""));
    conn->exec_script(it->down);
    tx.commit();
  }
}

namespace mq {
std::vector<applied_migration> migrate(database& db, std::string schema) {
  return spool::migrate(db, migrate_options{{"mq"}, std::move(schema)});
}
}  // namespace mq

}  // namespace spool
