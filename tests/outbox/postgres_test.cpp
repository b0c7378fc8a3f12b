// PostgreSQL-only outbox scenarios (outbox.md §10: 4, 5, 7, 14, 15, 19, 20):
// raw libpq transactions, commit-order safety, row and table locks.
#include <libpq-fe.h>

#include <future>

#include "outbox_fixture.hpp"

namespace spool::test {
namespace {

using namespace spool::outbox;

struct pg_conn {
  PGconn* c;
  explicit pg_conn(const std::string& uri) : c(PQconnectdb(uri.c_str())) {
    if (PQstatus(c) != CONNECTION_OK) throw std::runtime_error(PQerrorMessage(c));
    PQsetNoticeProcessor(
        c, [](void*, const char*) {}, nullptr);
  }
  ~pg_conn() { PQfinish(c); }
  // Runs sql; returns the SQLSTATE of a failure, "" on success.
  std::string run(const std::string& sql) {
    PGresult* r = PQexec(c, sql.c_str());
    const auto st = PQresultStatus(r);
    std::string state;
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
      const char* s = PQresultErrorField(r, PG_DIAG_SQLSTATE);
      state = s ? s : "?";
    }
    PQclear(r);
    return state;
  }
  int backend_pid() const { return PQbackendPID(c); }
};

class outbox_postgres : public ::testing::Test {
 protected:
  void SetUp() override {
    uri_ = make_pg_database(::testing::UnitTest::GetInstance()->current_test_info()->name());
    db_.emplace(database::open(uri_));
    outbox::migrate(*db_);
    db_->exec("CREATE TABLE app_orders (id text PRIMARY KEY)");
  }
  static envelope env(std::string id, std::string key = {}) {
    envelope e;
    e.id = std::move(id);
    e.topic = "t";
    e.payload = "p";
    e.ordering_key = std::move(key);
    return e;
  }
  std::int64_t count(const std::string& table = "outbox_messages") {
    return std::stoll(*db_->exec("SELECT count(*) FROM " + table).at(0).at(0));
  }
  static std::vector<std::string> ids(const std::vector<claimed_message>& c) {
    std::vector<std::string> out;
    for (const auto& m : c) out.push_back(m.message.id);
    return out;
  }
  std::string uri_;
  std::optional<database> db_;
};

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
  auto first = s.claim("relay", 10, 30s, serialization::by_ordering_key);
  ASSERT_EQ(ids(first), (std::vector<std::string>{"k-first"}));
  s.mark_delivered(first[0].ref);
  EXPECT_EQ(ids(s.claim("relay", 10, 30s, serialization::by_ordering_key)),
            (std::vector<std::string>{"k-second"}));
}

