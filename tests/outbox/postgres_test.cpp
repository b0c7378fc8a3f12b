// PostgreSQL-only outbox scenarios (outbox.md §10: 4, 5, 7, 14, 15, 16, 19,
// 20, 22): raw libpq transactions, commit-order safety, row and table locks,
// server restarts, and migrations applied by psql.
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

#include "outbox_fixture.hpp"
#include "spool/outbox/relay.hpp"
#include "spool/outbox/sink.hpp"

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
  // Waits until every stored row is below the commit-order horizon (the
  // cluster-wide xmin). Other suites share this server, and any transaction
  // of theirs older than our rows holds ordered claims back until it ends.
  void settle() {
    const auto until = std::chrono::steady_clock::now() + 60s;
    while (*db_->exec("SELECT coalesce(max(xact_id) < pg_snapshot_xmin(pg_current_snapshot()), true) "
                      "FROM outbox_messages")
                   .at(0)
                   .at(0) != "t" &&
           std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(20ms);
    }
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

// ---- Processes: pg_server.sh, the spool CLI, psql and pg_dump ----

std::string sh_quote(const std::string& s) {
  std::string out = "'";
  for (const char ch : s) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

std::string read_text(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// Runs a shell command line and returns its stdout; throws with the command,
// its exit status and its output (stderr included) when it fails.
std::string run(const std::string& command) {
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) throw std::runtime_error("popen failed: " + command);
  std::string out;
  char buf[4096];
  while (const std::size_t n = std::fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  const int status = ::pclose(pipe);
  if (status != 0) {
    throw std::runtime_error(command + " failed (status " + std::to_string(WEXITSTATUS(status)) + "):\n" +
                             out);
  }
  return out;
}

// A variable the CTest definition sets (tests/CMakeLists.txt). Missing means
// the test was started outside ctest: fail, naming it, rather than skip.
std::string required_env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') {
    throw std::runtime_error(std::string("$") + name +
                             " is not set: run this test through ctest (tests/CMakeLists.txt sets it)");
  }
  return v;
}

// A PostgreSQL client tool of the server's major version, found as
// tests/support/pg_server.sh finds the server's binaries.
std::string pg_tool(const std::string& name) {
  std::vector<std::string> dirs;
  try {
    std::string d = run("pg_config --bindir");
    while (!d.empty() && (d.back() == '\n' || d.back() == ' ')) d.pop_back();
    dirs.push_back(d);
  } catch (const std::runtime_error&) {
  }
  dirs.emplace_back("/usr/lib/postgresql/15/bin");
  for (const auto& d : dirs) {
    if (std::filesystem::exists(std::filesystem::path(d) / name))
      return (std::filesystem::path(d) / name).string();
  }
  throw std::runtime_error(name + " not found in pg_config --bindir or /usr/lib/postgresql/15/bin");
}

// A PostgreSQL server of the test's own in a temp directory, started with
// tests/support/pg_server.sh and stopped by the destructor, also when an
// assertion fails. The shared test server ($SPOOL_TEST_PG_DIR) serves suites
// running in parallel, so a test must never restart that one.
class private_pg_server {
 public:
  private_pg_server() : script_(required_env("SPOOL_TEST_PG_SCRIPT")) {
    script("start");
    uri_ = read_text(dir_.path() / "uri");
    while (!uri_.empty() && uri_.back() == '\n') uri_.pop_back();
  }
  ~private_pg_server() {
    try {
      script("stop");
    } catch (const std::exception& e) {
      ADD_FAILURE() << "could not stop the private PostgreSQL server: " << e.what();
    }
    // stop deletes the data directory in the background, so removing the
    // temp dir at once can race it and leave the directory behind.
    std::error_code ec;
    for (int attempt = 0; attempt < 100 && std::filesystem::exists(dir_.path(), ec); ++attempt) {
      std::filesystem::remove_all(dir_.path(), ec);
      if (std::filesystem::exists(dir_.path(), ec)) std::this_thread::sleep_for(100ms);
    }
  }
  private_pg_server(const private_pg_server&) = delete;
  private_pg_server& operator=(const private_pg_server&) = delete;

  // Restarts in place (same data and port); mode is fast or immediate.
  void restart(const std::string& mode) { script("restart", mode); }
  [[nodiscard]] const std::string& uri() const { return uri_; }

 private:
  void script(const std::string& command, const std::string& mode = {}) {
    (void)run(sh_quote(script_) + " " + command + " " + sh_quote(dir_.path().string()) +
              (mode.empty() ? "" : " " + mode));
  }
  temp_dir dir_;  // declared first: removed only after the destructor stopped the server
  std::string script_;
  std::string uri_;
};

envelope plain_envelope(std::string id) {
  envelope e;
  e.id = std::move(id);
  e.topic = "t";
  e.payload = "p";
  return e;
}

// Scenario 16, on a server of the test's own: a restart (a fast shutdown,
// then an immediate one, which ends sessions like a crash) kills the backend
// behind the store's pooled connection. ping reports that as unavailable or
// in_doubt, never anything else, and recovers on the same store and database
// handle; the row written before the restart is then claimed and delivered.
TEST(outbox_restart_postgres, after_a_restart_ping_recovers_and_the_row_written_before_it_is_delivered) {
  private_pg_server server;
  // The throwaway cluster runs synchronous_commit = off, so an immediate
  // shutdown could drop commits whose WAL was still in shared memory. This
  // test is about reconnecting, not about a test server's durability.
  pg_exec(server.uri(), "ALTER DATABASE postgres SET synchronous_commit = on");
  auto db = database::open(server.uri());
  outbox::migrate(db);
  store s(db);
  writer w(db);
  for (const std::string mode : {"fast", "immediate"}) {
    SCOPED_TRACE(mode + " restart");
    const std::string id = "written-before-a-" + mode + "-restart";
    {
      pg::tx tx(db);
      (void)w.insert(tx, plain_envelope(id));
      tx.commit();
    }
    s.ping();  // the pooled connection works before the restart
    server.restart(mode);

    int failures = 0;
    bool recovered = false;
    for (int attempt = 0; attempt < 50 && !recovered; ++attempt) {
      try {
        s.ping();
        recovered = true;
      } catch (const spool::error& e) {
        ++failures;
        EXPECT_TRUE(e.code() == errc::unavailable || e.code() == errc::in_doubt) << e.what();
        std::this_thread::sleep_for(100ms);
      }
    }
    ASSERT_TRUE(recovered) << "ping did not recover within 50 attempts";
    // The connection pooled before the restart had lost its backend, so at
    // least the first ping after it had to fail.
    EXPECT_GE(failures, 1);

    const auto got = s.claim("relay", 10, 30s);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].message.id, id);
    s.mark_delivered(got[0].ref);
    EXPECT_EQ(*db.exec("SELECT state FROM outbox_messages WHERE id = $1", {id}).at(0).at(0), "delivered");
  }
}

