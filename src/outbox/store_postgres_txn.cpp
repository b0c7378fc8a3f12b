// The outbox PostgreSQL store's own transactions: txn and one_trip_tx, both at
// READ COMMITTED with sequential scans off (see store_postgres_txn.hpp).
#include "outbox/store_postgres_txn.hpp"

#include <fmt/format.h>

#include "common/call_guard.hpp"
#include "engine/database_impl.hpp"

namespace spool::outbox::detail {

namespace {

using pg::detail::intent;
using conn_t = pg::detail::connection;

// The opening of every transaction of the store's own (txn, one_trip_tx).
constexpr const char* tx_begin = "BEGIN ISOLATION LEVEL READ COMMITTED";
constexpr const char* tx_no_seqscan = "SET LOCAL enable_seqscan = off";

}  // namespace

txn::txn(spool::detail::database_impl& db, const call_options& c) : lease_(db.pg_pool().acquire(c)), c_(c) {
  spool::detail::check_call(c, "outbox transaction");
  // Sent with the first statement, in its round trip: the store's
  // transactions are short, so every round trip saved shows in the drain rate.
  lease_->open_lazily({tx_begin, tx_no_seqscan});
}

txn::~txn() {
  if (done_) return;
  if (lease_->opening_pending()) {  // nothing was sent
    lease_->forget_opening();
    return;
  }
  try {
    if (lease_->healthy()) lease_->exec("ROLLBACK", {}, intent::read);
  } catch (...) {
    lease_.discard();
  }
}

std::vector<row> txn::query(const std::string& sql, const std::vector<param>& p, intent what) {
  return lease_->query(sql, p, what, c_);
}

void txn::set_local(const std::string& setting, std::int64_t ms) {
  lease_->exec(fmt::format("SET LOCAL {} = {}", setting, ms), {}, intent::read);
}

void txn::commit() {
  done_ = true;
  if (lease_->opening_pending()) {  // nothing ran: nothing to commit
    lease_->forget_opening();
    return;
  }
  lease_->exec("COMMIT", {}, intent::write);
}

std::vector<pg::detail::result_ptr> one_trip_tx(spool::detail::database_impl& db,
                                                const std::vector<conn_t::statement>& statements,
                                                bool generic_plan, const call_options& c) {
  auto lease = db.pg_pool().acquire(c);
  std::vector<conn_t::statement> all;
  all.reserve(statements.size() + 4);
  all.push_back({tx_begin, {}});
  all.push_back({tx_no_seqscan, {}});
  if (generic_plan) all.push_back({"SET LOCAL plan_cache_mode = force_generic_plan", {}});
  const auto lead = static_cast<std::ptrdiff_t>(all.size());
  all.insert(all.end(), statements.begin(), statements.end());
  all.push_back({"COMMIT", {}});
  try {
    auto results = lease->pipeline(all, intent::write, c);
    results.erase(results.begin(), results.begin() + lead);
    results.pop_back();
    return results;
  } catch (...) {
    try {
      if (lease->healthy() && lease->in_transaction()) lease->exec("ROLLBACK", {}, intent::read);
    } catch (...) {
      lease.discard();
    }
    throw;
  }
}

}  // namespace spool::outbox::detail
