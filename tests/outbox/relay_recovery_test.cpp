// The relay on both engines, continued from relay_test.cpp: rules 6–11
// (store errors, in-doubt deliveries, wake-ups, ordering, stopping and
// contained failures), the metrics and run's lifecycle. The suite is
// instantiated in relay_test.cpp.
#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <thread>

#include "relay_fixture.hpp"

namespace spool::test {
namespace {

using namespace spool::outbox;

// ---- rule 6 ----

TEST_P(outbox_relay, rule_6_store_errors_back_off_and_never_end_run) {
  db_->exec("ALTER TABLE outbox_messages RENAME TO outbox_hidden");
  relay r(*st_, deliver_all(), fast());
  r.start();
  ASSERT_TRUE(eventually([&] { return r.metrics().store_errors >= 2; }));
  EXPECT_FALSE(r.health().store_ok);
  EXPECT_TRUE(r.health().running);
  db_->exec("ALTER TABLE outbox_hidden RENAME TO outbox_messages");
  write({env("s1")});
  ASSERT_TRUE(eventually([&] { return state_of("s1") == "delivered"; }));
  EXPECT_TRUE(r.health().store_ok);
  r.stop();
  EXPECT_FALSE(r.health().running);
}

TEST_P(outbox_relay, rule_6_a_lease_lost_at_the_transition_is_absorbed_and_the_relay_keeps_running) {
  // Scenario 24: the relay stalls past its lease; another reclaims and delivers the row.
  write({env("x1")});
  store other(*db_);
  relay r(*st_, make_callback_sink([&](const claimed_message& m, std::stop_token) {
    if (m.message.id == "x1") {
      expire_lease("x1");
      auto stolen = other.claim("other", 1, std::chrono::minutes(1));
      EXPECT_EQ(stolen.size(), 1u);
      if (!stolen.empty()) other.mark_delivered(stolen[0].ref);
    }
    return sink_outcome::delivered();
  }),
          fast());
  EXPECT_EQ(r.run_once(), 1u);
  EXPECT_EQ(state_of("x1"), "delivered");
  EXPECT_EQ(r.metrics().lease_lost, 1u);
  EXPECT_EQ(r.metrics().delivered, 0u);
  write({env("x2")});
  EXPECT_EQ(r.run_once(), 1u);
  EXPECT_EQ(state_of("x2"), "delivered");
}

// ---- rule 7 ----

// A sink that records its delivery in the fenced transition (like the queue
// sink) and makes the first record_delivered report in_doubt, as a connection
// lost during COMMIT does: after committing (commit_first) or without.
class in_doubt_sink : public sink {
 public:
  explicit in_doubt_sink(bool commit_first) : commit_first_(commit_first) {}
  sink_outcome publish(const claimed_message&, std::stop_token) override {
    ++publishes;
    return sink_outcome::delivered();
  }
  [[nodiscard]] bool records_delivery() const noexcept override { return true; }
  void record_delivered(store& s, const claimed_message& m, const call_options& c) override {
    if (++records == 1) {
      if (commit_first_) s.mark_delivered(m.ref, c);
      throw error(errc::in_doubt, "connection lost during COMMIT (simulated)");
    }
    s.mark_delivered(m.ref, c);
  }
  std::atomic<int> publishes{0}, records{0};

