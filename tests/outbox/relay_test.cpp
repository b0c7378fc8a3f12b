// The relay on both engines (outbox.md §7; scenarios 24–28 and the relay
// halves of 29): one test per rule, named as the rule reads. No timing
// assertions: waits are bounded and end on states and events. Rules 1–5
// here; rules 6–11 and the relay's metrics and lifecycle in
// relay_recovery_test.cpp.
#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <thread>

#include "relay_fixture.hpp"

namespace spool::test {
namespace {

using namespace spool::outbox;

// ---- construction ----

TEST_P(outbox_relay, construction_rejects_every_option_outside_its_bounds_naming_option_and_value) {
  auto sink = deliver_all();
  auto expect_invalid = [&](relay_options o, const std::string& option) {
    try {
      relay r(*st_, sink, o);
      ADD_FAILURE() << "expected invalid_config for " << option;
    } catch (const error& e) {
      EXPECT_EQ(e.code(), errc::invalid_argument);
      EXPECT_EQ(e.reason(), "invalid_config") << option;
      EXPECT_NE(std::string(e.what()).find(option), std::string::npos) << e.what();
    }
  };
  auto with = [](auto f) {
    relay_options o;
    f(o);
    return o;
  };
  expect_invalid(with([](auto& o) { o.max_in_flight = 0; }), "max_in_flight = 0");
  expect_invalid(with([](auto& o) { o.max_in_flight = 10001; }), "max_in_flight = 10001");
  expect_invalid(with([](auto& o) { o.max_in_flight = 257; }),
                 "sink_concurrency = 257");  // one thread per lease
  expect_invalid(with([](auto& o) {
                   o.max_in_flight = 4;
                   o.sink_concurrency = 5;
                 }),
                 "sink_concurrency = 5");
  expect_invalid(with([](auto& o) { o.claim_batch = 101; }),
                 "claim_batch = 101");  // store max_claim_batch 100
  expect_invalid(with([](auto& o) { o.lease_duration = std::chrono::minutes(6); }),
                 "lease_duration = 360000");
  expect_invalid(with([](auto& o) { o.renew_interval = std::chrono::seconds(16); }),
                 "renew_interval = 16000");
  expect_invalid(with([](auto& o) { o.poll_interval = std::chrono::milliseconds(5); }), "poll_interval = 5");
  expect_invalid(with([](auto& o) { o.poll_interval = std::chrono::minutes(11); }), "poll_interval = 660000");
  expect_invalid(with([](auto& o) { o.max_attempts = 0; }), "max_attempts = 0");
  expect_invalid(with([](auto& o) { o.max_claims = 24; }), "max_claims = 24");
  expect_invalid(with([](auto& o) { o.backoff.cap = std::chrono::hours(25); }), "cap = 90000000");
  expect_invalid(with([](auto& o) { o.breaker.failures = 0; }), "failures = 0");
  expect_invalid(with([](auto& o) { o.transition_timeout = std::chrono::milliseconds(500); }),
                 "transition_timeout = 500");
  expect_invalid(with([](auto& o) { o.shutdown_grace = std::chrono::minutes(11); }),
                 "shutdown_grace = 660000");
  expect_invalid(with([](auto& o) { o.owner = std::string(256, 'o'); }), "owner");
  EXPECT_OUTBOX_ERROR((void)relay(*st_, sink, with([](auto& o) { o.owner = ""; })), errc::invalid_argument,
                      "owner_required");
  EXPECT_OUTBOX_ERROR((void)relay(*st_, nullptr), errc::invalid_argument, "sink_required");

  relay defaults(*st_, sink);
  EXPECT_EQ(std::count(defaults.owner().begin(), defaults.owner().end(), ':'), 2) << defaults.owner();
  relay other(*st_, sink);
  EXPECT_NE(defaults.owner(), other.owner());
}

// ---- rule 1 ----

TEST_P(outbox_relay, rule_1_it_claims_only_as_many_rows_as_it_can_publish) {
  std::vector<envelope> rows;
  for (int i = 0; i < 9; ++i) rows.push_back(env("c" + std::to_string(i)));
  write(rows);
  std::atomic<int> running{0}, max_running{0};
  std::atomic<std::int64_t> max_leased{0};
  auto o = fast();
  o.max_in_flight = 2;
  o.claim_batch = 10;
  relay r(*st_, make_callback_sink([&](const claimed_message&, std::stop_token) {
    raise_to(max_running, ++running);
    raise_to(max_leased, count("state = 'leased'"));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    --running;
    return sink_outcome::delivered();
  }),
          o);
  r.start();
  ASSERT_TRUE(eventually([&] { return count("state = 'delivered'") == 9; }));
  r.stop();
  EXPECT_LE(max_running.load(), 2);
  EXPECT_LE(max_leased.load(), 2);
  for (auto c : claim_counts()) EXPECT_LE(c, 2u);
  EXPECT_EQ(r.metrics().claimed, 9u);
}

TEST_P(outbox_relay,
       rule_1_fewer_sink_calls_than_leases_claim_whole_batches_and_run_at_most_sink_concurrency) {
  std::vector<envelope> rows;
  for (int i = 0; i < 150; ++i) rows.push_back(env("w" + std::to_string(1000 + i)));
  write({rows.begin(), rows.begin() + 75});  // the writer's max_batch_size is 100
  write({rows.begin() + 75, rows.end()});
  std::atomic<int> running{0}, max_running{0};
  std::mutex mu;
  std::multiset<std::string> seen;
  auto o = fast();
  o.max_in_flight = 100;
  o.sink_concurrency = 2;
  o.claim_batch = 50;
  relay r(*st_, make_callback_sink([&](const claimed_message& m, std::stop_token) {
    raise_to(max_running, ++running);
    {
      std::lock_guard lock(mu);
      seen.insert(m.message.id);
    }
    --running;
    return sink_outcome::delivered();
  }),
          o);
  r.start();
  ASSERT_TRUE(eventually([&] { return count("state = 'delivered'") == 150; }));
  r.stop();
  EXPECT_LE(max_running.load(), 2);
  const auto claims = claim_counts();
  ASSERT_FALSE(claims.empty());
  EXPECT_EQ(*std::max_element(claims.begin(), claims.end()), 50u);  // a claim is not bounded by the threads
  EXPECT_EQ(std::accumulate(claims.begin(), claims.end(), std::size_t{0}), 150u);
  EXPECT_EQ(seen.size(), 150u);
  for (const auto& row : rows) EXPECT_EQ(seen.count(row.id), 1u) << row.id;
  const auto delivers = deliver_counts();
  EXPECT_EQ(std::accumulate(delivers.begin(), delivers.end(), std::size_t{0}), 150u);
  EXPECT_GT(*std::max_element(delivers.begin(), delivers.end()), 2u);  // recorded together, not per thread
  EXPECT_EQ(r.metrics().in_flight, 0);
}

TEST_P(outbox_relay, rule_1_a_claim_asks_for_no_more_than_claim_batch) {
  std::vector<envelope> rows;
  for (int i = 0; i < 5; ++i) rows.push_back(env("b" + std::to_string(i)));
  write(rows);
  auto o = fast();
  o.max_in_flight = 8;
  o.claim_batch = 2;
  relay r(*st_, deliver_all(), o);
  EXPECT_EQ(r.run_once(), 2u);
  EXPECT_EQ(count("state = 'delivered'"), 2);
}

// ---- rule 2 ----

TEST_P(outbox_relay,
       rule_2_every_held_lease_is_renewed_with_one_call_per_interval_while_publishing_outlasts_the_lease) {
  write({env("h1"), env("h2"), env("h3")});
  auto o = fast();
  o.max_in_flight = 3;
  o.lease_duration = std::chrono::seconds(2);
  // Each renewal has the interval as its budget: 250 ms leaves room for a
  // loaded sanitizer build, where 100 ms calls could time out until the
  // leases were fenced.
  o.renew_interval = std::chrono::milliseconds(250);
  std::atomic<int> entered{0};
  gate release;
  relay r(*st_, make_callback_sink([&](const claimed_message&, std::stop_token stop) {
    ++entered;
    release.wait(stop);
    return sink_outcome::delivered();
  }),
          o);
  r.start();
  ASSERT_TRUE(eventually([&] { return entered == 3; }));
  // Renewals covering all three rows for more than a whole lease duration.
  ASSERT_TRUE(eventually([&] {
    const auto c = extend_counts();
    return std::count(c.begin(), c.end(), 3u) >= 10;
  }));
  release.open();
  ASSERT_TRUE(eventually([&] { return count("state = 'delivered'") == 3; }));
  r.stop();
  for (const char* id : {"h1", "h2", "h3"}) EXPECT_EQ(column(id, "claim_count"), "1") << id;
  EXPECT_EQ(r.metrics().lease_lost, 0u);
  for (auto c : extend_counts()) EXPECT_LE(c, 3u);  // one call for all held rows
}

TEST_P(outbox_relay, rule_2_a_lease_reported_lost_stops_its_sink_call_and_its_outcome_is_not_recorded) {
  write({env("l1")});
  auto o = fast();
  o.max_in_flight = 1;
  o.lease_duration = std::chrono::seconds(5);
  o.renew_interval = std::chrono::milliseconds(50);
  std::atomic<bool> entered{false}, saw_stop{false}, returned{false};
  relay r(*st_, make_callback_sink([&](const claimed_message&, std::stop_token stop) {
    entered = true;
    gate never;
    never.wait(stop);
    saw_stop = stop.stop_requested();
    returned = true;
    return sink_outcome::delivered();
  }),
          o);
  r.start();
  ASSERT_TRUE(eventually([&] { return entered.load(); }));
  // The thief takes the lease in one statement. Expiring it and then
  // claiming it from a second store left a gap in which a failed renewal
  // freed the relay's slot and its own claim took l1 back first, on a
  // loaded machine.
  steal_lease("l1", "thief");
  ASSERT_TRUE(eventually([&] { return returned.load(); }));
  r.stop();
  EXPECT_TRUE(saw_stop);
  EXPECT_EQ(state_of("l1"), "leased");
  EXPECT_EQ(column("l1", "lease_owner"), "thief");
  EXPECT_EQ(column("l1", "claim_count"), "2");
  EXPECT_EQ(column("l1", "failure_count"), "0");
  const auto m = r.metrics();
  EXPECT_EQ(m.lease_lost, 1u);
  EXPECT_EQ(m.delivered, 0u);
  EXPECT_EQ(m.released, 0u);
}

TEST_P(outbox_relay, rule_2_renewals_failing_until_the_deadline_stop_the_sink_call_and_record_nothing) {
  write({env("rf")});
  auto o = fast();
  o.lease_duration = std::chrono::seconds(1);
  o.renew_interval = std::chrono::milliseconds(100);
  std::atomic<bool> entered{false}, returned{false};
  relay r(*st_, make_callback_sink([&](const claimed_message&, std::stop_token stop) {
    entered = true;
    gate never;
    never.wait(stop);
    returned = true;
    return sink_outcome::delivered();
  }),
          o);
  r.start();
  ASSERT_TRUE(eventually([&] { return entered.load(); }));
  db_->exec("ALTER TABLE outbox_messages RENAME TO outbox_hidden");  // every renewal fails
  const bool stopped_by_deadline = eventually([&] { return returned.load(); });
  // Stopped before the table comes back: rf's lease has expired by now, and a
  // running relay would claim it again and count that delivery.
  r.stop();
  db_->exec("ALTER TABLE outbox_hidden RENAME TO outbox_messages");
  ASSERT_TRUE(stopped_by_deadline);
  EXPECT_EQ(state_of("rf"), "leased");  // nothing recorded: the row waits for its expiry
  EXPECT_EQ(column("rf", "failure_count"), "0");
  const auto m = r.metrics();
  EXPECT_EQ(m.lease_lost, 1u);
  EXPECT_GE(m.store_errors, 1u);
  EXPECT_EQ(m.delivered, 0u);
}

// ---- rule 3 ----

TEST_P(outbox_relay, rule_3_a_permanent_failure_dead_letters_at_once) {
  write({env("p1")});
  relay r(*st_, make_callback_sink([](const claimed_message&, std::stop_token) {
    return sink_outcome::permanent("rejected", "the receiver said no");
  }),
          fast());
  EXPECT_EQ(r.run_once(), 1u);
  EXPECT_EQ(state_of("p1"), "dead");
  EXPECT_EQ(column("p1", "failure_count"), "1");
  EXPECT_EQ(column("p1", "last_error_code"), "rejected");
  EXPECT_EQ(r.metrics().dead_lettered, 1u);
}

TEST_P(outbox_relay, rule_3_a_transient_failure_retries_until_max_attempts_then_dead_letters) {
  write({env("t1")});
  auto o = fast();
  o.max_attempts = 3;
  std::atomic<int> calls{0};
  relay r(*st_, make_callback_sink([&](const claimed_message&, std::stop_token) {
    ++calls;
    return sink_outcome::transient("busy", "try later");
  }),
          o);
  EXPECT_EQ(r.run_once(), 1u);
  EXPECT_EQ(state_of("t1"), "pending");
  EXPECT_EQ(column("t1", "failure_count"), "1");
  run_once_until_claimed(r);
  EXPECT_EQ(state_of("t1"), "pending");
  EXPECT_EQ(column("t1", "failure_count"), "2");
  run_once_until_claimed(r);
  EXPECT_EQ(state_of("t1"), "dead");
  EXPECT_EQ(column("t1", "failure_count"), "3");
  EXPECT_EQ(column("t1", "last_error_code"), "busy");
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(r.metrics().retried, 2u);
  EXPECT_EQ(r.metrics().dead_lettered, 1u);
}

TEST_P(outbox_relay, rule_3_a_retry_after_longer_than_the_backoff_is_honoured) {
  write({env("ra")});
  relay r(*st_, make_callback_sink([](const claimed_message&, std::stop_token) {
    return sink_outcome::transient("throttled", "429", std::chrono::hours(1));
  }),
          fast());
  EXPECT_EQ(r.run_once(), 1u);
  EXPECT_EQ(state_of("ra"), "pending");
  const auto later =
      is_pg() ? count("id = 'ra' AND available_at > clock_timestamp() + interval '50 minutes'")
              : std::stoll(
                    *db_->exec("SELECT count(*) FROM outbox_messages WHERE id = 'ra' AND "
                               "available_at > ?1",
                               {std::int64_t{std::chrono::duration_cast<std::chrono::microseconds>(
                                                 (std::chrono::system_clock::now() + std::chrono::minutes(50))
                                                     .time_since_epoch())
                                                 .count()}})
                         .at(0)
                         .at(0));
  EXPECT_EQ(later, 1);
  EXPECT_EQ(r.run_once(), 0u);
}

TEST_P(outbox_relay, rule_3_a_row_claimed_more_than_max_claims_is_dead_lettered_unpublished) {
  write({env("cb")});
  db_->exec("UPDATE outbox_messages SET claim_count = 5 WHERE id = 'cb'");
  auto o = fast();
  o.max_attempts = 5;
  o.max_claims = 5;
  std::atomic<int> calls{0};
  relay r(*st_, deliver_all(&calls), o);
  EXPECT_EQ(r.run_once(), 1u);
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(state_of("cb"), "dead");
  EXPECT_EQ(column("cb", "last_error_code"), "claim_budget_exhausted");
}

TEST_P(outbox_relay, rule_3_a_classifier_may_override_the_sinks_class) {
  write({env("k1")});
  auto o = fast();
  o.classifier = [](const claimed_message&, const sink_outcome& out) {
    return out.code == "fatal" ? outcome_class::permanent : out.kind;
  };
  relay r(*st_, make_callback_sink([](const claimed_message&, std::stop_token) {
    return sink_outcome::transient("fatal", "looks transient, is not");
  }),
          o);
  EXPECT_EQ(r.run_once(), 1u);
  EXPECT_EQ(state_of("k1"), "dead");
}

// ---- rule 4 ----

TEST_P(outbox_relay,
       rule_4_the_default_backoff_waits_over_78_minutes_before_the_25th_failure_at_worst_case_jitter) {
  const relay_options defaults;
  std::chrono::milliseconds worst{0};
  for (std::uint32_t n = 1; n < defaults.max_attempts; ++n) worst += backoff_delay(n, defaults.backoff, 0.0);
  EXPECT_GE(worst, std::chrono::minutes(78));
  EXPECT_EQ(defaults.max_attempts, 25u);
  // ceiling = min(cap, initial × 2^(n−1)); delay uniform in [ceiling ÷ 2, ceiling].
  EXPECT_EQ(backoff_ceiling(1, defaults.backoff), std::chrono::seconds(1));
  EXPECT_EQ(backoff_ceiling(4, defaults.backoff), std::chrono::seconds(8));
  EXPECT_EQ(backoff_ceiling(11, defaults.backoff), std::chrono::minutes(10));
  EXPECT_EQ(backoff_ceiling(1000, defaults.backoff), std::chrono::minutes(10));
  EXPECT_EQ(backoff_delay(4, defaults.backoff, 0.0), std::chrono::seconds(4));
  EXPECT_EQ(backoff_delay(4, defaults.backoff, 1.0), std::chrono::seconds(8));
  EXPECT_EQ(backoff_delay(4, defaults.backoff, 0.5), std::chrono::seconds(6));
}

TEST_P(outbox_relay,
       rule_4_a_scaled_outage_of_an_hour_dead_letters_nothing_and_all_is_delivered_after_recovery) {
  // The defaults scaled by 1/3600: an hour of outage is one second.
  std::vector<envelope> rows;
  for (int i = 0; i < 5; ++i) rows.push_back(env("u" + std::to_string(i)));
  write(rows);
  auto o = fast();
  o.backoff = {std::chrono::milliseconds(1), std::chrono::milliseconds(167)};    // 1 s, 10 min
  o.breaker = {5, std::chrono::milliseconds(1), std::chrono::milliseconds(83)};  // 5 s, 5 min
  o.poll_interval = std::chrono::milliseconds(10);
  std::mutex mu;
  std::optional<std::chrono::steady_clock::time_point> first_failure;
  std::atomic<int> failures{0};
  relay r(*st_, make_callback_sink([&](const claimed_message&, std::stop_token) {
    std::lock_guard lock(mu);
    const auto now = std::chrono::steady_clock::now();
    if (!first_failure) first_failure = now;
    if (now - *first_failure < std::chrono::seconds(1)) {
      ++failures;
      return sink_outcome::transient("down", "outage");
    }
    return sink_outcome::delivered();
  }),
          o);
  r.start();
  ASSERT_TRUE(eventually([&] { return count("state = 'delivered'") == 5; }));
  r.stop();
  EXPECT_EQ(count("state = 'dead'"), 0);
  EXPECT_GE(failures.load(), 5);
  EXPECT_EQ(r.metrics().dead_lettered, 0u);
}

// ---- rule 5 ----

TEST_P(outbox_relay, rule_5_consecutive_transient_failures_open_the_breaker_and_claiming_stops) {
  write({env("o1"), env("o2"), env("o3")});
  auto o = fast();
  o.max_in_flight = 1;
  o.breaker = {2, std::chrono::hours(1), std::chrono::hours(2)};
  std::atomic<int> calls{0};
  relay r(*st_, make_callback_sink([&](const claimed_message&, std::stop_token) {
    ++calls;
    return sink_outcome::transient("down", "sink outage");
  }),
          o);
  EXPECT_EQ(r.run_once(), 1u);
  EXPECT_EQ(r.metrics().breaker, breaker_state::closed);
  EXPECT_EQ(r.run_once(), 1u);
  EXPECT_EQ(r.metrics().breaker, breaker_state::open);
  EXPECT_EQ(r.health().breaker, breaker_state::open);
  EXPECT_EQ(r.run_once(), 0u);  // open: no claim at all
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(count("failure_count > 0 AND state = 'pending'"), 2);  // nothing dead-lettered
}

TEST_P(outbox_relay, rule_5_permanent_failures_do_not_open_the_breaker) {
  write({env("n1"), env("n2"), env("n3")});
  auto o = fast();
  o.breaker.failures = 2;
  relay r(*st_, make_callback_sink([](const claimed_message&, std::stop_token) {
    return sink_outcome::permanent("bad", "bad");
  }),
          o);
  EXPECT_EQ(r.run_once(), 3u);
  EXPECT_EQ(r.metrics().breaker, breaker_state::closed);
}

TEST_P(outbox_relay,
       rule_5_after_the_open_period_one_probe_row_is_claimed_failure_reopens_and_success_closes) {
  write({env("q1"), env("q2"), env("q3"), env("q4")});
  auto o = fast();
  o.max_in_flight = 4;
  o.breaker = {1, std::chrono::milliseconds(1), std::chrono::milliseconds(4)};
  std::atomic<bool> healthy{false};
  relay r(*st_, make_callback_sink([&](const claimed_message&, std::stop_token) {
    return healthy ? sink_outcome::delivered() : sink_outcome::transient("down", "outage");
  }),
          o);
  EXPECT_EQ(r.run_once(), 4u);  // closed: four failures, the first opens the breaker
  EXPECT_EQ(r.metrics().breaker, breaker_state::open);
  EXPECT_EQ(run_once_until_claimed(r), 1u);             // the half-open probe: one row although four are free
  EXPECT_EQ(r.metrics().breaker, breaker_state::open);  // it failed: open again, for twice as long
  healthy = true;
  EXPECT_EQ(run_once_until_claimed(r), 1u);
  EXPECT_EQ(r.metrics().breaker, breaker_state::closed);
  EXPECT_EQ(r.run_once(), 3u);
  EXPECT_EQ(count("state = 'delivered'"), 4);
}

SPOOL_OUTBOX_BOTH_ENGINES(outbox_relay);

}  // namespace
}  // namespace spool::test
