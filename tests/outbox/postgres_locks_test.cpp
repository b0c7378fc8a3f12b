// PostgreSQL-only outbox scenarios, part two: row and table locks held by
// an operator, notifications after the caller's commit, read-only
// connections, printed migrations, and eight relays racing over one table
// (scenario 23).
#include <fmt/format.h>
#include <libpq-fe.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sstream>

#include "postgres_fixture.hpp"
#include "spool/outbox/relay.hpp"
#include "spool/outbox/sink.hpp"

namespace spool::test {
namespace {

TEST_F(outbox_postgres, a_row_locked_oldest_row_is_skipped_and_a_table_lock_is_unavailable) {
  writer w(*db_);
  {
    pg::tx tx(*db_);
    (void)w.insert_batch(tx, {env("old"), env("new")});
    tx.commit();
  }
  store s(*db_);
  pg_conn op(uri_);
  ASSERT_EQ(op.run("BEGIN"), "");
  ASSERT_EQ(op.run("SELECT 1 FROM outbox_messages WHERE id = 'old' FOR UPDATE"), "");
  EXPECT_EQ(ids(s.claim("relay", 1, 30s)), (std::vector<std::string>{"new"}));
  ASSERT_EQ(op.run("COMMIT"), "");
  EXPECT_EQ(ids(s.claim("relay", 1, 30s)), (std::vector<std::string>{"old"}));
  ASSERT_EQ(op.run("BEGIN"), "");
  ASSERT_EQ(op.run("LOCK TABLE outbox_messages IN ACCESS EXCLUSIVE MODE"), "");
  try {
    (void)s.claim("relay", 1, 30s, serialization::none, call_options::within(300ms));
    ADD_FAILURE() << "claim under a table lock succeeded";
  } catch (const spool::error& e) {
    EXPECT_TRUE(e.code() == errc::unavailable || e.code() == errc::in_doubt) << e.what();
  }
  ASSERT_EQ(op.run("ROLLBACK"), "");
  db_->exec("ALTER DATABASE " + *db_->exec("SELECT current_database()").at(0).at(0) +
            " SET default_transaction_isolation = 'serializable'");
  auto serial = database::open(uri_);
  store s2(serial);
  {
    pg::tx tx(serial);
    (void)w.insert(tx, env("third"));
    tx.commit();
  }
  EXPECT_EQ(ids(s2.claim("relay", 5, 30s)), (std::vector<std::string>{"third"}));
}

TEST_F(outbox_postgres, a_lease_expiring_while_its_call_waits_on_the_row_lock_is_lease_lost) {
  writer w(*db_);
  {
    pg::tx tx(*db_);
    (void)w.insert(tx, env("x"));
    tx.commit();
  }
  store s(*db_, {.max_lease_duration = 10min});
  const auto c = s.claim("relay", 1, 300ms).at(0);
  pg_conn op(uri_);
  ASSERT_EQ(op.run("BEGIN"), "");
  ASSERT_EQ(op.run("SELECT 1 FROM outbox_messages WHERE id = 'x' FOR UPDATE"), "");
  auto call = std::async(std::launch::async, [&] {
    try {
      s.mark_delivered(c.ref);
      return std::string("delivered");
    } catch (const spool::error& e) {
      return e.reason();
    }
  });
  std::this_thread::sleep_for(600ms);  // the lease expires while the call waits
  ASSERT_EQ(op.run("COMMIT"), "");
  EXPECT_EQ(call.get(), "lease_lost");
  EXPECT_EQ(*db_->exec("SELECT state FROM outbox_messages").at(0).at(0), "leased");
}

TEST_F(outbox_postgres,
       an_older_repeatable_read_snapshot_still_sees_a_pruned_row_and_a_racing_replay_reports_missing) {
  writer w(*db_);
  {
    pg::tx tx(*db_);
    (void)w.insert_batch(tx, {env("a"), env("b")});
    tx.commit();
  }
  store s(*db_);
  for (const auto& c : s.claim("relay", 2, 30s)) s.mark_delivered(c.ref);
  db_->exec("UPDATE outbox_messages SET delivered_at = clock_timestamp() - interval '2 hours'");
  pg_conn reader(uri_);
  ASSERT_EQ(reader.run("BEGIN ISOLATION LEVEL REPEATABLE READ"), "");
  ASSERT_EQ(reader.run("SELECT count(*) FROM outbox_messages"), "");
  EXPECT_EQ(s.prune_delivered(cutoff::older_than(1h), 1), (std::vector<std::string>{"a"}));
  PGresult* r = PQexec(reader.c, "SELECT count(*) FROM outbox_messages WHERE id = 'a'");
  EXPECT_EQ(std::string(PQgetvalue(r, 0, 0)), "1");
  PQclear(r);
  reader.run("COMMIT");
  // A replay racing the archive of its row waits, then reports missing.
  std::promise<void> selected;
  std::promise<void> release;
  auto archive = std::async(std::launch::async, [&] {
    auto slow = [&](const std::vector<archived_message>&, auto, std::stop_token) {
      selected.set_value();
      release.get_future().wait();
      return archive_outcome{};
    };
    return s.archive_and_prune_delivered(cutoff::older_than(1h), 10, slow);
  });
  selected.get_future().wait();
  auto replay = std::async(std::launch::async, [&] {
    try {
      (void)s.replay({{"b"}, "ops", "why"});
      return std::string("replayed");
    } catch (const replay_conflict& e) {
      return std::string(to_string(e.items().at(0).second));
    } catch (const spool::error& e) {
      return e.reason();
    }
  });
  std::this_thread::sleep_for(200ms);
  release.set_value();
  EXPECT_EQ(archive.get(), (std::vector<std::string>{"b"}));
  EXPECT_EQ(replay.get(), "missing");
}

TEST_F(outbox_postgres, prune_and_archive_skip_an_operator_locked_row) {
  writer w(*db_);
  {
    pg::tx tx(*db_);
    (void)w.insert_batch(tx, {env("a"), env("b"), env("c")});
    tx.commit();
  }
  store s(*db_);
  for (const auto& c : s.claim("relay", 3, 30s)) s.mark_delivered(c.ref);
  db_->exec("UPDATE outbox_messages SET delivered_at = clock_timestamp() - interval '2 hours'");
  pg_conn op(uri_);  // an operator holding one row
  ASSERT_EQ(op.run("BEGIN"), "");
  ASSERT_EQ(op.run("SELECT 1 FROM outbox_messages WHERE id = 'a' FOR UPDATE"), "");
  // A prune that waited for the lock would wait for this test's COMMIT below,
  // so it would hit the deadline and raise instead of returning.
  const call_options bounded{std::chrono::steady_clock::now() + 60s, {}};
  EXPECT_EQ(s.prune_delivered(cutoff::older_than(1h), 1, bounded),
            (std::vector<std::string>{"b"}));  // a is skipped
  bool called_with_a = false;
  auto check = [&](const std::vector<archived_message>& batch, auto, std::stop_token) {
    for (const auto& m : batch) called_with_a = called_with_a || m.message.id == "a";
    return archive_outcome{};
  };
  EXPECT_EQ(s.archive_and_prune_delivered(cutoff::older_than(1h), 10, check, bounded),
            (std::vector<std::string>{"c"}));
  EXPECT_FALSE(called_with_a);
  EXPECT_EQ(count(), 1);
  ASSERT_EQ(op.run("COMMIT"), "");
  EXPECT_EQ(s.prune_delivered(cutoff::older_than(1h), 10), (std::vector<std::string>{"a"}));
}

TEST_F(outbox_postgres, with_notify_a_listener_hears_the_table_only_after_the_callers_commit) {
  pg_conn listener(uri_);
  ASSERT_EQ(listener.run("LISTEN spool_outbox"), "");
  ASSERT_EQ(listener.run("LISTEN other_channel"), "");
  // Every notification that arrives within `wait`, as channel/payload.
  auto drain = [&](std::chrono::milliseconds wait) {
    std::vector<std::string> got;
    const auto until = std::chrono::steady_clock::now() + wait;
    do {
      PQconsumeInput(listener.c);
      while (PGnotify* n = PQnotifies(listener.c)) {
        got.push_back(std::string(n->relname) + "/" + n->extra);
        PQfreemem(n);
      }
      if (!got.empty()) break;
      std::this_thread::sleep_for(10ms);
    } while (std::chrono::steady_clock::now() < until);
    return got;
  };
  const std::string table = *db_->exec("SELECT current_schema()").at(0).at(0) + ".outbox_messages";
  writer w(*db_, {.notify = true});
  {
    pg::tx tx(*db_);
    (void)tx.exec("INSERT INTO app_orders VALUES ('o1')");
    (void)w.insert(tx, env("n1"));
    EXPECT_TRUE(drain(300ms).empty());  // not before the commit
    tx.commit();
  }
  EXPECT_EQ(drain(5s), (std::vector<std::string>{"spool_outbox/" + table}));
  {
    pg::tx tx(*db_);
    (void)w.insert(tx, env("n2"));
    tx.rollback();
  }
  EXPECT_TRUE(drain(500ms).empty());  // never after a rollback
  {
    writer skipping(*db_, {.on_idempotency_conflict = idempotency_policy::skip, .notify = true});
    auto first = env("k1"), repeat = env("k2");
    first.idempotency_key = repeat.idempotency_key = "order-7";
    pg::tx tx(*db_);
    (void)skipping.insert(tx, first);
    tx.commit();
    EXPECT_EQ(drain(5s), (std::vector<std::string>{"spool_outbox/" + table}));
    pg::tx again(*db_);
    EXPECT_EQ(skipping.insert(again, repeat).status, insert_status::skipped);  // nothing written
    again.commit();
  }
  EXPECT_TRUE(drain(500ms).empty());  // a write that inserted nothing wakes nobody
  // Without notify nothing is sent; a configured channel is used as given.
  {
    pg::tx tx(*db_);
    (void)writer(*db_).insert(tx, env("n3"));
    tx.commit();
  }
  EXPECT_TRUE(drain(500ms).empty());
  {
    outbox_config cfg;
    cfg.notify_channel = "other_channel";
    pg::tx tx(*db_);
    (void)writer(*db_, {.config = cfg, .notify = true}).insert(tx, env("n4"));
    tx.commit();
  }
  EXPECT_EQ(drain(5s), (std::vector<std::string>{"other_channel/" + table}));
}

TEST_F(outbox_postgres, a_read_only_connection_is_not_writable_for_ping_claim_and_writer) {
  db_->exec("ALTER DATABASE " + *db_->exec("SELECT current_database()").at(0).at(0) +
            " SET default_transaction_read_only = on");
  auto ro = database::open(uri_);
  store s(ro);
  EXPECT_OUTBOX_ERROR(s.ping(), errc::invalid_state, "not_writable");
  EXPECT_OUTBOX_ERROR((void)s.claim("relay", 1, 30s), errc::invalid_state, "not_writable");
  writer w(ro);
  pg::tx tx(ro);
  EXPECT_OUTBOX_ERROR((void)w.insert(tx, env("x")), errc::invalid_state, "not_writable");
}

TEST_F(outbox_postgres, migrate_print_output_records_itself_and_down_removes_everything) {
  const std::string script = outbox::migrations(engine::postgres, {.schema = "billing"});
  EXPECT_NE(script.find("CREATE TABLE \"billing\".\"outbox_messages\""), std::string::npos);
  EXPECT_NE(script.find("'billing.outbox_messages'"), std::string::npos);
  pg_exec(uri_, "CREATE SCHEMA billing");
  pg_exec(uri_, script);
  store s(*db_, {.config = {.schema = "billing"}});  // the ledger row is there
  spool::revert_migration(*db_, "outbox/1", true, {.schema = "billing"});
  const auto left = pg_query(uri_,
                             "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                             "WHERE n.nspname = 'billing' AND c.relname LIKE 'outbox%'");
  EXPECT_EQ(left.at(0).at(0), "0");
}

// Scenario 23: eight relays race over 20,000 envelopes with 200 ordering keys
// (by_ordering_key) through a sink that delays and fails transiently at
// random. Every envelope is delivered at least once; per key no envelope is
// first delivered before an earlier-position one; a repeat delivery only ever
// follows a failed record of that envelope's delivery (a lost lease, or a
// record that timed out or was in doubt; from the stores' event log).
TEST_F(outbox_postgres,
       eight_relays_racing_over_twenty_thousand_envelopes_keep_every_key_in_order_and_lose_nothing) {
  constexpr int n = 20000, keys = 200, relays = 8;
  {
    writer_options wo;
    wo.max_batch_size = 1000;
    writer w(*db_, wo);
    for (int first = 0; first < n; first += 1000) {
      std::vector<envelope> batch;
      for (int i = first; i < first + 1000; ++i) {
        batch.push_back(env(fmt::format("e{:05}", i), fmt::format("k{:03}", i % keys)));
      }
      pg::tx tx(*db_);
      (void)w.insert_batch(tx, batch);
      tx.commit();
    }
  }
  settle();

  std::mutex mu;
  std::map<std::string, std::vector<int>> first_deliveries;  // key → sequence numbers, in delivery order
  std::map<int, int> publishes;                              // sequence number → successful sink calls
  std::map<std::string, int> lost;                           // id → failed delivery records
  std::atomic<long> transient{0};
  auto sink = make_callback_sink([&](const claimed_message& m, std::stop_token) {
    thread_local std::mt19937 rng(std::random_device{}());
    std::this_thread::sleep_for(std::chrono::microseconds(std::uniform_int_distribution<int>(0, 800)(rng)));
    if (std::uniform_int_distribution<int>(0, 99)(rng) < 3) {
      ++transient;
      return sink_outcome::transient("flaky", "simulated transient failure");
    }
    const int seq = std::stoi(m.message.id.substr(1));
    std::lock_guard lock(mu);
    if (publishes[seq]++ == 0) first_deliveries[m.message.ordering_key].push_back(seq);
    return sink_outcome::delivered();
  });

  std::vector<std::unique_ptr<store>> stores;
  std::vector<std::unique_ptr<relay>> rs;
  for (int i = 0; i < relays; ++i) {
    store_options so;
    // A delivery whose record failed (its lease lost, or the record timed
    // out or was in doubt under load: delivery_unrecorded) is delivered
    // again after its lease expires; each such failure explains one repeat.
    so.observer = [&](const event& e) {
      if (!e.ok && e.op == operation::deliver && !e.message_id.empty()) {
        std::lock_guard lock(mu);
        ++lost[e.message_id];
      }
    };
    stores.push_back(std::make_unique<store>(*db_, so));
    relay_options o;
    o.owner = fmt::format("racer-{}", i);
    o.mode = serialization::by_ordering_key;
    o.max_in_flight = 16;
    o.lease_duration = 30s;
    o.poll_interval = 50ms;
    o.backoff = {1ms, 5ms};
    o.max_attempts = 1000;
    o.max_claims = 100000;
    o.breaker.failures = 100000;  // 3 % random failures are not an outage
    rs.push_back(std::make_unique<relay>(*stores.back(), sink, o));
  }
  for (auto& r : rs) r->start();
  const auto until = std::chrono::steady_clock::now() + 15min;
  while (count("outbox_messages WHERE state = 'delivered'") < n && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(200ms);
  }
  for (auto& r : rs) r->stop();
  // A relay that fences itself (no renewal got through in time) records
  // nothing of a call the sink completed anyway, and the store sees no event.
  std::uint64_t fenced = 0;
  for (auto& r : rs) fenced += r->metrics().lease_lost;

  EXPECT_EQ(count("outbox_messages WHERE state = 'delivered'"), n);
  std::lock_guard lock(mu);
  EXPECT_EQ(static_cast<int>(publishes.size()), n) << "every envelope delivered at least once";
  EXPECT_GT(transient.load(), 0) << "the sink failed transiently at random";
  long order_violations = 0;
  for (const auto& [key, seqs] : first_deliveries) {
    for (std::size_t i = 1; i < seqs.size(); ++i) {
      if (seqs[i] <= seqs[i - 1]) ++order_violations;
    }
  }
  EXPECT_EQ(order_violations, 0);
  EXPECT_EQ(first_deliveries.size(), static_cast<std::size_t>(keys));
  long unexplained = 0, repeats = 0;
  for (const auto& [seq, times] : publishes) {
    if (times <= 1) continue;
    repeats += times - 1;
    const auto it = lost.find(fmt::format("e{:05}", seq));
    if (it == lost.end() || it->second < times - 1) ++unexplained;
  }
  EXPECT_LE(static_cast<std::uint64_t>(unexplained), fenced)
      << repeats << " repeat deliveries, " << unexplained
      << " without a failed record or a relay's lost lease";
}

}  // namespace
}  // namespace spool::test
