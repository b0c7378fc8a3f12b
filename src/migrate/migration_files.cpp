#include "migrate/migration_files.hpp"

#include <fmt/format.h>
#include <openssl/evp.h>

#include <algorithm>
#include <sstream>

#include "common/embedded_sql.hpp"
#include "common/text/sql_template.hpp"
#include "common/identifier.hpp"

namespace spool::detail {

namespace {

std::string sha256_hex(std::string_view text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(text.data(), text.size(), digest, &len, EVP_sha256(), nullptr);
  std::string out;
  for (unsigned int i = 0; i < len; ++i) out += fmt::format("{:02x}", digest[i]);
  return out;
}

std::string sql_literal(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += '\'';
    out += c;
  }
  return out + "'";
}

}  // namespace

const std::vector<std::string>& all_components() {
  static const std::vector<std::string> components = {"mq", "ops", "outbox", "mq_catalog"};
  return components;
}

std::vector<migration_file> migration_files(engine kind, const std::string& component) {
  const std::string prefix = fmt::format("{}/{}/", engine_name(kind), component);
  std::vector<migration_file> out;
  for (const auto& f : embedded_sql_files()) {
    if (f.path.substr(0, prefix.size()) != prefix) continue;
    const std::string_view file = f.path.substr(prefix.size());
    if (file.find('/') != std::string_view::npos || file.size() < 6) continue;  // queries/ and others
    migration_file m;
    m.component = component;
    m.version = std::stoi(std::string(file.substr(0, 4)));
    m.name = std::string(file.substr(0, file.size() - 4));
    m.checksum = sha256_hex(f.text);
    std::istringstream in{std::string(f.text)};
    std::string line;
    std::string* section = nullptr;
    while (std::getline(in, line)) {
      if (line.rfind("-- spool:up", 0) == 0) {
        section = &m.up;
      } else if (line.rfind("-- spool:down", 0) == 0) {
        section = &m.down;
      } else if (line.rfind("-- spool:no-transaction", 0) == 0) {
        m.transactional = false;
      } else if (line.rfind("-- spool:rebuild-invalid", 0) == 0) {
        std::istringstream names(line.substr(24));
        for (std::string n; names >> n;) m.rebuild_invalid.push_back(n);
      } else if (section != nullptr) {
        *section += line + "\n";
      }
    }
    out.push_back(std::move(m));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.version < b.version; });
  return out;
}

std::vector<std::string> split_statements(const std::string& sql) {
  std::vector<std::string> out;
  std::istringstream in(sql);
  std::string line, current;
  while (std::getline(in, line)) {
    if (line.rfind("--", 0) == 0) continue;
    current += line + "\n";
    auto end = line.find_last_not_of(" \t\r");
    if (end != std::string::npos && line[end] == ';') {
      out.push_back(current);
      current.clear();
    }
  }
  if (current.find_first_not_of(" \t\r\n") != std::string::npos) out.push_back(current);
  return out;
}

outbox_names outbox_names_of(const std::string& table, const std::string& audit_table) {
  outbox_names n;
  if (!table.empty()) {
    validate_identifier("outbox table", table, 50);  // derived names add up to 13 bytes
    n.table = table;
  }
  n.audit_table = audit_table.empty() ? n.table + "_replay_audit" : audit_table;
  if (!audit_table.empty()) validate_identifier("outbox audit_table", audit_table);
  return n;
}

std::string ops_table_or_default(const std::string& ops_table) {
  return ops_table.empty() ? std::string("ops_queue") : ops_table;
}

std::string render_template(std::string sql, const std::string& schema, const std::string& ops_table,
                            const outbox_names* outbox) {
  const outbox_names defaults;
  const outbox_names& ob = outbox != nullptr ? *outbox : defaults;
  const std::string name = schema.empty() ? "current_schema()" : sql_literal(schema);
  const std::string table = ops_table_or_default(ops_table);
  return spool::detail::fill_placeholders(std::move(sql), {{"{{s}}", spool::detail::schema_prefix(schema)},
                                                           {"{{schema_name}}", name},
                                                           {"{{ops}}", quote_identifier(table)},
                                                           {"{{ops_raw}}", table},
                                                           {"{{outbox}}", quote_identifier(ob.table)},
                                                           {"{{outbox_raw}}", ob.table},
                                                           {"{{outbox_audit}}", quote_identifier(ob.audit_table)}});
}

std::string ledger_target_sql(engine kind, const std::string& component, const std::string& schema,
                              const std::string& ops_table, const outbox_names* outbox) {
  static const std::pair<const char*, const char*> tables[] = {{"mq", "queue_messages"},
                                                               {"mq_catalog", "spool_mq_queues"}};
  std::string table = component;
  for (const auto& [c, t] : tables) {
    if (component == c) table = t;
  }
  if (component == "ops") table = ops_table_or_default(ops_table);
  if (component == "outbox") table = outbox != nullptr ? outbox->table : outbox_names{}.table;
  if (kind == engine::sqlite) return sql_literal("main." + table);
  if (schema.empty()) return fmt::format("current_schema() || {}", sql_literal("." + table));
  return sql_literal(schema + "." + table);
}

}  // namespace spool::detail
