// The store's operator reads on both engines (outbox.md §6.3, §6.4): inspect's
// filters, one envelope whole, its replay history, and the horizon.
#include <thread>

#include "outbox_fixture.hpp"

namespace spool::test {
namespace {

using namespace spool::outbox;

class outbox_operator_reads : public outbox_conformance {
 protected:
  std::vector<std::string> ids(const inspect_query& q) {
    auto s = make_store();
    std::vector<std::string> out;
    for (const auto& m : s.inspect(q).messages) out.push_back(m.id);
    return out;
  }
  static std::vector<std::string> ids_of_claim(const std::vector<claimed_message>& c) {
    std::vector<std::string> out;
    for (const auto& m : c) out.push_back(m.message.id);
    return out;
  }
};

TEST_P(outbox_operator_reads, inspect_filters_by_ordering_key_id_prefix_and_age_together) {
  auto old_k1 = env("ord-1", "t", "k1");
  old_k1.created_at = parse_time("2020-01-01T00:00:00Z");
  auto old_k2 = env("ord-2", "t", "k2");
  old_k2.created_at = parse_time("2020-01-01T00:00:01Z");
  write({old_k1, old_k2, env("ord-3", "t", "k1"), env("other", "t", "k1"), env("unkeyed")});

  EXPECT_EQ(ids({.ordering_key = "k1"}), (std::vector<std::string>{"other", "ord-3", "ord-1"}));
  EXPECT_EQ(ids({.ordering_key = ""}), (std::vector<std::string>{"unkeyed"}));
  EXPECT_EQ(ids({.id_prefix = "ord-"}), (std::vector<std::string>{"ord-3", "ord-2", "ord-1"}));
  EXPECT_EQ(ids({.min_age = std::chrono::hours(24)}), (std::vector<std::string>{"ord-2", "ord-1"}));
  EXPECT_EQ(ids({.ordering_key = "k1", .id_prefix = "ord-", .min_age = std::chrono::hours(24)}),
            (std::vector<std::string>{"ord-1"}));
  EXPECT_TRUE(
      ids({.ordering_key = "k1", .id_prefix = "ord-", .min_age = std::chrono::hours(24 * 365 * 50)}).empty());
  EXPECT_EQ(ids({.min_age = std::chrono::microseconds(0)}).size(), 5u);
}

TEST_P(outbox_operator_reads, an_id_prefix_is_a_leading_substring_and_never_a_pattern) {
  write({env("a%_1"), env("ab_1"), env("a%x"), env("A%_1"), env("xa%_1")});
  EXPECT_EQ(ids({.id_prefix = "a%_"}), (std::vector<std::string>{"a%_1"}));
  EXPECT_EQ(ids({.id_prefix = "a%"}), (std::vector<std::string>{"a%x", "a%_1"}));
  EXPECT_EQ(ids({.id_prefix = "a_"}), (std::vector<std::string>{}));
  EXPECT_EQ(ids({.id_prefix = "a%_1"}), (std::vector<std::string>{"a%_1"}));
  EXPECT_EQ(ids({.id_prefix = "a%_1z"}), (std::vector<std::string>{}));
}

TEST_P(outbox_operator_reads, inspect_refuses_out_of_bounds_filters) {
  auto s = make_store();
  EXPECT_OUTBOX_ERROR((void)s.inspect({.id_prefix = ""}), errc::invalid_argument, "value_outside_bounds");
  EXPECT_OUTBOX_ERROR((void)s.inspect({.id_prefix = std::string(256, 'a')}), errc::invalid_argument,
                      "value_outside_bounds");
  EXPECT_OUTBOX_ERROR((void)s.inspect({.ordering_key = std::string(256, 'k')}), errc::invalid_argument,
                      "value_outside_bounds");
  EXPECT_OUTBOX_ERROR((void)s.inspect({.min_age = std::chrono::microseconds(-1)}), errc::invalid_argument,
                      "value_outside_bounds");
  EXPECT_OUTBOX_ERROR((void)s.inspect({.min_age = std::chrono::years(101)}), errc::invalid_argument,
                      "value_outside_bounds");
}

TEST_P(outbox_operator_reads, get_returns_the_whole_envelope_and_nothing_for_an_unknown_id) {
  auto e = env("full", "orders", "customer-7");
  e.payload = std::string("{\"n\":1}\0\xff", 9);
  e.metadata = {{"trace", "abc"}, {"source", "checkout"}};
  e.idempotency_key = "idem-1";
  write({e});
  auto s = make_store();
  const auto d = s.get("full");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->summary.id, "full");
  EXPECT_EQ(d->summary.topic, "orders");
  EXPECT_EQ(d->summary.ordering_key, "customer-7");
  EXPECT_EQ(d->summary.idempotency_key, "idem-1");
  EXPECT_EQ(d->summary.state, message_state::pending);
  EXPECT_EQ(d->payload, e.payload);
  EXPECT_EQ(d->metadata, e.metadata);
  EXPECT_EQ(s.inspect({}).messages.at(0).created_at, d->summary.created_at);

  auto got = s.claim("relay-a", 1, 30s);
  ASSERT_EQ(got.size(), 1u);
  const auto leased = s.get("full");
  EXPECT_EQ(leased->summary.state, message_state::leased);
  EXPECT_EQ(leased->summary.lease_owner, "relay-a");
  EXPECT_EQ(leased->summary.leased_until, got[0].leased_until);
  EXPECT_EQ(leased->summary.claim_count, 1u);

