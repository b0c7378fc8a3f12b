// The store on both engines (outbox.md §4, §6; scenarios 9–13, 16–21).
#include "outbox/store.hpp"

#include <sqlite3.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>

#include "outbox_fixture.hpp"

namespace spool::test {
namespace {

using namespace spool::outbox;

class outbox_store : public outbox_conformance {
 protected:
  // Every column of every row of the outbox table and of its replay audit, as
  // text: a call that "changes nothing" leaves this byte-identical.
  std::string table_image() {
    std::string out;
    for (const char* sql : {"SELECT * FROM outbox_messages ORDER BY seq",
                            "SELECT * FROM outbox_messages_replay_audit ORDER BY replay_id, message_id"}) {
      for (const auto& r : db_->exec(sql)) {
        for (const auto& cell : r) out += cell ? "'" + *cell + "' " : "NULL ";
        out += '\n';
      }
      out += "--\n";
    }
    return out;
  }
};

std::vector<std::string> ids_of(const std::vector<claimed_message>& c) {
  std::vector<std::string> out;
  for (const auto& m : c) out.push_back(m.message.id);
  return out;
}

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

// Scenario 16. A call whose stop was requested, or whose deadline passed,
// before it started is refused before any statement is sent. For every store
// operation that takes call_options (the writer's insert and insert_batch take
// none: they run in the caller's transaction), both refusals are unavailable
// with their reason and leave the outbox and its audit byte-identical, with no
// callback or archiver run; the same call without them then succeeds.
TEST_P(outbox_store, a_pre_cancelled_call_of_each_store_operation_changes_nothing_and_then_succeeds) {
  write({env("k1", "t", "k"), env("k2", "t", "k"), env("extend"), env("extend_many"), env("deliver"),
         env("deliver_fn"), env("retry"), env("dead"), env("dead_too"), env("dead_three"), env("release")});
  auto s = make_store();
  std::stop_source stopped;
  stopped.request_stop();
  const std::vector<std::pair<call_options, std::string>> refusals{
      {{std::nullopt, stopped.get_token()}, "cancelled"},
      {{std::chrono::steady_clock::now() - 1s, {}}, "deadline_exceeded"}};
  auto refused = [&](const std::function<void(const call_options&)>& call) {
    for (const auto& [options, reason] : refusals) {
      const std::string before = table_image();
      EXPECT_OUTBOX_ERROR(call(options), errc::unavailable, reason);
      EXPECT_EQ(table_image(), before) << "a refused call (" << reason << ") changed the outbox";
    }
  };

  refused(
      [&](const call_options& o) { (void)s.claim("relay", 100, 30s, serialization::by_ordering_key, o); });
  const auto got = s.claim("relay", 100, 30s, serialization::by_ordering_key);
  ASSERT_EQ(got.size(), 10u);  // all but k2, held back by its head k1
  std::map<std::string, claimed_message> claimed;
  for (const auto& c : got) claimed[c.message.id] = c;
  auto ref = [&](const std::string& id) { return claimed.at(id).ref; };

  refused([&](const call_options& o) { (void)s.extend_lease(ref("extend"), 120s, o); });
  EXPECT_GT(s.extend_lease(ref("extend"), 120s), claimed.at("extend").leased_until);

  refused([&](const call_options& o) {
    (void)s.extend_leases({ref("extend_many"), ref("extend")}, 120s, o);
  });
  const auto extended = s.extend_leases({ref("extend_many")}, 120s);
  ASSERT_EQ(extended.size(), 1u);
  ASSERT_TRUE(extended[0].has_value());
  EXPECT_GT(*extended[0], claimed.at("extend_many").leased_until);

  refused([&](const call_options& o) { s.mark_delivered(ref("deliver"), o); });
  s.mark_delivered(ref("deliver"));
  EXPECT_EQ(state_of("deliver"), "delivered");

  int fn_runs = 0;
  auto deliver_with_fn = [&](const call_options& o) {
    s.mark_delivered(ref("deliver_fn"), std::function<void(spool::tx&)>([&](spool::tx&) { ++fn_runs; }), o);
  };
  refused(deliver_with_fn);
  EXPECT_EQ(fn_runs, 0);
  deliver_with_fn({});
  EXPECT_EQ(fn_runs, 1);
  EXPECT_EQ(state_of("deliver_fn"), "delivered");

  refused([&](const call_options& o) {
    (void)s.mark_delivered_and_claim_next(ref("k1"), 30s, serialization::by_ordering_key, o);
  });
  const auto next = s.mark_delivered_and_claim_next(ref("k1"), 30s);
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->message.id, "k2");
  EXPECT_EQ(state_of("k1"), "delivered");

