// ack, nack, defer, extend, ack_batch, counters and metrics (§5.3–§5.7;
// scenarios 19–22, 27, 36, 37, 39).
#include "conformance/mq_fixture.hpp"

namespace spool::test {

using namespace std::chrono_literals;
using mq_ack = mq_conformance;

const std::string unknown_receipt = "0f0e0d0c-0b0a-4908-8706-050403020100:nope";

TEST_P(mq_ack, ack_removes_the_row_and_stale_or_malformed_receipts_are_reported) {
  auto q = make_queue();
  q->publish(msg("m"));
  const auto got = q->poll(1);
  ASSERT_EQ(got.size(), 1u);
  q->ack(got[0].receipt, got[0].broker_message_id);
  EXPECT_EQ(count("queue_messages"), 0);
  try {
    q->ack(unknown_receipt);
    ADD_FAILURE() << "ack of an unknown receipt succeeded";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::not_found);
    EXPECT_EQ(std::string(e.what()), "ack: receipt handle not found: " + unknown_receipt);
  }
  EXPECT_FALSE(q->nack(unknown_receipt));
  EXPECT_FALSE(q->defer(unknown_receipt));
  EXPECT_SPOOL_ERROR(q->ack("not-a-receipt"), errc::invalid_argument);
  EXPECT_SPOOL_ERROR(q->nack("0f0e0d0c-0b0a-4908-8706-050403020100-x"), errc::invalid_argument);
}

TEST_P(mq_ack, ids_containing_colons_and_the_empty_id_can_be_acked_and_nacked) {
  auto q = make_queue();
  const auto t = unix_now();
  insert_raw("q", "a:b:c", R"({"id":"a:b:c"})", std::nullopt, t);
  insert_raw("q", "", R"({"id":""})", std::nullopt, t);
  auto got = q->poll(10);
  ASSERT_EQ(got.size(), 2u);
  for (const auto& d : got) EXPECT_TRUE(q->nack(d.receipt));
  got = q->poll(10);
  ASSERT_EQ(got.size(), 2u);
  for (const auto& d : got) EXPECT_NO_THROW(q->ack(d.receipt));
  EXPECT_EQ(count("queue_messages"), 0);
}

TEST_P(mq_ack, a_nack_with_a_delay_hides_the_row_for_that_long_and_keeps_its_receive_count) {
  auto q = make_queue();
  q->publish(msg("m"));
  auto got = q->poll(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(q->nack(got[0].receipt, 2s));
  EXPECT_TRUE(q->poll(1).empty());
  EXPECT_SPOOL_ERROR(q->ack(got[0].receipt), errc::not_found);
  std::this_thread::sleep_for(2500ms);
  got = q->poll(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].receive_count, 2);  // one per claim: the nack did not change it
  EXPECT_EQ(*rows("SELECT receive_count FROM queue_messages").at(0).at(0), "2");
}

TEST_P(mq_ack, nack_and_defer_have_the_same_effect_and_count_only_when_a_row_matched) {
  auto q = make_queue();
  q->publish_batch({msg("a"), msg("b"), msg("c"), msg("d")});
  auto got = q->poll(10);
  ASSERT_EQ(got.size(), 4u);
  // The same database effect: with the same delay, the nacked and the
  // deferred row end up alike — unclaimed, visible from now + delay (whole
  // seconds, so bounded by the clock read around the calls), count unchanged.
  const auto before = unix_now();
  EXPECT_TRUE(q->nack(got[0].receipt));
  EXPECT_TRUE(q->defer(got[1].receipt));
  EXPECT_TRUE(q->nack(got[2].receipt, 600s));
  EXPECT_TRUE(q->defer(got[3].receipt, 600s));
  const auto after = unix_now();
  const auto state =
      rows("SELECT id, receipt_handle, visible_at, receive_count FROM queue_messages ORDER BY id");
  ASSERT_EQ(state.size(), 4u);
  for (const auto& r : state) {
    const std::int64_t delay = (*r[0] == "a" || *r[0] == "b") ? 0 : 600;
    EXPECT_EQ(r[1], std::nullopt) << *r[0];
    EXPECT_GE(std::stoll(*r[2]), before + delay) << *r[0];
    EXPECT_LE(std::stoll(*r[2]), after + delay) << *r[0];
    EXPECT_EQ(*r[3], "1") << *r[0];
  }
  ASSERT_EQ(*state[2][0], "c");
  ASSERT_EQ(*state[3][0], "d");
  EXPECT_FALSE(q->nack(got[0].receipt));
  EXPECT_FALSE(q->defer(got[1].receipt));
  db_->exec("DELETE FROM queue_messages WHERE id IN ('c', 'd')");
  insert_raw("q", "poison", "{x");
  got = q->poll(10);
  EXPECT_EQ(got.size(), 2u);
  for (const auto& d : got) q->ack(d.receipt);
  EXPECT_SPOOL_ERROR(q->ack(got[0].receipt), errc::not_found);
  const auto c = q->counters();
  EXPECT_EQ(c.nacked, 2u);
  EXPECT_EQ(c.deferred, 2u);
  EXPECT_EQ(c.polled, 6u);  // the quarantined row is not counted
  EXPECT_EQ(c.acked, 2u);
  EXPECT_EQ(c.identifier, "q");
}

