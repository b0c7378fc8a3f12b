// mq::browser, the operator's read of the queue tables (the console's
// source): counts per queue, keyset pages that hold steady while rows change,
// filters, one message, the quarantine, and refusals of bad input.
#include "spool/mq/browser.hpp"

#include "conformance/mq_fixture.hpp"

namespace spool::test {

using namespace std::chrono_literals;
using mq_browser = mq_conformance;

namespace {

std::vector<std::string> page_ids(const mq::message_page& p) {
  std::vector<std::string> out;
  for (const auto& m : p.messages) out.push_back(m.id);
  return out;
}

}  // namespace

TEST_P(mq_browser, each_queue_is_counted_by_state_with_its_quarantine_and_oldest_waiting_row) {
  const auto t = unix_now();
  insert_raw("a", "1", R"({"id":"1"})", std::nullopt, t - 50);
  insert_raw("a", "2", R"({"id":"2"})", std::nullopt, t - 10, t + 3600);  // delayed
  insert_raw("b", "3", R"({"id":"3"})");
  auto q = make_queue({.name = "b"});
  ASSERT_EQ(q->poll(1).size(), 1u);  // in flight
  db_->exec(
      "INSERT INTO queue_messages_failed (id, queue_name, payload, error_message, created_at, failed_at) "
      "VALUES ('x', 'c', 'nope', 'bad', 1, 2)");
  mq::browser b(*db_);
  const auto qs = b.queues();
  ASSERT_EQ(qs.size(), 3u);
  EXPECT_EQ(qs[0].queue, "a");
  EXPECT_EQ(qs[0].visible, 1);
  EXPECT_EQ(qs[0].delayed, 1);
  EXPECT_EQ(qs[0].in_flight, 0);
  EXPECT_EQ(qs[0].oldest_waiting_created_at, t - 50);
  EXPECT_EQ(qs[1].queue, "b");
  EXPECT_EQ(qs[1].in_flight, 1);
  EXPECT_FALSE(qs[1].oldest_waiting_created_at.has_value());
  EXPECT_EQ(qs[2].queue, "c");
  EXPECT_EQ(qs[2].quarantined, 1);
}

TEST_P(mq_browser, rows_are_counted_per_queue_and_creation_second_from_a_given_second_on) {
  insert_raw("a", "1", "{}", std::nullopt, 100);
  insert_raw("a", "2", "{}", std::nullopt, 100);
  insert_raw("a", "3", "{}", std::nullopt, 101);
  insert_raw("a", "old", "{}", std::nullopt, 99);
  insert_raw("b", "4", "{}", std::nullopt, 105);
  mq::browser b(*db_);
  const auto got = b.created_since(100);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].queue, "a");
  EXPECT_EQ(got[0].second, 100);
  EXPECT_EQ(got[0].rows, 2);
  EXPECT_EQ(got[1].second, 101);
  EXPECT_EQ(got[1].rows, 1);
  EXPECT_EQ(got[2].queue, "b");
  EXPECT_EQ(got[2].rows, 1);
  EXPECT_TRUE(b.created_since(106).empty());
}

TEST_P(mq_browser, pages_follow_the_id_order_and_rows_that_come_and_go_never_repeat_or_skip_a_kept_row) {
  for (int i = 0; i < 25; ++i) insert_raw("q", fmt_id(i * 2), "{}");
  mq::browser b(*db_);
  std::vector<std::string> seen;
  mq::message_filter f{.queue = "q", .limit = 10};
  auto page = b.messages(f);
  seen = page_ids(page);
  ASSERT_EQ(seen.size(), 10u);
  ASSERT_TRUE(page.next.has_value());
  // Between pages: a row before the cursor goes, rows before and after it arrive.
  db_->exec("DELETE FROM queue_messages WHERE id = $1", {fmt_id(0)});
  insert_raw("q", fmt_id(1), "{}");
  insert_raw("q", fmt_id(99), "{}");
  while (page.next) {
    f.after = *page.next;
    page = b.messages(f);
    for (auto& id : page_ids(page)) seen.push_back(id);
  }
  std::vector<std::string> expected;
  for (int i = 0; i < 25; ++i) expected.push_back(fmt_id(i * 2));
  expected.push_back(fmt_id(99));
  EXPECT_EQ(seen, expected);
}

TEST_P(mq_browser, a_full_last_page_says_no_more_rows_follow) {
  for (int i = 0; i < 10; ++i) insert_raw("q", fmt_id(i), "{}");
  mq::browser b(*db_);
  const auto page = b.messages({.queue = "q", .limit = 10});
  EXPECT_EQ(page.messages.size(), 10u);
  EXPECT_FALSE(page.next.has_value());
}

TEST_P(mq_browser, filters_select_by_group_state_id_prefix_and_age) {
  const auto t = unix_now();
  insert_raw("q", "a1", "{}", "g", t - 100);
  insert_raw("q", "a2", "{}", std::nullopt, t - 5, t + 3600);
  insert_raw("q", "b1", "{}", "g", t);
  auto q = make_queue();
  ASSERT_EQ(q->poll(1).size(), 1u);  // claims a1, the oldest visible
  mq::browser b(*db_);
  EXPECT_EQ(page_ids(b.messages({.queue = "q", .group = "g"})), (std::vector<std::string>{"a1", "b1"}));
  EXPECT_EQ(page_ids(b.messages({.queue = "q", .state = mq::row_state::in_flight})),
            std::vector<std::string>{"a1"});
  EXPECT_EQ(page_ids(b.messages({.queue = "q", .state = mq::row_state::delayed})),
            std::vector<std::string>{"a2"});
  EXPECT_EQ(page_ids(b.messages({.queue = "q", .state = mq::row_state::visible})),
            std::vector<std::string>{"b1"});
  EXPECT_EQ(page_ids(b.messages({.queue = "q", .id_prefix = "a"})), (std::vector<std::string>{"a1", "a2"}));
  EXPECT_EQ(page_ids(b.messages({.queue = "q", .min_age = 60s})), std::vector<std::string>{"a1"});
  EXPECT_TRUE(b.messages({.queue = "other"}).messages.empty());
}

