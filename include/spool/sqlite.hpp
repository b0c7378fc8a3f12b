// spool::sqlite::tx — a SQLite transaction the application owns, the SQLite
// twin of spool::pg::tx. Thread safety: one thread at a time.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "spool/database.hpp"

struct sqlite3;

namespace spool::sqlite {

namespace detail {
struct tx_impl;
}

class tx {
 public:
  // Takes a pooled connection and runs BEGIN IMMEDIATE (the write lock, so
  // the transaction cannot fail later on a lock upgrade).
  // Errors: invalid_argument when db is not SQLite; unavailable when busy.
  explicit tx(database& db);
  tx(tx&&) noexcept;
  tx& operator=(tx&&) noexcept;
  tx(const tx&) = delete;
  tx& operator=(const tx&) = delete;
  ~tx();  // rolls back unless committed; never throws

  // Runs one statement with bound parameters (?1, ?2, …) and returns its rows.
  std::vector<row> exec(std::string_view sql, const std::vector<param>& params = {});
  void commit();
  void rollback() noexcept;

  [[nodiscard]] detail::tx_impl& impl() noexcept { return *impl_; }
  explicit tx(std::unique_ptr<detail::tx_impl> impl);

 private:
  std::unique_ptr<detail::tx_impl> impl_;
};

// Wraps an application's sqlite3 handle that is inside a transaction
// (sqlite3_get_autocommit() == 0). Spool never commits or closes it.
// Errors: transaction_required outside a transaction; invalid_argument for null.
[[nodiscard]] tx adopt(::sqlite3* handle);

}  // namespace spool::sqlite
