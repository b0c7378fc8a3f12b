// Opening and closing the driver (op-queue.md §4.1, the driver's part of
// §9.40), transactional enqueue (§4.3), wake-ups (§4.9) and per-call limits
// (§4.2).
#include <libpq-fe.h>
#include <sqlite3.h>

#include <filesystem>
#include <thread>

#include "ops/ops_fixture.hpp"
#include "spool/pg.hpp"
#include "spool/pg_native.hpp"
#include "spool/sqlite.hpp"

namespace spool::test {
namespace {

class ops_lifecycle : public ops_conformance {
 protected:
  // Open connections to this test's database, as the server or the kernel sees them.
  int open_connections() {
    if (is_pg()) {
      const auto r = pg_query(uri_,
                              "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND "
                              "application_name = 'spool'");
      return std::stoi(*r.at(0).at(0));
    }
    int n = 0;
    const auto file = std::filesystem::canonical(dir_->path() / "spool.db");
    for (const auto& fd : std::filesystem::directory_iterator("/proc/self/fd")) {
      std::error_code ec;
      if (std::filesystem::read_symlink(fd.path(), ec) == file) ++n;
    }
    return n;
  }
};

TEST_P(ops_lifecycle, CloseIsIdempotentAndLaterCallsAreStopped) {
  const auto id = enqueue("t");
  q().close();
  q().close();
  EXPECT_TRUE(q().closed());
  EXPECT_ERRC(q().enqueue(new_op("t")), errc::stopped);
  EXPECT_ERRC((void)q().dequeue(), errc::stopped);
  EXPECT_ERRC((void)q().get(id), errc::stopped);
  EXPECT_ERRC(q().ack(id), errc::stopped);
  EXPECT_ERRC((void)q().stats(), errc::stopped);
}

TEST_P(ops_lifecycle, CloseOfADriverOverTheCallersDatabaseLeavesTheDatabaseUsable) {
  enqueue("t");
  q().close();
  EXPECT_EQ(count(), 1);
  ops::queue again(*db_);
  EXPECT_TRUE(again.dequeue());
}

TEST_P(ops_lifecycle, OpeningConnectsAndCloseClosesTheConnectionsOfAnOwnedDatabase) {  // §9.40
  // SQLite keeps a closed connection's descriptor while another connection of
  // the process holds the file: measure with the fixture's connections gone.
  q_.reset();
  db_.reset();
  // A closed PostgreSQL connection's backend exits a moment later: measure
  // once the count has settled, or a lingering backend counts as "before"
  // and then vanishes while the driver opens its own.
  int before = open_connections();
  for (int i = 0; i < 50; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const int now = open_connections();
    if (now == before) break;
    before = now;
  }
  auto owned = ops::open(uri_);
  owned.enqueue(new_op("t"));
  EXPECT_GT(open_connections(), before);
  owned.close();
  // At most as many as before: a backend of the fixture that outlived the
  // settling above may leave meanwhile.
  EXPECT_TRUE(eventually([&] { return open_connections() <= before; }, 30s))
      << open_connections() << " connections left, " << before << " before";
}

TEST_P(ops_lifecycle, OpeningAnUnreachableOrUnknownUriFailsAtOnce) {
  EXPECT_ERRC((void)ops::open("mysql://localhost/db"), errc::invalid_argument);
  EXPECT_ERRC((void)ops::open("sqlite://x.db"), errc::invalid_argument);
  EXPECT_ERRC((void)ops::open("postgresql://u@127.0.0.1:1/db"), errc::unavailable);  // §4.1: never lazily
}

TEST_P(ops_lifecycle, EnqueueInTheCallersTransactionCommitsAndRollsBackWithIt) {
  const auto run = [&](bool commit) {
    std::string id;
    if (is_pg()) {
      pg::tx tx(*db_);
      tx.exec("CREATE TABLE IF NOT EXISTS orders (n INTEGER)");
      tx.exec("INSERT INTO orders VALUES (1)");
      id = q().enqueue(tx, new_op("ship")).id;
      EXPECT_EQ(count(), 0) << "not visible before the commit";
      if (commit) tx.commit();
    } else {
      sqlite::tx tx(*db_);
      tx.exec("CREATE TABLE IF NOT EXISTS orders (n INTEGER)");
      tx.exec("INSERT INTO orders VALUES (1)");
      id = q().enqueue(tx, new_op("ship")).id;
      if (commit) tx.commit();
    }
    return id;
  };
  run(false);
  EXPECT_EQ(count(), 0);
  const auto id = run(true);
  EXPECT_EQ(count(), 1);
  EXPECT_EQ(claim().id, id);
}

TEST_P(ops_lifecycle, ABatchInTheCallersTransactionReportsDedupPerItem) {
  auto keyed = new_op("scan");
  keyed.dedup_key = "k";
  std::vector<ops::enqueue_result> r;
  if (is_pg()) {
    pg::tx tx(*db_);
    r = q().enqueue_batch(tx, {keyed, keyed, new_op("other")},
                          {.duplicates = ops::on_duplicate::return_existing});
    tx.commit();
  } else {
    sqlite::tx tx(*db_);
    r = q().enqueue_batch(tx, {keyed, keyed, new_op("other")},
                          {.duplicates = ops::on_duplicate::return_existing});
    tx.commit();
  }
  ASSERT_EQ(r.size(), 3u);
  EXPECT_TRUE(r[0].created);
  EXPECT_EQ(r[1], (ops::enqueue_result{r[0].id, false, ops::enqueue_status::deduplicated}));
  EXPECT_TRUE(r[2].created);
  EXPECT_EQ(q().stats().pending, 2);
}

TEST_P(ops_lifecycle, ATransactionOfTheOtherEngineIsInvalidArgument) {
  if (is_pg()) {
    temp_dir other;
    auto lite = database::open(other.sqlite_uri());
    sqlite::tx tx(lite);
    EXPECT_ERRC(q().enqueue(tx, new_op("t")), errc::invalid_argument);
  } else {
    auto pg = database::open(make_pg_database("ops_other_engine"));
    pg::tx tx(pg);
    EXPECT_ERRC(q().enqueue(tx, new_op("t")), errc::invalid_argument);
  }
}

TEST_P(ops_lifecycle, AnExpiredDeadlineOrACancelledCallIsUnavailableAndDoesNothing) {
  try {
    q().enqueue(new_op("t"), {}, call_options{std::chrono::steady_clock::now() - 1s, {}});
    ADD_FAILURE() << "enqueued";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::unavailable);
    EXPECT_EQ(e.reason(), "deadline_exceeded");
  }
  std::stop_source cancel;
  cancel.request_stop();
  try {
    (void)q().dequeue({}, {}, call_options{std::nullopt, cancel.get_token()});
    ADD_FAILURE() << "dequeued";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::unavailable);
    EXPECT_EQ(e.reason(), "cancelled");
  }
  EXPECT_EQ(count(), 0);
}