  refused([&](const call_options& o) {
    s.retry(ref("retry"), retry_at::after(1h), {"sink.timeout", "later"}, o);
  });
  s.retry(ref("retry"), retry_at::after(1h), {"sink.timeout", "later"});
  EXPECT_EQ(state_of("retry"), "pending");
  EXPECT_EQ(count("id = 'retry' AND failure_count = 1"), 1);

  refused([&](const call_options& o) { s.dead_letter(ref("dead"), {"sink_rejected", "no"}, o); });
  s.dead_letter(ref("dead"), {"sink_rejected", "no"});
  EXPECT_EQ(state_of("dead"), "dead");
  // Two more dead rows for the retention calls below.
  s.dead_letter(ref("dead_too"), {"sink_rejected", "no"});
  s.dead_letter(ref("dead_three"), {"sink_rejected", "no"});

  refused([&](const call_options& o) { s.release_lease(ref("release"), o); });
  s.release_lease(ref("release"));
  EXPECT_EQ(state_of("release"), "pending");

  refused([&](const call_options& o) { (void)s.backlog(o); });
  const auto b = s.backlog();
  EXPECT_EQ(b.pending, 2);  // retry, release
  EXPECT_EQ(b.leased, 3);   // k2, extend, extend_many
  EXPECT_EQ(b.dead, 3);

  refused([&](const call_options& o) { (void)s.inspect({}, o); });
  EXPECT_EQ(s.inspect({}).messages.size(), 11u);

  const replay_request replay{{"deliver", "dead"}, "operator", "scenario 16"};
  refused([&](const call_options& o) { (void)s.replay(replay, o); });
  EXPECT_EQ(s.replay(replay).items.size(), 2u);
  EXPECT_EQ(state_of("deliver"), "pending");
  EXPECT_EQ(state_of("dead"), "pending");

  // Terminal now: k1 and deliver_fn delivered, dead_too and dead_three dead.
  // Each archive call below takes the oldest aged row (limit 1), each prune
  // the other one.
  set_terminal_age("k1", "delivered_at", 7200);
  set_terminal_age("deliver_fn", "delivered_at", 3600);
  set_terminal_age("dead_too", "dead_lettered_at", 7200);
  set_terminal_age("dead_three", "dead_lettered_at", 3600);
  const auto aged = cutoff::older_than(1min);
  std::atomic<int> archiver_calls{0};
  const archiver counting = [&](const std::vector<archived_message>&, auto, std::stop_token) {
    ++archiver_calls;
    return archive_outcome{};
  };

  refused([&](const call_options& o) { (void)s.archive_and_prune_delivered(aged, 1, counting, o); });
  EXPECT_EQ(archiver_calls.load(), 0);
  EXPECT_EQ(s.archive_and_prune_delivered(aged, 1, counting), (std::vector<std::string>{"k1"}));
  EXPECT_EQ(archiver_calls.load(), 1);

  refused([&](const call_options& o) { (void)s.prune_delivered(aged, 10, o); });
  EXPECT_EQ(s.prune_delivered(aged, 10), (std::vector<std::string>{"deliver_fn"}));

  refused([&](const call_options& o) { (void)s.archive_and_prune_dead(aged, 1, counting, o); });
  EXPECT_EQ(archiver_calls.load(), 1);
  EXPECT_EQ(s.archive_and_prune_dead(aged, 1, counting), (std::vector<std::string>{"dead_too"}));
  EXPECT_EQ(archiver_calls.load(), 2);