  EXPECT_FALSE(s.get("absent"));
  EXPECT_OUTBOX_ERROR((void)s.get(""), errc::invalid_argument, "value_outside_bounds");
  EXPECT_OUTBOX_ERROR((void)s.get(std::string(256, 'i')), errc::invalid_argument, "value_outside_bounds");
}

TEST_P(outbox_operator_reads, replay_history_lists_every_replay_newest_first_and_outlives_the_prune) {
  write({env("r1"), env("r2")});
  auto s = make_store();
  EXPECT_TRUE(s.replay_history("r1").empty());
  auto got = s.claim("relay", 2, 30s);
  ASSERT_EQ(got.size(), 2u);
  s.dead_letter(got[0].ref, {"poison", "bad"});
  s.mark_delivered(got[1].ref);
  const auto first = s.replay({{"r1"}, "alice", "fixed the sink"});
  std::this_thread::sleep_for(2ms);  // requested_at orders the history
  got = s.claim("relay", 1, 30s);
  ASSERT_EQ(got.size(), 1u);
  s.mark_delivered(got[0].ref);
  const auto second = s.replay({{"r1", "r2"}, "bob", "resend for audit"});

  const auto h = s.replay_history("r1");
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h[0].replay_id, second.replay_id);
  EXPECT_EQ(h[0].requested_by, "bob");
  EXPECT_EQ(h[0].reason, "resend for audit");
  EXPECT_EQ(h[0].previous_state, message_state::delivered);
  EXPECT_EQ(h[1].replay_id, first.replay_id);
  EXPECT_EQ(h[1].requested_by, "alice");
  EXPECT_EQ(h[1].previous_state, message_state::dead);
  EXPECT_GE(h[0].requested_at, h[1].requested_at);
  EXPECT_EQ(h[1].message_id, "r1");
  EXPECT_EQ(s.replay_history("r1", 1).size(), 1u);
  EXPECT_EQ(s.replay_history("r2").size(), 1u);

  // Delivered again and pruned: the row is gone, its audit is not.
  for (auto& c : s.claim("relay", 2, 30s)) s.mark_delivered(c.ref);
  set_terminal_age("r1", "delivered_at", 7200);
  EXPECT_EQ(s.prune_delivered(cutoff::older_than(1min), 10), (std::vector<std::string>{"r1"}));
  EXPECT_FALSE(s.get("r1"));
  EXPECT_EQ(s.replay_history("r1").size(), 2u);
  EXPECT_OUTBOX_ERROR((void)s.replay_history("r1", 0), errc::invalid_argument, "invalid_admin_limit");
  EXPECT_OUTBOX_ERROR((void)s.replay_history("r1", 101), errc::invalid_argument, "invalid_admin_limit");
  EXPECT_OUTBOX_ERROR((void)s.replay_history(""), errc::invalid_argument, "value_outside_bounds");
}

TEST_P(outbox_operator_reads, the_horizon_counts_ordered_rows_an_open_transaction_holds_back) {
  auto s = make_store();
  if (!is_pg()) {
    // SQLite's single writer commits in position order: nothing to hold back.
    write({env("k", "t", "key")});
    const auto h = s.horizon();
    EXPECT_FALSE(h.applies);
    EXPECT_EQ(h.held, 0);
    ASSERT_EQ(s.claim("relay", 1, 30s, serialization::by_ordering_key).size(), 1u);
    return;
  }
  // A transaction that takes an xid and stays open holds the horizon below
  // every later transaction, so a keyed row committed after it waits.
  auto holder_db = database::open(uri_);
  pg::tx holder(holder_db);
  const auto holder_pid = std::stoi(*holder.exec("SELECT pg_backend_pid()").at(0).at(0));
  (void)holder.exec("SELECT pg_current_xact_id()");
  {
    outbox::writer w(*db_);
    pg::tx tx(*db_);
    (void)w.insert_batch(tx, {env("held-1", "t", "key"), env("held-2", "t", "other"), env("free")});
    tx.commit();
  }
  const auto h = s.horizon();
  EXPECT_TRUE(h.applies);
  EXPECT_EQ(h.held, 2);  // the unkeyed row is not held
  EXPECT_GT(h.next_xid, h.horizon_xid);
  ASSERT_TRUE(h.oldest_transaction_age);
  ASSERT_TRUE(h.oldest_transaction_pid);
  // Other suites share this server: an older transaction may be theirs.
  const auto holders =
      db_->exec("SELECT count(*) FROM pg_stat_activity WHERE backend_xid IS NOT NULL AND pid = $1",
                {std::int64_t{holder_pid}});
  EXPECT_EQ(*holders.at(0).at(0), "1");
  EXPECT_GE(h.oldest_transaction_age->count(), 0);
  EXPECT_EQ(ids_of_claim(s.claim("relay", 10, 30s, serialization::by_ordering_key)),
            (std::vector<std::string>{"free"}));

  holder.rollback();
  // The horizon is the whole cluster's, and other suites run on this server
  // at the same time: a transaction of theirs that is older than our rows
  // holds them as well (CI saw one for over a minute). So what must hold is
  // that our holder lets go: nothing is held any more, or what still holds
  // the rows is another session's transaction. A holder that ends between
  // the read of the horizon and the read of the sessions leaves a reading
  // with held rows and no holder; the next reading settles it.
  const auto until = std::chrono::steady_clock::now() + 60s;
  auto after = s.horizon();
  while (after.held != 0 && (after.oldest_transaction_pid == holder_pid || !after.oldest_transaction_age) &&
         std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(20ms);
    after = s.horizon();
  }
  EXPECT_NE(after.oldest_transaction_pid, std::optional<int>(holder_pid))
      << "the rolled-back holder still holds";
  if (after.held != 0) {
    EXPECT_TRUE(after.oldest_transaction_age) << "rows are held while no open transaction holds the horizon";
  }
}

SPOOL_OUTBOX_BOTH_ENGINES(outbox_operator_reads);

}  // namespace
}  // namespace spool::test
