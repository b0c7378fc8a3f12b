// The outbox configuration: names, SQL templates and migrations (outbox.md §3).
#include <fmt/format.h>

#include "common/embedded_sql.hpp"
#include "common/text/sql_template.hpp"
#include "common/identifier.hpp"
#include "outbox/store.hpp"
#include "spool/error.hpp"
#include "spool/migrate.hpp"

namespace spool::outbox {

namespace {

migrate_options migrate_options_of(const outbox_config& c, engine kind) {
  const auto n = detail::names_of(c, kind);
  migrate_options o;
  o.components = {"outbox"};
  o.schema = kind == engine::postgres ? c.schema : "";
  o.outbox_table = n.table;
  o.outbox_audit_table = n.audit;
  return o;
}

// Replaces MACRO[expr] (expr without brackets) with fmt(expr).
template <class F>
void expand(std::string& s, std::string_view macro, F f) {
  for (std::size_t pos = 0; (pos = s.find(macro, pos)) != std::string::npos;) {
    const std::size_t open = pos + macro.size();
    const std::size_t close = s.find(']', open);
    const std::string repl = f(s.substr(open, close - open));
    s.replace(pos, close + 1 - pos, repl);
    pos += repl.size();
  }
}

constexpr std::string_view pg_cols =
    "seq, xact_id::text, id, topic, encode(payload, 'hex'), payload_version, metadata::text, ordering_key, "
    "idempotency_key, state, claim_count, failure_count, US[available_at], US[created_at], US[updated_at], "
    "lease_owner, lease_token::text, US[leased_until], US[delivered_at], US[dead_lettered_at], last_error_code, "
    "last_error";
constexpr std::string_view sqlite_cols =
    "seq, '0', id, topic, hex(payload), payload_version, metadata, ordering_key, idempotency_key, state, "
    "claim_count, failure_count, available_at, created_at, updated_at, lease_owner, lease_token, leased_until, "
    "delivered_at, dead_lettered_at, last_error_code, last_error";

}  // namespace

void validate(const outbox_config& c) {
  (void)detail::names_of(c, engine::postgres);
}

std::vector<applied_migration> migrate(database& db, const outbox_config& config) {
  return spool::migrate(db, migrate_options_of(config, db.kind()));
}

std::string migrations(engine kind, const outbox_config& config) {
  return spool::migration_script(kind, migrate_options_of(config, kind));
}

namespace detail {

names names_of(const outbox_config& c, engine kind) {
  names n;
  if (!c.schema.empty()) {
    if (kind == engine::sqlite && c.schema != "main") {
      throw error(errc::invalid_argument,
                  fmt::format("schema: \"{}\": on SQLite the outbox lives in \"main\"", c.schema), "invalid_config");
    }
    spool::detail::validate_identifier("schema", c.schema);
  }
  spool::detail::validate_identifier("table", c.table, 50);
  n.table = c.table;
  n.audit = c.audit_table.empty() ? c.table + "_replay_audit" : c.audit_table;
  spool::detail::validate_identifier("audit_table", n.audit);
  spool::detail::validate_identifier("notify_channel", c.notify_channel);
  n.schema = kind == engine::sqlite ? "main" : c.schema;
  if (!n.schema.empty()) n.qualified = n.schema + "." + n.table;
  return n;
}

void resolve_schema(names& n, database& db) {
  if (!n.schema.empty()) return;
  const auto r = db.exec("SELECT current_schema()");
  if (r.empty() || !r[0][0]) {
    throw error(errc::invalid_state, "the connection has no current schema (empty search_path)",
                "schema_version_mismatch");
  }
  n.schema = *r[0][0];
  n.qualified = n.schema + "." + n.table;
}

std::string render(engine kind, std::string_view file, const names& n) {
  const bool pg = kind == engine::postgres;
  const std::string prefix = pg ? spool::detail::schema_prefix(n.schema) : "";
  // The claims share their SET and their decodability test, the writer's two
  // inserts their body (PostgreSQL).
  const auto fragment = [pg](std::string_view name) {
    return pg ? spool::detail::embedded_sql(fmt::format("postgres/outbox/fragments/{}.sql", name))
              : std::string_view();
  };
  std::string sql = spool::detail::fill_placeholders(
      std::string(spool::detail::embedded_sql(fmt::format("{}/outbox/queries/{}.sql", engine_name(kind), file))),
      {{"{{insert_rows}}", fragment("insert_rows")},
       {"{{claim_set}}", fragment("claim_set")},
       {"{{decodable}}", fragment("decodable")},
       {"{{cols}}", pg ? pg_cols : sqlite_cols},
       {"{{t}}", prefix + spool::detail::quote_identifier(n.table)},
       {"{{a}}", prefix + spool::detail::quote_identifier(n.audit)},
       {"{{ledger}}", prefix + "spool_schema_migrations"}});
  if (pg) {
    // Times cross the wire as epoch microseconds, independent of the
    // session's TimeZone and DateStyle (offsets are whole seconds).
    expand(sql, "US[", [](const std::string& x) {
      return fmt::format(
          "(extract(epoch FROM date_trunc('second', {0}))::bigint * 1000000 + "
          "extract(microseconds FROM {0})::bigint % 1000000)",
          x);
    });
    expand(sql, "TS[", [](const std::string& x) {
      return fmt::format(
          "('epoch'::timestamptz + ({0})::bigint / 1000000 * interval '1 second' + ({0})::bigint % 1000000 * "
          "interval '1 microsecond')",
          x);
    });
  }
  return sql;
}

}  // namespace detail
}  // namespace spool::outbox