TEST_P(ops_lifecycle, WaitForChangeWakesOnAnEnqueueInThisProcess) {
  auto& queue = q();
  const auto seen = queue.change_marker();
  std::thread producer([&] {
    std::this_thread::sleep_for(200ms);
    queue.enqueue(new_op("t"));
  });
  EXPECT_EQ(queue.wait_for_change(seen, 120s), ops::queue::wake::changed);
  producer.join();
  EXPECT_NE(queue.change_marker(), seen);
}

TEST_P(ops_lifecycle, WaitForChangeEndsOnItsStopTokenAndOnClose) {
  std::stop_source stop;
  auto& queue = q();
  std::thread stopper([&] {
    std::this_thread::sleep_for(100ms);
    stop.request_stop();
  });
  EXPECT_EQ(queue.wait_for_change(queue.change_marker(), 120s, stop.get_token()), ops::queue::wake::stopped);
  stopper.join();
  const auto marker = queue.change_marker();
  std::thread closer([&] {
    std::this_thread::sleep_for(100ms);
    queue.close();
  });
  try {
    EXPECT_EQ(queue.wait_for_change(marker, 120s), ops::queue::wake::closed);
  } catch (const spool::error& e) {
    // The closer won the race (a loaded machine can stall this thread for
    // 100 ms): a wait that begins on a closed queue is refused as stopped.
    EXPECT_EQ(e.code(), errc::stopped) << e.what();
  }
  closer.join();
  EXPECT_ERRC(queue.wait_for_change(0, 1s), errc::stopped);
}

SPOOL_OPS_BOTH_ENGINES(ops_lifecycle);