  refused([&](const call_options& o) { (void)s.prune_dead(aged, 10, o); });
  EXPECT_EQ(s.prune_dead(aged, 10), (std::vector<std::string>{"dead_three"}));

  refused([&](const call_options& o) { s.ping(o); });
  s.ping();
}

// Scenario 16: a read-only connection gives not_writable from ping, claim and
// the writer, and changes nothing. PostgreSQL: default_transaction_read_only
// through the URI's options, as a read-only role or a standby would look.
// SQLite: CI runs as root, for whom a 0444 file is still writable, so the
// read-only state comes from SQLite itself: the store's only pooled
// connection gets PRAGMA query_only, and the writer gets application handles
// opened with SQLITE_OPEN_READONLY or under query_only.
TEST_P(outbox_store, a_read_only_connection_gives_not_writable_from_ping_claim_and_the_writer) {
  write({env("x")});
  const std::string before = table_image();
  if (is_pg()) {
    const char* sep = uri_.find('?') == std::string::npos ? "?" : "&";
    auto ro = database::open(uri_ + sep + "options=-c%20default_transaction_read_only%3Don");
    store s(ro);
    EXPECT_OUTBOX_ERROR(s.ping(), errc::invalid_state, "not_writable");
    EXPECT_OUTBOX_ERROR((void)s.claim("relay", 1, 30s), errc::invalid_state, "not_writable");
    writer w(ro);
    pg::tx tx(ro);
    EXPECT_OUTBOX_ERROR((void)w.insert(tx, env("y")), errc::invalid_state, "not_writable");
  } else {
    auto ro = database::open(uri_, {.pool_size = 1});
    store s(ro);
    // Set on the one pooled connection right before each call, so the call
    // meets it even if an earlier failure had the connection replaced.
    auto query_only = [&] { ro.exec("PRAGMA query_only = ON"); };
    query_only();
    EXPECT_OUTBOX_ERROR(s.ping(), errc::invalid_state, "not_writable");
    query_only();
    EXPECT_OUTBOX_ERROR((void)s.claim("relay", 1, 30s), errc::invalid_state, "not_writable");

    const std::string path = uri_.substr(std::string_view("sqlite:").size());
    writer w(ro);
    for (const bool read_only_open : {true, false}) {
      SCOPED_TRACE(read_only_open ? "a handle opened read-only" : "a handle under query_only");
      ::sqlite3* raw = nullptr;
      const int flags = read_only_open ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE;
      ASSERT_EQ(sqlite3_open_v2(path.c_str(), &raw, flags, nullptr), SQLITE_OK);
      const std::unique_ptr<::sqlite3, int (*)(::sqlite3*)> handle(raw, sqlite3_close_v2);
      if (!read_only_open)
        ASSERT_EQ(sqlite3_exec(raw, "PRAGMA query_only = ON", nullptr, nullptr, nullptr), SQLITE_OK);
      ASSERT_EQ(sqlite3_exec(raw, "BEGIN", nullptr, nullptr, nullptr), SQLITE_OK);
      {
        auto tx = sqlite::adopt(raw);
        EXPECT_OUTBOX_ERROR((void)w.insert(tx, env("y")), errc::invalid_state, "not_writable");
      }
      // The transaction is the application's: Spool neither commits nor rolls it back.
      EXPECT_EQ(sqlite3_exec(raw, "ROLLBACK", nullptr, nullptr, nullptr), SQLITE_OK);
    }
  }
  EXPECT_EQ(table_image(), before);
}

TEST_P(outbox_store, a_claim_over_100000_pending_rows_takes_the_oldest_and_reads_only_what_it_claims) {
  // 100,000 due pending rows in claim order, the oldest two turned into
  // expired leases: a claim still takes expired leases and pending rows
  // merged in available_at order.
  if (is_pg()) {
    db_->exec(R"(INSERT INTO outbox_messages (id, topic, payload, payload_version, available_at, created_at)
      SELECT 'p' || g, 't', '\x00', 1, clock_timestamp() - (100001 - g) * interval '1 millisecond',
             clock_timestamp() - (100001 - g) * interval '1 millisecond' FROM generate_series(1, 100000) g)");
    db_->exec("ANALYZE outbox_messages");
  } else {
    db_->exec(R"(WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 100000)
      INSERT INTO outbox_messages (id, topic, payload, payload_version, available_at, created_at, updated_at)
      SELECT 'p' || n, 't', x'00', 1, 1000000000000000 + n, 1000000000000000 + n, 1000000000000000 FROM g)");
    db_->exec("ANALYZE");
  }
  store s(*db_);
  const auto first = s.claim("relay", 2, 30s);
  ASSERT_EQ(first.size(), 2u);
  expire_lease(first[0].ref.id);
  expire_lease(first[1].ref.id);
  const auto got = s.claim("relay", 3, 30s);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].ref.id, "p1");
  EXPECT_EQ(got[1].ref.id, "p2");
  EXPECT_EQ(got[2].ref.id, "p3");

  if (!is_pg()) {
    // The candidates statement steps through the rows it returns, not the
    // backlog: sorting every due row took millions of VM steps here. (The
    // PostgreSQL plan is checked in plan_test.cpp.)
    auto names = outbox::detail::names_of(outbox_config{}, engine::sqlite);
    const std::string sql = outbox::detail::render(engine::sqlite, "claim_candidates", names);
    const std::string path = uri_.substr(std::string_view("sqlite:").size());
    ::sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
    const std::unique_ptr<::sqlite3, int (*)(::sqlite3*)> handle(raw, sqlite3_close_v2);
    ::sqlite3_stmt* stmt = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(raw, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK) << sqlite3_errmsg(raw);
    const std::unique_ptr<::sqlite3_stmt, int (*)(::sqlite3_stmt*)> statement(stmt, sqlite3_finalize);
    sqlite3_bind_int64(stmt, 1, 4000000000000000);  // far after every row's available_at
    sqlite3_bind_int64(stmt, 2, 100);
    int rows = 0;
    while (sqlite3_step(stmt) == SQLITE_ROW) ++rows;
    EXPECT_EQ(rows, 100);
    EXPECT_LT(sqlite3_stmt_status(stmt, SQLITE_STMTSTATUS_VM_STEP, 0), 20000);
  }
}

