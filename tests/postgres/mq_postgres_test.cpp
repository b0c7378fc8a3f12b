// PostgreSQL-only message-queue scenarios (message-queue.md §10: 29, 31, 32,
// 42, 44) plus raw-libpq interop, schemas and a connection killed under Spool.
#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <atomic>
#include <future>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "mq/store.hpp"
#include "spool/database.hpp"
#include "spool/error.hpp"
#include "spool/migrate.hpp"
#include "spool/mq/queue.hpp"
#include "spool/pg_native.hpp"
#include "support/eventually.hpp"
#include "support/expect_error.hpp"
#include "support/test_db.hpp"

namespace spool::test {

using namespace std::chrono_literals;

class mq_postgres : public ::testing::Test {
 protected:
  void SetUp() override {
    uri_ = make_pg_database(::testing::UnitTest::GetInstance()->current_test_info()->name());
    db_.emplace(database::open(uri_, {.pool_size = 20}));
  }
  std::int64_t scalar(const std::string& sql) { return std::stoll(*pg_query(uri_, sql).at(0).at(0)); }
  static mq::message msg(std::string id, std::optional<std::string> group = std::nullopt) {
    mq::message m;
    m.id = std::move(id);
    m.mediation_type = "HTTP";
    m.mediation_target = "https://example.test/hook";
    m.message_group_id = std::move(group);
    return m;
  }

