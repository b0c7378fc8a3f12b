// PostgreSQL-only message-queue scenarios, continued from
// mq_postgres_test.cpp: the plans of ack, claim and their kin over a queued
// backlog, notifications an ack must not send, quarantine into the failed
// tables of the Rust and Java services, and the performance indexes'
// migrations.
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
#include "mq_postgres_fixture.hpp"
#include "spool/database.hpp"
#include "spool/error.hpp"
#include "spool/migrate.hpp"
#include "spool/mq/queue.hpp"
#include "spool/pg_native.hpp"
#include "support/eventually.hpp"
#include "support/expect_error.hpp"
#include "support/test_db.hpp"

namespace spool::test {

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

}  // namespace spool::test
