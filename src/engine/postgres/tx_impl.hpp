// What a spool::pg::tx holds: a pooled connection in BEGIN, or an adopted
// application connection that Spool must never commit or close.
#pragma once

#include <memory>
#include <optional>

#include "engine/database_impl.hpp"

namespace spool::pg::detail {

struct tx_impl {
  std::optional<spool::detail::pool<connection>::lease> lease;  // owned case
  std::unique_ptr<connection> borrowed;                         // adopted case
  spool::detail::database_impl* db = nullptr;                   // owned case: for wake-ups
  bool done = false;

  [[nodiscard]] connection& conn() { return lease ? **lease : *borrowed; }
  [[nodiscard]] bool adopted() const noexcept { return !lease.has_value(); }
  // Throws transaction_required unless the connection is inside a transaction block.
  void require_transaction();
};

}  // namespace spool::pg::detail