// Every object in a database's non-system schemas, one line each: schemas,
// relations (tables, indexes, sequences, views), columns, functions, types,
// triggers, constraints, extensions and event triggers.
std::set<std::string> schema_inventory(const std::string& uri) {
  const auto rows = pg_query(uri, R"(
    WITH ns AS (SELECT oid, nspname FROM pg_namespace
                WHERE nspname NOT IN ('pg_catalog', 'information_schema')
                  AND nspname NOT LIKE 'pg\_toast%' AND nspname NOT LIKE 'pg\_temp%')
    SELECT 'schema ' || nspname FROM ns
    UNION ALL SELECT 'relation(' || c.relkind::text || ') ' || ns.nspname || '.' || c.relname
      FROM pg_class c JOIN ns ON ns.oid = c.relnamespace
    UNION ALL SELECT 'column ' || ns.nspname || '.' || c.relname || '.' || a.attname || ' '
                     || format_type(a.atttypid, a.atttypmod)
      FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN ns ON ns.oid = c.relnamespace
      WHERE a.attnum > 0 AND NOT a.attisdropped AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
    UNION ALL SELECT 'function ' || ns.nspname || '.' || p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')'
      FROM pg_proc p JOIN ns ON ns.oid = p.pronamespace
    UNION ALL SELECT 'type ' || ns.nspname || '.' || t.typname FROM pg_type t JOIN ns ON ns.oid = t.typnamespace
    UNION ALL SELECT 'trigger ' || ns.nspname || '.' || c.relname || '.' || tg.tgname
      FROM pg_trigger tg JOIN pg_class c ON c.oid = tg.tgrelid JOIN ns ON ns.oid = c.relnamespace
      WHERE NOT tg.tgisinternal
    UNION ALL SELECT 'constraint ' || ns.nspname || '.' || co.conname FROM pg_constraint co JOIN ns ON ns.oid = co.connamespace
    UNION ALL SELECT 'extension ' || extname FROM pg_extension
    UNION ALL SELECT 'event trigger ' || evtname FROM pg_event_trigger)");
  std::set<std::string> out;
  for (const auto& r : rows) out.insert(*r.at(0));
  return out;
}

// pg_dump --schema-only without what differs between two databases of one
// schema: comment lines (they name the database), blank lines, and the
// \restrict / \unrestrict lines newer pg_dump releases add with a random key.
std::string schema_dump(const std::string& uri) {
  std::istringstream in(run(sh_quote(pg_tool("pg_dump")) + " --schema-only --no-owner -d " + sh_quote(uri)));
  std::string out, line;
  while (std::getline(in, line)) {
    if (line.empty() || line.rfind("--", 0) == 0 || line.rfind("\\restrict", 0) == 0 ||
        line.rfind("\\unrestrict", 0) == 0) {
      continue;
    }
    out += line + '\n';
  }
  return out;
}

