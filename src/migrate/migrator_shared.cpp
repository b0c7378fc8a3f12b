// What both migration runners share (migrator_parts.hpp).
#include <fmt/ranges.h>

#include <algorithm>

#include "common/identifier.hpp"
#include "migrate/migrator_parts.hpp"
#include "spool/error.hpp"

namespace spool::detail::migration {

std::vector<std::string> selected_components(const migrate_options& o) {
  if (o.components.empty()) return all_components();
  for (const auto& c : o.components) {
    const auto& all = all_components();
    if (std::find(all.begin(), all.end(), c) == all.end()) {
      throw error(errc::invalid_argument,
                  fmt::format("unknown component \"{}\" (known: {})", c, fmt::join(all, ", ")));
    }
  }
  return o.components;
}

targets validate_options(const migrate_options& o) {
  if (!o.schema.empty()) validate_identifier("schema", o.schema);
  // idx_<table>_running_heartbeat must fit PostgreSQL's 63-byte names.
  if (!o.ops_table.empty()) validate_identifier("ops_table", o.ops_table, 41);
  return targets{o.ops_table, outbox_names_of(o.outbox_table, o.outbox_audit_table)};
}

std::string render(const std::string& sql, const std::string& schema, const targets& t) {
  return render_template(sql, schema, t.ops_table, &t.outbox);
}

std::string target_sql(engine kind, const std::string& component, const std::string& schema, const targets& t) {
  return ledger_target_sql(kind, component, schema, t.ops_table, &t.outbox);
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

}  // namespace spool::detail::migration
