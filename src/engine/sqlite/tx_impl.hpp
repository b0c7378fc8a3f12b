// SQLite's tx_state: a pooled connection in BEGIN IMMEDIATE, or an adopted
// application handle that Spool must never commit or close.
#pragma once

#include "engine/database_impl.hpp"
#include "engine/tx_state.hpp"

namespace spool {
class tx;
}

namespace spool::sqlite::detail {

class tx_impl final : public spool::detail::tx_state, public spool::detail::tx_connection<connection> {
 public:
  static constexpr engine engine_kind = engine::sqlite;

  [[nodiscard]] engine kind() const noexcept override { return engine_kind; }
  std::vector<row> exec(std::string_view sql, const std::vector<param>& params) override;
  void commit() override;
  void rollback() noexcept override;
  void require_transaction() override;
};

// A pooled connection of db in BEGIN IMMEDIATE. Errors: invalid_argument when
// db is not SQLite; unavailable when busy.
std::unique_ptr<spool::detail::tx_state> begin(spool::detail::database_impl& db);

// As pg::detail::connection_of, for SQLite.
connection& connection_of(spool::tx& t, std::string_view owner);

}  // namespace spool::sqlite::detail
