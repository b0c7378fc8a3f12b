// PostgreSQL-only outbox scenarios (outbox.md §10: 4, 5, 7, 14, 15, 16, 19,
// 20, 22), part one: raw libpq transactions and commit-order safety. Row and
// table locks, notifications and the eight racing relays are in
// postgres_locks_test.cpp; server restarts and migrations applied by psql in
// postgres_processes_test.cpp.
#include <fmt/format.h>
#include <libpq-fe.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sstream>

#include "postgres_fixture.hpp"
#include "spool/outbox/relay.hpp"
#include "spool/outbox/sink.hpp"

namespace spool::test {
namespace {

TEST_F(outbox_postgres, a_raw_pgconn_must_be_idle_inside_a_transaction_block) {
  writer w(*db_);
  EXPECT_OUTBOX_ERROR((void)w.insert(static_cast<PGconn*>(nullptr), env("x")), errc::transaction_required,
                      "transaction_required");
  pg_conn app(uri_);
  EXPECT_OUTBOX_ERROR((void)w.insert(app.c, env("x")), errc::transaction_required, "transaction_required");
  ASSERT_EQ(app.run("BEGIN"), "");
  ASSERT_EQ(PQenterPipelineMode(app.c), 1);
  EXPECT_OUTBOX_ERROR((void)w.insert(app.c, env("x")), errc::transaction_required, "transaction_required");
  ASSERT_EQ(PQexitPipelineMode(app.c), 1);
  EXPECT_NE(app.run("SELECT 1/0"), "");
  EXPECT_OUTBOX_ERROR((void)w.insert(app.c, env("x")), errc::invalid_state, "transaction_aborted");
  ASSERT_EQ(app.run("ROLLBACK"), "");
  // In an open block it inserts, twice on the same connection (unnamed statements only).
  ASSERT_EQ(app.run("BEGIN"), "");
  ASSERT_EQ(app.run("INSERT INTO app_orders VALUES ('o1')"), "");
  EXPECT_EQ(w.insert(app.c, env("x")).status, insert_status::inserted);
  EXPECT_EQ(w.insert(app.c, env("y")).status, insert_status::inserted);
  EXPECT_EQ(PQtransactionStatus(app.c), PQTRANS_INTRANS);  // left idle in its block
  EXPECT_EQ(count(), 0);                                   // not committed yet
  ASSERT_EQ(app.run("COMMIT"), "");
  EXPECT_EQ(count(), 2);
  EXPECT_EQ(count("app_orders"), 1);
}

TEST_F(outbox_postgres, an_aborted_transaction_a_caller_exception_and_a_killed_backend_leave_nothing) {
  writer w(*db_);
  {  // caller exception: the tx rolls back in its destructor
    try {
      pg::tx tx(*db_);
      tx.exec("INSERT INTO app_orders VALUES ('o1')");
      (void)w.insert(tx, env("e1"));
      throw std::runtime_error("application bug");
    } catch (const std::runtime_error&) {
    }
  }
  {  // a statement fails after the insert: commit is transaction_aborted
    pg::tx tx(*db_);
    (void)w.insert(tx, env("e2"));
    EXPECT_THROW(tx.exec("SELECT 1/0"), spool::error);
    EXPECT_OUTBOX_ERROR((void)w.insert(tx, env("e3")), errc::invalid_state, "transaction_aborted");
    EXPECT_OUTBOX_ERROR(tx.commit(), errc::invalid_state, "transaction_aborted");
  }
  for (const bool after_insert : {false, true}) {  // backend killed before insert / before commit
    pg_conn app(uri_);
    ASSERT_EQ(app.run("BEGIN"), "");
    ASSERT_EQ(app.run("INSERT INTO app_orders VALUES ('k')"), "");
    if (after_insert) (void)w.insert(app.c, env("k"));
    db_->exec("SELECT pg_terminate_backend($1)", {std::int64_t{app.backend_pid()}});
    std::this_thread::sleep_for(100ms);
    if (!after_insert) {
      try {
        (void)w.insert(app.c, env("k"));
        ADD_FAILURE() << "insert on a killed backend succeeded";
      } catch (const spool::error& e) {
        EXPECT_TRUE(e.code() == errc::transaction_required || e.code() == errc::in_doubt ||
                    e.code() == errc::unavailable)
            << e.what();
      }
    }
  }
  {  // a cancelled insert: it waits on a key another transaction holds, until the statement timeout
    pg::tx holder(*db_);
    auto h = env("held");
    h.idempotency_key = "busy";
    (void)w.insert(holder, h);
    pg::tx tx(*db_);
    tx.exec("INSERT INTO app_orders VALUES ('c')");
    tx.exec("SET LOCAL statement_timeout = 200");
    auto e = env("cancelled");
    e.idempotency_key = "busy";
    EXPECT_OUTBOX_ERROR((void)w.insert(tx, e), errc::unavailable, "statement_timeout");
    EXPECT_OUTBOX_ERROR(tx.commit(), errc::invalid_state, "transaction_aborted");
  }
  EXPECT_EQ(count(), 0);
  EXPECT_EQ(count("app_orders"), 0);
}

// A row the INSERT leaves out although no stored row holds its id (here the
// position sequence restarted under stored rows, as after a careless
// restore) is a conflict the writer names, not duplicate_id: a caller that
// drops the ids already stored and tries again would otherwise loop forever.
TEST_F(outbox_postgres, a_row_left_out_by_a_conflict_on_another_key_is_not_called_a_duplicate_id) {
  writer w(*db_);
  {
    pg::tx tx(*db_);
    (void)w.insert_batch(tx, {env("s1"), env("s2")});
    tx.commit();
  }
  db_->exec("ALTER TABLE outbox_messages ALTER COLUMN seq RESTART WITH 1");
  {
    pg::tx tx(*db_);
    EXPECT_OUTBOX_ERROR((void)w.insert_batch(tx, {env("fresh")}), errc::conflict, "insert_left_out");
  }
  {  // a stored id is still duplicate_id
    pg::tx tx(*db_);
    EXPECT_OUTBOX_ERROR((void)w.insert_batch(tx, {env("s1")}), errc::already_exists, "duplicate_id");
  }
  EXPECT_EQ(count(), 2);
}

TEST_F(outbox_postgres, concurrent_transactions_with_one_idempotency_key_store_one_row) {
  writer w(*db_);
  pg::tx a(*db_), b(*db_);
  auto e1 = env("a1"), e2 = env("b1");
  e1.idempotency_key = e2.idempotency_key = "same";
  (void)w.insert(a, e1);
  auto waiting = std::async(std::launch::async, [&] {
    try {
      (void)w.insert(b, e2);
      return std::string("inserted");
    } catch (const spool::error& e) {
      return e.reason();
    }
  });
  std::this_thread::sleep_for(200ms);
  a.commit();
  EXPECT_EQ(waiting.get(), "idempotency_conflict");
  b.exec("SELECT 1");  // still usable
  b.commit();
  EXPECT_EQ(count(), 1);
}

TEST_F(outbox_postgres, the_loser_of_a_serialization_failure_persists_neither_its_row_nor_its_envelope) {
  writer w(*db_);
  db_->exec("INSERT INTO app_orders VALUES ('counter')");
  pg::tx a(*db_), b(*db_);
  a.exec("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE");
  b.exec("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE");
  a.exec("SELECT count(*) FROM app_orders");
  b.exec("SELECT count(*) FROM app_orders");
  a.exec("INSERT INTO app_orders VALUES ('a')");
  (void)w.insert(a, env("ea"));
  b.exec("INSERT INTO app_orders VALUES ('b')");
  (void)w.insert(b, env("eb"));
  a.commit();
  try {
    b.commit();
    ADD_FAILURE() << "both serializable transactions committed";
  } catch (const spool::error& e) {
    EXPECT_EQ(e.code(), errc::unavailable) << e.what();
    EXPECT_EQ(e.sqlstate(), "40001");
  }
  EXPECT_EQ(db_->exec("SELECT id FROM outbox_messages").size(), 1u);
  EXPECT_EQ(db_->exec("SELECT 1 FROM app_orders WHERE id = 'b'").size(), 0u);
}

TEST_F(outbox_postgres, a_late_committing_transaction_cannot_be_overtaken_in_an_ordered_mode) {
  writer w(*db_);
  store s(*db_);
  pg::tx early(*db_);
  (void)w.insert(early, env("k-first", "k"));  // earlier position, commits last
  {
    pg::tx late(*db_);
    (void)w.insert(late, env("k-second", "k"));
    late.commit();
  }
  EXPECT_TRUE(s.claim("relay", 10, 30s, serialization::by_ordering_key).empty());
  EXPECT_TRUE(s.claim("relay", 10, 30s, serialization::by_topic).empty());
  early.commit();
  settle();
  auto first = s.claim("relay", 10, 30s, serialization::by_ordering_key);
  ASSERT_EQ(ids(first), (std::vector<std::string>{"k-first"}));
  s.mark_delivered(first[0].ref);
  EXPECT_EQ(ids(s.claim("relay", 10, 30s, serialization::by_ordering_key)),
            (std::vector<std::string>{"k-second"}));
}

// The documented order is transaction-id order, not commit order: T1 takes
// its xid first (an unrelated write), T2 writes key k and commits, then T1
// writes k and commits. T1's envelope is the key's first although T2's
// committed first.
TEST_F(outbox_postgres, a_key_is_delivered_in_the_order_its_writers_took_transaction_ids_not_commit_order) {
  writer w(*db_);
  store s(*db_);
  pg::tx t1(*db_);
  (void)t1.exec("INSERT INTO app_orders VALUES ('t1-order')");  // T1 takes its xid here
  {
    pg::tx t2(*db_);
    (void)w.insert(t2, env("t2-envelope", "k"));
    t2.commit();
  }
  EXPECT_TRUE(s.claim("relay", 10, 30s, serialization::by_ordering_key).empty())
      << "T1, open with a smaller xid, holds the key back";
  (void)w.insert(t1, env("t1-envelope", "k"));
  t1.commit();
  settle();
  const auto xids = db_->exec("SELECT id FROM outbox_messages ORDER BY xact_id, seq");
  ASSERT_EQ(xids.size(), 2u);
  EXPECT_EQ(*xids.at(0).at(0), "t1-envelope");
  auto first = s.claim("relay", 10, 30s, serialization::by_ordering_key);
  ASSERT_EQ(ids(first), (std::vector<std::string>{"t1-envelope"}));
  s.mark_delivered(first[0].ref);
  EXPECT_EQ(ids(s.claim("relay", 10, 30s, serialization::by_ordering_key)),
            (std::vector<std::string>{"t2-envelope"}));
}

TEST_F(outbox_postgres, mark_delivered_and_claim_next_keeps_the_horizon_rule) {
  writer w(*db_);
  store s(*db_);
  {
    pg::tx tx(*db_);
    (void)w.insert(tx, env("k0", "k"));
    tx.commit();
  }
  settle();
  auto head = s.claim("relay", 10, 30s, serialization::by_ordering_key);
  ASSERT_EQ(ids(head), (std::vector<std::string>{"k0"}));
  pg::tx open(*db_);  // holds a transaction id below the next row's
  (void)open.exec("INSERT INTO app_orders VALUES ('o1')");
  {
    pg::tx late(*db_);
    (void)w.insert(late, env("k1", "k"));
    late.commit();
  }
  // k1 is committed and is the key's head once k0 is delivered, but a
  // transaction that could still commit an earlier row of k is open.
  EXPECT_FALSE(s.mark_delivered_and_claim_next(head[0].ref, 30s).has_value());
  EXPECT_EQ(*db_->exec("SELECT state FROM outbox_messages WHERE id = 'k0'").at(0).at(0), "delivered");
  open.commit();
  settle();
  EXPECT_EQ(ids(s.claim("relay", 10, 30s, serialization::by_ordering_key)), (std::vector<std::string>{"k1"}));
}

TEST_F(outbox_postgres, in_mode_none_the_later_row_goes_at_once) {
  writer w(*db_);
  store s(*db_);
  pg::tx early(*db_);
  (void)w.insert(early, env("k-first", "k"));
  {
    pg::tx late(*db_);
    (void)w.insert(late, env("k-second", "k"));
    late.commit();
  }
  EXPECT_EQ(ids(s.claim("relay", 10, 30s, serialization::none)), (std::vector<std::string>{"k-second"}));
  early.rollback();
}

}  // namespace
}  // namespace spool::test
