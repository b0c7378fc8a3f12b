// PostgreSQL's half of spool::tx: BEGIN on a pooled connection (sent with the
// first statement), or an adopted PGconn that stays its owner's.
#include <fmt/format.h>

#include "engine/postgres/tx_impl.hpp"
#include "spool/error.hpp"
#include "spool/pg.hpp"
#include "spool/pg_native.hpp"

namespace spool::pg {

namespace detail {

void tx_impl::require_transaction() {
  if (done) throw error(errc::transaction_required, "the transaction has already ended");
  if (conn().opening_pending()) return;  // begun lazily, nothing sent yet
  if (PQtransactionStatus(conn().native()) != PQTRANS_INTRANS) {
    throw error(errc::transaction_required,
                PQtransactionStatus(conn().native()) == PQTRANS_INERROR
                    ? "the connection's transaction is aborted; roll it back first"
                    : "the connection is not inside a transaction block (run BEGIN first)");
  }
}

std::vector<row> tx_impl::exec(std::string_view sql, const std::vector<param>& params) {
  if (done) throw error(errc::transaction_required, "the transaction has already ended");
  return conn().query(sql, params, intent::write);
}

void tx_impl::commit() {
  if (adopted())
    throw error(errc::invalid_state, "an adopted connection's transaction is committed by its owner");
  if (done) throw error(errc::transaction_required, "the transaction has already ended");
  if (PQtransactionStatus(conn().native()) == PQTRANS_INERROR) {
    rollback();
    throw error(errc::invalid_state,
                "the transaction was aborted by an earlier error and has been rolled back",
                "transaction_aborted");
  }
  done = true;
  if (conn().opening_pending()) {  // nothing ran: nothing to commit
    conn().forget_opening();
    return;
  }
  try {
    conn().exec("COMMIT", {}, intent::write);
  } catch (...) {
    lease->discard();
    throw;
  }
  db->wake().raise();
}

void tx_impl::rollback() noexcept {
  if (done || adopted()) return;
  done = true;
  if (conn().opening_pending()) {  // nothing was sent
    conn().forget_opening();
    return;
  }
  try {
    conn().exec("ROLLBACK", {}, intent::read);
  } catch (...) {
    lease->discard();  // a connection that cannot roll back is not reused
  }
}

std::unique_ptr<spool::detail::tx_state> begin(spool::detail::database_impl& db) {
  auto t = std::make_unique<tx_impl>();
  t->db = &db;
  t->lease.emplace(db.pg_pool().acquire());
  // BEGIN goes out with the transaction's first statement, saving a round
  // trip per transaction (an outbox writer's W1 makes three: BEGIN, INSERT,
  // COMMIT).
  t->conn().open_lazily({"BEGIN"});
  return t;
}

connection& connection_of(spool::tx& t, std::string_view owner) {
  return spool::detail::open_state_of<tx_impl>(t, owner).conn();
}

}  // namespace detail

tx::tx(database& db) : spool::tx(detail::begin(db.impl())) {}
tx::tx(std::unique_ptr<spool::detail::tx_state> state) : spool::tx(std::move(state)) {}

tx adopt(PGconn* conn) {
  if (conn == nullptr) throw error(errc::invalid_argument, "adopt: null PGconn");
  auto impl = std::make_unique<detail::tx_impl>();
  impl->borrowed = std::make_unique<detail::connection>(conn);
  impl->require_transaction();
  return tx(std::move(impl));
}

}  // namespace spool::pg