// Scenario 22 (PostgreSQL), for every component (mq, ops, outbox): database A
// is migrated by `spool migrate`; B gets the `spool migrate --print` output
// applied by psql, as an external runner would apply it. Both end with the
// same pg_dump --schema-only and the same ledger. Reverting every version,
// newest first, with `spool migrate --revert … --confirm-data-loss` then
// leaves, on both, only what existed before and what the down sections keep
// on purpose.
TEST(outbox_migrate_cli_postgres,
     migrate_print_applied_by_psql_equals_migrate_and_reverting_every_version_leaves_only_what_is_kept) {
  const std::string cli = required_env("SPOOL_CLI");
  const std::string a = make_pg_database("migrate_cli_a");
  const std::string b = make_pg_database("migrate_cli_b");
  const auto fresh = schema_inventory(a);
  ASSERT_EQ(schema_inventory(b), fresh);

  (void)run(sh_quote(cli) + " migrate --db " + sh_quote(a));
  temp_dir dir;
  const auto script = dir.path() / "migrations.sql";
  (void)run(sh_quote(cli) + " migrate --print --db " + sh_quote(b) + " > " + sh_quote(script.string()));
  (void)run(sh_quote(pg_tool("psql")) + " -X -q -v ON_ERROR_STOP=1 -d " + sh_quote(b) + " -f " +
            sh_quote(script.string()));

  const std::string dump = schema_dump(a);
  EXPECT_NE(dump.find("CREATE TABLE public.outbox_messages "), std::string::npos) << dump;
  EXPECT_NE(dump.find("CREATE TABLE public.queue_messages "), std::string::npos) << dump;
  EXPECT_NE(dump.find("CREATE TABLE public.ops_queue "), std::string::npos) << dump;
  EXPECT_EQ(schema_dump(b), dump);

  const std::string ledger_sql =
      "SELECT component, target, version, checksum FROM spool_schema_migrations ORDER BY 1, 2, 3";
  const auto ledger = pg_query(a, ledger_sql);
  EXPECT_EQ(pg_query(b, ledger_sql), ledger);
  // Newest first within a component, components in reverse dependency order.
  std::vector<std::string> versions;
  std::set<std::string> components;
  for (const std::string component : {"outbox", "ops", "mq_catalog", "mq"}) {
    for (auto it = ledger.rbegin(); it != ledger.rend(); ++it) {
      if (*(*it)[0] == component) versions.push_back(component + "/" + *(*it)[2]);
    }
  }
  for (const auto& r : ledger) components.insert(*r[0]);
  // A new component must be added to the revert order above.
  ASSERT_EQ(components, (std::set<std::string>{"mq", "mq_catalog", "ops", "outbox"}));

  // Kept on purpose: ops/1 and ops/2 never drop the op-queue table, its
  // indexes or its dedup column, which filex may have created (op-queue.md
  // §2.3); the ledger is shared by every component, and only its rows go.
  // ops/3's lease columns and index are Spool's own and must go.
  std::set<std::string> kept;
  for (const auto& line : schema_inventory(a)) {
    const bool ops_or_ledger = line.find("ops_queue") != std::string::npos ||
                               line.find("spool_schema_migrations") != std::string::npos;
    const bool ops_3 = line.find(".lease_owner ") != std::string::npos ||
                       line.find(".lease_token ") != std::string::npos ||
                       line.find(".heartbeat_at ") != std::string::npos ||
                       line.find("idx_ops_queue_running_heartbeat") != std::string::npos;
    if (ops_or_ledger && !ops_3) kept.insert(line);
  }
  ASSERT_FALSE(kept.empty());
  for (const auto& [name, uri] : {std::pair<std::string, std::string>{"A", a}, {"B", b}}) {
    SCOPED_TRACE("database " + name);
    for (const auto& v : versions) {
      (void)run(sh_quote(cli) + " migrate --revert " + v + " --confirm-data-loss --db " + sh_quote(uri));
    }
    EXPECT_EQ(pg_query(uri, "SELECT count(*) FROM spool_schema_migrations").at(0).at(0), "0");
    std::set<std::string> left;
    for (const auto& line : schema_inventory(uri)) {
      if (fresh.count(line) == 0) left.insert(line);
    }
    EXPECT_EQ(left, kept);
  }
}

}  // namespace
}  // namespace spool::test

