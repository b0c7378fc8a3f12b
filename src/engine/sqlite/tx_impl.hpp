// What a spool::sqlite::tx holds: a pooled connection in BEGIN IMMEDIATE, or
// an adopted application handle that Spool must never commit or close.
#pragma once

#include <memory>
#include <optional>

#include "engine/database_impl.hpp"

namespace spool::sqlite::detail {

struct tx_impl {
  std::optional<spool::detail::pool<connection>::lease> lease;
  std::unique_ptr<connection> borrowed;
  spool::detail::database_impl* db = nullptr;
  bool done = false;

  [[nodiscard]] connection& conn() { return lease ? **lease : *borrowed; }
  [[nodiscard]] bool adopted() const noexcept { return !lease.has_value(); }
  void require_transaction();
};

}  // namespace spool::sqlite::detail
