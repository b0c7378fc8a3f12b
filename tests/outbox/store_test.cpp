// The store on both engines (outbox.md §4, §6; scenarios 9–13, 16–21), part
// one: concurrent claims, leases and their transitions, the ordered modes and
// claim arguments. Cancelled calls, read-only connections, large backlogs,
// inspection, replay, pruning and events are in store_operations_test.cpp.
#include <sqlite3.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>

#include "store_fixture.hpp"

namespace spool::test {
namespace {

TEST_P(outbox_store, concurrent_claims_get_each_row_once_with_distinct_per_row_tokens) {
  std::vector<envelope> batch;
  for (int i = 0; i < 7; ++i) batch.push_back(env("r" + std::to_string(i)));
  write(batch);
  auto s = make_store();
  std::mutex m;
  std::vector<claimed_message> all;
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      auto got = s.claim("relay-" + std::to_string(t), 7, 30s);
      std::lock_guard lock(m);
      all.insert(all.end(), got.begin(), got.end());
    });
  }
  for (auto& t : threads) t.join();
  std::set<std::string> ids, tokens;
  for (const auto& c : all) {
    ids.insert(c.message.id);
    tokens.insert(c.ref.token);
    EXPECT_EQ(c.message.claim_count, 1u);
  }
  EXPECT_EQ(all.size(), 7u);
  EXPECT_EQ(ids.size(), 7u);
  EXPECT_EQ(tokens.size(), 7u);
}

TEST_P(outbox_store, four_claimers_taking_50_each_from_200_rows_get_200_distinct_rows) {
  for (int b = 0; b < 2; ++b) {
    std::vector<envelope> batch;
    for (int i = 0; i < 100; ++i) batch.push_back(env("m" + std::to_string(b * 100 + i)));
    write(batch);
  }
  auto s = make_store();
  std::mutex m;
  std::set<std::string> ids;
  std::size_t total = 0;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      auto db = database::open(uri_);
      store mine(db);
      auto got = mine.claim("p" + std::to_string(t), 50, 30s);
      std::lock_guard lock(m);
      total += got.size();
      for (const auto& c : got) ids.insert(c.message.id);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(total, 200u);
  EXPECT_EQ(ids.size(), 200u);
}

TEST_P(outbox_store, transitions_work_once_and_then_report_lease_lost) {
  write({env("a"), env("b"), env("c"), env("d")});
  auto s = make_store();
  auto got = s.claim("relay", 4, 30s);
  ASSERT_EQ(got.size(), 4u);
  s.mark_delivered(got[0].ref);
  EXPECT_OUTBOX_ERROR(s.mark_delivered(got[0].ref), errc::lease_lost, "lease_lost");
  const auto before = got[1].leased_until;
  const auto after = s.extend_lease(got[1].ref, 120s);
  EXPECT_GT(after, before);
  std::string msg = "dial https://bob:hunter2@broker.example:443 failed\x07\r\n";
  msg += std::string(5 * 1024, 'x');
  s.retry(got[1].ref, retry_at::after(1h), {"sink.timeout", msg});
  s.dead_letter(got[2].ref, {"sink_rejected", msg});
  s.release_lease(got[3].ref);
  EXPECT_OUTBOX_ERROR(s.release_lease(got[3].ref), errc::lease_lost, "lease_lost");
  const auto rows = db_->exec(
      "SELECT id, state, failure_count, last_error_code, last_error, claim_count FROM outbox_messages ORDER "
      "BY id");
  EXPECT_EQ(*rows[1][1], "pending");
  EXPECT_EQ(*rows[1][2], "1");
  EXPECT_EQ(*rows[1][3], "sink.timeout");
  EXPECT_EQ(rows[1][4]->find("hunter2"), std::string::npos);
  EXPECT_NE(rows[1][4]->find("https://***@broker"), std::string::npos);
  EXPECT_LE(rows[1][4]->size(), 1024u);
  EXPECT_EQ(*rows[2][1], "dead");
  EXPECT_EQ(*rows[2][2], "1");
  EXPECT_EQ(*rows[3][1], "pending");
  EXPECT_EQ(*rows[3][2], "0");  // a release consumes no failure
  EXPECT_EQ(*rows[3][5], "1");
  EXPECT_OUTBOX_ERROR(s.retry(got[1].ref, retry_at::after(-1s), {"x", "y"}), errc::invalid_argument,
                      "invalid_retry_delay");
  EXPECT_OUTBOX_ERROR(s.retry(got[1].ref, retry_at::after(1s), {"Bad Code", "y"}), errc::invalid_argument,
                      "value_outside_bounds");
  EXPECT_OUTBOX_ERROR(s.mark_delivered({std::string(256, 'i'), "t"}), errc::invalid_argument,
                      "value_outside_bounds");
}