// ---- PostgreSQL only ----

class ops_postgres_lifecycle : public ::testing::Test {
 protected:
  void SetUp() override {
    uri_ = make_pg_database("ops_pg_lifecycle");
    db_.emplace(database::open(uri_));
    ops::migrate(*db_);
  }

  struct pg_conn {
    explicit pg_conn(const std::string& uri) : c(PQconnectdb(uri.c_str())) {}
    ~pg_conn() { PQfinish(c); }
    void exec(const char* sql) {
      PGresult* r = PQexec(c, sql);
      EXPECT_TRUE(PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK)
          << PQerrorMessage(c);
      PQclear(r);
    }
    PGconn* c;
  };

  // The notifications l receives before a sentinel sent now on the same
  // channel: notifications arrive in commit order, so everything committed
  // before this call is among them, however slowly the server delivers.
  std::vector<std::pair<std::string, std::string>> notifications_so_far(pg_conn& l) {
    db_->exec("SELECT pg_notify('spool_ops', '~sentinel~')");
    std::vector<std::pair<std::string, std::string>> out;
    const auto end = std::chrono::steady_clock::now() + 60s;
    while (std::chrono::steady_clock::now() < end) {
      PQconsumeInput(l.c);
      while (PGnotify* n = PQnotifies(l.c)) {
        const std::pair<std::string, std::string> got(n->relname, n->extra);
        PQfreemem(n);
        if (got.second == "~sentinel~") return out;
        out.push_back(got);
      }
      std::this_thread::sleep_for(20ms);
    }
    ADD_FAILURE() << "the sentinel notification never arrived";
    return out;
  }

  std::string uri_;
  std::optional<database> db_;
};

TEST_F(ops_postgres_lifecycle, EnqueueInsideARawLibpqTransactionCommitsWithIt) {
  ops::queue q(*db_);
  pg_conn app(uri_);
  app.exec("BEGIN");
  {
    auto tx = pg::adopt(app.c);
    q.enqueue(tx, new_op("raw"));
  }
  EXPECT_EQ(q.stats().pending, 0);
  app.exec("COMMIT");
  EXPECT_EQ(q.stats().pending, 1);
  // Outside a transaction block the handle is refused.
  EXPECT_ERRC((void)pg::adopt(app.c), errc::transaction_required);
}

TEST_F(ops_postgres_lifecycle, WithNotifyEveryWriteThatMakesAnOpReadyNotifiesItsTypeAtCommit) {  // §4.9
  ops::queue q(*db_, {.notify = true});
  pg_conn listener(uri_);
  listener.exec("LISTEN spool_ops");
  q.enqueue(new_op("thumb"));
  auto later = new_op("later");
  later.delay = 1h;
  q.enqueue(later);  // not ready now: no notification
  q.enqueue_batch({new_op("a"), new_op("b"), new_op("a")});
  {
    pg::tx tx(*db_);
    q.enqueue(tx, new_op("rolled_back"));
  }
  auto got = notifications_so_far(listener);
  std::vector<std::string> payloads;
  for (const auto& [channel, payload] : got) {
    EXPECT_EQ(channel, "spool_ops");
    payloads.push_back(payload);
  }
  std::sort(payloads.begin(), payloads.end());
  EXPECT_EQ(payloads, (std::vector<std::string>{"a", "b", "thumb"}));

  // Release, a retrying fail due now, retry and a rescue notify too.
  auto c = q.dequeue({"thumb"});
  ASSERT_TRUE(c);
  q.release(c->id, *c->lease_token, "shutdown");
  c = q.dequeue({"thumb"});
  q.fail(c->id, *c->lease_token, "again", std::chrono::microseconds{0});
  c = q.dequeue({"thumb"});
  q.fail(c->id, *c->lease_token, "fatal", false);  // terminal: no notification
  q.retry(c->id);
  got = notifications_so_far(listener);
  EXPECT_EQ(got.size(), 3u);
}

TEST_F(ops_postgres_lifecycle, WithoutNotifyNothingIsSent) {
  ops::queue q(*db_);
  pg_conn listener(uri_);
  listener.exec("LISTEN spool_ops");
  q.enqueue(new_op("thumb"));
  EXPECT_TRUE(notifications_so_far(listener).empty());
}

