// SQLite's half of spool::tx: BEGIN IMMEDIATE on a pooled connection, or an
// adopted sqlite3 handle that stays its owner's.
#include <fmt/format.h>

#include "engine/sqlite/tx_impl.hpp"
#include "spool/error.hpp"
#include "spool/sqlite.hpp"

namespace spool::sqlite {

namespace detail {

void tx_impl::require_transaction() {
  if (done) throw error(errc::transaction_required, "the transaction has already ended");
  if (!conn().in_transaction()) {
    throw error(errc::transaction_required, "the SQLite handle is not inside a transaction (run BEGIN first)");
  }
}

std::vector<row> tx_impl::exec(std::string_view sql, const std::vector<param>& params) {
  if (done) throw error(errc::transaction_required, "the transaction has already ended");
  return conn().query(sql, params);
}

void tx_impl::commit() {
  if (adopted()) throw error(errc::invalid_state, "an adopted handle's transaction is committed by its owner");
  if (done) throw error(errc::transaction_required, "the transaction has already ended");
  conn().commit();
  done = true;
  db->wake().raise();
}

void tx_impl::rollback() noexcept {
  if (done || adopted()) return;
  done = true;
  conn().rollback();
}

std::unique_ptr<spool::detail::tx_state> begin(spool::detail::database_impl& db) {
  auto t = std::make_unique<tx_impl>();
  t->db = &db;
  t->lease.emplace(db.sqlite_pool().acquire());
  try {
    t->conn().begin_immediate();
  } catch (...) {
    t->done = true;  // nothing began: the lease goes back as it was
    throw;
  }
  return t;
}

connection& connection_of(spool::tx& t, std::string_view owner) {
  return spool::detail::open_state_of<tx_impl>(t, owner).conn();
}

}  // namespace detail

tx::tx(database& db) : spool::tx(detail::begin(db.impl())) {}
tx::tx(std::unique_ptr<spool::detail::tx_state> state) : spool::tx(std::move(state)) {}

tx adopt(::sqlite3* handle) {
  if (handle == nullptr) throw error(errc::invalid_argument, "adopt: null sqlite3 handle");
  auto impl = std::make_unique<detail::tx_impl>();
  impl->borrowed = std::make_unique<detail::connection>(handle);
  impl->require_transaction();
  return tx(std::move(impl));
}

}  // namespace spool::sqlite