TEST_P(mq_ack, metrics_keep_the_legacy_meanings_of_pending_and_in_flight) {
  // A 3 s window (§10: at least 3 s wherever a lapse matters): with whole-second
  // timestamps it lasts at least 2 s, so "a" cannot lapse and be re-claimed by
  // the second poll(1) below, which must take "b".
  auto q = make_queue({.visibility_timeout = 3s});
  q->publish_batch({msg("a"), msg("b")});
  ASSERT_EQ(ids(q->poll(1)), std::vector<std::string>{"a"});
  auto m = q->metrics();
  EXPECT_EQ(m.identifier, "q");
  EXPECT_EQ(m.pending, 1);
  EXPECT_EQ(m.in_flight, 1);
  EXPECT_EQ(m.delayed, 0);
  EXPECT_EQ(m.totals.polled, 1u);
  auto second = q->poll(1);
  ASSERT_EQ(ids(second), std::vector<std::string>{"b"});
  EXPECT_TRUE(q->nack(second[0].receipt, 600s));
  m = q->metrics();
  EXPECT_EQ(m.pending, 0);
  EXPECT_EQ(m.delayed, 1);
  EXPECT_EQ(m.in_flight, 1);
  EXPECT_EQ(m.expired, 0);
  std::this_thread::sleep_for(4100ms);  // past "a"'s window, which ends within 3 s of its claim
  m = q->metrics();
  EXPECT_EQ(m.in_flight, 1);  // a lapsed claim stays in flight…
  EXPECT_EQ(m.expired, 1);    // …and is also expired
  EXPECT_EQ(m.pending, 0);
}

TEST_P(mq_ack, ack_batch_reports_each_receipt_and_deletes_only_fresh_ones) {
  auto q = make_queue({.visibility_timeout = 30s});
  q->publish_batch({msg("fresh"), msg("stale")});
  auto got = q->poll(10);
  ASSERT_EQ(got.size(), 2u);
  const std::string stale_receipt = got[1].receipt;
  EXPECT_TRUE(q->nack(stale_receipt));  // releases: the receipt is now stale
  const auto result = q->ack_batch({got[0].receipt, stale_receipt, unknown_receipt});
  EXPECT_EQ(result, (std::vector<mq::ack_status>{mq::ack_status::acked, mq::ack_status::not_found,
                                                 mq::ack_status::not_found}));
  EXPECT_EQ(count("queue_messages"), 1);
  EXPECT_EQ(count("queue_messages", "id = 'stale'"), 1);
  EXPECT_EQ(q->counters().acked, 1u);
}

TEST_P(mq_ack, extend_visibility_keeps_a_claim_past_its_window_and_rejects_stale_receipts) {
  auto q = make_queue({.visibility_timeout = 3s});
  q->publish(msg("m"));
  auto got = q->poll(1);
  ASSERT_EQ(got.size(), 1u);
  q->extend_visibility(got[0].receipt, 30s);
  std::this_thread::sleep_for(3500ms);
  EXPECT_TRUE(q->poll(1).empty());
  EXPECT_SPOOL_ERROR(q->extend_visibility(unknown_receipt, 10s), errc::not_found);
  q->extend_visibility(got[0].receipt, 0s);  // lapses the claim
  auto again = q->poll(1);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_SPOOL_ERROR(q->extend_visibility(got[0].receipt, 10s), errc::not_found);
}