TEST_F(outbox_postgres, mark_delivered_and_claim_next_keeps_the_horizon_rule) {
  writer w(*db_);
  store s(*db_);
  {
    pg::tx tx(*db_);
    (void)w.insert(tx, env("k0", "k"));
    tx.commit();
  }
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

TEST_F(outbox_postgres, a_row_locked_oldest_row_is_skipped_and_a_table_lock_is_unavailable) {
  writer w(*db_);
  {
    pg::tx tx(*db_);
    (void)w.insert_batch(tx, {env("old"), env("new")});
    tx.commit();
  }
  store s(*db_);
  pg_conn op(uri_);
  ASSERT_EQ(op.run("BEGIN"), "");
  ASSERT_EQ(op.run("SELECT 1 FROM outbox_messages WHERE id = 'old' FOR UPDATE"), "");
  EXPECT_EQ(ids(s.claim("relay", 1, 30s)), (std::vector<std::string>{"new"}));
  ASSERT_EQ(op.run("COMMIT"), "");
  EXPECT_EQ(ids(s.claim("relay", 1, 30s)), (std::vector<std::string>{"old"}));
  ASSERT_EQ(op.run("BEGIN"), "");
  ASSERT_EQ(op.run("LOCK TABLE outbox_messages IN ACCESS EXCLUSIVE MODE"), "");
  try {
    (void)s.claim("relay", 1, 30s, serialization::none, call_options::within(300ms));
    ADD_FAILURE() << "claim under a table lock succeeded";
  } catch (const spool::error& e) {
    EXPECT_TRUE(e.code() == errc::unavailable || e.code() == errc::in_doubt) << e.what();
  }
  ASSERT_EQ(op.run("ROLLBACK"), "");
  db_->exec("ALTER DATABASE " + *db_->exec("SELECT current_database()").at(0).at(0) +
            " SET default_transaction_isolation = 'serializable'");
  auto serial = database::open(uri_);
  store s2(serial);
  {
    pg::tx tx(serial);
    (void)w.insert(tx, env("third"));
    tx.commit();
  }
  EXPECT_EQ(ids(s2.claim("relay", 5, 30s)), (std::vector<std::string>{"third"}));
}

TEST_F(outbox_postgres, a_lease_expiring_while_its_call_waits_on_the_row_lock_is_lease_lost) {
  writer w(*db_);
  {
    pg::tx tx(*db_);
    (void)w.insert(tx, env("x"));
    tx.commit();
  }
  store s(*db_, {.max_lease_duration = 10min});
  const auto c = s.claim("relay", 1, 300ms).at(0);
  pg_conn op(uri_);
  ASSERT_EQ(op.run("BEGIN"), "");
  ASSERT_EQ(op.run("SELECT 1 FROM outbox_messages WHERE id = 'x' FOR UPDATE"), "");
  auto call = std::async(std::launch::async, [&] {
    try {
      s.mark_delivered(c.ref);
      return std::string("delivered");
    } catch (const spool::error& e) {
      return e.reason();
    }
  });
  std::this_thread::sleep_for(600ms);  // the lease expires while the call waits
  ASSERT_EQ(op.run("COMMIT"), "");
  EXPECT_EQ(call.get(), "lease_lost");
  EXPECT_EQ(*db_->exec("SELECT state FROM outbox_messages").at(0).at(0), "leased");
}

TEST_F(outbox_postgres,
       an_older_repeatable_read_snapshot_still_sees_a_pruned_row_and_a_racing_replay_reports_missing) {
  writer w(*db_);
  {
    pg::tx tx(*db_);
    (void)w.insert_batch(tx, {env("a"), env("b")});
    tx.commit();
  }
  store s(*db_);
  for (const auto& c : s.claim("relay", 2, 30s)) s.mark_delivered(c.ref);
  db_->exec("UPDATE outbox_messages SET delivered_at = clock_timestamp() - interval '2 hours'");
  pg_conn reader(uri_);
  ASSERT_EQ(reader.run("BEGIN ISOLATION LEVEL REPEATABLE READ"), "");
  ASSERT_EQ(reader.run("SELECT count(*) FROM outbox_messages"), "");
  EXPECT_EQ(s.prune_delivered(cutoff::older_than(1h), 1), (std::vector<std::string>{"a"}));
  PGresult* r = PQexec(reader.c, "SELECT count(*) FROM outbox_messages WHERE id = 'a'");
  EXPECT_EQ(std::string(PQgetvalue(r, 0, 0)), "1");
  PQclear(r);
  reader.run("COMMIT");
  // A replay racing the archive of its row waits, then reports missing.
  std::promise<void> selected;
  std::promise<void> release;
  auto archive = std::async(std::launch::async, [&] {
    auto slow = [&](const std::vector<archived_message>&, auto, std::stop_token) {
      selected.set_value();
      release.get_future().wait();
      return archive_outcome{};
    };
    return s.archive_and_prune_delivered(cutoff::older_than(1h), 10, slow);
  });
  selected.get_future().wait();
  auto replay = std::async(std::launch::async, [&] {
    try {
      (void)s.replay({{"b"}, "ops", "why"});
      return std::string("replayed");
    } catch (const replay_conflict& e) {
      return std::string(to_string(e.items().at(0).second));
    } catch (const spool::error& e) {
      return e.reason();
    }
  });
  std::this_thread::sleep_for(200ms);
  release.set_value();
  EXPECT_EQ(archive.get(), (std::vector<std::string>{"b"}));
  EXPECT_EQ(replay.get(), "missing");
}

TEST_F(outbox_postgres, prune_and_archive_skip_an_operator_locked_row) {
  writer w(*db_);
  {
    pg::tx tx(*db_);
    (void)w.insert_batch(tx, {env("a"), env("b"), env("c")});
    tx.commit();
  }
  store s(*db_);
  for (const auto& c : s.claim("relay", 3, 30s)) s.mark_delivered(c.ref);
  db_->exec("UPDATE outbox_messages SET delivered_at = clock_timestamp() - interval '2 hours'");
  pg_conn op(uri_);  // an operator holding one row
  ASSERT_EQ(op.run("BEGIN"), "");
  ASSERT_EQ(op.run("SELECT 1 FROM outbox_messages WHERE id = 'a' FOR UPDATE"), "");
  // A prune that waited for the lock would wait for this test's COMMIT below,
  // so it would hit the deadline and raise instead of returning.
  const call_options bounded{std::chrono::steady_clock::now() + 60s, {}};
  EXPECT_EQ(s.prune_delivered(cutoff::older_than(1h), 1, bounded),
            (std::vector<std::string>{"b"}));  // a is skipped
  bool called_with_a = false;
  auto check = [&](const std::vector<archived_message>& batch, auto, std::stop_token) {
    for (const auto& m : batch) called_with_a = called_with_a || m.message.id == "a";
    return archive_outcome{};
  };
  EXPECT_EQ(s.archive_and_prune_delivered(cutoff::older_than(1h), 10, check, bounded),
            (std::vector<std::string>{"c"}));
  EXPECT_FALSE(called_with_a);
  EXPECT_EQ(count(), 1);
  ASSERT_EQ(op.run("COMMIT"), "");
  EXPECT_EQ(s.prune_delivered(cutoff::older_than(1h), 10), (std::vector<std::string>{"a"}));
}

TEST_F(outbox_postgres, with_notify_a_listener_hears_the_table_only_after_the_callers_commit) {
  pg_conn listener(uri_);
  ASSERT_EQ(listener.run("LISTEN spool_outbox"), "");
  ASSERT_EQ(listener.run("LISTEN other_channel"), "");
  // Every notification that arrives within `wait`, as channel/payload.
  auto drain = [&](std::chrono::milliseconds wait) {
    std::vector<std::string> got;
    const auto until = std::chrono::steady_clock::now() + wait;
    do {
      PQconsumeInput(listener.c);
      while (PGnotify* n = PQnotifies(listener.c)) {
        got.push_back(std::string(n->relname) + "/" + n->extra);
        PQfreemem(n);
      }
      if (!got.empty()) break;
      std::this_thread::sleep_for(10ms);
    } while (std::chrono::steady_clock::now() < until);
    return got;
  };
  const std::string table = *db_->exec("SELECT current_schema()").at(0).at(0) + ".outbox_messages";
  writer w(*db_, {.notify = true});
  {
    pg::tx tx(*db_);
    (void)tx.exec("INSERT INTO app_orders VALUES ('o1')");
    (void)w.insert(tx, env("n1"));
    EXPECT_TRUE(drain(300ms).empty());  // not before the commit
    tx.commit();
  }
  EXPECT_EQ(drain(5s), (std::vector<std::string>{"spool_outbox/" + table}));
  {
    pg::tx tx(*db_);
    (void)w.insert(tx, env("n2"));
    tx.rollback();
  }
  EXPECT_TRUE(drain(500ms).empty());  // never after a rollback
  // Without notify nothing is sent; a configured channel is used as given.
  {
    pg::tx tx(*db_);
    (void)writer(*db_).insert(tx, env("n3"));
    tx.commit();
  }
  EXPECT_TRUE(drain(500ms).empty());
  {
    outbox_config cfg;
    cfg.notify_channel = "other_channel";
    pg::tx tx(*db_);
    (void)writer(*db_, {.config = cfg, .notify = true}).insert(tx, env("n4"));
    tx.commit();
  }
  EXPECT_EQ(drain(5s), (std::vector<std::string>{"other_channel/" + table}));
}

TEST_F(outbox_postgres, a_read_only_connection_is_not_writable_for_ping_claim_and_writer) {
  db_->exec("ALTER DATABASE " + *db_->exec("SELECT current_database()").at(0).at(0) +
            " SET default_transaction_read_only = on");
  auto ro = database::open(uri_);
  store s(ro);
  EXPECT_OUTBOX_ERROR(s.ping(), errc::invalid_state, "not_writable");
  EXPECT_OUTBOX_ERROR((void)s.claim("relay", 1, 30s), errc::invalid_state, "not_writable");
  writer w(ro);
  pg::tx tx(ro);
  EXPECT_OUTBOX_ERROR((void)w.insert(tx, env("x")), errc::invalid_state, "not_writable");
}

TEST_F(outbox_postgres, migrate_print_output_records_itself_and_down_removes_everything) {
  const std::string script = outbox::migrations(engine::postgres, {.schema = "billing"});
  EXPECT_NE(script.find("CREATE TABLE \"billing\".\"outbox_messages\""), std::string::npos);
  EXPECT_NE(script.find("'billing.outbox_messages'"), std::string::npos);
  pg_exec(uri_, "CREATE SCHEMA billing");
  pg_exec(uri_, script);
  store s(*db_, {.config = {.schema = "billing"}});  // the ledger row is there
  spool::revert_migration(*db_, "outbox/1", true, {.schema = "billing"});
  const auto left = pg_query(uri_,
                             "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                             "WHERE n.nspname = 'billing' AND c.relname LIKE 'outbox%'");
  EXPECT_EQ(left.at(0).at(0), "0");
}

}  // namespace
}  // namespace spool::test
