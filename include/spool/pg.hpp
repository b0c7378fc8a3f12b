// spool::pg::tx — a spool::tx that is known to run on PostgreSQL. Code that
// works on either engine takes spool::tx& (spool/tx.hpp).
// Thread safety: one thread at a time.
#pragma once

#include <memory>

#include "spool/tx.hpp"

namespace spool::pg {

class tx : public spool::tx {
 public:
  // Takes a connection from db's pool and begins; BEGIN is sent with the
  // first statement, in the same round trip (spool::tx).
  // Errors: invalid_argument when db is not PostgreSQL; unavailable.
  explicit tx(database& db);
  explicit tx(std::unique_ptr<spool::detail::tx_state> state);
};

}  // namespace spool::pg