  std::string uri_;
  std::optional<database> db_;
};

// Scenario 29: many consumers, many groups, one server. The order of claims
// is read from the database itself: each claim's xmin is the claiming
// transaction's id, assigned after every claim it had to wait for committed.
void drain_and_check(database& db, const std::string& uri, bool strict) {
  constexpr int messages = 10000, groups = 100, consumers = 16;
  mq::queue q(db, {.name = "load", .visibility_timeout = 60s, .strict_group_order = strict});
  std::vector<mq::message> batch;
  for (int i = 0; i < messages; ++i) {
    mq::message m;
    m.mediation_type = "HTTP";
    m.message_group_id = "g" + std::to_string(i % groups);
    batch.push_back(m);
    if (batch.size() == 1000) {
      (void)q.publish_batch(batch);
      batch.clear();
    }
  }
  // Publish order = (created_at, id) with UUIDv7 ids.
  std::map<std::string, std::vector<std::string>> published;
  for (const auto& r :
       pg_query(uri, "SELECT message_group_id, id FROM queue_messages ORDER BY created_at, id")) {
    published[*r[0]].push_back(*r[1]);
  }
  ASSERT_EQ(published.size(), static_cast<std::size_t>(groups));

  std::mutex mutex;
  std::map<std::string, int> deliveries;
  std::map<std::string, std::int64_t> claim_xid;
  std::map<std::string, std::set<std::string>> in_flight;  // strict: at most one per group
  int strict_violations = 0;
  std::atomic<int> acked{0};
  std::vector<std::thread> threads;
  for (int c = 0; c < consumers; ++c) {
    threads.emplace_back([&] {
      auto xid_db = database::open(uri);
      while (acked.load() < messages) {
        auto got = q.poll(10);
        if (got.empty()) {
          std::this_thread::sleep_for(5ms);
          continue;
        }
        std::vector<std::string> receipts;
        for (const auto& d : got) {
          const auto xid =
              std::stoll(*xid_db
                              .exec("SELECT xmin::text FROM queue_messages WHERE queue_name = $1 AND id = $2",
                                    {std::string("load"), d.broker_message_id})
                              .at(0)
                              .at(0));
          std::lock_guard lock(mutex);
          ++deliveries[d.broker_message_id];
          claim_xid.emplace(d.broker_message_id, xid);
          auto& flying = in_flight[*d.group];
          if (strict && !flying.empty()) ++strict_violations;
          flying.insert(d.broker_message_id);
          receipts.push_back(d.receipt);
        }
        {
          // Leave the in-flight set before acking: the next message of the
          // group cannot be claimed until the ack commits.
          std::lock_guard lock(mutex);
          for (const auto& d : got) in_flight[*d.group].erase(d.broker_message_id);
        }
        for (auto s : q.ack_batch(receipts)) EXPECT_EQ(s, mq::ack_status::acked);
        acked += static_cast<int>(receipts.size());
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(deliveries.size(), static_cast<std::size_t>(messages));
  for (const auto& [id, n] : deliveries) ASSERT_EQ(n, 1) << id << " delivered " << n << " times";
  int order_violations = 0;
  for (const auto& [group, ids] : published) {
    for (std::size_t i = 1; i < ids.size(); ++i) {
      if (claim_xid.at(ids[i]) <= claim_xid.at(ids[i - 1])) ++order_violations;
    }
  }
  EXPECT_EQ(order_violations, 0);
  EXPECT_EQ(strict_violations, 0);
  EXPECT_EQ(std::stoll(*pg_query(uri, "SELECT count(*) FROM queue_messages").at(0).at(0)), 0);
}

// SECURITY.md: a queue configured by URI alone (the legacy JSON form) is named
// after the URI, and the rows it writes carry that name: never the password.
TEST_F(mq_postgres, a_queue_named_after_a_uri_with_a_password_never_stores_the_password) {
  spool::migrate(*db_);
  const auto at = uri_.find("://postgres@");
  ASSERT_NE(at, std::string::npos) << uri_;
  std::string with_password = uri_;
  with_password.replace(at, 12, "://postgres:s3cret-pw@");  // trust auth ignores it
  mq::queue q(mq::queue_config::from_json(nlohmann::json{{"queueUri", with_password}}.dump()));
  (void)q.publish(mq::message{.id = "m1"});
  const auto stored = *pg_query(uri_, "SELECT queue_name FROM queue_messages WHERE id = 'm1'").at(0).at(0);
  EXPECT_EQ(stored.find("s3cret"), std::string::npos) << stored;
  EXPECT_NE(stored.find("***"), std::string::npos) << stored;
  ASSERT_EQ(q.poll(1).size(), 1u);  // the same name reads it back
}

TEST_F(mq_postgres,
       sixteen_consumers_ack_ten_thousand_messages_in_a_hundred_groups_exactly_once_in_group_order) {
  spool::migrate(*db_);
  drain_and_check(*db_, uri_, false);
}

TEST_F(mq_postgres, with_strict_group_order_only_one_message_per_group_is_ever_in_flight) {
  spool::migrate(*db_);
  drain_and_check(*db_, uri_, true);
}

TEST_F(mq_postgres, rows_a_legacy_producer_inserts_drain_and_spool_rows_decode_under_the_legacy_rules) {
  spool::migrate(*db_);
  // Exactly as the Go producer writes: Go-escaped JSON, created_at = visible_at.
  pg_exec(
      uri_,
      "INSERT INTO queue_messages (id, queue_name, message_group_id, receipt_handle, visible_at, payload, "
      "created_at, receive_count) VALUES "
      "('go-1', 'legacy', NULL, NULL, floor(extract(epoch from now()))::bigint, "
      "'{\"id\":\"go-1\",\"mediationType\":\"HTTP\",\"mediationTarget\":\"https://x/"
      "a?b=1\\u0026c=\\u003cd\\u003e\"}', "
      "floor(extract(epoch from now()))::bigint, 0),"
      "('go-2', 'legacy', 'grp', NULL, floor(extract(epoch from now()))::bigint, "
      "'{\"id\":\"go-2\",\"poolCode\":\"P\",\"mediationType\":\"HTTP\",\"mediationTarget\":\"t\\u2028\","
      "\"messageGroupId\":\"grp\",\"highPriority\":true,\"dispatchMode\":\"IMMEDIATE\"}', "
      "floor(extract(epoch from now()))::bigint, 0)");
  mq::queue q(*db_, {.name = "legacy"});
  auto got = q.poll(10);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].body.mediation_target, "https://x/a?b=1&c=<d>");
  EXPECT_EQ(got[1].body.mediation_target, "t\u2028");
  EXPECT_EQ(got[1].body.message_group_id, "grp");
  EXPECT_TRUE(got[1].body.high_priority);
  for (const auto& d : got) q.ack(d.receipt);

  // Spool's own rows: every one of the nine keys set, then the §3.2 decoder
  // (the legacy rule) reads the stored text back to the same message.
  mq::message m = msg("spool-1", "g");
  m.pool_code = "P";
  m.auth_token = "tok";
  m.signing_secret = "sig";
  m.high_priority = true;
  m.dispatch_mode = "IMMEDIATE";
  m.extra = {{"custom", "{\"a\":[1,2]}"}};
  (void)q.publish(m);
  const auto payload = *pg_query(uri_, "SELECT payload FROM queue_messages WHERE id = 'spool-1'").at(0).at(0);
  const auto j = nlohmann::json::parse(payload);
  for (const auto& [key, value] : j.items()) EXPECT_FALSE(value.is_null()) << key;
  for (const char* key : {"id", "poolCode", "authToken", "signingSecret", "mediationType", "mediationTarget",
                          "messageGroupId", "dispatchMode"}) {
    EXPECT_TRUE(j.contains(key) && j[key].is_string()) << key << " in " << payload;
  }
  EXPECT_TRUE(j.contains("highPriority") && j["highPriority"].is_boolean()) << payload;
  EXPECT_EQ(j["custom"]["a"][1], 2);
  EXPECT_EQ(j.size(), 10u);  // the nine keys and the one extra member
  const auto decoded = mq::decode(payload);
  ASSERT_TRUE(decoded.ok()) << decoded.error;
  EXPECT_EQ(*decoded.value, m);

  // Unset optionals are absent, never null; highPriority is written only when true.
  mq::message sparse = msg("spool-2");
  (void)q.publish(sparse);
  const auto sparse_payload =
      *pg_query(uri_, "SELECT payload FROM queue_messages WHERE id = 'spool-2'").at(0).at(0);
  const auto k = nlohmann::json::parse(sparse_payload);
  for (const auto& [key, value] : k.items()) EXPECT_FALSE(value.is_null()) << key;
  for (const char* key :
       {"poolCode", "authToken", "signingSecret", "messageGroupId", "highPriority", "dispatchMode"}) {
    EXPECT_FALSE(k.contains(key)) << key << " in " << sparse_payload;
  }
  const auto sparse_decoded = mq::decode(sparse_payload);
  ASSERT_TRUE(sparse_decoded.ok()) << sparse_decoded.error;
  EXPECT_EQ(*sparse_decoded.value, sparse);

  // And they drain through the queue as the same messages.
  const auto mine = q.poll(10);
  ASSERT_EQ(mine.size(), 2u);
  EXPECT_EQ(mine[0].body, m);
  EXPECT_EQ(mine[1].body, sparse);
}

TEST_F(mq_postgres, ack_nack_defer_and_extend_are_primary_key_index_scans_with_ten_thousand_rows_queued) {
  spool::migrate(*db_);
  pg_exec(
      uri_,
      "INSERT INTO queue_messages (id, queue_name, message_group_id, receipt_handle, visible_at, payload, "
      "created_at, receive_count) SELECT 'm' || i, 'q', NULL, NULL, 0, '{}', 0, 0 FROM generate_series(1, "
      "10000) i;"
      "ANALYZE queue_messages");
  // Spool's own statements, prepared with their parameters bound (nack and
  // defer share release.sql).
  const std::string params = "('q', 'm5', '0f0e0d0c-0b0a-4908-8706-050403020100:m5', 5)";
  std::vector<std::string> statements;
  for (const char* name : {"ack", "release", "extend"}) {
    const std::string sql = mq::detail::render_sql(std::string("postgres/mq/queries/") + name + ".sql", "");
    const bool has_fourth = std::string(name) != "ack";
    statements.push_back(std::string("PREPARE s_") + name +
                         (has_fourth ? "(text, text, text, bigint)" : "(text, text, text)") + " AS " + sql +
                         ";\nEXPLAIN EXECUTE s_" + name +
                         (has_fourth ? params : "('q', 'm5', '0f0e0d0c-0b0a-4908-8706-050403020100:m5')"));
  }
  for (const auto& sql : statements) {
    std::string plan;
    for (const auto& row : pg_query(uri_, sql)) plan += *row[0] + "\n";
    EXPECT_NE(plan.find("Index Scan using queue_messages_pkey"), std::string::npos) << plan;
    EXPECT_NE(plan.find("Index Cond: ((queue_name = 'q'::text) AND (id = 'm5'::text))"), std::string::npos)
        << plan;
  }
}

TEST_F(mq_postgres, an_ungrouped_claim_walks_only_visible_rows_and_touches_no_index_beyond_the_legacy_two) {
  spool::migrate(*db_);
  // 10,000 in flight (visible_at in the future) before 100 visible rows: the
  // walk must start at the visible ones, not pass the in-flight ones.
  pg_exec(
      uri_,
      "INSERT INTO queue_messages (id, queue_name, message_group_id, receipt_handle, visible_at, payload, "
      "created_at, receive_count) SELECT 'f' || i, 'q', NULL, 'r', 4000000000, '{}', 0, 1 "
      "FROM generate_series(1, 10000) i;"
      "INSERT INTO queue_messages (id, queue_name, message_group_id, receipt_handle, visible_at, payload, "
      "created_at, receive_count) SELECT 'v' || i, 'q', NULL, NULL, 1, '{}', 1, 0 FROM generate_series(1, "
      "100) i;"
      "ANALYZE queue_messages");
  std::string sql = mq::detail::render_sql("postgres/mq/queries/claim.sql", "");
  sql.replace(sql.find("{{limit}}"), 9, "10");
  std::string plan;
  for (const auto& row : pg_query(uri_, "PREPARE c(text, text, bigint, boolean) AS " + sql +
                                            ";\nEXPLAIN (ANALYZE, COSTS OFF) EXECUTE c('q', "
                                            "'0f0e0d0c-0b0a-4908-8706-050403020100', 30, false)")) {
    plan += *row[0] + "\n";
  }
  EXPECT_NE(plan.find("Index Scan using idx_queue_visible on queue_messages m"), std::string::npos) << plan;
  EXPECT_NE(plan.find("(visible_at <= $"), std::string::npos) << plan;  // a range bound, not a filter
  EXPECT_NE(plan.find("Index Scan Backward using idx_queue_group_head"), std::string::npos)
      << plan;  // nearest earlier row first
  // No grouped row in the queue: one probe of idx_queue_group_head decides,
  // and no candidate pays for the group probes.
  EXPECT_NE(plan.find("Index Only Scan using idx_queue_group_head on queue_messages g (actual time="),
            std::string::npos)
      << plan;
  const auto backward = plan.find("Index Scan Backward using idx_queue_group_head");
  EXPECT_NE(plan.find("(never executed)", backward), std::string::npos) << plan;
  EXPECT_LT(plan.find("(never executed)", backward), plan.find('\n', backward)) << plan;
  EXPECT_EQ(plan.find("idx_queue_fifo"), std::string::npos) << plan;
  EXPECT_EQ(scalar("SELECT count(*) FROM queue_messages WHERE receipt_handle LIKE '0f0e0d0c-%'"), 10);
}

// With notify on, publishes wake consumers; an ack unblocks nothing a
// consumer waits for (a claimed row is invisible: Gate A and B skip it), so it
// sends no NOTIFY, whose commit-time lock would serialise every ack (issue 13).
TEST_F(mq_postgres, with_notify_on_an_ack_and_an_ack_batch_send_no_notification) {
  (void)spool::migrate(*db_);
  PGconn* listener = PQconnectdb(uri_.c_str());
  ASSERT_EQ(PQstatus(listener), CONNECTION_OK);
  PQclear(PQexec(listener, "LISTEN spool_mq"));
  std::vector<std::string> heard;
  const auto drain = [&] {
    PQconsumeInput(listener);
    while (PGnotify* n = PQnotifies(listener)) {
      heard.emplace_back(n->extra);
      PQfreemem(n);
    }
  };
  mq::queue q(*db_, {.name = "quiet", .notify = true});
  (void)q.publish_batch({msg("a"), msg("b"), msg("c")});
  ASSERT_TRUE(eventually([&] {
    drain();
    return heard.size() == 1;
  }));  // the publish's
  auto got = q.poll(3);
  ASSERT_EQ(got.size(), 3u);
  q.ack(got[0].receipt);
  (void)q.ack_batch({got[1].receipt, got[2].receipt});
  // A publish to another queue after the acks committed marks the end:
  // notifications arrive in commit order.
  mq::queue marker(*db_, {.name = "marker", .notify = true});
  (void)marker.publish(msg("d"));
  ASSERT_TRUE(eventually([&] {
    drain();
    return !heard.empty() && heard.back() == "marker";
  }));
  EXPECT_EQ(heard, (std::vector<std::string>{"quiet", "marker"}));  // the publishes, no ack
  PQfinish(listener);
}

TEST_F(mq_postgres,
       init_schema_is_idempotent_and_carries_over_the_legacy_error_table_in_its_own_schema_only) {
  pg_exec(uri_,
          "CREATE TABLE queue_messages_failed (id TEXT NOT NULL, queue_name TEXT NOT NULL, message_group_id "
          "TEXT, "
          "payload TEXT NOT NULL, error_message TEXT NOT NULL, receive_count INTEGER, created_at BIGINT NOT "
          "NULL, "
          "failed_at BIGINT NOT NULL, PRIMARY KEY (queue_name, id));"
          "INSERT INTO queue_messages_failed VALUES ('dup', 'q', NULL, 'kept', 'existing wins', 1, 1, 1);"
          "CREATE TABLE queue_message_errors (id TEXT, queue_name TEXT, message_group_id TEXT, payload TEXT, "
          "error TEXT, receive_count INTEGER, created_at BIGINT, failed_at BIGINT);"
          "INSERT INTO queue_message_errors VALUES ('dup', 'q', NULL, 'old', 'old error', 2, 2, 2),"
          "('carried', 'q', 'g', 'p', 'bad json', 3, 3, 3);"
          "CREATE SCHEMA other; CREATE TABLE other.queue_message_errors (id TEXT);"
          "INSERT INTO other.queue_message_errors VALUES ('untouched')");
  EXPECT_EQ(mq::migrate(*db_).size(), 3u);
  EXPECT_TRUE(mq::migrate(*db_).empty());
  EXPECT_EQ(
      scalar("SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public' AND table_name = "
             "'queue_message_errors'"),
      0);
  EXPECT_EQ(*pg_query(uri_, "SELECT error_message FROM queue_messages_failed WHERE id = 'dup'").at(0).at(0),
            "existing wins");
  const auto carried = pg_query(uri_,
                                "SELECT message_group_id, error_message, receive_count FROM "
                                "queue_messages_failed WHERE id = 'carried'");
  ASSERT_EQ(carried.size(), 1u);
  EXPECT_EQ(*carried[0][1], "bad json");
  EXPECT_EQ(scalar("SELECT count(*) FROM other.queue_message_errors"), 1);
}

TEST_F(mq_postgres, quarantine_works_on_rust_and_java_shaped_failed_tables) {
  for (const char* ddl :
       {// Rust: nullable created_at
        "CREATE TABLE queue_messages_failed (id TEXT NOT NULL, queue_name TEXT NOT NULL, message_group_id "
        "TEXT, "
        "payload TEXT NOT NULL, error_message TEXT NOT NULL, receive_count INTEGER, created_at BIGINT, "
        "failed_at "
        "BIGINT NOT NULL, PRIMARY KEY (queue_name, id))",
        // Java: nullable error_message, another column order
        "CREATE TABLE queue_messages_failed (queue_name TEXT NOT NULL, id TEXT NOT NULL, payload TEXT NOT "
        "NULL, "
        "failed_at BIGINT NOT NULL, error_message TEXT, message_group_id TEXT, created_at BIGINT NOT NULL, "
        "receive_count INTEGER, PRIMARY KEY (queue_name, id))"}) {
    pg_exec(uri_, "DROP SCHEMA public CASCADE; CREATE SCHEMA public;");
    pg_exec(uri_, ddl);
    (void)mq::migrate(*db_);
    pg_exec(
        uri_,
        "INSERT INTO queue_messages (id, queue_name, message_group_id, receipt_handle, visible_at, payload, "
        "created_at, receive_count) VALUES ('bad', 'q', NULL, NULL, 0, '{nope', 7, 0)");
    mq::queue q(*db_, {.name = "q"});
    EXPECT_TRUE(q.poll(5).empty());
    const auto failed =
        pg_query(uri_, "SELECT payload, created_at, receive_count FROM queue_messages_failed");
    ASSERT_EQ(failed.size(), 1u) << ddl;
    EXPECT_EQ(*failed[0][0], "{nope");
    EXPECT_EQ(*failed[0][1], "7");
    EXPECT_EQ(*failed[0][2], "1");
  }
}

TEST_F(mq_postgres, migrate_creates_the_performance_index_idempotently_and_rebuilds_an_invalid_one) {
  (void)spool::migrate(*db_);
  const std::string indexes =
      "SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = "
      "'idx_queue_group_head' AND i.indisvalid";
  EXPECT_EQ(scalar(indexes), 1);
  // mq/3 replaced mq/2's two indexes: a claim writes only the legacy indexes for an ungrouped row.
  EXPECT_EQ(
      scalar("SELECT count(*) FROM pg_class WHERE relname IN ('idx_queue_group_order', 'idx_queue_fifo')"),
      0);
  EXPECT_EQ(scalar("SELECT count(*) FROM pg_index WHERE indrelid = 'queue_messages'::regclass"), 3);
  // Simulate an interrupted CONCURRENTLY build: an invalid index and no ledger row.
  pg_exec(uri_,
          "UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'idx_queue_group_head'::regclass;"
          "DELETE FROM spool_schema_migrations WHERE component = 'mq' AND version = 3");
  EXPECT_EQ(scalar(indexes), 0);
  const auto applied = spool::migrate(*db_);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(applied[0].version, 3);
  EXPECT_EQ(scalar(indexes), 1);
  EXPECT_TRUE(spool::migrate(*db_).empty());
}

TEST_F(mq_postgres, reverting_mq_3_restores_the_mq_2_indexes) {
  (void)spool::migrate(*db_);
  revert_migration(*db_, "mq/3", true);
  EXPECT_EQ(
      scalar("SELECT count(*) FROM pg_class WHERE relname IN ('idx_queue_group_order', 'idx_queue_fifo')"),
      2);
  EXPECT_EQ(scalar("SELECT count(*) FROM pg_class WHERE relname = 'idx_queue_group_head'"), 0);
  mq::queue q(*db_, {.name = "q"});
  (void)q.publish_batch({msg("a", "g"), msg("b", "g"), msg("c")});
  EXPECT_EQ(q.poll(10).size(), 2u);
}

TEST_F(mq_postgres, the_queue_works_without_the_performance_indexes_after_reverting_them) {
  (void)spool::migrate(*db_);
  EXPECT_SPOOL_ERROR(revert_migration(*db_, "mq/2", false), errc::invalid_argument);
  revert_migration(*db_, "mq/3", true);
  revert_migration(*db_, "mq/2", true);
  EXPECT_EQ(
      scalar("SELECT count(*) FROM pg_class WHERE relname IN ('idx_queue_group_order', 'idx_queue_fifo', "
             "'idx_queue_group_head')"),
      0);
  mq::queue q(*db_, {.name = "q"});
  (void)q.publish_batch({msg("a", "g"), msg("b", "g"), msg("c")});
  auto got = q.poll(10);
  ASSERT_EQ(got.size(), 2u);
  for (const auto& d : got) q.ack(d.receipt);
  got = q.poll(10);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].broker_message_id, "b");
}

TEST_F(mq_postgres, a_raw_libpq_transaction_carries_a_publish_and_a_handle_outside_one_is_refused) {
  (void)spool::migrate(*db_);
  mq::queue q(*db_, {.name = "q"});
  PGconn* conn = PQconnectdb(uri_.c_str());
  ASSERT_EQ(PQstatus(conn), CONNECTION_OK);
  EXPECT_SPOOL_ERROR((void)pg::adopt(conn), errc::transaction_required);
  PQclear(PQexec(conn, "BEGIN"));
  {
    auto tx = pg::adopt(conn);
    (void)q.publish(tx, msg("raw"));
    EXPECT_SPOOL_ERROR(tx.commit(), errc::invalid_state);  // the owner commits
  }
  EXPECT_EQ(PQtransactionStatus(conn), PQTRANS_INTRANS);  // Spool did not end it
  EXPECT_EQ(scalar("SELECT count(*) FROM queue_messages"), 0);
  PQclear(PQexec(conn, "COMMIT"));
  EXPECT_EQ(scalar("SELECT count(*) FROM queue_messages"), 1);
  PQfinish(conn);
}

TEST_F(mq_postgres, a_configured_schema_holds_the_tables_and_an_invalid_one_is_rejected) {
  (void)spool::migrate(*db_, {.components = {"mq"}, .schema = "billing"});
  mq::queue q(*db_, {.name = "q", .schema = "billing"});
  (void)q.publish(msg("in-billing"));
  EXPECT_EQ(scalar("SELECT count(*) FROM billing.queue_messages"), 1);
  EXPECT_EQ(q.poll(1).size(), 1u);
  try {
    mq::queue bad(*db_, {.name = "q", .schema = "x\"; DROP TABLE billing.queue_messages; --"});
    ADD_FAILURE() << "expected invalid_identifier";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::invalid_argument);
    EXPECT_EQ(e.reason(), "invalid_identifier");
  }
  EXPECT_SPOOL_ERROR((void)spool::migrate(*db_, {.schema = "Bad-Name"}), errc::invalid_argument);
  EXPECT_EQ(scalar("SELECT count(*) FROM billing.queue_messages"), 1);
}