TEST_P(mq_browser, one_message_and_one_quarantined_row_are_read_whole) {
  const std::string big = R"({"id":"m","pad":")" + std::string(1000, 'x') + R"("})";
  insert_raw("q", "m", big, "g");
  db_->exec(
      "INSERT INTO queue_messages_failed (id, queue_name, message_group_id, payload, error_message, "
      "receive_count, created_at, failed_at) VALUES ('p', 'q', NULL, 'not json', 'undecodable', 3, 10, 20)");
  mq::browser b(*db_);
  const auto m = b.message("q", "m");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->payload, big);
  EXPECT_EQ(m->payload_bytes, static_cast<std::int64_t>(big.size()));
  EXPECT_EQ(m->group, "g");
  EXPECT_EQ(m->state, mq::row_state::visible);
  EXPECT_EQ(b.messages({.queue = "q"}).messages.at(0).payload.size(), 240u);
  EXPECT_FALSE(b.message("q", "nope").has_value());
  const auto p = b.quarantined_message("q", "p");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->payload, "not json");
  EXPECT_EQ(p->error_message, "undecodable");
  EXPECT_EQ(p->receive_count, 3);
  EXPECT_EQ(p->failed_at, 20);
  const auto page = b.quarantined("q");
  ASSERT_EQ(page.rows.size(), 1u);
  EXPECT_FALSE(page.next.has_value());
}

TEST_P(mq_browser, quarantined_rows_are_narrowed_by_group_id_prefix_and_a_literal_part_of_the_reason) {
  db_->exec(
      "INSERT INTO queue_messages_failed (id, queue_name, message_group_id, payload, error_message, "
      "created_at, "
      "failed_at) VALUES ('a-1', 'q', 'g1', '{}', 'undecodable payload', 1, 2), "
      "('a-2', 'q', NULL, '{}', 'handler gave up: 50% done', 1, 2), ('b-1', 'q', 'g1', '{}', 'handler gave "
      "up', 1, 2), "
      "('a-3', 'other', 'g1', '{}', 'undecodable payload', 1, 2)");
  const auto ids = [&](mq::quarantine_filter f) {
    f.queue = "q";
    std::vector<std::string> out;
    for (const auto& r : mq::browser(*db_).quarantined(f).rows) out.push_back(r.id);
    return out;
  };
  using v = std::vector<std::string>;
  EXPECT_EQ(ids({}), (v{"a-1", "a-2", "b-1"}));
  EXPECT_EQ(ids({.group = "g1"}), (v{"a-1", "b-1"}));
  EXPECT_EQ(ids({.id_prefix = "a-"}), (v{"a-1", "a-2"}));
  EXPECT_EQ(ids({.reason_contains = "gave up"}), (v{"a-2", "b-1"}));
  EXPECT_EQ(ids({.reason_contains = "50%"}), (v{"a-2"}));
  EXPECT_EQ(ids({.reason_contains = "%"}), (v{"a-2"})) << "a % is a character, never a wildcard";
  EXPECT_EQ(ids({.id_prefix = "_"}), v{}) << "an _ is a character, never a wildcard";
  EXPECT_EQ(ids({.group = "g1", .id_prefix = "a", .reason_contains = "undecodable"}), (v{"a-1"}));
  const auto first = mq::browser(*db_).quarantined({.queue = "q", .reason_contains = "a", .limit = 1});
  ASSERT_EQ(first.rows.size(), 1u);
  ASSERT_TRUE(first.next.has_value());
  EXPECT_EQ(ids({.reason_contains = "a", .after = *first.next}), (v{"a-2", "b-1"}));
}

TEST_P(mq_browser, bad_input_is_refused_with_invalid_argument) {
  mq::browser b(*db_);
  EXPECT_SPOOL_ERROR((void)b.messages({.queue = ""}), errc::invalid_argument);
  EXPECT_SPOOL_ERROR((void)b.messages({.queue = "q", .limit = 0}), errc::invalid_argument);
  EXPECT_SPOOL_ERROR((void)b.messages({.queue = "q", .limit = 501}), errc::invalid_argument);
  EXPECT_SPOOL_ERROR((void)b.messages({.queue = "q", .id_prefix = std::string(1001, 'a')}),
                     errc::invalid_argument);
  EXPECT_SPOOL_ERROR((void)b.messages({.queue = "q", .min_age = -1s}), errc::invalid_argument);
  EXPECT_SPOOL_ERROR((void)b.quarantined("q", {}, 0), errc::invalid_argument);
  EXPECT_SPOOL_ERROR((void)b.quarantined({.queue = "q", .reason_contains = std::string(1001, 'a')}),
                     errc::invalid_argument);
  EXPECT_SPOOL_ERROR((void)mq::parse_row_state("lost"), errc::invalid_argument);
  EXPECT_SPOOL_ERROR(mq::browser(*db_, "bad schema"), errc::invalid_argument);
}

SPOOL_BOTH_ENGINES(mq_browser);

}  // namespace spool::test
