// spool::tx — a transaction the application owns, on either engine. Pass it
// to mq::queue::publish(tx, …), ops::queue::enqueue(tx, …) or
// outbox::writer::insert(tx, …) so Spool's rows commit or roll back together
// with the application's own. spool::pg::tx and spool::sqlite::tx are the
// same type with an engine check at construction (and adopt() for a
// connection the application opened itself).
// Thread safety: one thread at a time.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "spool/database.hpp"

namespace spool {

namespace detail {
class tx_state;
}

class tx {
 public:
  // Takes a connection from db's pool and begins: BEGIN on PostgreSQL (READ
  // COMMITTED, whatever the database's default: Spool's connections set it;
  // make SET TRANSACTION ISOLATION LEVEL the first statement for another;
  // BEGIN goes out with the first statement, in its round trip, so a server
  // that is gone shows there, as unavailable),
  // BEGIN IMMEDIATE on SQLite (the write lock, so the transaction cannot fail
  // later on a lock upgrade). Errors: unavailable (pool exhausted, busy, down).
  explicit tx(database& db);
  tx(tx&&) noexcept;
  tx& operator=(tx&&) noexcept;
  tx(const tx&) = delete;
  tx& operator=(const tx&) = delete;
  // Rolls back if neither commit() nor rollback() ran; never throws. An
  // adopted connection is left as it is.
  ~tx();

  // The engine this transaction runs on.
  [[nodiscard]] engine kind() const noexcept;

  // Runs one statement with bound parameters ($1, $2, … on PostgreSQL; ?1,
  // ?2, … on SQLite) and returns its rows. Errors: transaction_required once
  // the transaction ended; database_error (on PostgreSQL the transaction is
  // then aborted), in_doubt, unavailable.
  std::vector<row> exec(std::string_view sql, const std::vector<param>& params = {});
  // Commits and wakes this process's pollers of the database. Errors: in_doubt
  // when the connection is lost during COMMIT; invalid_state (reason
  // transaction_aborted) when a statement failed before; transaction_required
  // once ended. Not available on an adopted connection (invalid_state): its
  // owner commits.
  void commit();
  // Rolls back; a no-op once ended or on an adopted connection. Never throws.
  void rollback() noexcept;

  // Internal: the engine's state behind this handle (engine/tx_state.hpp).
  [[nodiscard]] detail::tx_state& state() noexcept { return *state_; }
  explicit tx(std::unique_ptr<detail::tx_state> state);

 private:
  std::unique_ptr<detail::tx_state> state_;
};

}  // namespace spool
