// PostgreSQL's tx_state: a pooled connection in BEGIN, or an adopted
// application connection that Spool must never commit or close.
#pragma once

#include "engine/database_impl.hpp"
#include "engine/tx_state.hpp"

namespace spool {
class tx;
}

namespace spool::pg::detail {

class tx_impl final : public spool::detail::tx_state, public spool::detail::tx_connection<connection> {
 public:
  static constexpr engine engine_kind = engine::postgres;

  [[nodiscard]] engine kind() const noexcept override { return engine_kind; }
  std::vector<row> exec(std::string_view sql, const std::vector<param>& params) override;
  void commit() override;
  void rollback() noexcept override;
  void require_transaction() override;
};

// A pooled connection of db in BEGIN. Errors: invalid_argument when db is not
// PostgreSQL; unavailable.
std::unique_ptr<spool::detail::tx_state> begin(spool::detail::database_impl& db);

// The connection of a caller's transaction, checked to be open. `owner` names
// what needs it in the error. Errors: invalid_argument (wrong_engine) when t runs
// on another engine; transaction_required when it ended or is outside a block.
connection& connection_of(spool::tx& t, std::string_view owner);

}  // namespace spool::pg::detail