TEST_P(outbox_store, an_expired_lease_cannot_mutate_and_leaves_the_row_byte_identical) {
  write({env("x")});
  auto s = make_store();
  auto got = s.claim("relay", 1, 30s);
  ASSERT_EQ(got.size(), 1u);
  expire_lease("x");
  const auto snap = snapshot("x");
  EXPECT_OUTBOX_ERROR(s.mark_delivered(got[0].ref), errc::lease_lost, "lease_lost");
  EXPECT_OUTBOX_ERROR(s.extend_lease(got[0].ref, 10s), errc::lease_lost, "lease_lost");
  EXPECT_OUTBOX_ERROR(s.retry(got[0].ref, retry_at::after(1s), {"e", "m"}), errc::lease_lost, "lease_lost");
  EXPECT_OUTBOX_ERROR(s.dead_letter(got[0].ref, {"e", "m"}), errc::lease_lost, "lease_lost");
  EXPECT_OUTBOX_ERROR(s.release_lease(got[0].ref), errc::lease_lost, "lease_lost");
  EXPECT_OUTBOX_ERROR(s.mark_delivered({"x", "00000000-0000-4000-8000-000000000000"}), errc::lease_lost,
                      "lease_lost");
  EXPECT_EQ(snapshot("x"), snap);
}

TEST_P(outbox_store, an_expired_lease_is_reclaimed_with_a_new_token_and_the_old_token_is_lease_lost) {
  write({env("x")});
  auto s = make_store();
  const auto first = s.claim("relay-1", 1, 30s).at(0);
  EXPECT_TRUE(s.claim("relay-2", 1, 30s).empty());  // still leased
  expire_lease("x");
  const auto second = s.claim("relay-2", 1, 30s).at(0);
  EXPECT_NE(second.ref.token, first.ref.token);
  EXPECT_EQ(second.message.claim_count, 2u);
  EXPECT_EQ(second.owner, "relay-2");
  EXPECT_OUTBOX_ERROR(s.mark_delivered(first.ref), errc::lease_lost, "lease_lost");
  EXPECT_OUTBOX_ERROR(s.extend_lease(first.ref, 10s), errc::lease_lost, "lease_lost");
  s.mark_delivered(second.ref);
}