 private:
  bool commit_first_;
};

TEST_P(outbox_relay,
       rule_7_an_in_doubt_delivery_that_committed_is_recorded_by_re_reading_the_row_not_repeated) {
  write({env("q1")});
  auto s = std::make_shared<in_doubt_sink>(true);
  relay r(*st_, s, fast());
  EXPECT_EQ(r.run_once(), 1u);
  EXPECT_EQ(state_of("q1"), "delivered");
  EXPECT_EQ(s->records.load(), 1) << "the committed transition must not be repeated";
  EXPECT_EQ(s->publishes.load(), 1);
  const auto m = r.metrics();
  EXPECT_EQ(m.delivered, 1u);
  EXPECT_EQ(m.lease_lost, 0u);
  EXPECT_EQ(m.delivery_unrecorded, 0u);
}

TEST_P(outbox_relay,
       rule_7_an_in_doubt_delivery_that_did_not_commit_finds_the_lease_still_held_and_is_repeated) {
  write({env("q2")});
  auto s = std::make_shared<in_doubt_sink>(false);
  relay r(*st_, s, fast());
  EXPECT_EQ(r.run_once(), 1u);
  EXPECT_EQ(state_of("q2"), "delivered");
  EXPECT_EQ(s->records.load(), 2) << "the row still held by the lease: the transition is repeated once";
  EXPECT_EQ(s->publishes.load(), 1) << "repeating the transition never publishes again";
  EXPECT_EQ(r.metrics().delivered, 1u);
  EXPECT_EQ(r.metrics().delivery_unrecorded, 0u);
  EXPECT_EQ(column("q2", "claim_count"), "1");
}

TEST_P(outbox_relay, check_lease_tells_held_replaced_delivered_pending_dead_and_missing_apart) {
  write({env("k1"), env("k2"), env("k3")});
  auto claimed = st_->claim("checker", 3, std::chrono::minutes(1));
  ASSERT_EQ(claimed.size(), 3u);
  std::map<std::string, lease_ref> ref;
  for (const auto& c : claimed) ref[c.message.id] = c.ref;
  EXPECT_EQ(st_->check_lease(ref["k1"]), lease_fate::held);
  EXPECT_EQ(st_->check_lease({"k1", "00000000-0000-4000-8000-000000000000"}), lease_fate::replaced);
  st_->mark_delivered(ref["k1"]);
  EXPECT_EQ(st_->check_lease(ref["k1"]), lease_fate::delivered);
  st_->release_lease(ref["k2"]);
  EXPECT_EQ(st_->check_lease(ref["k2"]), lease_fate::pending);
  st_->dead_letter(ref["k3"], {"gave_up", "test"});
  EXPECT_EQ(st_->check_lease(ref["k3"]), lease_fate::dead);
  EXPECT_EQ(st_->check_lease({"no-such-row", "00000000-0000-4000-8000-000000000000"}), lease_fate::missing);
}

TEST_P(outbox_relay,
       rule_7_transitions_run_under_their_own_deadline_so_a_success_racing_the_stop_is_recorded) {
  write({env("d1")});
  std::atomic<bool> entered{false};
  relay r(*st_, make_callback_sink([&](const claimed_message&, std::stop_token stop) {
    entered = true;
    gate never;
    never.wait(stop);                  // stop requested …
    return sink_outcome::delivered();  // … but it had been published
  }),
          fast());
  r.start();
  ASSERT_TRUE(eventually([&] { return entered.load(); }));
  r.stop();
  EXPECT_EQ(state_of("d1"), "delivered");
  EXPECT_EQ(r.metrics().delivered, 1u);
}

// ---- rule 8 ----

TEST_P(outbox_relay, rule_8_a_claim_that_got_all_it_asked_for_is_followed_by_another_at_once) {
  std::vector<envelope> rows;
  for (int i = 0; i < 7; ++i) rows.push_back(env("w" + std::to_string(i)));
  write(rows);
  auto o = fast();
  o.max_in_flight = 2;
  o.poll_interval = std::chrono::minutes(10);  // a poll wait would outlast the test
  relay r(*st_, deliver_all(), o);
  r.start();
  EXPECT_TRUE(eventually([&] { return count("state = 'delivered'") == 7; }))
      << "claims " << r.metrics().claims << ", claimed " << r.metrics().claimed << ", delivered "
      << r.metrics().delivered << ", store errors " << r.metrics().store_errors << ", pending "
      << count("state = 'pending'") << ", rows per claim " << ::testing::PrintToString(claim_counts())
      << ", rows per delivery record " << ::testing::PrintToString(deliver_counts());
  r.stop();
}

TEST_P(outbox_relay, rule_8_without_notify_the_relay_polls_and_picks_up_rows_written_later) {
  relay r(*st_, deliver_all(), fast());
  r.start();
  ASSERT_TRUE(eventually([&] { return r.metrics().claims >= 2; }));
  write({env("late")});
  EXPECT_TRUE(eventually([&] { return state_of("late") == "delivered"; }));
  r.stop();
}

TEST_P(outbox_relay, rule_8_with_notify_a_committed_row_wakes_an_idle_relay_long_before_its_poll_interval) {
  auto o = fast();
  o.notify = true;
  o.poll_interval = std::chrono::minutes(10);  // only a wake-up can deliver within the test
  relay r(*st_, deliver_all(), o);
  r.start();
  // PostgreSQL: the listener's first "look now" shows it is listening.
  ASSERT_TRUE(eventually([&] { return r.metrics().claims >= 1 && (!is_pg() || r.metrics().wakeups >= 1); }));
  writer_options wo;
  wo.notify = true;
  for (int i = 0; i < 3; ++i) {
    const auto id = "n" + std::to_string(i);
    write({env(id)}, wo);
    EXPECT_TRUE(eventually([&] { return state_of(id) == "delivered"; })) << id;
  }
  EXPECT_GE(r.metrics().wakeups, 3u);
  r.stop();
}

TEST_P(outbox_relay, the_stores_change_subscription_hears_commits_and_stops_when_dropped) {
  std::atomic<int> heard{0};
  std::atomic<bool> listening{!is_pg()};
  auto sub = st_->subscribe_changes([&](bool notified) {
    if (notified) {
      ++heard;
    } else {
      listening = true;  // PostgreSQL: the listener's "look now"
    }
  });
  ASSERT_TRUE(eventually([&] { return listening.load(); }));
  writer_options wo;
  wo.notify = true;
  write({env("s1")}, wo);
  EXPECT_TRUE(eventually([&] { return heard >= 1; }));
  sub.reset();
  const int before = heard;
  write({env("s2")}, wo);
  EXPECT_EQ(heard, before);  // dropped: never called again
}

// ---- rule 9 ----

// Unordered deliveries are recorded together (mark_delivered_batch): every
// row delivered once, every delivery recorded once, whatever the grouping.
TEST_P(outbox_relay, unordered_deliveries_are_recorded_in_batches_each_exactly_once) {
  std::vector<envelope> rows;
  for (int i = 0; i < 120; ++i) rows.push_back(env("b" + std::to_string(1000 + i)));
  write({rows.begin(), rows.begin() + 60});  // the writer's max_batch_size is 100
  write({rows.begin() + 60, rows.end()});
  auto o = fast();
  o.max_in_flight = 8;
  std::mutex mu;
  std::multiset<std::string> seen;
  relay r(*st_, make_callback_sink([&](const claimed_message& m, std::stop_token) {
    std::lock_guard lock(mu);
    seen.insert(m.message.id);
    return sink_outcome::delivered();
  }),
          o);
  r.start();
  ASSERT_TRUE(eventually([&] { return count("state = 'delivered'") == 120; }));
  r.stop();
  EXPECT_EQ(seen.size(), 120u);
  for (const auto& row : rows) EXPECT_EQ(seen.count(row.id), 1u) << row.id;
  const auto counts = deliver_counts();
  EXPECT_EQ(std::accumulate(counts.begin(), counts.end(), std::size_t{0}), 120u);
  EXPECT_LE(counts.size(), 120u);
  const auto m = r.metrics();
  EXPECT_EQ(m.delivered, 120u);
  EXPECT_EQ(m.lease_lost, 0u);
  EXPECT_EQ(m.delivery_unrecorded, 0u);
  EXPECT_EQ(m.in_flight, 0);
}

TEST_P(outbox_relay, rule_9_a_hot_key_drains_in_order_without_waiting_a_poll_interval) {
  for (auto mode : {serialization::by_ordering_key, serialization::by_topic}) {
    SCOPED_TRACE(static_cast<int>(mode));
    const std::string p = mode == serialization::by_topic ? "T" : "K";
    std::vector<envelope> rows;
    for (int i = 0; i < 30; ++i) rows.push_back(env(p + "hot" + std::to_string(100 + i), p + "topic", "hot"));
    rows.push_back(env(p + "cold", p + "other", "cold"));
    write(rows);
    auto o = fast();
    o.mode = mode;
    o.poll_interval = std::chrono::minutes(10);
    std::mutex mu;
    std::vector<std::string> order;
    relay r(*st_, make_callback_sink([&](const claimed_message& m, std::stop_token) {
      std::lock_guard lock(mu);
      order.push_back(m.message.id);
      return sink_outcome::delivered();
    }),
            o);
    r.start();
    EXPECT_TRUE(eventually([&] { return count("state = 'delivered' AND id LIKE '" + p + "%'") == 31; }));
    r.stop();
    std::vector<std::string> hot;
    for (const auto& id : order) {
      if (id.rfind(p + "hot", 0) == 0) hot.push_back(id);
    }
    auto sorted = hot;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(hot, sorted);
    EXPECT_EQ(hot.size(), 30u);
  }
}

// ---- rule 10 ----

TEST_P(outbox_relay, rule_10_stopping_while_the_sink_blocks_releases_unpublished_rows_without_a_failure) {
  write({env("g1"), env("g2"), env("g3")});
  std::atomic<int> entered{0};
  relay r(*st_, make_callback_sink([&](const claimed_message&, std::stop_token stop) {
    ++entered;
    gate never;
    never.wait(stop);
    return sink_outcome::transient("stopped", "interrupted by shutdown");
  }),
          fast());
  r.start();
  ASSERT_TRUE(eventually([&] { return entered == 3; }));
  r.stop();
  for (const char* id : {"g1", "g2", "g3"}) {
    EXPECT_EQ(state_of(id), "pending") << id;
    EXPECT_EQ(column(id, "failure_count"), "0") << id;
    EXPECT_EQ(column(id, "claim_count"), "1") << id;
  }
  EXPECT_EQ(r.metrics().released, 3u);
  EXPECT_EQ(r.metrics().retried, 0u);
}

TEST_P(outbox_relay,
       rule_10_a_sink_outliving_shutdown_grace_has_its_row_released_and_its_late_outcome_ignored) {
  write({env("z1")});
  auto o = fast();
  o.shutdown_grace = std::chrono::milliseconds(0);
  std::atomic<bool> entered{false};
  gate late;
  relay r(*st_, make_callback_sink([&](const claimed_message&, std::stop_token) {
    entered = true;
    late.wait();  // ignores its stop token
    return sink_outcome::delivered();
  }),
          o);
  r.start();
  ASSERT_TRUE(eventually([&] { return entered.load(); }));
  std::thread opener([&] {
    EXPECT_TRUE(eventually([&] { return state_of("z1") == "pending"; }));
    late.open();
  });
  r.stop();
  opener.join();
  EXPECT_EQ(state_of("z1"), "pending");
  EXPECT_EQ(column("z1", "failure_count"), "0");
  EXPECT_EQ(r.metrics().released, 1u);
  EXPECT_EQ(r.metrics().delivered, 0u);
}

// ---- rule 11 ----

TEST_P(outbox_relay, rule_11_a_throwing_sink_is_contained_and_its_row_durably_retried) {
  write({env("e1")});
  relay r(*st_, make_callback_sink([](const claimed_message&, std::stop_token) -> sink_outcome {
    throw std::runtime_error("boom");
  }),
          fast());
  EXPECT_EQ(r.run_once(), 1u);
  EXPECT_EQ(state_of("e1"), "pending");
  EXPECT_EQ(column("e1", "failure_count"), "1");
  EXPECT_EQ(column("e1", "last_error_code"), "sink_threw");
}

TEST_P(outbox_relay, rule_11_a_throwing_or_invalid_classifier_makes_the_failure_transient) {
  write({env("c1")});
  auto o = fast();
  o.classifier = [](const claimed_message&, const sink_outcome&) -> outcome_class {
    throw std::logic_error("x");
  };
  relay r(*st_, deliver_all(), o);
  EXPECT_EQ(r.run_once(), 1u);
  EXPECT_EQ(state_of("c1"), "pending");
  EXPECT_EQ(column("c1", "last_error_code"), "classifier_threw");

  auto o2 = fast();
  o2.classifier = [](const claimed_message&, const sink_outcome&) { return static_cast<outcome_class>(42); };
  relay r2(*st_, deliver_all(), o2);
  run_once_until_claimed(r2);
  EXPECT_EQ(state_of("c1"), "pending");
  EXPECT_EQ(column("c1", "last_error_code"), "invalid_error_class");
  EXPECT_EQ(column("c1", "failure_count"), "2");
}

TEST_P(outbox_relay, rule_11_a_throwing_backoff_retries_at_once_and_an_invalid_one_is_clamped) {
  write({env("bo")});
  auto o = fast();
  o.backoff = {std::chrono::milliseconds(1), std::chrono::milliseconds(5)};
  o.backoff_fn = [](std::uint32_t n) -> std::chrono::milliseconds {
    if (n == 1) throw std::runtime_error("x");
    return std::chrono::milliseconds(-5);
  };
  relay r(*st_, make_callback_sink([](const claimed_message&, std::stop_token) {
    return sink_outcome::transient("down", "down");
  }),
          o);
  EXPECT_EQ(r.run_once(), 1u);
  EXPECT_EQ(column("bo", "failure_count"), "1");
  run_once_until_claimed(r);  // delay 0: claimable again
  EXPECT_EQ(column("bo", "failure_count"), "2");
  run_once_until_claimed(r);  // clamped to 0
  EXPECT_EQ(column("bo", "failure_count"), "3");
  EXPECT_EQ(state_of("bo"), "pending");
}

// ---- metrics and health ----

TEST_P(outbox_relay, metrics_count_outcomes_and_sink_latency_and_on_metrics_gets_a_final_snapshot) {
  write({env("m1"), env("m2"), env("m3")});
  auto o = fast();
  std::mutex mu;
  std::optional<relay_metrics> last;
  o.on_metrics = [&](const relay_metrics& m) {
    std::lock_guard lock(mu);
    last = m;
  };
  relay r(*st_, make_callback_sink([](const claimed_message& m, std::stop_token) {
    return m.message.id == "m3" ? sink_outcome::permanent("bad", "bad") : sink_outcome::delivered();
  }),
          o);
  r.start();
  ASSERT_TRUE(eventually([&] { return count("state IN ('delivered', 'dead')") == 3; }));
  r.stop();
  std::lock_guard lock(mu);
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->claimed, 3u);
  EXPECT_EQ(last->delivered, 2u);
  EXPECT_EQ(last->dead_lettered, 1u);
  EXPECT_EQ(last->in_flight, 0);
  EXPECT_EQ(last->sink_latency.count, 3u);
  EXPECT_EQ(last->breaker, breaker_state::closed);
  EXPECT_TRUE(r.health().store_ok);
  EXPECT_FALSE(r.health().running);
}

TEST_P(outbox_relay, run_returns_only_on_stop_and_refuses_a_second_concurrent_run) {
  relay r(*st_, deliver_all(), fast());
  std::stop_source stop;
  std::thread t([&] { r.run(stop.get_token()); });
  ASSERT_TRUE(eventually([&] { return r.health().running; }));
  EXPECT_OUTBOX_ERROR(r.run_once(), errc::invalid_state, "already_running");
  stop.request_stop();
  t.join();
  EXPECT_FALSE(r.health().running);
  write({env("after")});
  EXPECT_EQ(r.run_once(), 1u);
}

}  // namespace
}  // namespace spool::test
