// Where the message queue picks its engine: the store for a database, and the
// transactional insert for a caller's transaction. Everything above the seam
// (queue.cpp, consumer.cpp) is engine-neutral.
#include "engine/database_impl.hpp"
#include "engine/postgres/tx_impl.hpp"
#include "engine/sqlite/tx_impl.hpp"
#include "mq/store.hpp"
#include "spool/tx.hpp"

namespace spool::mq::detail {

std::unique_ptr<store> make_store(spool::detail::database_impl& db, const std::string& schema, bool notify) {
  if (db.kind() == engine::postgres) return make_postgres_store(db, schema, notify);
  return make_sqlite_store(db);
}

std::vector<bool> insert_in(spool::tx& tx, const std::string& schema, const std::vector<encoded_row>& rows,
                            std::int64_t delay_s, bool notify) {
  if (tx.kind() == engine::postgres) {
    return postgres_insert(pg::detail::connection_of(tx, "the insert"), schema, rows, delay_s, notify);
  }
  return sqlite_insert(sqlite::detail::connection_of(tx, "the insert"), rows, delay_s);
}

}  // namespace spool::mq::detail