TEST_P(outbox_store, mark_delivered_with_a_callback_commits_with_it_and_rolls_back_on_throw) {
  db_->exec("CREATE TABLE handoff (id TEXT)");
  write({env("x"), env("y")});
  auto s = make_store();
  auto got = s.claim("relay", 2, 30s);
  const std::string ins = is_pg() ? "INSERT INTO handoff VALUES ($1)" : "INSERT INTO handoff VALUES (?1)";
  auto ok = [&](auto& tx) { tx.exec(ins, {std::string("x")}); };
  auto bad = [&](auto& tx) {
    tx.exec(ins, {std::string("y")});
    throw std::runtime_error("sink failed");
  };
  s.mark_delivered(got[0].ref, std::function<void(spool::tx&)>(ok));
  EXPECT_THROW(s.mark_delivered(got[1].ref, std::function<void(spool::tx&)>(bad)), std::runtime_error);
  EXPECT_EQ(db_->exec("SELECT count(*) FROM handoff").at(0).at(0), "1");
  EXPECT_EQ(state_of("x"), "delivered");
  EXPECT_EQ(state_of("y"), "leased");
}

TEST_P(outbox_store, backlog_equals_direct_counts_and_the_oldest_pending_age) {
  write({env("p1"), env("p2"), env("l1"), env("l2"), env("d1")});
  auto s = make_store();
  auto got = s.claim("relay", 3, 30s);  // p1, p2, l1 by position
  s.release_lease(got[0].ref);
  s.dead_letter(got[2].ref, {"x", "y"});
  expire_lease(got[1].message.id);
  set_terminal_age("p1", "created_at", 60);
  const auto b = s.backlog();
  EXPECT_EQ(b.pending, count("state = 'pending'"));
  EXPECT_EQ(b.leased, 1);
  EXPECT_EQ(b.expired_leases, 1);
  EXPECT_EQ(b.dead, 1);
  ASSERT_TRUE(b.oldest_pending_created_at.has_value());
  EXPECT_GE(b.oldest_pending_age, 59s);
  EXPECT_LT(b.oldest_pending_age, 120s);
}

