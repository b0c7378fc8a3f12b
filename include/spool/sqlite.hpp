// spool::sqlite::tx — a spool::tx that is known to run on SQLite. Code that
// works on either engine takes spool::tx& (spool/tx.hpp).
// Thread safety: one thread at a time.
#pragma once

#include <memory>

#include "spool/tx.hpp"

struct sqlite3;

namespace spool::sqlite {

class tx : public spool::tx {
 public:
  // Takes a pooled connection and runs BEGIN IMMEDIATE (the write lock, so
  // the transaction cannot fail later on a lock upgrade).
  // Errors: invalid_argument when db is not SQLite; unavailable when busy.
  explicit tx(database& db);
  explicit tx(std::unique_ptr<spool::detail::tx_state> state);
};

// Wraps an application's sqlite3 handle that is inside a transaction
// (sqlite3_get_autocommit() == 0). Spool never commits or closes it.
// Errors: transaction_required outside a transaction; invalid_argument for null.
[[nodiscard]] tx adopt(::sqlite3* handle);

}  // namespace spool::sqlite
