#include <fmt/format.h>

#include "engine/postgres/tx_impl.hpp"
#include "spool/error.hpp"
#include "spool/pg.hpp"
#include "spool/pg_native.hpp"

namespace spool::pg {

void detail::tx_impl::require_transaction() {
  if (done) throw error(errc::transaction_required, "the transaction has already ended");
  if (PQtransactionStatus(conn().native()) != PQTRANS_INTRANS) {
    throw error(errc::transaction_required,
                PQtransactionStatus(conn().native()) == PQTRANS_INERROR
                    ? "the connection's transaction is aborted; roll it back first"
                    : "the connection is not inside a transaction block (run BEGIN first)");
  }
}

tx::tx(database& db) : impl_(std::make_unique<detail::tx_impl>()) {
  impl_->db = &db.impl();
  impl_->lease.emplace(db.impl().pg_pool().acquire());
  try {
    impl_->conn().exec("BEGIN", {}, detail::intent::read);
  } catch (...) {
    impl_->lease->discard();
    throw;
  }
}

tx::tx(std::unique_ptr<detail::tx_impl> impl) : impl_(std::move(impl)) {}
tx::tx(tx&&) noexcept = default;
tx& tx::operator=(tx&& other) noexcept {
  if (this != &other) {
    rollback();
    impl_ = std::move(other.impl_);
  }
  return *this;
}
tx::~tx() { rollback(); }

std::vector<row> tx::exec(std::string_view sql, const std::vector<param>& params) {
  if (impl_->done) throw error(errc::transaction_required, "the transaction has already ended");
  return impl_->conn().query(sql, params, detail::intent::write);
}

void tx::commit() {
  if (impl_->adopted()) {
    throw error(errc::invalid_state, "an adopted connection's transaction is committed by its owner");
  }
  if (impl_->done) throw error(errc::transaction_required, "the transaction has already ended");
  if (PQtransactionStatus(impl_->conn().native()) == PQTRANS_INERROR) {
    rollback();
    throw error(errc::invalid_state, "the transaction was aborted by an earlier error and has been rolled back",
                "transaction_aborted");
  }
  impl_->done = true;
  try {
    impl_->conn().exec("COMMIT", {}, detail::intent::write);
  } catch (...) {
    impl_->lease->discard();
    throw;
  }
  impl_->db->wake().raise();
}

void tx::rollback() noexcept {
  if (!impl_ || impl_->done || impl_->adopted()) return;
  impl_->done = true;
  try {
    impl_->conn().exec("ROLLBACK", {}, detail::intent::read);
  } catch (...) {
    impl_->lease->discard();  // a connection that cannot roll back is not reused
  }
}

tx adopt(PGconn* conn) {
  if (conn == nullptr) throw error(errc::invalid_argument, "adopt: null PGconn");
  auto impl = std::make_unique<detail::tx_impl>();
  impl->borrowed = std::make_unique<detail::connection>(conn);
  impl->require_transaction();
  return tx(std::move(impl));
}

}  // namespace spool::pg
