// Where the op queue picks its engine: the store for a database, and the
// transactional inserts for a caller's transaction. The queue and the worker
// pool above the seam are engine-neutral.
#include "engine/database_impl.hpp"
#include "engine/postgres/tx_impl.hpp"
#include "engine/sqlite/tx_impl.hpp"
#include "ops/store.hpp"
#include "spool/tx.hpp"

namespace spool::ops::detail {

std::unique_ptr<store> make_store(spool::detail::database_impl& db, const std::string& schema, store_config& config,
                                  const call_options& call) {
  if (db.kind() == engine::postgres) {
    config.schema = resolve_pg_schema(db, schema, call);
    return make_postgres_store(db, config);
  }
  return make_sqlite_store(db.sqlite_pool(), db.wake(), db.target(), db.options(), config);
}

std::vector<insert_outcome> insert_in(spool::tx& tx, const store_config& config,
                                      const std::vector<insert_item>& items) {
  if (tx.kind() == engine::postgres) {
    return postgres_insert(pg::detail::connection_of(tx, "the op queue"), config, items, {});
  }
  return sqlite_insert(sqlite::detail::connection_of(tx, "the op queue"), config, items, {});
}

std::vector<std::optional<std::string>> holders_in(spool::tx& tx, const store_config& config,
                                                   const std::vector<std::string>& keys) {
  if (tx.kind() == engine::postgres) {
    return postgres_holders(pg::detail::connection_of(tx, "the op queue"), config, keys, {});
  }
  return sqlite_holders(sqlite::detail::connection_of(tx, "the op queue"), config, keys, {});
}

}  // namespace spool::ops::detail
