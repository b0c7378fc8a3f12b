// What a spool::tx holds: one engine's connection inside a transaction the
// application owns (a pooled one Spool began, or an adopted one Spool must
// never commit or close). Each engine implements it once (postgres/tx_impl.hpp,
// sqlite/tx_impl.hpp); store_<engine> files reach their connection through
// that engine's tx_of(). Thread safety: one thread at a time, as spool::tx.
#pragma once

#include <fmt/format.h>

#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "engine/pool.hpp"
#include "spool/database.hpp"
#include "spool/error.hpp"
#include "spool/tx.hpp"

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

class database_impl;

// What each engine's state holds beside its tx_state: a pooled connection
// Spool began on, or an adopted one it must never commit or close.
template <class Connection>
struct tx_connection {
  std::optional<typename pool<Connection>::lease> lease;  // owned case
  std::unique_ptr<Connection> borrowed;                   // adopted case
  database_impl* db = nullptr;                            // owned case: for wake-ups
  bool done = false;

  [[nodiscard]] Connection& conn() { return lease ? **lease : *borrowed; }
  [[nodiscard]] bool adopted() const noexcept { return !lease.has_value(); }
};

// t's state as State (an engine's tx_impl), checked to be open: the one check
// behind pg::detail::connection_of and sqlite::detail::connection_of. `owner`
// names what needs it. Errors: invalid_argument (wrong_engine) when t runs on
// another engine; transaction_required when it ended or is outside a block.
template <class State>
State& open_state_of(spool::tx& t, std::string_view owner) {
  if (t.kind() != State::engine_kind) {
    throw error(errc::invalid_argument,
                fmt::format("{} is on {}; got a transaction on {}", owner, engine_name(State::engine_kind),
                            engine_name(t.kind())),
                "wrong_engine");
  }
  auto& state = static_cast<State&>(t.state());
  state.require_transaction();
  return state;
}

}  // namespace spool::detail
