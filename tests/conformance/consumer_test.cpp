// The consumer runtime behind `spool mq work` (message-queue.md §5.9).
#include <fmt/format.h>

#include <atomic>
#include <mutex>
#include <span>
#include <set>

#include "conformance/mq_fixture.hpp"
#include "support/eventually.hpp"
#include "spool/mq/consumer.hpp"

namespace spool::test {

using namespace std::chrono_literals;
using mq_consumer = mq_conformance;

TEST(mq_consumer_backoff, the_retry_delay_doubles_per_receive_up_to_its_cap) {
  EXPECT_EQ(mq::consumer::backoff(1, 900s), 1s);
  EXPECT_EQ(mq::consumer::backoff(2, 900s), 2s);
  EXPECT_EQ(mq::consumer::backoff(5, 900s), 16s);
  EXPECT_EQ(mq::consumer::backoff(11, 900s), 900s);
  EXPECT_EQ(mq::consumer::backoff(1000, 900s), 900s);
}

TEST_P(mq_consumer, handled_messages_are_acked_and_failed_ones_nacked_and_redelivered) {
  auto q = make_queue({.visibility_timeout = 30s, .poll_interval = 100ms});
  q->publish_batch({msg("ok-1"), msg("ok-2"), msg("flaky")});
  std::mutex mutex;
  std::multiset<std::string> seen;
  mq::consumer c(
      *q,
      [&](const mq::delivered_message& d) {
        {
          std::lock_guard lock(mutex);
          seen.insert(d.broker_message_id);
        }
        if (d.broker_message_id == "flaky" && d.receive_count == 1) throw std::runtime_error("transient");
      },
      {.concurrency = 2, .idle_wait = 200ms, .retry_jitter = 0});
  c.start();
  for (int i = 0; i < 600 && count("queue_messages") > 0; ++i) std::this_thread::sleep_for(100ms);
  c.stop();
  EXPECT_EQ(count("queue_messages"), 0);
  EXPECT_EQ(seen.count("flaky"), 2u);  // nacked with a 1 s delay, then acked
  EXPECT_EQ(seen.count("ok-1"), 1u);
  const auto s = c.stats();
  EXPECT_EQ(s.acked, 3u);
  EXPECT_EQ(s.nacked, 1u);
}

TEST_P(mq_consumer, a_long_handler_keeps_its_claim_by_extending_it) {
  // A 6 s window (whole seconds: at least 5 s) against a 7 s handler: the
  // keeper's extensions have seconds to spare on a loaded machine.
  auto q = make_queue({.visibility_timeout = 6s, .poll_interval = 100ms});
  q->publish(msg("slow"));
  std::atomic<int> runs{0};
  mq::consumer c(
      *q,
      [&](const mq::delivered_message&) {
        ++runs;
        std::this_thread::sleep_for(7s);  // longer than the window
      },
      {.concurrency = 2, .idle_wait = 200ms});
  c.start();
  for (int i = 0; i < 600 && count("queue_messages") > 0; ++i) std::this_thread::sleep_for(100ms);
  c.stop();
  EXPECT_EQ(runs.load(), 1);  // the second worker never got it: the claim was extended
  EXPECT_EQ(count("queue_messages"), 0);
}

TEST_P(mq_consumer, stop_lets_a_running_handler_finish_and_records_its_outcome) {
  auto q = make_queue({.poll_interval = 100ms});
  q->publish(msg("in-flight"));
  std::atomic<bool> entered{false};
  mq::consumer c(
      *q,
      [&](const mq::delivered_message&) {
        entered = true;
        std::this_thread::sleep_for(800ms);
      },
      {.concurrency = 1, .idle_wait = 200ms});
  c.start();
  while (!entered) std::this_thread::sleep_for(10ms);
  c.stop();  // returns after the handler finished and its ack was recorded
  EXPECT_EQ(c.stats().acked, 1u);
  EXPECT_EQ(count("queue_messages"), 0);
  EXPECT_SPOOL_ERROR(c.start(), errc::invalid_state);
}

TEST_P(mq_consumer, a_batch_consumer_acks_the_handled_messages_of_a_claim_together_and_nacks_a_failure_alone) {
  auto q = make_queue({.visibility_timeout = 30s, .poll_interval = 100ms});
  std::vector<mq::message> batch;
  for (int i = 0; i < 25; ++i) batch.push_back(msg(fmt::format("m-{:02}", i)));
  batch.push_back(msg("flaky"));
  (void)q->publish_batch(batch);
  std::mutex mutex;
  std::multiset<std::string> seen;
  mq::consumer c(
      *q,
      [&](const mq::delivered_message& d) {
        {
          std::lock_guard lock(mutex);
          seen.insert(d.broker_message_id);
        }
        if (d.broker_message_id == "flaky" && d.receive_count == 1) throw std::runtime_error("transient");
      },
      {.concurrency = 2, .idle_wait = 200ms, .max_retry_delay = 0s, .retry_jitter = 0, .batch = 10});
  c.start();
  ASSERT_TRUE(eventually([&] { return count("queue_messages") == 0; }, 30s));
  c.stop();
  EXPECT_EQ(seen.size(), 27u);  // 25 once, flaky twice (nacked at once, then acked)
  EXPECT_EQ(seen.count("flaky"), 2u);
  const auto s = c.stats();
  EXPECT_EQ(s.delivered, 27u);
  EXPECT_EQ(s.acked, 26u);
  EXPECT_EQ(s.nacked, 1u);
  EXPECT_EQ(q->counters().acked, 26u);  // through ack_batch: counted per message
}

TEST_P(mq_consumer, a_batch_handler_gets_a_whole_claim_and_its_exception_nacks_every_message_of_it) {
  auto q = make_queue({.visibility_timeout = 30s, .poll_interval = 100ms});
  std::vector<mq::message> batch;
  for (int i = 0; i < 6; ++i) batch.push_back(msg(fmt::format("b-{}", i)));
  (void)q->publish_batch(batch);
  std::atomic<int> calls{0};
  std::atomic<std::size_t> largest{0};
  std::mutex mutex;
  std::multiset<std::string> seen;
  mq::consumer c(
      *q,
      mq::batch_handler([&](std::span<const mq::delivered_message> got) {
        std::size_t seen_before = largest.load();
        while (got.size() > seen_before && !largest.compare_exchange_weak(seen_before, got.size())) {
        }
        {
          std::lock_guard lock(mutex);
          for (const auto& d : got) seen.insert(d.broker_message_id);
        }
        if (++calls == 1) throw std::runtime_error("the first batch fails as a whole");
      }),
      {.concurrency = 1, .idle_wait = 200ms, .max_retry_delay = 0s, .retry_jitter = 0, .batch = 6});
  c.start();
  ASSERT_TRUE(eventually([&] { return count("queue_messages") == 0; }, 30s));
  c.stop();
  EXPECT_EQ(largest.load(), 6u);  // one claim carried the whole backlog
  const auto s = c.stats();
  EXPECT_EQ(s.nacked, 6u);  // every message of the failed batch
  EXPECT_EQ(s.acked, 6u);   // and every one once more, acked
  for (int i = 0; i < 6; ++i) EXPECT_EQ(seen.count(fmt::format("b-{}", i)), 2u);
}

TEST_P(mq_consumer, a_batch_outside_one_to_a_thousand_is_refused) {
  auto q = make_queue();
  const auto noop = [](const mq::delivered_message&) {};
  EXPECT_SPOOL_ERROR(mq::consumer(*q, noop, {.batch = 0}), errc::invalid_argument);
  EXPECT_SPOOL_ERROR(mq::consumer(*q, noop, {.batch = 1001}), errc::invalid_argument);
}

TEST_P(mq_consumer, metrics_count_claims_outcomes_handler_failures_quarantines_and_handler_latency) {
  auto q = make_queue({.visibility_timeout = 30s, .poll_interval = 100ms});
  q->publish_batch({msg("ok-1"), msg("ok-2"), msg("flaky")});
  insert_raw("q", "poison", "{ not json");
  mq::consumer c(
      *q,
      [&](const mq::delivered_message& d) {
        if (d.broker_message_id == "flaky" && d.receive_count == 1) throw std::runtime_error("transient");
      },
      {.concurrency = 2, .idle_wait = 200ms, .retry_jitter = 0});
  EXPECT_EQ(c.metrics().claimed, 0u);
  c.start();
  for (int i = 0; i < 600 && count("queue_messages") > 0; ++i) std::this_thread::sleep_for(100ms);
  c.stop();
  const auto m = c.metrics();
  EXPECT_EQ(m.claimed, 4u);  // ok-1, ok-2, flaky twice
  EXPECT_EQ(m.acked, 3u);
  EXPECT_EQ(m.nacked, 1u);
  EXPECT_EQ(m.failed, 1u);
  EXPECT_EQ(m.quarantined, 1u);
  EXPECT_EQ(m.outcome_errors, 0u);
  EXPECT_EQ(m.in_flight, 0);
  EXPECT_EQ(m.handler_latency.count, 4u);  // every handler call, failed or not
  EXPECT_EQ(m.handler_latency.cumulative(m.handler_latency.buckets.size() - 1), 4u);
}

SPOOL_BOTH_ENGINES(mq_consumer);

}  // namespace spool::test
