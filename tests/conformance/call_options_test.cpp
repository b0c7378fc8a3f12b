// Per-call deadlines and cancellation (DESIGN.md, Calls): before the statement
// is sent it is `unavailable` and nothing happened; after a write was sent it
// is `in_doubt`.
#include <future>

#include "conformance/mq_fixture.hpp"
#include "spool/pg.hpp"
#include "spool/sqlite.hpp"

namespace spool::test {

using namespace std::chrono_literals;
using mq_call_options = mq_conformance;

void expect_unavailable(const std::function<void()>& f, const std::string& reason) {
  try {
    f();
    ADD_FAILURE() << "expected unavailable/" << reason;
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::unavailable) << e.what();
    EXPECT_EQ(e.reason(), reason) << e.what();
    EXPECT_TRUE(e.retryable());
  }
}

TEST_P(mq_call_options, a_passed_deadline_fails_before_sending_and_claims_nothing) {
  auto q = make_queue();
  q->publish(msg("m"));
  const call_options late{std::chrono::steady_clock::now() - 1s, {}};
  expect_unavailable([&] { (void)q->poll(1, late); }, "deadline_exceeded");
  expect_unavailable([&] { (void)q->publish(msg("n"), 0s, late); }, "deadline_exceeded");
  EXPECT_EQ(count("queue_messages", "receipt_handle IS NULL"), 1);
  EXPECT_EQ(q->poll(1, call_options::within(30s)).size(), 1u);
}

TEST_P(mq_call_options, a_requested_stop_cancels_before_sending_and_publishes_nothing) {
  auto q = make_queue();
  std::stop_source stop;
  stop.request_stop();
  expect_unavailable([&] { (void)q->publish(msg("never"), 0s, {std::nullopt, stop.get_token()}); }, "cancelled");
  EXPECT_EQ(count("queue_messages"), 0);
}

TEST_P(mq_call_options, a_stop_token_ends_a_blocked_poll_wait) {
  auto q = make_queue({.poll_interval = 60s});
  std::stop_source stop;
  auto waiting = std::async(std::launch::async, [&] { return q->poll_wait(1, 120s, {std::nullopt, stop.get_token()}); });
  std::this_thread::sleep_for(300ms);
  stop.request_stop();
  expect_unavailable([&] { (void)waiting.get(); }, "cancelled");
}

TEST_P(mq_call_options, a_deadline_ends_the_wait_for_a_pooled_connection) {
  auto db = database::open(uri_, {.pool_size = 1});
  mq::queue q(db, {.name = "q"});
  q.publish(msg("m"));
  // The application holds the only connection in its own transaction.
  std::optional<pg::tx> pg_tx;
  std::optional<sqlite::tx> sqlite_tx;
  if (is_pg()) {
    pg_tx.emplace(db);
  } else {
    sqlite_tx.emplace(db);
  }
  expect_unavailable([&] { (void)q.poll(1, call_options::within(300ms)); }, "deadline_exceeded");
}

SPOOL_BOTH_ENGINES(mq_call_options);

// PostgreSQL: a write already sent when the deadline passes is cancelled, and
// its outcome is reported as unknown.
TEST(mq_call_options_postgres, a_write_cancelled_after_it_was_sent_is_in_doubt) {
  const auto uri = make_pg_database("call_options_in_doubt");
  auto db = database::open(uri);
  (void)spool::migrate(db);
  mq::queue q(db, {.name = "q"});
  q.publish(mq::message{.id = "m"});
  const auto got = q.poll(1);
  ASSERT_EQ(got.size(), 1u);
  // Another session locks the row, so the ack's DELETE waits on it.
  pg::tx blocker(db);
  (void)blocker.exec("SELECT id FROM queue_messages WHERE id = 'm' FOR UPDATE");
  try {
    q.ack(got[0].receipt, {}, call_options::within(500ms));
    ADD_FAILURE() << "expected in_doubt";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::in_doubt) << e.what();
    EXPECT_EQ(e.reason(), "deadline_exceeded");
    EXPECT_FALSE(e.retryable());
  }
  blocker.rollback();
  // The cancelled ack did nothing here; a retried ack settles it.
  EXPECT_NO_THROW(q.ack(got[0].receipt));
}

}  // namespace spool::test
