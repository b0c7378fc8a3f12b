// The worker pool on both engines, continued from worker_pool_test.cpp:
// lifecycle misuse, a mixed backlog drained in priority order, idle workers
// sharing their polls, handler latency, wake-ups by NOTIFY (PostgreSQL) and
// the backoff model. The suite ops_worker_pool is instantiated in
// worker_pool_test.cpp.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <future>
#include <map>
#include <mutex>
#include <set>

#include "worker_pool_fixture.hpp"

namespace spool::test {
namespace {

TEST_P(ops_worker_pool, LifecycleMisuseRaisesInvalidStateAndBadOptionsInvalidArgument) {  // §7.1, §9.40
  {
    ops::worker_pool pool(q(), fast());
    EXPECT_ERRC(pool.start(), errc::invalid_state);  // no handler
    EXPECT_ERRC(pool.add_handler("", [](const ops::op&, ops::handler_context&) {}), errc::invalid_argument);
    pool.add_handler("t", [](const ops::op&, ops::handler_context&) { throw std::runtime_error("first"); });
    pool.add_handler("t", [](const ops::op&, ops::handler_context&) {});  // replaces
    pool.start();
    EXPECT_ERRC(pool.start(), errc::invalid_state);
    EXPECT_ERRC(pool.add_handler("u", [](const ops::op&, ops::handler_context&) {}), errc::invalid_state);
    const auto id = enqueue("t");
    ASSERT_TRUE(eventually_status(id, ops::op_status::done));  // the second handler ran
    (void)pool.stop();
    EXPECT_ERRC(pool.start(), errc::invalid_state);
  }
  auto bad = fast();
  bad.workers = 0;
  EXPECT_ERRC(ops::worker_pool(q(), bad), errc::invalid_argument);
  bad = fast();
  bad.heartbeat_interval = 1s;
  bad.lease_timeout = 2s;
  EXPECT_ERRC(ops::worker_pool(q(), bad), errc::invalid_argument);
  bad = fast();
  bad.retry_jitter = 1.0;
  EXPECT_ERRC(ops::worker_pool(q(), bad), errc::invalid_argument);
  bad = fast();
  bad.batch = 0;
  EXPECT_ERRC(ops::worker_pool(q(), bad), errc::invalid_argument);
  bad.batch = 1001;
  EXPECT_ERRC(ops::worker_pool(q(), bad), errc::invalid_argument);
}

TEST_P(ops_worker_pool, AMixedBacklogDrainsExactlyOnceInPriorityOrder) {  // §9.28
  const int total = 5000;
  const std::vector<std::string> types{"t0", "t1", "t2", "t3"};
  std::vector<ops::new_op> batch;
  for (int i = 0; i < total; ++i) {
    auto o = new_op(types[static_cast<std::size_t>(i) % types.size()], {{"n", i}});
    o.priority = (i * 7) % 5;  // 0…4, interleaved with the types
    batch.push_back(std::move(o));
    if (batch.size() == 500) {
      (void)q().enqueue_batch(batch);
      batch.clear();
    }
  }
  ASSERT_EQ(count("status = 'pending'"), total);
  // PostgreSQL: two pools of 4 with distinct owners; SQLite: one pool of 4.
  const int pools = is_pg() ? 2 : 1, per_pool = 4, all_workers = pools * per_pool;
  const std::int64_t allowed_above = is_pg() ? all_workers - 1 : 0;
  std::mutex m;
  std::map<std::string, int> calls;
  std::int64_t worst_above = 0;
  std::atomic<int> handled{0};
  auto handler = [&](const ops::op& o, ops::handler_context&) {
    // Pending ops above this priority: only claims still in flight can hold them.
    const auto above =
        std::stoll(*sql("SELECT count(*) FROM ops_queue WHERE status = 'pending' AND priority > $1",
                        {static_cast<std::int64_t>(o.priority)})
                        .at(0)
                        .at(0));
    std::lock_guard lock(m);
    ++calls[o.id];
    worst_above = std::max<std::int64_t>(worst_above, above);
    ++handled;
  };
  std::vector<std::unique_ptr<ops::worker_pool>> running;
  for (int p = 0; p < pools; ++p) {
    auto opts = fast(per_pool);
    opts.owner = fmt::format("mixed-{}", p);
    // Exactly once needs every ack recorded: on a loaded machine a write may
    // wait long for the lock, and no rescuer runs here to requeue a lost one.
    opts.outcome_deadline = 120s;
    auto pool = std::make_unique<ops::worker_pool>(q(), opts);
    for (const auto& t : types) pool->add_handler(t, handler);
    running.push_back(std::move(pool));
  }
  for (auto& pool : running) pool->start();
  ASSERT_TRUE(eventually([&] { return handled.load() >= total && count("status <> 'done'") == 0; }, 600s))
      << handled.load() << " handled";
  std::uint64_t claimed = 0;
  for (auto& pool : running) {
    EXPECT_TRUE(pool->stop().still_running.empty());
    claimed += pool->metrics().total().claimed;
  }
  EXPECT_EQ(claimed, static_cast<std::uint64_t>(total));
  EXPECT_EQ(calls.size(), static_cast<std::size_t>(total));
  for (const auto& [id, n] : calls) ASSERT_EQ(n, 1) << id;
  EXPECT_EQ(count("status = 'done' AND attempts = 1"), total);
  EXPECT_LE(worst_above, allowed_above);
}

TEST_P(ops_worker_pool, APoolWithThreeHandlersClaimsExactlyItsThreeTypes) {  // §9.33 through a pool
  const auto a = enqueue("a"), b = enqueue("b"), c = enqueue("c"), d = enqueue("d");
  std::mutex m;
  std::set<std::string> ran;
  ops::worker_pool pool(q(), fast(3));
  for (const char* t : {"a", "b", "c"}) {
    pool.add_handler(t, [&](const ops::op& o, ops::handler_context&) {
      std::lock_guard lock(m);
      ran.insert(o.id);
    });
  }
  pool.start();
  ASSERT_TRUE(eventually([&] { return q().stats().done_24h == 3; }, 60s));
  (void)pool.stop();
  EXPECT_EQ(ran, (std::set<std::string>{a, b, c}));
  EXPECT_EQ(status_of(d), ops::op_status::pending);
  EXPECT_EQ(q().get(d).attempts, 0);
}

TEST_P(ops_worker_pool, IdleWorkersShareOneDequeuePerPollInterval) {  // §7.2
  auto opts = fast(8);
  opts.poll_interval = 100ms;
  ops::worker_pool pool(q(), opts);
  pool.add_handler("t", [](const ops::op&, ops::handler_context&) {});
  pool.start();
  ASSERT_TRUE(eventually([&] { return pool.metrics().idle_polls >= 10; }, 60s));
  (void)pool.stop();
  const auto mt = pool.metrics();
  // Each worker's first dequeue, then one per idle wait of the single poller.
  EXPECT_LE(mt.dequeues, static_cast<std::uint64_t>(opts.workers) + mt.idle_polls + mt.wakeups);
  EXPECT_GE(mt.dequeues, mt.idle_polls);
}

TEST_P(ops_worker_pool, AfterAnIdleSpellABurstOfOpsReachesEveryParkedWorker) {  // §7.2
  auto opts = fast(4);
  opts.poll_interval = 100ms;
  ops::worker_pool pool(q(), opts);
  latch_flag release;
  std::atomic<int> running{0}, peak{0};
  pool.add_handler("t", [&](const ops::op&, ops::handler_context& ctx) {
    const int now = ++running;
    int seen = peak.load();
    while (now > seen && !peak.compare_exchange_weak(seen, now)) {
    }
    (void)release.wait(ctx.stop_token());
    --running;
  });
  pool.start();
  ASSERT_TRUE(eventually([&] { return pool.metrics().idle_polls >= 2; }, 60s));  // the pool is idle
  for (int i = 0; i < 4; ++i) enqueue("t");
  // All four parked or polling workers end up running one op each.
  ASSERT_TRUE(eventually([&] { return running.load() == 4; }, 60s));
  release.set();
  ASSERT_TRUE(eventually([&] { return q().stats().done_24h == 4; }, 60s));
  (void)pool.stop();
  EXPECT_EQ(peak.load(), 4);
}

TEST_P(ops_worker_pool, HandlerLatencyIsRecordedPerTypeAndExportedThroughTheCallback) {  // §7.5
  std::mutex m;
  std::vector<ops::pool_metrics> exported;
  auto opts = fast(2);
  opts.metrics_interval = 50ms;
  opts.on_metrics = [&](const ops::pool_metrics& snapshot) {
    std::lock_guard lock(m);
    exported.push_back(snapshot);
  };
  ops::worker_pool pool(q(), opts);
  pool.add_handler("ok", [](const ops::op&, ops::handler_context&) {});
  pool.add_handler("bad", [](const ops::op&, ops::handler_context&) { throw ops::permanent_error("no"); });
  for (int i = 0; i < 3; ++i) enqueue("ok");
  enqueue("bad");
  pool.start();
  ASSERT_TRUE(eventually([&] { return q().stats().done_24h == 3 && q().stats().failed == 1; }, 60s));
  (void)pool.stop();
  const auto final_metrics = pool.metrics();
  EXPECT_EQ(final_metrics.by_type.at("ok").handler_latency.count, 3u);
  EXPECT_EQ(final_metrics.by_type.at("bad").handler_latency.count, 1u);  // a throwing handler is timed too
  EXPECT_EQ(final_metrics.total().handler_latency.count, 4u);
  const auto& h = final_metrics.by_type.at("ok").handler_latency;
  EXPECT_EQ(h.cumulative(h.buckets.size() - 1), h.count);
  std::lock_guard lock(m);
  ASSERT_FALSE(exported.empty());
  EXPECT_EQ(exported.back().by_type, final_metrics.by_type);  // stop() exports the final figures
}

// ---- PostgreSQL only: wake-ups by NOTIFY (§7.2) ----

class ops_postgres_pool_wakeups : public ops_worker_pool {
 protected:
  // Waits until this database's shared listener has issued its LISTEN.
  bool listening() {
    return eventually(
        [&] {
          return std::stoll(*sql("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                                 "AND query LIKE 'LISTEN %' AND pid <> pg_backend_pid()")
                                 .at(0)
                                 .at(0)) > 0;
        },
        60s);
  }
};

TEST_P(ops_postgres_pool_wakeups, ReadyNoticesNameOnlyTheSubscribedTypes) {
  auto nq = make_queue({.notify = true});
  std::mutex m;
  std::condition_variable cv;
  std::vector<bool> seen;
  auto sub = nq->subscribe_ready({"mine"}, [&](bool matched) {
    {
      std::lock_guard lock(m);
      seen.push_back(matched);
    }
    cv.notify_all();
  });
  ASSERT_TRUE(sub);
  ASSERT_TRUE(listening());
  auto other_db = database::open(uri_);  // another process's handle: its own connections
  ops::queue remote(other_db, {.notify = true});
  remote.enqueue(new_op("other"));
  remote.enqueue(new_op("mine"));
  std::unique_lock lock(m);
  // Notifications arrive in commit order on one connection: once "mine" is
  // seen, "other" has been handled (and ignored).
  ASSERT_TRUE(cv.wait_for(lock, 60s, [&] { return std::count(seen.begin(), seen.end(), true) == 1; }));
  EXPECT_LE(std::count(seen.begin(), seen.end(), false), 1);  // at most the one "look now" after LISTEN
  lock.unlock();
  sub.reset();
  auto plain = make_queue();  // notify off: no subscription
  EXPECT_FALSE(plain->subscribe_ready({"mine"}, [](bool) {}));
}

TEST_P(ops_postgres_pool_wakeups, ANotifyFromAnotherProcessWakesAnIdlePoolLongBeforeItsPoll) {
  auto nq = make_queue({.notify = true});
  auto opts = fast(2);
  opts.poll_interval = 10min;  // only a wake-up can make the ops below run within the test's wait
  ops::worker_pool pool(*nq, opts);
  std::atomic<int> calls{0};
  pool.add_handler("mine", [&](const ops::op&, ops::handler_context&) { ++calls; });
  pool.start();
  ASSERT_TRUE(listening());
  auto other_db = database::open(uri_);
  ops::queue remote(other_db, {.notify = true});
  const auto first = remote.enqueue(new_op("mine")).id;
  ASSERT_TRUE(eventually_status(first, ops::op_status::done));
  // A second round, after the listener's one "look now": only NOTIFY can wake it.
  const auto ignored = remote.enqueue(new_op("other")).id;
  const auto second = remote.enqueue(new_op("mine")).id;
  ASSERT_TRUE(eventually_status(second, ops::op_status::done));
  (void)pool.stop();
  EXPECT_EQ(calls.load(), 2);
  EXPECT_EQ(status_of(ignored), ops::op_status::pending);
  const auto mt = pool.metrics();
  EXPECT_EQ(mt.idle_polls, 0u);
  EXPECT_GE(mt.wakeups, 1u);
}

INSTANTIATE_TEST_SUITE_P(engines, ops_postgres_pool_wakeups, ::testing::Values(engine::postgres),
                         engine_name);

}  // namespace

TEST(ops_model, BackoffGrowsExponentiallyUpToTheCapWithJitterAroundIt) {  // §7.3
  const ops::retry_policy p{30s, 2.0, 1h, 0.2};
  EXPECT_EQ(ops::backoff_delay(1, p, 0.5), 30s);
  EXPECT_EQ(ops::backoff_delay(2, p, 0.5), 60s);
  EXPECT_EQ(ops::backoff_delay(3, p, 0.5), 120s);
  EXPECT_EQ(ops::backoff_delay(20, p, 0.5), 1h);
  EXPECT_EQ(ops::backoff_delay(20, p, 1.0), 1h);  // capped after the jitter too
  EXPECT_EQ(ops::backoff_delay(1, p, 0.0), 24s);
  EXPECT_EQ(ops::backoff_delay(1, p, 1.0), 36s);
  EXPECT_EQ(ops::backoff_delay(0, p, 0.5), 30s);
}

}  // namespace spool::test