TEST_F(mq_postgres, a_killed_connection_fails_one_call_with_a_typed_error_and_the_pool_reconnects) {
  (void)spool::migrate(*db_);
  mq::queue q(*db_, {.name = "q"});
  (void)q.publish(msg("m"));
  pg_exec(
      uri_,
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> "
      "pg_backend_pid()");
  std::vector<mq::delivered_message> got;
  try {
    got = q.poll(1);
  } catch (const error& e) {
    EXPECT_TRUE(e.code() == errc::in_doubt || e.code() == errc::unavailable) << e.what();
  }
  for (int attempt = 0; attempt < 3 && got.empty(); ++attempt) {
    try {
      got = q.poll(1);
    } catch (const error& e) {
      ADD_FAILURE() << "the pool did not reconnect: " << e.what();
    }
  }
  // The message is either claimed now or held by the lost claim's window.
  EXPECT_EQ(scalar("SELECT count(*) FROM queue_messages"), 1);
  EXPECT_TRUE(q.healthy());
}

}  // namespace spool::test

namespace spool::test {

// Scenario 38 (opt-in I10). Waits are made long (a 60 s poll interval) so a
// poll_wait can only return its message early if the NOTIFY woke it: the
// assertion is on what arrives, not on a timing.
TEST_F(mq_postgres, poll_wait_is_woken_by_a_notifying_publish_from_another_connection) {
  (void)spool::migrate(*db_);
  mq::queue consumer(*db_, {.name = "n", .notify = true, .poll_interval = std::chrono::milliseconds(60000)});
  auto other_db = database::open(uri_);  // another pool: no in-process signal reaches the consumer
  mq::queue producer(other_db, {.name = "n", .notify = true});
  std::atomic<bool> started{false};
  auto waiting = std::async(std::launch::async, [&] {
    started = true;
    return consumer.poll_wait(1, 45s);
  });
  while (!started) std::this_thread::sleep_for(10ms);
  std::this_thread::sleep_for(500ms);  // let the listener subscribe and the first poll come back empty
  (void)producer.publish(msg("notified"));
  const auto got = waiting.get();
  ASSERT_EQ(got.size(), 1u);
  // Without the notification the next poll would come after 60 s, past the
  // 45 s timeout, and poll_wait would have returned empty.
  EXPECT_EQ(got[0].broker_message_id, "notified");
}

TEST_F(mq_postgres, poll_wait_falls_back_to_polling_when_a_delay_ends_and_is_empty_at_its_timeout) {
  (void)spool::migrate(*db_);
  mq::queue q(*db_, {.name = "d", .notify = true, .poll_interval = std::chrono::milliseconds(300)});
  EXPECT_TRUE(q.poll_wait(1, 500ms).empty());
  (void)q.publish(msg("later"), 1s);  // nobody notifies when a delay ends
  const auto got = q.poll_wait(1, 10s);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].broker_message_id, "later");
}

}  // namespace spool::test
