// Enqueue's inserts on PostgreSQL, on a pooled or the caller's connection: one statement
// for the batch, then the skipped items told apart (a taken id or a held dedup key).
#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/text/sql_template.hpp"
#include "engine/database_impl.hpp"
#include "engine/postgres/arrays.hpp"
#include "ops/store.hpp"
#include "ops/store_postgres.hpp"
#include "ops/time.hpp"
#include "spool/error.hpp"

namespace spool::ops::detail {

using pg::detail::intent;

namespace {

// enqueue.sql's text[] parameters ($1 ids, $2 types, $3 payloads, $8 keys)
// go in binary format: the payloads' JSON would otherwise be quoted here and
// parsed back on the server.
constexpr pg::detail::binary_mask insert_binary = 0b10000111U;

std::vector<param> insert_params(const store_config& config, const std::vector<insert_item>& items,
                                 bool utf8) {
  std::vector<std::string> ids, types, payloads, priorities, max_attempts;
  std::vector<std::optional<std::string>> not_before, delays, keys;
  for (const auto& it : items) {
    ids.push_back(it.id);
    types.push_back(it.type);
    payloads.push_back(it.payload);
    priorities.push_back(std::to_string(it.priority));
    max_attempts.push_back(std::to_string(it.max_attempts));
    not_before.push_back(it.not_before ? std::optional<std::string>(pg_time(*it.not_before)) : std::nullopt);
    delays.push_back(it.delay ? std::optional<std::string>(std::to_string(it.delay->count())) : std::nullopt);
    keys.push_back(it.dedup_key);
  }
  return {binary_text_array(ids, utf8),
          binary_text_array(types, utf8),
          binary_text_array(payloads, utf8),
          text_array(priorities),
          text_array(max_attempts),
          text_array(not_before),
          text_array(delays),
          binary_text_array(keys, utf8),
          boolean(config.notify),
          config.channel};
}

// enqueue.sql, with its ON CONFLICT or (fresh) without it.
std::string enqueue_sql(const store_config& config, bool fresh) {
  return spool::detail::fill_placeholders(ops_sql(engine::postgres, "enqueue", config),
                                          {{"{{fresh}}", fresh ? "--" : ""}});
}

// Pairs the RETURNING ids with the items (an id repeated in the batch is
// refused before the statement, so each returned id is one item's); an item
// not returned was skipped, for a taken id when taken holds it, else for its
// dedup key.
std::vector<insert_outcome> outcomes(const std::vector<insert_item>& items, const std::vector<row>& inserted,
                                     const std::vector<row>& taken) {
  std::unordered_map<std::string, bool> fresh;
  for (const auto& r : inserted) fresh[*r[0]] = true;
  std::unordered_map<std::string, bool> stored;
  for (const auto& r : taken) stored[*r[0]] = true;
  std::vector<insert_outcome> out(items.size(), insert_outcome::key_held);
  for (std::size_t i = 0; i < items.size(); ++i) {
    auto it = fresh.find(items[i].id);
    if (it != fresh.end() && it->second) {
      out[i] = insert_outcome::inserted;
      it->second = false;
    } else if (stored.count(items[i].id) > 0) {
      out[i] = insert_outcome::id_taken;
    }
  }
  return out;
}

}  // namespace

std::vector<insert_outcome> postgres_insert(pg::detail::connection& conn, const store_config& config,
                                            const std::vector<insert_item>& items, const call_options& call) {
  // One statement that skips what conflicts (a taken id or a held key), so
  // the transaction stays usable; the skipped items' ids are then looked up
  // in the same transaction to tell the two apart, without reading error text.
  const auto params = insert_params(config, items, conn.client_utf8());
  // Ids are almost always new (the library makes them) and most batches hold
  // no dedup key, so such a batch in a transaction of its own first goes in
  // without ON CONFLICT; when an id is taken after all (a retried batch),
  // that statement wrote nothing and the skipping one runs. In the caller's
  // transaction a failed statement would abort it, so there only the
  // skipping one runs.
  const bool keyless =
      std::none_of(items.begin(), items.end(), [](const insert_item& it) { return it.dedup_key; });
  if (keyless && !conn.in_transaction()) {
    try {
      (void)conn.exec(enqueue_sql(config, true), params, intent::write, call, insert_binary);
      return std::vector<insert_outcome>(items.size(), insert_outcome::inserted);
    } catch (const error& e) {
      if (!pg::detail::is_unique_violation(e)) throw;
    }
  }
  const auto inserted = conn.query(enqueue_sql(config, false), params, intent::write, call, insert_binary);
  if (inserted.size() == items.size())
    return std::vector<insert_outcome>(items.size(), insert_outcome::inserted);
  std::vector<std::string> skipped;
  {
    std::unordered_map<std::string, bool> fresh;
    for (const auto& r : inserted) fresh[*r[0]] = true;
    for (const auto& it : items) {
      if (fresh.count(it.id) == 0) skipped.push_back(it.id);
    }
  }
  // intent::write: when this lookup fails, the insert before it may have
  // committed, so the caller must hear in_doubt, never "nothing was done".
  const auto taken = conn.query(ops_sql(engine::postgres, "existing_ids", config), {text_array(skipped)},
                                intent::write, call);
  return outcomes(items, inserted, taken);
}

std::vector<std::optional<std::string>> postgres_holders(pg::detail::connection& conn,
                                                         const store_config& config,
                                                         const std::vector<std::string>& keys,
                                                         const call_options& call) {
  const auto rows =
      conn.query(ops_sql(engine::postgres, "holders", config), {text_array(keys)}, intent::read, call);
  std::vector<std::optional<std::string>> out(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    for (const auto& r : rows) {
      if (r[0] == keys[i]) out[i] = r[1];
    }
  }
  return out;
}

}  // namespace spool::ops::detail