TEST_P(outbox_store, inspect_pages_through_rows_sharing_a_created_at_without_gaps_or_repeats) {
  std::vector<envelope> batch;
  for (int i = 0; i < 7; ++i) {
    auto e = env("same" + std::to_string(i));
    e.created_at = parse_time("2026-01-01T00:00:00Z");
    batch.push_back(e);
  }
  auto later = env("later");
  later.created_at = parse_time("2026-01-02T00:00:00Z");
  batch.push_back(later);
  write(batch);
  auto s = make_store();
  std::vector<std::string> seen;
  inspect_query q;
  q.limit = 3;
  for (;;) {
    const auto page = s.inspect(q);
    for (const auto& m : page.messages) seen.push_back(m.id);
    if (!page.next) break;
    EXPECT_THROW((void)parse_time(*page.next), spool::error);  // a cursor never parses as a time
    q.before = page.next;
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"later", "same6", "same5", "same4", "same3", "same2", "same1",
                                            "same0"}));
  q = {};
  q.before = "2026-01-02T00:00:00Z";
  EXPECT_EQ(s.inspect(q).messages.size(), 7u);
  q.state = message_state::delivered;
  EXPECT_TRUE(s.inspect(q).messages.empty());
  EXPECT_OUTBOX_ERROR((void)s.inspect({.limit = 0}), errc::invalid_argument, "invalid_admin_limit");
  EXPECT_OUTBOX_ERROR((void)parse_message_state("gone"), errc::invalid_argument, "invalid_message_state");
}

TEST_P(outbox_store, replay_resets_terminal_rows_audits_them_and_refuses_all_or_nothing) {
  write({env("dlv"), env("dead"), env("pend")});
  auto s = make_store();
  auto got = s.claim("relay", 2, 30s);
  s.mark_delivered(got[0].ref);
  s.dead_letter(got[1].ref, {"poison", "m"});
  try {
    (void)s.replay({{"dlv", "missing", "pend"}, "ops@example", "redo"});
    ADD_FAILURE() << "no conflict";
  } catch (const replay_conflict& e) {
    EXPECT_EQ(e.code(), errc::conflict);
    EXPECT_EQ(e.reason(), "replay_conflict");
    ASSERT_EQ(e.items().size(), 3u);
    EXPECT_EQ(e.items()[0].second, replay_item_status::replayable);
    EXPECT_EQ(e.items()[1].second, replay_item_status::missing);
    EXPECT_EQ(e.items()[2].second, replay_item_status::pending);
  }
  EXPECT_EQ(state_of("dlv"), "delivered");
  const std::string audit = "SELECT count(*) FROM outbox_messages_replay_audit";
  EXPECT_EQ(db_->exec(audit).at(0).at(0), "0");
  const auto r = s.replay({{"dead", "dlv"}, "ops@example", "sink fixed"});
  ASSERT_EQ(r.items.size(), 2u);
  EXPECT_EQ(r.items[0].second, message_state::dead);
  EXPECT_EQ(r.items[1].second, message_state::delivered);
  EXPECT_EQ(count("state = 'pending' AND claim_count = 0 AND failure_count = 0"), 3);
  const auto rows =
      db_->exec("SELECT outbox_table, previous_state FROM outbox_messages_replay_audit ORDER BY message_id");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(*rows[0][0], is_pg() ? "public.outbox_messages" : "main.outbox_messages");
  EXPECT_EQ(*rows[0][1], "dead");
  EXPECT_THROW(db_->exec("DELETE FROM outbox_messages_replay_audit"), spool::error);  // append-only
  // Authorizer: a denial or an exception is replay_unauthorized; bad input fails before it runs.
  bool ran = false;
  auto denying = make_store({.replay_authorizer = [&](const replay_request&) {
    ran = true;
    return false;
  }});
  EXPECT_OUTBOX_ERROR((void)denying.replay({{"dlv"}, "a", "b"}), errc::unauthorized, "replay_unauthorized");
  EXPECT_TRUE(ran);
  auto throwing =
      make_store({.replay_authorizer = [](const replay_request&) -> bool { throw std::runtime_error("x"); }});
  EXPECT_OUTBOX_ERROR((void)throwing.replay({{"dlv"}, "a", "b"}), errc::unauthorized, "replay_unauthorized");
  ran = false;
  replay_request y10k{{"dlv"}, "a", "b", max_time() + std::chrono::microseconds(1)};
  EXPECT_OUTBOX_ERROR((void)denying.replay(y10k), errc::invalid_argument, "timestamp_out_of_range");
  EXPECT_FALSE(ran);
  EXPECT_OUTBOX_ERROR((void)s.replay({{}, "a", "b"}), errc::invalid_argument, "replay_ids_required");
  EXPECT_OUTBOX_ERROR((void)s.replay({{"x"}, "", "b"}), errc::invalid_argument, "replay_requester_required");
  EXPECT_OUTBOX_ERROR((void)s.replay({{"x"}, "a", ""}), errc::invalid_argument, "replay_reason_required");
  EXPECT_OUTBOX_ERROR((void)s.replay({{"x", "x"}, "a", "b"}), errc::invalid_argument, "replay_duplicate_id");
}

