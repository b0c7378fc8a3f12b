// Claiming: receipts, both eligibility gates, windows, order (§5.1; scenarios
// 1, 7–9, 17, 18, 25, 34, 35, 46).
#include <algorithm>
#include <set>

#include "conformance/mq_fixture.hpp"

namespace spool::test {

using namespace std::chrono_literals;
using mq_claim = mq_conformance;

TEST_P(mq_claim, honours_delayed_return_is_true_without_connecting) {
  // A database that cannot be reached, so any connection attempt would fail:
  // an unused port, or a SQLite file in a directory that does not exist.
  auto db = is_pg() ? database::open("postgresql://nobody@127.0.0.1:1/none")
                    : database::open("sqlite:/nonexistent-dir/sub/never.db");
  EXPECT_EQ(db.kind(), GetParam());
  mq::queue q(db, {.name = "q"});
  EXPECT_TRUE(q.honours_delayed_return());
}

TEST_P(mq_claim, a_nacked_head_with_a_long_delay_holds_back_its_group_but_not_others) {  // T9
  auto q = make_queue();
  const auto t = unix_now();
  insert_raw("q", "m1", R"({"id":"m1"})", std::string("grp-r4"), t);
  auto first = q->poll(1);
  ASSERT_EQ(ids(first), std::vector<std::string>{"m1"});
  EXPECT_TRUE(q->nack(first[0].receipt, 600s));
  insert_raw("q", "m2", R"({"id":"m2"})", std::string("grp-r4"), t);
  insert_raw("q", "other", R"({"id":"other"})", std::string("grp-other"), t);
  insert_raw("q", "solo", R"({"id":"solo"})", std::nullopt, t);
  const auto got = ids(q->poll(10));
  EXPECT_EQ(std::set<std::string>(got.begin(), got.end()), (std::set<std::string>{"other", "solo"}));
}

TEST_P(mq_claim, a_claimed_head_does_not_block_its_successor_on_a_later_poll) {  // T10
  auto q = make_queue();
  const auto t = unix_now();
  insert_raw("q", "m1", R"({"id":"m1"})", std::string("g"), t);
  insert_raw("q", "m2", R"({"id":"m2"})", std::string("g"), t);
  EXPECT_EQ(ids(q->poll(10)), std::vector<std::string>{"m1"});
  EXPECT_EQ(ids(q->poll(10)), std::vector<std::string>{"m2"});
}

TEST_P(mq_claim, strict_group_order_keeps_the_successor_until_the_head_is_acked) {  // T10 opt-in
  auto q = make_queue({.strict_group_order = true});
  const auto t = unix_now();
  insert_raw("q", "m1", R"({"id":"m1"})", std::string("g"), t);
  insert_raw("q", "m2", R"({"id":"m2"})", std::string("g"), t);
  auto first = q->poll(10);
  ASSERT_EQ(ids(first), std::vector<std::string>{"m1"});
  EXPECT_TRUE(q->poll(10).empty());
  q->ack(first[0].receipt);
  EXPECT_EQ(ids(q->poll(10)), std::vector<std::string>{"m2"});
}

TEST_P(mq_claim, a_delayed_head_turning_visible_is_claimed_first_and_alone) {  // T11
  auto q = make_queue();
  const auto t = unix_now();
  insert_raw("q", "m1", R"({"id":"m1"})", std::string("g"), t - 5);
  auto first = q->poll(1);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_TRUE(q->nack(first[0].receipt, 600s));
  insert_raw("q", "m2", R"({"id":"m2"})", std::string("g"), t);
  EXPECT_TRUE(q->poll(10).empty());
  rows("UPDATE queue_messages SET visible_at = $1 WHERE id = 'm1'", {unix_now() - 10});
  EXPECT_EQ(ids(q->poll(10)), std::vector<std::string>{"m1"});
}

TEST_P(mq_claim, receipts_are_a_shared_lowercase_uuid_v4_and_the_id) {
  auto q = make_queue();
  q->publish_batch({msg("a"), msg("b")});
  const auto got = q->poll(10);
  ASSERT_EQ(got.size(), 2u);
  const std::string uuid = got[0].receipt.substr(0, 36);
  EXPECT_EQ(got[1].receipt.substr(0, 36), uuid);
  EXPECT_EQ(uuid[14], '4');
  EXPECT_TRUE(uuid[19] == '8' || uuid[19] == '9' || uuid[19] == 'a' || uuid[19] == 'b');
  for (char c : uuid) EXPECT_TRUE((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == '-');
  for (const auto& d : got) {
    EXPECT_EQ(d.receipt, uuid + ":" + d.broker_message_id);
    EXPECT_EQ(d.body.id, d.broker_message_id);
    EXPECT_EQ(d.queue, "q");
  }
  EXPECT_EQ(q->identifier(), "q");
  EXPECT_TRUE(q->poll(10).empty());
}

TEST_P(mq_claim, a_lapsed_claim_is_redelivered_with_a_new_receipt_and_the_old_one_cannot_ack) {
  auto q = make_queue({.visibility_timeout = 3s});
  q->publish(msg("m"));
  const auto first = q->poll(1);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_TRUE(q->poll(1).empty());
  std::this_thread::sleep_for(3500ms);
  const auto again = q->poll(1);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_NE(again[0].receipt, first[0].receipt);
  EXPECT_EQ(again[0].receive_count, 2);
  EXPECT_SPOOL_ERROR(q->ack(first[0].receipt), errc::not_found);
  EXPECT_NO_THROW(q->ack(again[0].receipt));
}

TEST_P(mq_claim, a_poll_returns_at_most_one_message_per_group) {
  auto q = make_queue();
  std::vector<mq::message> batch;
  for (int i = 0; i < 5; ++i) batch.push_back(msg("g1-" + std::to_string(i), "g1"));
  for (int i = 0; i < 5; ++i) batch.push_back(msg("g2-" + std::to_string(i), "g2"));
  q->publish_batch(batch);
  const auto got = q->poll(10);
  EXPECT_EQ(ids(got), (std::vector<std::string>{"g1-0", "g2-0"}));
}

TEST_P(mq_claim, generated_ids_are_uuid_v7_and_a_thousand_are_claimed_in_publish_order) {
  auto q = make_queue();
  std::vector<std::string> published;
  for (int i = 0; i < 1000; ++i) {
    mq::message m;
    m.mediation_type = "HTTP";
    published.push_back(q->publish(m).ids.at(0));
  }
  EXPECT_EQ(published[0].size(), 36u);
  EXPECT_EQ(published[0][14], '7');
  const auto payload = *rows("SELECT payload FROM queue_messages WHERE id = $1", {published[0]}).at(0).at(0);
  EXPECT_NE(payload.find("\"id\":\"" + published[0] + "\""), std::string::npos);
  std::vector<std::string> claimed;
  while (claimed.size() < published.size()) {
    auto got = q->poll(100);
    ASSERT_FALSE(got.empty());
    for (const auto& d : got) {
      claimed.push_back(d.broker_message_id);
      q->ack(d.receipt);
    }
  }
  EXPECT_EQ(claimed, published);
}

TEST_P(mq_claim, a_delayed_publish_is_hidden_until_its_delay_ends_and_holds_back_its_group) {
  auto q = make_queue();
  q->publish(msg("d1", "g"), 2s);
  q->publish(msg("d2", "g"));
  EXPECT_TRUE(q->poll(10).empty());
  std::this_thread::sleep_for(3s);
  EXPECT_EQ(ids(q->poll(10)), std::vector<std::string>{"d1"});
}

TEST_P(mq_claim, an_empty_group_is_distinct_from_null_and_an_id_equal_to_a_group_name_joins_that_group) {
  auto q = make_queue();
  const auto t = unix_now();
  insert_raw("q", "e1", R"({"id":"e1"})", std::string(""), t);
  insert_raw("q", "e2", R"({"id":"e2"})", std::string(""), t);
  insert_raw("q", "n1", R"({"id":"n1"})", std::nullopt, t);
  insert_raw("q", "a-head", R"({"id":"a-head"})", std::string("zz"), t);
  insert_raw("q", "zz", R"({"id":"zz"})", std::nullopt, t);  // ungrouped, id = "zz"
  EXPECT_EQ(ids(q->poll(10)), (std::vector<std::string>{"a-head", "e1", "n1"}));
}

TEST_P(
    mq_claim,
    the_lone_grouped_row_of_a_queue_holds_back_the_ungrouped_row_its_group_names_and_other_queues_groups_hold_back_nothing) {
  // The claim skips the group probes when its queue holds no grouped row:
  // grouped rows of another queue must not switch them on or gate anything,
  // and one grouped row is enough to switch them on.
  auto q = make_queue();
  const auto t = unix_now();
  insert_raw("other", "o1", R"({"id":"o1"})", std::string("x"), t - 10);
  insert_raw("q", "x", R"({"id":"x"})", std::nullopt, t);
  insert_raw("q", "y", R"({"id":"y"})", std::nullopt, t);
  const auto sorted_ids = [](const std::vector<mq::delivered_message>& got) {
    auto out = ids(got);
    std::sort(out.begin(), out.end());
    return out;
  };
  EXPECT_EQ(sorted_ids(q->poll(10)), (std::vector<std::string>{"x", "y"}));

  insert_raw("q", "h", R"({"id":"h"})", std::string("zz"), t - 5);
  insert_raw("q", "zz", R"({"id":"zz"})", std::nullopt, t);
  insert_raw("q", "w", R"({"id":"w"})", std::nullopt, t);
  EXPECT_EQ(sorted_ids(q->poll(10)), (std::vector<std::string>{"h", "w"}));
}

SPOOL_BOTH_ENGINES(mq_claim);

}  // namespace spool::test