TEST_P(outbox_store, mark_delivered_batch_delivers_every_held_lease_and_leaves_a_lost_one_unchanged) {
  write({env("a"), env("b"), env("c"), env("d")});
  std::vector<event> events;
  std::mutex m;
  auto s = make_store({.observer = [&](const event& e) {
    std::lock_guard lock(m);
    events.push_back(e);
  }});
  auto got = s.claim("relay", 4, 30s);
  ASSERT_EQ(ids_of(got), (std::vector<std::string>{"a", "b", "c", "d"}));
  expire_lease("c");  // c's lease is lost: its row must stay byte-identical
  const auto snap = snapshot("c");
  std::vector<lease_ref> refs;
  for (const auto& g : got) refs.push_back(g.ref);
  EXPECT_EQ(s.mark_delivered_batch(refs), (std::vector<bool>{true, true, false, true}));
  EXPECT_EQ(snapshot("c"), snap);
  const auto rows = db_->exec("SELECT id, state, lease_token FROM outbox_messages ORDER BY id");
  ASSERT_EQ(rows.size(), 4u);
  for (const std::size_t i : {0u, 1u, 3u}) {
    EXPECT_EQ(*rows[i][1], "delivered") << *rows[i][0];
    EXPECT_FALSE(rows[i][2].has_value()) << *rows[i][0];
  }
  EXPECT_EQ(*rows[2][1], "leased");
  // Delivered once: the same refs again are all lost, and change nothing.
  EXPECT_EQ(s.mark_delivered_batch(refs), (std::vector<bool>{false, false, false, false}));
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(to_string(events[1].op), "deliver");
  EXPECT_EQ(events[1].count, 3u);
  EXPECT_EQ(events[2].count, 0u);
  // The batch is checked before any database access.
  EXPECT_OUTBOX_ERROR((void)s.mark_delivered_batch({}), errc::invalid_argument, "value_outside_bounds");
  EXPECT_OUTBOX_ERROR((void)s.mark_delivered_batch(std::vector<lease_ref>(1001, refs[0])),
                      errc::invalid_argument, "value_outside_bounds");
  EXPECT_OUTBOX_ERROR((void)s.mark_delivered_batch({refs[0], refs[1], refs[0]}), errc::invalid_argument,
                      "duplicate_ref");
  EXPECT_OUTBOX_ERROR((void)s.mark_delivered_batch({{std::string(256, 'i'), "t"}}), errc::invalid_argument,
                      "value_outside_bounds");
}

TEST_P(outbox_store, ordered_modes_claim_only_the_head_of_each_key_or_topic) {
  write({env("a1", "t", "a"), env("a2", "t", "a"), env("b1", "t", "b")});
  auto s = make_store();
  auto got = s.claim("relay", 10, 30s, serialization::by_ordering_key);
  EXPECT_EQ(ids_of(got), (std::vector<std::string>{"a1", "b1"}));
  EXPECT_TRUE(s.claim("relay", 10, 30s, serialization::by_ordering_key).empty());  // a leased head holds a2
  // A head retried into the future holds a2 back; a dead one does not.
  s.retry(got[0].ref, retry_at::after(1h), {"later", "m"});
  EXPECT_TRUE(s.claim("relay", 10, 30s, serialization::by_ordering_key).empty());
  db_->exec("UPDATE outbox_messages SET available_at = " +
            std::string(is_pg() ? "clock_timestamp() - interval '1 second'" : "0") + " WHERE id = 'a1'");
  auto a1 = s.claim("relay", 10, 30s, serialization::by_ordering_key);
  ASSERT_EQ(ids_of(a1), (std::vector<std::string>{"a1"}));
  s.dead_letter(a1[0].ref, {"poison", "m"});
  auto a2 = s.claim("relay", 10, 30s, serialization::by_ordering_key);
  EXPECT_EQ(ids_of(a2), (std::vector<std::string>{"a2"}));
  // Mode none ignores order entirely; by_topic scopes by topic.
  write({env("t1", "topic-x"), env("t2", "topic-x"), env("u1", "topic-y")});
  EXPECT_EQ(ids_of(s.claim("relay", 10, 30s, serialization::by_topic)),
            (std::vector<std::string>{"t1", "u1"}));
}

TEST_P(outbox_store, a_delivered_head_releases_its_successor_and_two_one_row_claims_lease_only_the_head) {
  write({env("k1", "t", "k"), env("k2", "t", "k"), env("k3", "t", "k")});
  auto s = make_store();
  std::vector<claimed_message> got[2];
  std::thread t1([&] { got[0] = s.claim("r1", 1, 30s, serialization::by_ordering_key); });
  std::thread t2([&] { got[1] = s.claim("r2", 1, 30s, serialization::by_ordering_key); });
  t1.join();
  t2.join();
  EXPECT_EQ(got[0].size() + got[1].size(), 1u);
  const auto& head = got[0].empty() ? got[1][0] : got[0][0];
  EXPECT_EQ(head.message.id, "k1");
  s.mark_delivered(head.ref);
  EXPECT_EQ(ids_of(s.claim("relay", 10, 30s, serialization::by_ordering_key)),
            (std::vector<std::string>{"k2"}));
  // In mode none the rest goes at once.
  EXPECT_EQ(ids_of(s.claim("relay", 10, 30s, serialization::none)), (std::vector<std::string>{"k3"}));
}

