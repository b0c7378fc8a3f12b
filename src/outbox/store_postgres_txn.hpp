// The outbox PostgreSQL store's own transactions (store_postgres.cpp): txn, one
// statement at a time, and one_trip_tx, all statements in one round trip.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/pool.hpp"
#include "engine/postgres/connection.hpp"
#include "spool/call_options.hpp"
#include "spool/database.hpp"

namespace spool::detail {
class database_impl;
}

namespace spool::outbox::detail {

// One short transaction of the store's own on a pooled connection, at READ
// COMMITTED whatever the database default; rolled back unless committed.
// Sequential scans are disabled for the transaction (SET LOCAL; the pooled
// connection's session settings are untouched), so claim, backlog, inspect
// and retention always use their partial indexes (outbox.md §3.3, scenario
// 17), also on a small or freshly analysed table where the planner would
// otherwise pick a sequential scan and cache it in a prepared statement.
class txn {
 public:
  txn(spool::detail::database_impl& db, const call_options& c);
  ~txn();
  txn(const txn&) = delete;
  txn& operator=(const txn&) = delete;
  std::vector<row> query(const std::string& sql, const std::vector<param>& p,
                         pg::detail::intent what = pg::detail::intent::write);
  void set_local(const std::string& setting, std::int64_t ms);
  void commit();

 private:
  spool::detail::pool<pg::detail::connection>::lease lease_;
  const call_options& c_;
  bool done_ = false;
};

// The same transaction as txn (READ COMMITTED, no sequential scans) when its
// statements need nothing from each other's results: BEGIN, the statements
// and COMMIT go in one round trip (libpq pipeline mode), so a claim or a
// fenced transition costs one round trip instead of four. Returns the
// statements' results. A failure leaves nothing committed: the aborted
// transaction is rolled back, or the connection dropped.
//
// generic_plan: the statements' plan does not depend on their values (the
// claim in mode none walks claim_idx whatever the limit; a fenced transition
// finds one row by id), so they are planned once per connection instead of
// on every call (a custom plan of the claim cost more than running it).
std::vector<pg::detail::result_ptr> one_trip_tx(
    spool::detail::database_impl& db, const std::vector<pg::detail::connection::statement>& statements,
    bool generic_plan, const call_options& c);

}  // namespace spool::outbox::detail
