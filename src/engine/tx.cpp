// spool::tx: the engine-neutral handle; the engine is chosen here, once, from
// the database it begins on.
#include "spool/tx.hpp"

#include "engine/postgres/tx_impl.hpp"
#include "engine/sqlite/tx_impl.hpp"

namespace spool {

namespace {
std::unique_ptr<detail::tx_state> begin_on(database& db) {
  if (db.kind() == engine::postgres) return pg::detail::begin(db.impl());
  return sqlite::detail::begin(db.impl());
}
}  // namespace

tx::tx(database& db) : state_(begin_on(db)) {}
tx::tx(std::unique_ptr<detail::tx_state> state) : state_(std::move(state)) {}
tx::tx(tx&&) noexcept = default;
tx& tx::operator=(tx&& other) noexcept {
  if (this != &other) {
    rollback();
    state_ = std::move(other.state_);
  }
  return *this;
}
tx::~tx() { rollback(); }

engine tx::kind() const noexcept { return state_->kind(); }
std::vector<row> tx::exec(std::string_view sql, const std::vector<param>& params) { return state_->exec(sql, params); }
void tx::commit() { state_->commit(); }
void tx::rollback() noexcept {
  if (state_) state_->rollback();
}

}  // namespace spool