TEST_P(outbox_store, mark_delivered_and_claim_next_drains_a_key_in_order_for_the_same_owner) {
  write({env("k1", "t", "k"), env("k2", "t", "k"), env("k3", "t", "k"), env("o1", "t", "other")});
  auto s = make_store();
  auto got = s.claim("relay", 10, 30s, serialization::by_ordering_key);
  ASSERT_EQ(ids_of(got), (std::vector<std::string>{"k1", "o1"}));
  EXPECT_OUTBOX_ERROR((void)s.mark_delivered_and_claim_next(got[0].ref, 0s), errc::invalid_argument,
                      "invalid_lease_duration");
  auto next = s.mark_delivered_and_claim_next(got[0].ref, 30s);
  EXPECT_EQ(state_of("k1"), "delivered");
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->message.id, "k2");
  EXPECT_EQ(next->owner, "relay");
  EXPECT_EQ(next->message.claim_count, 1u);
  EXPECT_NE(next->ref.token, got[0].ref.token);
  EXPECT_EQ(state_of("k2"), "leased");
  EXPECT_EQ(state_of("k3"), "pending");  // one row per scope
  // The delivered lease is gone: lease_lost, nothing changed, nothing claimed.
  const auto k3_before = snapshot("k3");
  EXPECT_OUTBOX_ERROR((void)s.mark_delivered_and_claim_next(got[0].ref, 30s), errc::lease_lost, "lease_lost");
  EXPECT_EQ(snapshot("k3"), k3_before);
  // An expired lease cannot deliver or claim either.
  expire_lease("k2");
  const auto k2_before = snapshot("k2");
  EXPECT_OUTBOX_ERROR((void)s.mark_delivered_and_claim_next(next->ref, 30s), errc::lease_lost, "lease_lost");
  EXPECT_EQ(snapshot("k2"), k2_before);
  EXPECT_EQ(snapshot("k3"), k3_before);
  // Reclaim k2 (expired), then the chain runs to the end of the key.
  auto re = s.claim("relay-2", 10, 30s, serialization::by_ordering_key);
  ASSERT_EQ(ids_of(re), (std::vector<std::string>{"k2"}));
  auto k3 = s.mark_delivered_and_claim_next(re[0].ref, 30s);
  ASSERT_TRUE(k3.has_value());
  EXPECT_EQ(k3->message.id, "k3");
  EXPECT_EQ(k3->owner, "relay-2");
  EXPECT_FALSE(s.mark_delivered_and_claim_next(k3->ref, 30s).has_value());
  EXPECT_EQ(count("state = 'delivered'"), 3);
  EXPECT_EQ(state_of("o1"), "leased");  // another key is never taken
}

