// spool::pg::tx — a PostgreSQL transaction the application owns. Pass it to
// mq::queue::publish(tx, …) so a message commits or rolls back together with
// the application's own rows. Thread safety: one thread at a time.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "spool/database.hpp"

namespace spool::pg {

namespace detail {
struct tx_impl;
}

class tx {
 public:
  // Takes a connection from db's pool and runs BEGIN.
  // Errors: invalid_argument when db is not PostgreSQL; unavailable.
  explicit tx(database& db);
  tx(tx&&) noexcept;
  tx& operator=(tx&&) noexcept;
  tx(const tx&) = delete;
  tx& operator=(const tx&) = delete;
  // Rolls back if neither commit() nor rollback() ran; never throws. An
  // adopted connection (pg_native.hpp) is left as it is.
  ~tx();

  // Runs one statement with bound parameters ($1, $2, …) and returns its rows.
  // Errors: database_error (the transaction is then aborted), in_doubt, unavailable.
  std::vector<row> exec(std::string_view sql, const std::vector<param>& params = {});
  // Commits. Errors: in_doubt when the connection is lost during COMMIT;
  // invalid_state (reason transaction_aborted) when a statement failed before.
  // Not available on an adopted connection (invalid_state): its owner commits.
  void commit();
  void rollback() noexcept;

  [[nodiscard]] detail::tx_impl& impl() noexcept { return *impl_; }
  explicit tx(std::unique_ptr<detail::tx_impl> impl);

 private:
  std::unique_ptr<detail::tx_impl> impl_;
};

}  // namespace spool::pg
