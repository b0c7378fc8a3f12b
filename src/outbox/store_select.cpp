// Where the outbox store picks its engine. The store (store.cpp and its call
// families) above the backend seam is engine-neutral.
#include "outbox/store.hpp"

namespace spool::outbox::detail {

std::unique_ptr<store_backend> make_backend(database& db, names n) {
  if (db.kind() == engine::postgres) {
    resolve_schema(n, db);
    return make_postgres_backend(db, std::move(n));
  }
  return make_sqlite_backend(db, std::move(n));
}

}  // namespace spool::outbox::detail