TEST_P(outbox_store, mark_delivered_and_claim_next_respects_scopes_modes_and_held_heads) {
  auto s = make_store();
  // An empty ordering key has no scope in by_ordering_key; mode none has none at all.
  write({env("e1"), env("e2")});
  auto e = s.claim("relay", 1, 30s, serialization::by_ordering_key);
  ASSERT_EQ(ids_of(e), (std::vector<std::string>{"e1"}));
  EXPECT_FALSE(s.mark_delivered_and_claim_next(e[0].ref, 30s).has_value());
  EXPECT_EQ(state_of("e1"), "delivered");
  EXPECT_EQ(state_of("e2"), "pending");
  auto e2 = s.claim("relay", 1, 30s, serialization::none);
  ASSERT_EQ(ids_of(e2), (std::vector<std::string>{"e2"}));
  write({env("n1", "t", "n"), env("n2", "t", "n")});
  auto n1 = s.claim("relay", 1, 30s, serialization::by_ordering_key);
  ASSERT_EQ(ids_of(n1), (std::vector<std::string>{"n1"}));
  EXPECT_FALSE(s.mark_delivered_and_claim_next(n1[0].ref, 30s, serialization::none).has_value());
  EXPECT_EQ(state_of("n2"), "pending");
  s.mark_delivered(e2[0].ref);
  // by_topic scopes by topic.
  write({env("t1", "topic-x"), env("t2", "topic-x"), env("u1", "topic-y")});
  auto t = s.claim("relay", 10, 30s, serialization::by_topic);
  ASSERT_EQ(ids_of(t), (std::vector<std::string>{"n2", "t1", "u1"}));
  auto t2 = s.mark_delivered_and_claim_next(t[1].ref, 30s, serialization::by_topic);
  ASSERT_TRUE(t2.has_value());
  EXPECT_EQ(t2->message.id, "t2");
  // A successor leased by someone else (unexpired) is not taken; nor is one
  // retried into the future.
  write({env("j1", "t", "j"), env("j2", "t", "j"), env("h1", "t", "h"), env("h2", "t", "h")});
  auto j = s.claim("relay", 10, 30s, serialization::by_ordering_key);
  ASSERT_EQ(ids_of(j), (std::vector<std::string>{"j1", "h1"}));
  auto other = s.claim("other", 10, 30s, serialization::none);
  std::vector<std::string> taken = ids_of(other);
  ASSERT_NE(std::find(taken.begin(), taken.end(), "j2"), taken.end());
  for (const auto& c : other) {
    if (c.message.id == "h2") s.retry(c.ref, retry_at::after(1h), {"later", "m"});
  }
  EXPECT_FALSE(s.mark_delivered_and_claim_next(j[0].ref, 30s).has_value());
  EXPECT_FALSE(s.mark_delivered_and_claim_next(j[1].ref, 30s).has_value());
  EXPECT_EQ(state_of("j1"), "delivered");
  EXPECT_EQ(state_of("h1"), "delivered");
  EXPECT_EQ(state_of("h2"), "pending");
}

TEST_P(outbox_store, claim_arguments_are_checked_in_order) {
  auto s = make_store();
  EXPECT_OUTBOX_ERROR((void)s.claim("", 0, 0s), errc::invalid_argument, "claim_owner_required");
  EXPECT_OUTBOX_ERROR((void)s.claim(std::string(256, 'o'), 0, 0s), errc::invalid_argument,
                      "value_outside_bounds");
  EXPECT_OUTBOX_ERROR((void)s.claim("o", 0, 0s), errc::invalid_argument, "invalid_claim_limit");
  EXPECT_OUTBOX_ERROR((void)s.claim("o", 101, 1s), errc::invalid_argument, "invalid_claim_limit");
  EXPECT_OUTBOX_ERROR((void)s.claim("o", 1, 0s), errc::invalid_argument, "invalid_lease_duration");
  EXPECT_OUTBOX_ERROR((void)s.claim("o", 1, 6min), errc::invalid_argument, "invalid_lease_duration");
  EXPECT_OUTBOX_ERROR((void)s.claim("o", 1, 1s, static_cast<serialization>(7)), errc::invalid_argument,
                      "invalid_serialization");
  EXPECT_OUTBOX_ERROR((void)make_store({.max_claim_batch = 0}), errc::invalid_argument,
                      "invalid_claim_limit");
  EXPECT_OUTBOX_ERROR((void)make_store({.max_error_bytes = 10}), errc::invalid_argument,
                      "value_outside_bounds");
  EXPECT_OUTBOX_ERROR((void)make_store({.archive_deadline = 100ms}), errc::invalid_argument,
                      "invalid_config");
}

SPOOL_OUTBOX_BOTH_ENGINES(outbox_store);

}  // namespace
}  // namespace spool::test
