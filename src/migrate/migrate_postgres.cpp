// Migrations on PostgreSQL: one session holding the advisory lock, each
// pending file applied in its own transaction or, when marked
// no-transaction (CREATE INDEX CONCURRENTLY), statement by statement after
// dropping an invalid index an interrupted build left.
#include <fmt/format.h>

#include <chrono>
#include <thread>

#include "common/identifier.hpp"
#include "common/log.hpp"
#include "engine/database_impl.hpp"
#include "migrate/migrator_parts.hpp"
#include "spool/error.hpp"

namespace spool::detail::migration {

namespace {

using pg::detail::intent;

// A fixed advisory-lock key shared by every Spool migrator ("spool" in ASCII).
constexpr std::int64_t migration_lock_key = 0x73706f6f6c;
constexpr auto migration_lock_wait = std::chrono::seconds(60);

class pg_migration_session {
 public:
  explicit pg_migration_session(database_impl& db) : conn_(db.pg_connect(10)) {
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
      log().warn("dropping invalid index {}.{} left by an interrupted build; rebuilding it", schema, idx);
      c.exec_script(fmt::format("DROP INDEX CONCURRENTLY IF EXISTS {}.{}", quote_identifier(schema),
                                quote_identifier(idx)));
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
  for (const auto& stmt : split_statements(up)) c.exec_script(stmt);
  c.exec_script(ledger_insert(engine::postgres, m, schema, t));
}

}  // namespace

std::vector<applied_migration> migrate_postgres(database_impl& db, const std::vector<std::string>& components,
                                                const std::string& configured_schema, const targets& t) {
  pg_migration_session session(db);
  auto& c = session.conn();
  std::string schema = configured_schema;
  if (schema.empty()) {
    const auto r = c.query("SELECT current_schema()", {}, intent::read);
    if (!r.at(0).at(0)) throw error(errc::invalid_state, "the connection has no current schema (empty search_path)");
    schema = *r.at(0).at(0);
  } else {
    c.exec_script(fmt::format("CREATE SCHEMA IF NOT EXISTS {}", quote_identifier(schema)));
  }
  std::vector<applied_migration> done;
  for (const auto& component : components) {
    const auto files = migration_files(engine::postgres, component);
    const bool has_ledger =
        c.query("SELECT to_regclass($1) IS NOT NULL", {quote_identifier(schema) + ".spool_schema_migrations"},
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
      log().info("applying {}/{} ({}) to schema {}", component, m.version, m.name, schema);
      pg_apply(c, m, schema, t);
      done.push_back({component, m.version, m.name});
    }
  }
  return done;
}

void revert_postgres(database_impl& db, const std::string& del, const migration_file& m, const std::string& schema,
                     const targets& t) {
  pg_migration_session session(db);
  auto& c = session.conn();
  // The ledger row goes first; the ledger table itself is shared by every
  // component and is never dropped by a Down section.
  c.exec_script(render(del, schema, t));
  for (const auto& stmt : split_statements(render(m.down, schema, t))) c.exec_script(stmt);
}

}  // namespace spool::detail::migration
