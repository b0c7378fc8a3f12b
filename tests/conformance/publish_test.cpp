// Publishing (§5.5, I4, I6, I7; scenarios 10, 11, 33) and the transactional forms.
#include <nlohmann/json.hpp>

#include "conformance/mq_fixture.hpp"
#include "spool/pg.hpp"
#include "spool/sqlite.hpp"

namespace spool::test {

using namespace std::chrono_literals;
using mq_publish = mq_conformance;

// Runs fn with a caller-owned transaction of the fixture's engine.
template <class Fn>
void with_tx(database& db, Fn&& fn, bool commit = true) {
  if (db.kind() == engine::postgres) {
    pg::tx tx(db);
    fn(tx);
    if (commit) tx.commit();
  } else {
    sqlite::tx tx(db);
    fn(tx);
    if (commit) tx.commit();
  }
}

TEST_P(mq_publish, insert_batch_writes_several_queues_in_the_callers_transaction_and_dedups_by_id) {
  std::vector<mq::batch_row> batch = {{"orders", msg("o1", "cust-1")}, {"emails", msg("e1")}};
  batch[0].body.pool_code = "POOL-A";
  with_tx(*db_, [&](auto& tx) {
    const auto r = mq::insert_batch(tx, batch);
    EXPECT_EQ(r.statuses, (std::vector<mq::publish_status>{mq::publish_status::inserted, mq::publish_status::inserted}));
  });
  const auto stored = rows("SELECT queue_name, id, message_group_id, payload FROM queue_messages ORDER BY queue_name");
  ASSERT_EQ(stored.size(), 2u);
  EXPECT_EQ(*stored[0][0], "emails");
  EXPECT_FALSE(stored[0][2].has_value());
  EXPECT_EQ(*stored[1][0], "orders");
  EXPECT_EQ(*stored[1][2], "cust-1");
  EXPECT_EQ(nlohmann::json::parse(*stored[1][3])["poolCode"], "POOL-A");
  with_tx(*db_, [&](auto& tx) {
    const auto r = mq::insert_batch(tx, batch);
    EXPECT_EQ(r.statuses, (std::vector<mq::publish_status>{mq::publish_status::already_present,
                                                           mq::publish_status::already_present}));
  });
  EXPECT_EQ(count("queue_messages"), 2);
}

TEST_P(mq_publish, a_rolled_back_transaction_publishes_nothing) {
  auto q = make_queue();
  with_tx(*db_, [&](auto& tx) { q->publish(tx, msg("never")); }, /*commit=*/false);
  EXPECT_EQ(count("queue_messages"), 0);
  with_tx(*db_, [&](auto& tx) {
    tx.exec("CREATE TABLE orders (id TEXT)");
    tx.exec("INSERT INTO orders (id) VALUES ($1)", {std::string("o-1")});
    q->publish(tx, msg("with-order"));
  });
  EXPECT_EQ(count("orders"), 1);
  EXPECT_EQ(ids(q->poll(5)), std::vector<std::string>{"with-order"});
}

TEST_P(mq_publish, stored_payloads_use_camel_case_keys_in_table_order_without_nulls) {
  auto q = make_queue();
  mq::message m = msg("rt-1", "grp");
  m.pool_code = "P";
  m.auth_token = "";
  m.high_priority = true;
  m.dispatch_mode = "BLOCK_ON_ERROR";
  m.extra = {{"traceId", "\"abc\""}, {"big", "18446744073709551615"}};
  q->publish(m);
  const auto payload = *rows("SELECT payload FROM queue_messages").at(0).at(0);
  EXPECT_EQ(payload,
            R"({"id":"rt-1","poolCode":"P","authToken":"","mediationType":"HTTP","mediationTarget":"https://example.test/hook",)"
            R"("messageGroupId":"grp","highPriority":true,"dispatchMode":"BLOCK_ON_ERROR","traceId":"abc","big":18446744073709551615})");
  const auto got = q->poll(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].body, m);
  EXPECT_EQ(got[0].group, "grp");
}