namespace spool::test {
namespace {

// Scenario 23: eight relays race over 20,000 envelopes with 200 ordering keys
// (by_ordering_key) through a sink that delays and fails transiently at
// random. Every envelope is delivered at least once; per key no envelope is
// first delivered before an earlier-position one; a repeat delivery only ever
// follows a failed record of that envelope's delivery (a lost lease, or a
// record that timed out or was in doubt; from the stores' event log).
TEST_F(outbox_postgres,
       eight_relays_racing_over_twenty_thousand_envelopes_keep_every_key_in_order_and_lose_nothing) {
  constexpr int n = 20000, keys = 200, relays = 8;
  {
    writer_options wo;
    wo.max_batch_size = 1000;
    writer w(*db_, wo);
    for (int first = 0; first < n; first += 1000) {
      std::vector<envelope> batch;
      for (int i = first; i < first + 1000; ++i) {
        batch.push_back(env(fmt::format("e{:05}", i), fmt::format("k{:03}", i % keys)));
      }
      pg::tx tx(*db_);
      (void)w.insert_batch(tx, batch);
      tx.commit();
    }
  }
  settle();

  std::mutex mu;
  std::map<std::string, std::vector<int>> first_deliveries;  // key → sequence numbers, in delivery order
  std::map<int, int> publishes;                              // sequence number → successful sink calls
  std::map<std::string, int> lost;                           // id → failed delivery records
  std::atomic<long> transient{0};
  auto sink = make_callback_sink([&](const claimed_message& m, std::stop_token) {
    thread_local std::mt19937 rng(std::random_device{}());
    std::this_thread::sleep_for(std::chrono::microseconds(std::uniform_int_distribution<int>(0, 800)(rng)));
    if (std::uniform_int_distribution<int>(0, 99)(rng) < 3) {
      ++transient;
      return sink_outcome::transient("flaky", "simulated transient failure");
    }
    const int seq = std::stoi(m.message.id.substr(1));
    std::lock_guard lock(mu);
    if (publishes[seq]++ == 0) first_deliveries[m.message.ordering_key].push_back(seq);
    return sink_outcome::delivered();
  });

  std::vector<std::unique_ptr<store>> stores;
  std::vector<std::unique_ptr<relay>> rs;
  for (int i = 0; i < relays; ++i) {
    store_options so;
    // A delivery whose record failed (its lease lost, or the record timed
    // out or was in doubt under load: delivery_unrecorded) is delivered
    // again after its lease expires; each such failure explains one repeat.
    so.observer = [&](const event& e) {
      if (!e.ok && e.op == operation::deliver && !e.message_id.empty()) {
        std::lock_guard lock(mu);
        ++lost[e.message_id];
      }
    };
    stores.push_back(std::make_unique<store>(*db_, so));
    relay_options o;
    o.owner = fmt::format("racer-{}", i);
    o.mode = serialization::by_ordering_key;
    o.max_in_flight = 16;
    o.lease_duration = 30s;
    o.poll_interval = 50ms;
    o.backoff = {1ms, 5ms};
    o.max_attempts = 1000;
    o.max_claims = 100000;
    o.breaker.failures = 100000;  // 3 % random failures are not an outage
    rs.push_back(std::make_unique<relay>(*stores.back(), sink, o));
  }
  for (auto& r : rs) r->start();
  const auto until = std::chrono::steady_clock::now() + 15min;
  while (count("outbox_messages WHERE state = 'delivered'") < n && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(200ms);
  }
  for (auto& r : rs) r->stop();
  // A relay that fences itself (no renewal got through in time) records
  // nothing of a call the sink completed anyway, and the store sees no event.
  std::uint64_t fenced = 0;
  for (auto& r : rs) fenced += r->metrics().lease_lost;

  EXPECT_EQ(count("outbox_messages WHERE state = 'delivered'"), n);
  std::lock_guard lock(mu);
  EXPECT_EQ(static_cast<int>(publishes.size()), n) << "every envelope delivered at least once";
  EXPECT_GT(transient.load(), 0) << "the sink failed transiently at random";
  long order_violations = 0;
  for (const auto& [key, seqs] : first_deliveries) {
    for (std::size_t i = 1; i < seqs.size(); ++i) {
      if (seqs[i] <= seqs[i - 1]) ++order_violations;
    }
  }
  EXPECT_EQ(order_violations, 0);
  EXPECT_EQ(first_deliveries.size(), static_cast<std::size_t>(keys));
  long unexplained = 0, repeats = 0;
  for (const auto& [seq, times] : publishes) {
    if (times <= 1) continue;
    repeats += times - 1;
    const auto it = lost.find(fmt::format("e{:05}", seq));
    if (it == lost.end() || it->second < times - 1) ++unexplained;
  }
  EXPECT_LE(static_cast<std::uint64_t>(unexplained), fenced)
      << repeats << " repeat deliveries, " << unexplained
      << " without a failed record or a relay's lost lease";
}

}  // namespace
}  // namespace spool::test