TEST_P(outbox_store, prune_cutoff_is_strict_in_both_terminal_states_and_other_states_are_untouched) {
  write({env("d_old"), env("d_new"), env("x_old"), env("p"), env("l")});
  auto s = make_store();
  auto got = s.claim("relay", 5, 30s);
  s.mark_delivered(got[0].ref);
  s.mark_delivered(got[1].ref);
  s.dead_letter(got[2].ref, {"x", "y"});
  s.release_lease(got[3].ref);
  set_terminal_age("d_old", "delivered_at", 7200);
  set_terminal_age("x_old", "dead_lettered_at", 7200);
  set_terminal_age("p", "created_at", 7200);
  EXPECT_OUTBOX_ERROR((void)s.prune_delivered({}, 10), errc::invalid_argument, "prune_cutoff_required");
  EXPECT_OUTBOX_ERROR((void)s.prune_delivered(cutoff::older_than(1h), 0), errc::invalid_argument,
                      "invalid_admin_limit");
  // Strict: a cutoff equal to the row's terminal time keeps it.
  const auto exact =
      db_->exec(is_pg() ? "SELECT (extract(epoch FROM date_trunc('second', delivered_at))::bigint * 1000000 "
                          "+ extract(microseconds FROM delivered_at)::bigint % 1000000) FROM outbox_messages "
                          "WHERE id = 'd_old'"
                        : "SELECT delivered_at FROM outbox_messages WHERE id = 'd_old'");
  const auto at = time_point(std::chrono::microseconds(std::stoll(*exact[0][0])));
  EXPECT_TRUE(s.prune_delivered(cutoff::before(at), 10).empty());
  EXPECT_EQ(s.prune_delivered(cutoff::before(at + std::chrono::microseconds(1)), 10),
            (std::vector<std::string>{"d_old"}));
  EXPECT_EQ(s.prune_dead(cutoff::older_than(1h), 10), (std::vector<std::string>{"x_old"}));
  EXPECT_EQ(count(), 3);  // d_new, p, l
}