TEST_P(mq_publish, publish_batch_reports_inserted_and_already_present_in_input_order) {
  auto q = make_queue();
  q->publish(msg("old"));
  // Two different payloads under one id in one batch: the first wins.
  mq::message first = msg("new");
  first.mediation_target = "https://example.test/first";
  mq::message second = msg("new");
  second.mediation_target = "https://example.test/second";
  mq::message old_again = msg("old");
  old_again.mediation_target = "https://example.test/not-stored";
  const auto r = q->publish_batch({first, old_again, second, msg("other")});
  EXPECT_EQ(r.ids, (std::vector<std::string>{"new", "old", "new", "other"}));
  using s = mq::publish_status;
  EXPECT_EQ(r.statuses, (std::vector<s>{s::inserted, s::already_present, s::already_present, s::inserted}));
  EXPECT_EQ(count("queue_messages"), 3);
  EXPECT_EQ(*rows("SELECT payload FROM queue_messages WHERE id = 'new'").at(0).at(0), mq::encode(first));
  EXPECT_EQ(*rows("SELECT payload FROM queue_messages WHERE id = 'old'").at(0).at(0), mq::encode(msg("old")));
}

TEST_P(mq_publish, a_batch_of_distinct_ids_meeting_a_stored_one_stores_the_others_and_leaves_it_unchanged) {
  // On PostgreSQL a batch of distinct ids first goes in without ON CONFLICT;
  // a taken id fails that statement as a whole, and the skipping one runs.
  for (const bool notify : {false, true}) {
    SCOPED_TRACE(notify ? "notify on" : "notify off");
    db_->exec("DELETE FROM queue_messages");
    auto q = make_queue({.notify = notify});
    q->publish(msg("old"));
    mq::message old_again = msg("old");
    old_again.mediation_target = "https://example.test/not-stored";
    const auto r = q->publish_batch({msg("a"), old_again, msg("b")});
    using s = mq::publish_status;
    EXPECT_EQ(r.statuses, (std::vector<s>{s::inserted, s::already_present, s::inserted}));
    EXPECT_EQ(count("queue_messages"), 3);
    EXPECT_EQ(*rows("SELECT payload FROM queue_messages WHERE id = 'old'").at(0).at(0),
              mq::encode(msg("old")));
    // All taken: nothing stored, each reported present.
    const auto again = q->publish_batch({msg("a"), msg("b")});
    EXPECT_EQ(again.statuses, (std::vector<s>{s::already_present, s::already_present}));
    EXPECT_EQ(count("queue_messages"), 3);
  }
}

TEST_P(mq_publish, an_encoding_failure_inserts_nothing_and_names_the_message) {
  auto q = make_queue();
  mq::message bad = msg("bad");
  bad.auth_token = std::string("\xff\xfe", 2);
  try {
    q->publish_batch({msg("fine"), bad});
    ADD_FAILURE() << "expected invalid_argument";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("message 1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("bad"), std::string::npos) << e.what();
  }
  EXPECT_EQ(count("queue_messages"), 0);
}

TEST_P(mq_publish, an_oversized_payload_is_rejected_before_any_insert) {
  auto q = make_queue({.max_payload_bytes = 200});
  mq::message big = msg("big");
  big.mediation_target = std::string(300, 'x');
  EXPECT_SPOOL_ERROR(q->publish_batch({msg("ok"), big}), errc::invalid_argument);
  EXPECT_EQ(count("queue_messages"), 0);
}

TEST_P(mq_publish, an_empty_batch_makes_no_database_call) {
  // A queue over an unreachable server: any database call would fail.
  auto db = is_pg() ? database::open("postgresql://nobody@127.0.0.1:1/none")
                    : database::open("sqlite:/nonexistent-dir/x.db");
  mq::queue q(db, {.name = "q"});
  const auto r = q.publish_batch({});
  EXPECT_TRUE(r.ids.empty());
  EXPECT_TRUE(q.poll(0).empty());
}

TEST_P(mq_publish, a_transactional_publish_outside_a_transaction_block_is_refused) {
  auto q = make_queue();
  if (is_pg()) {
    pg::tx tx(*db_);
    tx.commit();
    EXPECT_SPOOL_ERROR(q->publish(tx, msg("late")), errc::transaction_required);
  } else {
    sqlite::tx tx(*db_);
    tx.commit();
    EXPECT_SPOOL_ERROR(q->publish(tx, msg("late")), errc::transaction_required);
  }
  EXPECT_EQ(count("queue_messages"), 0);
}

SPOOL_BOTH_ENGINES(mq_publish);

}  // namespace spool::test