TEST_P(mq_ack, a_receive_limit_moves_the_row_to_the_failed_table_on_the_claim_past_it) {
  auto q = make_queue({.max_receive_count = 2});
  q->publish(msg("m"));
  for (int i = 0; i < 2; ++i) {
    auto got = q->poll(1);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_TRUE(q->nack(got[0].receipt));
  }
  EXPECT_TRUE(q->poll(1).empty());
  const auto failed = rows("SELECT error_message, receive_count FROM queue_messages_failed");
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(*failed[0][0], "max receives exceeded");
  EXPECT_EQ(*failed[0][1], "3");

  auto unbounded = make_queue({.name = "u"});
  unbounded->publish(msg("x"));
  for (int i = 0; i < 4; ++i) {
    auto got = unbounded->poll(1);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_TRUE(unbounded->nack(got[0].receipt));
  }
}

TEST_P(mq_ack, a_delay_outside_the_allowed_range_is_invalid) {
  auto q = make_queue();
  q->publish(msg("m"));
  auto got = q->poll(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_SPOOL_ERROR(q->nack(got[0].receipt, -1s), errc::invalid_argument);
  EXPECT_SPOOL_ERROR(q->defer(got[0].receipt, std::chrono::seconds(4294967296LL)), errc::invalid_argument);
  EXPECT_SPOOL_ERROR(q->publish(msg("n"), -5s), errc::invalid_argument);
}

SPOOL_BOTH_ENGINES(mq_ack);

}  // namespace spool::test

namespace spool::test {

using mq_redrive = mq_conformance;

TEST_P(mq_redrive, redrive_moves_rows_back_audits_them_and_keeps_conflicts) {
  auto q = make_queue();
  const auto t = unix_now();
  insert_raw("q", "a", "{bad a", std::string("g"), t - 100);
  insert_raw("q", "b", "{bad b", std::nullopt, t - 100);
  EXPECT_TRUE(q->poll(10).empty());
  EXPECT_EQ(count("queue_messages_failed"), 2);
  // A live row now holds id "b": its redrive is a conflict.
  insert_raw("q", "b", R"({"id":"b"})");
  const auto preview = q->redrive({.dry_run = true});
  EXPECT_EQ(preview.redriven, std::vector<std::string>{"a"});
  EXPECT_EQ(preview.conflicts, std::vector<std::string>{"b"});
  EXPECT_EQ(count("queue_messages_failed"), 2);
  EXPECT_EQ(count("spool_mq_redrive_log"), 0);

  const auto r = q->redrive({.ids = {"a", "b", "zzz"}, .reason = "fixed parser", .actor = "ops"});
  EXPECT_EQ(r.redriven, std::vector<std::string>{"a"});
  EXPECT_EQ(r.conflicts, std::vector<std::string>{"b"});
  EXPECT_EQ(r.missing, std::vector<std::string>{"zzz"});
  EXPECT_EQ(count("queue_messages_failed"), 1);
  const auto moved = rows("SELECT receipt_handle, receive_count, message_group_id, payload, created_at FROM queue_messages WHERE id = 'a'");
  ASSERT_EQ(moved.size(), 1u);
  EXPECT_FALSE(moved[0][0].has_value());
  EXPECT_EQ(*moved[0][1], "0");
  EXPECT_EQ(*moved[0][2], "g");
  EXPECT_EQ(*moved[0][3], "{bad a");
  EXPECT_GE(std::stoll(*moved[0][4]), t);  // re-enqueued at the tail
  const auto audit = rows("SELECT queue_name, id, error_message, actor, reason FROM spool_mq_redrive_log");
  ASSERT_EQ(audit.size(), 1u);
  EXPECT_EQ(*audit[0][1], "a");
  EXPECT_FALSE(audit[0][2]->empty());
  EXPECT_EQ(*audit[0][3], "ops");
  EXPECT_EQ(*audit[0][4], "fixed parser");
}

SPOOL_BOTH_ENGINES(mq_redrive);

}  // namespace spool::test