TEST_P(outbox_store,
       a_failing_throwing_or_overrunning_archiver_deletes_nothing_and_a_working_one_gets_the_aged_rows) {
  write({env("a"), env("b"), env("c")});
  auto s = make_store({.archive_deadline = 1s});
  auto got = s.claim("relay", 3, 30s);
  for (const auto& c : got) s.mark_delivered(c.ref);
  set_terminal_age("a", "delivered_at", 7200);
  set_terminal_age("b", "delivered_at", 7200);
  const auto cut = cutoff::older_than(1h);
  EXPECT_OUTBOX_ERROR((void)s.archive_and_prune_delivered(cut, 10, archiver{}), errc::invalid_argument,
                      "archiver_required");
  auto failing = [](const std::vector<archived_message>&, auto, std::stop_token) {
    return archive_outcome{false, "disk full"};
  };
  auto throwing = [](const std::vector<archived_message>&, auto, std::stop_token) -> archive_outcome {
    throw std::runtime_error("boom");
  };
  auto slow = [](const std::vector<archived_message>&, auto, std::stop_token st) {
    for (int i = 0; i < 300 && !st.stop_requested(); ++i) std::this_thread::sleep_for(10ms);
    return archive_outcome{};
  };
  EXPECT_OUTBOX_ERROR((void)s.archive_and_prune_delivered(cut, 10, failing), errc::unavailable,
                      "archiver_failed");
  EXPECT_OUTBOX_ERROR((void)s.archive_and_prune_delivered(cut, 10, throwing), errc::unavailable,
                      "archiver_threw");
  EXPECT_OUTBOX_ERROR((void)s.archive_and_prune_delivered(cut, 10, slow), errc::unavailable,
                      "archive_timeout");
  EXPECT_EQ(count(), 3);
  std::vector<std::string> archived;
  auto working = [&](const std::vector<archived_message>& b, auto, std::stop_token) {
    for (const auto& m : b) {
      archived.push_back(m.message.id);
      EXPECT_EQ(m.state, message_state::delivered);
      EXPECT_EQ(m.message.payload, "{\"n\":1}");
    }
    return archive_outcome{};
  };
  auto deleted = s.archive_and_prune_delivered(cut, 10, working);
  std::sort(deleted.begin(), deleted.end());
  EXPECT_EQ(archived, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(deleted, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(count(), 1);
  bool called = false;
  auto never = [&](const std::vector<archived_message>&, auto, std::stop_token) {
    called = true;
    return archive_outcome{};
  };
  EXPECT_TRUE(s.archive_and_prune_delivered(cut, 10, never).empty());
  EXPECT_FALSE(called);
}

TEST_P(outbox_store, every_transition_emits_an_event_without_text_and_a_throwing_observer_changes_nothing) {
  std::vector<event> events;
  std::mutex m;
  auto s = make_store({.observer = [&](const event& e) {
    {
      std::lock_guard lock(m);
      events.push_back(e);
    }
    throw std::runtime_error("observer bug");
  }});
  write({env("a"), env("b"), env("c"), env("d")});
  auto got = s.claim("relay", 4, 30s);
  ASSERT_EQ(got.size(), 4u);
  (void)s.extend_lease(got[0].ref, 30s);
  s.mark_delivered(got[0].ref);
  s.retry(got[1].ref, retry_at::after(1h), {"e", "secret text"});
  s.dead_letter(got[2].ref, {"e", "secret text"});
  s.release_lease(got[3].ref);
  EXPECT_OUTBOX_ERROR(s.release_lease(got[3].ref), errc::lease_lost, "lease_lost");
  (void)s.replay({{"a"}, "ops", "why"});
  (void)s.prune_dead(cutoff::older_than(0s), 10);
  std::vector<std::string> ops;
  for (const auto& e : events) {
    ops.push_back(std::string(to_string(e.op)) + (e.ok ? "" : ":" + e.reason));
    EXPECT_GE(e.duration.count(), 0);
  }
  EXPECT_EQ(ops, (std::vector<std::string>{"claim", "extend", "deliver", "retry", "dead", "release",
                                           "release:lease_lost", "replay", "prune"}));
  EXPECT_EQ(events[3].message_id, "b");
  EXPECT_EQ(events[3].topic, "t");
  EXPECT_EQ(events[3].failure_count, 1u);
  EXPECT_EQ(s.observer_failures(), events.size());
}

SPOOL_OUTBOX_BOTH_ENGINES(outbox_store);

}  // namespace
}  // namespace spool::test
