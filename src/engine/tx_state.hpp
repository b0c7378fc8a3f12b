// What a spool::tx holds: one engine's connection inside a transaction the
// application owns (a pooled one Spool began, or an adopted one Spool must
// never commit or close). Each engine implements it once (postgres/tx_impl.hpp,
// sqlite/tx_impl.hpp); store_<engine> files reach their connection through
// that engine's tx_of(). Thread safety: one thread at a time, as spool::tx.
#pragma once

#include <string_view>
#include <vector>

#include "spool/database.hpp"

namespace spool::detail {

class tx_state {
 public:
  tx_state() = default;
  tx_state(const tx_state&) = delete;
  tx_state& operator=(const tx_state&) = delete;
  virtual ~tx_state() = default;

  [[nodiscard]] virtual engine kind() const noexcept = 0;
  // Contracts as spool::tx (spool/tx.hpp).
  virtual std::vector<row> exec(std::string_view sql, const std::vector<param>& params) = 0;
  virtual void commit() = 0;
  virtual void rollback() noexcept = 0;
  // Throws transaction_required unless the connection is inside an open transaction.
  virtual void require_transaction() = 0;
};

}  // namespace spool::detail
