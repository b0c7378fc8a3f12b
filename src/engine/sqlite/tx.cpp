#include "spool/sqlite.hpp"

#include "engine/sqlite/tx_impl.hpp"
#include "spool/error.hpp"

namespace spool::sqlite {

void detail::tx_impl::require_transaction() {
  if (done) throw error(errc::transaction_required, "the transaction has already ended");
  if (!conn().in_transaction()) {
    throw error(errc::transaction_required, "the SQLite handle is not inside a transaction (run BEGIN first)");
  }
}

tx::tx(database& db) : impl_(std::make_unique<detail::tx_impl>()) {
  impl_->db = &db.impl();
  impl_->lease.emplace(db.impl().sqlite_pool().acquire());
  impl_->conn().begin_immediate();
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
  return impl_->conn().query(sql, params);
}

void tx::commit() {
  if (impl_->adopted()) {
    throw error(errc::invalid_state, "an adopted handle's transaction is committed by its owner");
  }
  if (impl_->done) throw error(errc::transaction_required, "the transaction has already ended");
  impl_->conn().commit();
  impl_->done = true;
  impl_->db->wake().raise();
}

void tx::rollback() noexcept {
  if (!impl_ || impl_->done || impl_->adopted()) return;
  impl_->done = true;
  impl_->conn().rollback();
}

tx adopt(::sqlite3* handle) {
  if (handle == nullptr) throw error(errc::invalid_argument, "adopt: null sqlite3 handle");
  auto impl = std::make_unique<detail::tx_impl>();
  impl->borrowed = std::make_unique<detail::connection>(handle);
  impl->require_transaction();
  return tx(std::move(impl));
}

}  // namespace spool::sqlite
