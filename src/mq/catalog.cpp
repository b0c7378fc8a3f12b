// The queue catalog (spool/mq/catalog.hpp) over the SQL of
// sql/<engine>/mq_catalog/queries/: attributes and tags as JSON text,
// read-modify-write under the row's lock (FOR UPDATE on PostgreSQL, the
// BEGIN IMMEDIATE write lock on SQLite).
#include "spool/mq/catalog.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "mq/catalog_sql.hpp"
#include "common/identifier.hpp"
#include "common/text/sql_template.hpp"
#include "spool/error.hpp"
#include "spool/tx.hpp"

namespace spool::mq {

namespace {

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string to_json(const std::map<std::string, std::string>& m) { return nlohmann::json(m).dump(); }

std::map<std::string, std::string> from_json(const std::optional<std::string>& text) {
  std::map<std::string, std::string> out;
  if (!text) return out;
  const auto v = nlohmann::json::parse(*text, nullptr, false);
  if (!v.is_object())
    throw error(errc::database_error, "spool_mq_queues holds a malformed JSON object", "malformed_row");
  for (const auto& [k, value] : v.items()) {
    if (value.is_string()) out[k] = value.get<std::string>();
  }
  return out;
}

std::chrono::system_clock::time_point from_ms(const std::optional<std::string>& text) {
  return std::chrono::system_clock::time_point(std::chrono::milliseconds(text ? std::stoll(*text) : 0));
}

catalog_entry entry_of(const row& r) {
  catalog_entry e;
  e.name = r.at(0).value_or("");
  e.account = r.at(1).value_or("");
  e.attributes = from_json(r.at(2));
  e.tags = from_json(r.at(3));
  e.created = from_ms(r.at(4));
  e.modified = from_ms(r.at(5));
  return e;
}

}  // namespace

catalog::catalog(database db, std::string schema) : db_(std::move(db)), schema_(std::move(schema)) {
  if (!schema_.empty()) spool::detail::validate_identifier("schema", schema_);
}


create_outcome catalog::create(const catalog_entry& entry) {
  const auto rows =
      db_.exec(detail::catalog_sql(db_.kind(), schema_, "insert"),
               {entry.name, entry.account, to_json(entry.attributes), to_json(entry.tags), now_ms()});
  return rows.empty() ? create_outcome::exists : create_outcome::created;
}

std::optional<catalog_entry> catalog::find(std::string_view name) {
  // A plain read: no row lock (PostgreSQL) and no write lock (SQLite's BEGIN IMMEDIATE).
  const auto rows = db_.exec(detail::catalog_sql(db_.kind(), schema_, "find"), {std::string(name)});
  if (rows.empty()) return std::nullopt;
  return entry_of(rows.front());
}

std::vector<catalog_entry> catalog::list(std::string_view prefix, std::string_view after, std::size_t limit) {
  const auto rows = db_.exec(detail::catalog_sql(db_.kind(), schema_, "list"),
                             {std::string(prefix), std::string(after), static_cast<std::int64_t>(limit)});
  std::vector<catalog_entry> out;
  out.reserve(rows.size());
  for (const auto& r : rows) out.push_back(entry_of(r));
  return out;
}

bool catalog::set_attributes(std::string_view name, const std::map<std::string, std::string>& attributes) {
  spool::tx t(db_);
  const auto rows = t.exec(detail::catalog_sql(db_.kind(), schema_, "get"), {std::string(name)});
  if (rows.empty()) return false;
  auto e = entry_of(rows.front());
  for (const auto& [k, v] : attributes) {
    if (v.empty()) {
      e.attributes.erase(k);
    } else {
      e.attributes[k] = v;
    }
  }
  t.exec(detail::catalog_sql(db_.kind(), schema_, "update"), {e.name, to_json(e.attributes), to_json(e.tags), now_ms()});
  t.commit();
  return true;
}

bool catalog::tag(std::string_view name, const std::map<std::string, std::string>& tags,
                  const std::vector<std::string>& untag) {
  spool::tx t(db_);
  const auto rows = t.exec(detail::catalog_sql(db_.kind(), schema_, "get"), {std::string(name)});
  if (rows.empty()) return false;
  auto e = entry_of(rows.front());
  for (const auto& [k, v] : tags) e.tags[k] = v;
  for (const auto& k : untag) e.tags.erase(k);
  t.exec(detail::catalog_sql(db_.kind(), schema_, "update"), {e.name, to_json(e.attributes), to_json(e.tags), now_ms()});
  t.commit();
  return true;
}

void catalog::purge(std::string_view name) { db_.exec(detail::catalog_sql(db_.kind(), schema_, "purge"), {std::string(name)}); }

bool catalog::remove(std::string_view name) {
  spool::tx t(db_);
  const auto rows = t.exec(detail::catalog_sql(db_.kind(), schema_, "delete"), {std::string(name)});
  if (rows.empty()) return false;
  t.exec(detail::catalog_sql(db_.kind(), schema_, "purge"), {std::string(name)});
  t.exec(detail::catalog_sql(db_.kind(), schema_, "purge_failed"), {std::string(name)});
  t.commit();
  return true;
}

}  // namespace spool::mq