TEST_F(ops_postgres_lifecycle, WaitForChangeWakesOnANotificationFromAnotherProcess) {
  ops::queue q(*db_, {.notify = true});
  const auto seen = q.change_marker();
  std::thread other([&] {
    std::this_thread::sleep_for(300ms);
    // Another "process": its own database handle and driver.
    auto db = database::open(uri_);
    ops::queue remote(db, {.notify = true});
    remote.enqueue(new_op("t"));
  });
  EXPECT_EQ(q.wait_for_change(seen, 120s), ops::queue::wake::changed);
  other.join();
}

TEST_F(ops_postgres_lifecycle, AConfiguredSchemaHoldsTheTableAndItsLedger) {
  ops::migrate(*db_, {.schema = "work", .table = "jobs"});
  ops::queue q(*db_, {.schema = "work", .table = "jobs"});
  EXPECT_EQ(q.schema(), "work");
  q.enqueue(new_op("t"));
  EXPECT_EQ(pg_query(uri_, "SELECT count(*) FROM work.jobs").at(0).at(0), "1");
  EXPECT_EQ(pg_query(uri_, "SELECT DISTINCT target FROM work.spool_schema_migrations WHERE component = 'ops'")
                .at(0)
                .at(0),
            "work.jobs");
  EXPECT_ERRC(ops::queue(*db_, {.schema = "Work"}), errc::invalid_argument);
}

TEST_F(ops_postgres_lifecycle, TheSchemaDefaultsToTheConnectionsCurrentSchema) {
  ops::queue q(*db_);
  EXPECT_EQ(q.schema(), "public");
  EXPECT_EQ(q.repair_times(), 0) << "timestamptz needs no repair";
}

// ---- SQLite only ----

class ops_sqlite_adopted : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (dir_.path() / "app.db").string();
    ASSERT_EQ(sqlite3_open_v2(path_.c_str(), &handle_,
                              SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr),
              SQLITE_OK);
  }
  void TearDown() override {
    if (handle_ != nullptr) sqlite3_close_v2(handle_);
  }
  temp_dir dir_;
  std::string path_;
  sqlite3* handle_ = nullptr;
};

TEST_F(ops_sqlite_adopted, CloseLeavesAnAdoptedHandleUsableAndFinalizesSpoolsStatements) {  // §9.40
  {
    auto q = ops::queue::adopt(handle_, {.migrate = true});
    q.enqueue(new_op("t"));
    auto c = q.dequeue();
    ASSERT_TRUE(c);
    q.ack(c->id, *c->lease_token);
    EXPECT_EQ(q.stats().done_24h, 1);
    q.close();
    EXPECT_ERRC(q.enqueue(new_op("t")), errc::stopped);
  }
  // Still open and usable by its owner …
  char* err = nullptr;
  EXPECT_EQ(
      sqlite3_exec(handle_, "INSERT INTO ops_queue (id, type) VALUES ('app', 't')", nullptr, nullptr, &err),
      SQLITE_OK);
  sqlite3_free(err);
  // … and closing it succeeds at once: no statement of Spool's is left behind.
  EXPECT_EQ(sqlite3_close(handle_), SQLITE_OK);
  handle_ = nullptr;
}

TEST_F(ops_sqlite_adopted, ItsSettingsAreNotChanged) {
  sqlite3_exec(handle_, "PRAGMA journal_mode=DELETE", nullptr, nullptr, nullptr);
  auto q = ops::queue::adopt(handle_, {.migrate = true});
  q.enqueue(new_op("t"));
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(handle_, "PRAGMA journal_mode", -1, &st, nullptr);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "delete");
  sqlite3_finalize(st);
  EXPECT_ERRC((void)ops::queue::adopt(nullptr), errc::invalid_argument);
}

TEST(ops_sqlite_commit_detector, TheChangeMarkerSeesACommitByAnotherConnection) {
  temp_dir dir;
  auto db = database::open(dir.sqlite_uri());
  ops::migrate(db);
  ops::queue q(db);
  const auto seen = q.change_marker();
  EXPECT_EQ(q.change_marker(), seen);
  sqlite_exec(dir.sqlite_uri(), "INSERT INTO ops_queue (id, type) VALUES ('outside', 't')");
  EXPECT_NE(q.change_marker(), seen);
}

}  // namespace
}  // namespace spool::test
