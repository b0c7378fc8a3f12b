// PostgreSQL-only message-queue scenarios (message-queue.md §10: 29, 31, 32,
// 42, 44) plus raw-libpq interop, schemas and a connection killed under Spool.
// Plans, notifications, failed-table shapes and index migrations are in
// mq_postgres_plan_test.cpp.
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

using namespace std::chrono_literals;

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

// The next notification on a LISTENing raw connection (waiting up to 10 s),
// or "" when none came.
std::string next_notification(PGconn* listener) {
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < until) {
    if (PQconsumeInput(listener) == 0) return "";
    if (PGnotify* n = PQnotifies(listener)) {
      std::string payload = n->extra;
      PQfreemem(n);
      return payload;
    }
    std::this_thread::sleep_for(10ms);
  }
  return "";
}

// A notifying publish in the caller's transaction sends its NOTIFY in the
// same round trip as the insert (a pipeline inside the block): the
// notification still goes out only when that transaction commits.
TEST_F(mq_postgres,
       a_notifying_publish_in_the_callers_transaction_notifies_at_its_commit_and_never_on_rollback) {
  (void)spool::migrate(*db_);
  PGconn* listener = PQconnectdb(uri_.c_str());
  ASSERT_EQ(PQstatus(listener), CONNECTION_OK);
  PQclear(PQexec(listener, "LISTEN spool_mq"));
  mq::queue rolled(*db_, {.name = "rolled", .notify = true});
  mq::queue kept(*db_, {.name = "kept", .notify = true});
  {
    pg::tx tx(*db_);
    (void)rolled.publish(tx, msg("never"));
    tx.rollback();
  }
  {
    pg::tx tx(*db_);
    (void)kept.publish(tx, msg("kept-1"));
    (void)kept.publish(tx, msg("kept-2"));
    EXPECT_EQ(scalar("SELECT count(*) FROM queue_messages"), 0) << "nothing is visible before the commit";
    tx.commit();
  }
  // Notifications arrive in commit order: the rolled-back one would be first.
  EXPECT_EQ(next_notification(listener), "kept");
  EXPECT_EQ(scalar("SELECT count(*) FROM queue_messages"), 2);
  // The same through an application's own libpq transaction.
  PGconn* app = PQconnectdb(uri_.c_str());
  ASSERT_EQ(PQstatus(app), CONNECTION_OK);
  PQclear(PQexec(app, "BEGIN"));
  {
    auto tx = pg::adopt(app);
    (void)rolled.publish(tx, msg("raw"));
  }
  EXPECT_EQ(PQtransactionStatus(app), PQTRANS_INTRANS) << "the pipeline left the block open";
  PQclear(PQexec(app, "COMMIT"));
  EXPECT_EQ(next_notification(listener), "rolled");
  EXPECT_EQ(scalar("SELECT count(*) FROM queue_messages WHERE queue_name = 'rolled'"), 1);
  PQfinish(app);
  PQfinish(listener);
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
