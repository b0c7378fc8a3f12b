// The worker pool (op-queue.md §5, §7; scenarios 11, 12, 13, 29–32, 40 of §9)
// on both engines. Handlers signal the test through latches; the only waits
// are for database state, bounded by generous timeouts (no timing assertions).
#include "spool/ops/worker_pool.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <future>
#include <map>
#include <mutex>
#include <set>

#include "ops_fixture.hpp"

namespace spool::test {
namespace {

// A one-shot signal between threads.
class latch_flag {
 public:
  void set() {
    {
      std::lock_guard lock(m_);
      set_ = true;
    }
    cv_.notify_all();
  }
  bool wait(std::chrono::milliseconds timeout = 20s) {
    std::unique_lock lock(m_);
    return cv_.wait_for(lock, timeout, [&] { return set_; });
  }
  // Waits until set or until stop is requested; true when set.
  bool wait(const std::stop_token& stop) {
    std::unique_lock lock(m_);
    return cv_.wait(lock, stop, [&] { return set_; });
  }

 private:
  std::mutex m_;
  std::condition_variable_any cv_;
  bool set_ = false;
};

class ops_worker_pool : public ops_conformance {
 protected:
  // Fast options for tests: short polls, no retry delay, the rescuer off
  // unless a test turns it on.
  static ops::worker_pool_options fast(int workers = 2) {
    ops::worker_pool_options o;
    o.workers = workers;
    o.poll_interval = 50ms;
    o.retry_base = 0ms;
    o.rescuer = false;
    o.shutdown_deadline = 20s;
    o.cancel_grace = 10s;
    return o;
  }

  ops::op_status status_of(const std::string& id) { return q().get(id).status; }

  bool eventually_status(const std::string& id, ops::op_status s) {
    return eventually([&] { return status_of(id) == s; }, 30s);
  }
};

TEST_P(ops_worker_pool, ABatchPoolClaimsManyOpsPerDequeueAndAcksTheSucceededOnesTogether) {
  std::vector<std::string> ids;
  for (int i = 0; i < 30; ++i) ids.push_back(enqueue("bulk"));
  auto broken = new_op("bulk");
  broken.max_attempts = 1;
  const auto broken_id = q().enqueue(broken).id;
  std::mutex m;
  std::multiset<std::string> seen;
  auto o = fast(2);
  o.batch = 8;
  ops::worker_pool pool(q(), o);
  pool.add_handler("bulk", [&](const ops::op& op, ops::handler_context&) {
    {
      std::lock_guard lock(m);
      seen.insert(op.id);
    }
    if (op.id == broken_id) throw ops::permanent_error("cannot");
  });
  pool.start();
  ASSERT_TRUE(eventually([&] { return q().stats().done_24h == 30 && status_of(broken_id) == ops::op_status::failed; },
                         30s));
  const auto report = pool.stop();
  EXPECT_TRUE(report.still_running.empty());
  EXPECT_EQ(seen.size(), 31u);  // each op ran once
  for (const auto& id : ids) EXPECT_EQ(seen.count(id), 1u) << id;
  const auto t = pool.metrics().total();
  EXPECT_EQ(t.claimed, 31u);
  EXPECT_EQ(t.succeeded, 30u);
  EXPECT_EQ(t.failed, 1u);
  EXPECT_LT(pool.metrics().dequeues, 31u);  // claims carried several ops
}

TEST_P(ops_worker_pool, ABatchPoolReleasesTheOpsOfAClaimItHasNotStartedWhenStopped) {
  for (int i = 0; i < 5; ++i) (void)enqueue("slow");
  latch_flag entered, release;
  std::atomic<int> runs{0};
  auto o = fast(1);
  o.batch = 5;
  ops::worker_pool pool(q(), o);
  pool.add_handler("slow", [&](const ops::op&, ops::handler_context&) {
    ++runs;
    entered.set();
    (void)release.wait(20s);
  });
  pool.start();
  ASSERT_TRUE(entered.wait());
  auto stopping = std::async(std::launch::async, [&] { return pool.stop(); });
  std::this_thread::sleep_for(200ms);  // let stop() begin: the next four are not started
  release.set();
  const auto report = stopping.get();
  EXPECT_TRUE(report.still_running.empty());
  EXPECT_EQ(runs.load(), 1);
  EXPECT_EQ(q().stats().done_24h, 1);
  EXPECT_EQ(q().stats().pending, 4);  // released, attempts not consumed as failures
  EXPECT_EQ(pool.metrics().total().released, 4u);
}

TEST_P(ops_worker_pool, HandlersRunByTypeAndOnlyRegisteredTypesAreClaimed) {  // §7.1, §9.11
  const auto a1 = enqueue("a"), a2 = enqueue("a"), b1 = enqueue("b"), c1 = enqueue("c");
  std::mutex m;
  std::multiset<std::string> seen;
  ops::worker_pool pool(q(), fast(3));
  pool.add_handler("a", [&](const ops::op& o, ops::handler_context&) {
    std::lock_guard lock(m);
    seen.insert("a:" + o.id);
  });
  pool.add_handler("b", [&](const ops::op& o, ops::handler_context&) {
    std::lock_guard lock(m);
    seen.insert("b:" + o.id);
  });
  EXPECT_EQ(pool.types(), (std::vector<std::string>{"a", "b"}));
  pool.start();
  ASSERT_TRUE(eventually([&] { return q().stats().done_24h == 3; }, 30s));
  const auto report = pool.stop();
  EXPECT_TRUE(report.still_running.empty());
  EXPECT_EQ(seen, (std::multiset<std::string>{"a:" + a1, "a:" + a2, "b:" + b1}));
  EXPECT_EQ(status_of(c1), ops::op_status::pending);
  EXPECT_EQ(q().get(c1).attempts, 0);
  const auto m2 = pool.metrics();
  EXPECT_EQ(m2.by_type.at("a").claimed, 2u);
  EXPECT_EQ(m2.by_type.at("a").succeeded, 2u);
  EXPECT_EQ(m2.by_type.at("b").succeeded, 1u);
  EXPECT_EQ(m2.by_type.count("c"), 0u);
  EXPECT_EQ(m2.in_flight, 0);
}

TEST_P(ops_worker_pool, AFailingHandlerIsRetriedWithBackoffUntilItSucceeds) {  // §9.12
  auto o = new_op("flaky");
  o.max_attempts = 5;
  const auto id = q().enqueue(o).id;
  std::atomic<int> calls{0};
  ops::worker_pool pool(q(), fast(1));
  pool.add_handler("flaky", [&](const ops::op&, ops::handler_context&) {
    if (++calls < 3) throw std::runtime_error("not yet");
  });
  pool.start();
  ASSERT_TRUE(eventually_status(id, ops::op_status::done));
  (void)pool.stop();
  const auto got = q().get(id);
  EXPECT_EQ(got.attempts, 3);
  EXPECT_EQ(calls.load(), 3);
  EXPECT_EQ(pool.metrics().by_type.at("flaky").retried, 2u);
  EXPECT_EQ(pool.metrics().by_type.at("flaky").succeeded, 1u);
}

TEST_P(ops_worker_pool, AHandlerThatAlwaysThrowsEndsFailedAtMaxAttemptsWithItsMessage) {  // §7.3
  auto o = new_op("broken");
  o.max_attempts = 3;
  const auto id = q().enqueue(o).id;
  std::atomic<int> calls{0};
  ops::worker_pool pool(q(), fast(1));
  pool.add_handler("broken", [&](const ops::op& op, ops::handler_context&) {
    ++calls;
    throw std::runtime_error("boom " + std::to_string(op.attempts));
  });
  pool.start();
  ASSERT_TRUE(eventually_status(id, ops::op_status::failed));
  (void)pool.stop();
  const auto got = q().get(id);
  EXPECT_EQ(got.attempts, 3);
  EXPECT_EQ(got.last_error, "boom 3");
  EXPECT_EQ(calls.load(), 3);
  EXPECT_EQ(pool.metrics().by_type.at("broken").retried, 2u);
  EXPECT_EQ(pool.metrics().by_type.at("broken").failed, 1u);
}

TEST_P(ops_worker_pool, APermanentErrorFailsTheOpWithoutRetry) {  // §7.3
  const auto id = enqueue("p");
  std::atomic<int> calls{0};
  ops::worker_pool pool(q(), fast(1));
  pool.add_handler("p", [&](const ops::op&, ops::handler_context&) {
    ++calls;
    throw ops::permanent_error("bad input");
  });
  pool.start();
  ASSERT_TRUE(eventually_status(id, ops::op_status::failed));
  (void)pool.stop();
  const auto got = q().get(id);
  EXPECT_EQ(got.attempts, 1);
  EXPECT_EQ(got.last_error, "bad input");
  EXPECT_TRUE(got.finished_at.has_value());
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(pool.metrics().by_type.at("p").failed, 1u);
}

TEST_P(ops_worker_pool, RetryLaterRequeuesTheOpAtTheChosenTime) {  // §7.3
  const auto id = enqueue("later");
  std::atomic<int> calls{0};
  ops::worker_pool pool(q(), fast(1));
  pool.add_handler("later", [&](const ops::op&, ops::handler_context&) {
    ++calls;
    throw ops::retry_later("come back in an hour", std::chrono::hours(1));
  });
  const auto before = utc_now();
  pool.start();
  ASSERT_TRUE(eventually([&] { return pool.metrics().by_type.at("later").retried == 1; }, 30s));
  (void)pool.stop();
  const auto got = q().get(id);
  EXPECT_EQ(got.status, ops::op_status::pending);
  EXPECT_EQ(got.last_error, "come back in an hour");
  ASSERT_TRUE(got.not_before.has_value());
  EXPECT_GT(*got.not_before, before + 50min);
  EXPECT_EQ(calls.load(), 1);
}

TEST_P(ops_worker_pool,
       GracefulStopRecordsTheOutcomeOfARunningHandlerAndReleasesACancelledOne) {  // §9.13, §9.32
  const auto a = enqueue("finishes"), b = enqueue("blocks");
  latch_flag a_started, b_started, release_a;
  ops::worker_pool pool(q(), fast(2));
  pool.add_handler("finishes", [&](const ops::op&, ops::handler_context&) {
    a_started.set();
    release_a.wait();
  });
  pool.add_handler("blocks", [&](const ops::op&, ops::handler_context& ctx) {
    b_started.set();
    latch_flag never;
    never.wait(ctx.stop_token());
    EXPECT_EQ(ctx.cause(), ops::stop_cause::shutdown);
    throw std::runtime_error("cancelled");
  });
  pool.start();
  ASSERT_TRUE(a_started.wait());
  ASSERT_TRUE(b_started.wait());
  auto stopping = std::async(std::launch::async, [&] { return pool.stop(2s); });
  release_a.set();
  const auto report = stopping.get();
  EXPECT_TRUE(report.still_running.empty());
  EXPECT_EQ(status_of(a), ops::op_status::done);
  const auto got = q().get(b);
  EXPECT_EQ(got.status, ops::op_status::pending);
  EXPECT_EQ(got.attempts, 0);
  EXPECT_EQ(got.last_error, "interrupted by shutdown: cancelled");
  EXPECT_EQ(count("status = 'running'"), 0);
  EXPECT_EQ(pool.metrics().by_type.at("blocks").released, 1u);
  EXPECT_EQ(pool.metrics().by_type.at("finishes").succeeded, 1u);
  EXPECT_EQ(pool.stop().still_running, report.still_running);  // idempotent
}

TEST_P(ops_worker_pool, AHandlerThatIgnoresCancellationIsReportedByStop) {  // §7.4
  const auto id = enqueue("stubborn");
  latch_flag started, finish;
  auto opts = fast(1);
  opts.cancel_grace = 100ms;
  auto pool = std::make_unique<ops::worker_pool>(q(), opts);
  pool->add_handler("stubborn", [&](const ops::op&, ops::handler_context&) {
    started.set();
    finish.wait();
  });
  pool->start();
  ASSERT_TRUE(started.wait());
  const auto report = pool->stop(0ms);
  EXPECT_EQ(report.still_running, std::vector<std::string>{id});
  finish.set();
  pool.reset();  // joins the handler, which records its outcome
  EXPECT_EQ(status_of(id), ops::op_status::done);
}

TEST_P(ops_worker_pool,
       HeartbeatsKeepALongOpsLeaseFromAnotherPoolsRescuer) {  // §5.1, §5.2, §9.30 in one process
  // A lease of many heartbeats: on a loaded 2-core CI machine one heartbeat
  // can be late by several hundred milliseconds, and this test is about the
  // rescuer respecting live heartbeats, not about scheduling jitter. SQLite
  // stores whole seconds, so its lease must be several seconds long.
  const auto hb = is_pg() ? 100ms : 1000ms;
  const auto lease = is_pg() ? 2000ms : 4000ms;
  const auto id = enqueue("long");
  latch_flag started, finish;
  std::atomic<int> calls{0};
  auto opts = fast(1);
  opts.heartbeat_interval = hb;
  opts.lease_timeout = lease;
  opts.owner = "pool-a";
  ops::worker_pool a(q(), opts);
  a.add_handler("long", [&](const ops::op&, ops::handler_context& ctx) {
    ++calls;
    started.set();
    finish.wait();
    EXPECT_FALSE(ctx.stop_requested());
  });
  auto ropts = opts;
  ropts.owner = "pool-b";
  ropts.rescuer = true;
  ropts.rescue_interval = hb;
  ops::worker_pool b(q(), ropts);
  b.add_handler("other", [](const ops::op&, ops::handler_context&) {});
  a.start();
  ASSERT_TRUE(started.wait());
  const auto first = q().get(id);
  ASSERT_TRUE(first.heartbeat_at.has_value());
  b.start();
  // Wait until the op has been running for 2 lease timeouts, as its heartbeats show.
  const auto until = *first.heartbeat_at + std::chrono::duration_cast<std::chrono::microseconds>(2 * lease);
  ASSERT_TRUE(eventually(
      [&] {
        const auto now = q().get(id);
        return now.status != ops::op_status::running || (now.heartbeat_at && *now.heartbeat_at >= until);
      },
      60s));
  EXPECT_EQ(status_of(id), ops::op_status::running);
  finish.set();
  ASSERT_TRUE(eventually_status(id, ops::op_status::done));
  (void)a.stop();
  (void)b.stop();
  EXPECT_EQ(q().get(id).attempts, 1);
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(b.metrics().total().recovered, 0u);
  EXPECT_EQ(a.metrics().total().lease_lost, 0u);
}

TEST_P(ops_worker_pool, AnExpiredLeaseIsRescuedAndTheOpCompletedByThePool) {  // §9.29 in one process
  const auto id = enqueue("job");
  const auto dead = claim({"job"});  // a worker that died: it never heartbeats
  age_heartbeat(id);
  auto opts = fast(1);
  opts.rescuer = true;
  opts.rescue_interval = 100ms;
  opts.heartbeat_interval = 1s;
  opts.lease_timeout = 3s;
  ops::worker_pool pool(q(), opts);
  pool.add_handler("job", [](const ops::op&, ops::handler_context&) {});
  pool.start();
  ASSERT_TRUE(eventually_status(id, ops::op_status::done));
  (void)pool.stop();
  EXPECT_EQ(q().get(id).attempts, 2);
  EXPECT_EQ(pool.metrics().by_type.at("job").recovered, 1u);
  EXPECT_ERRC(q().ack(id, *dead.lease_token), errc::lease_lost);
}

TEST_P(ops_worker_pool, ALostLeaseCancelsTheHandlerAndRecordsNothing) {  // §5.1, §7.3
  const auto id = enqueue("job");
  latch_flag started;
  std::atomic<int> calls{0};
  std::atomic<ops::stop_cause> seen{ops::stop_cause::none};
  auto opts = fast(1);
  opts.heartbeat_interval = 100ms;
  opts.lease_timeout = 300ms;
  ops::worker_pool pool(q(), opts);
  pool.add_handler("job", [&](const ops::op&, ops::handler_context& ctx) {
    if (++calls > 1) return;  // the requeued op's second run succeeds
    started.set();
    latch_flag never;
    never.wait(ctx.stop_token());
    seen = ctx.cause();
  });
  pool.start();
  ASSERT_TRUE(started.wait());
  ASSERT_EQ(q().recover_orphans(0s), 1);  // an operator requeues it: this claim is gone
  ASSERT_TRUE(eventually_status(id, ops::op_status::done));
  (void)pool.stop();
  EXPECT_EQ(seen.load(), ops::stop_cause::lease_lost);
  EXPECT_EQ(calls.load(), 2);
  EXPECT_EQ(q().get(id).attempts, 2);
  EXPECT_EQ(pool.metrics().by_type.at("job").lease_lost, 1u);
  EXPECT_EQ(pool.metrics().by_type.at("job").succeeded, 1u);
}

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

SPOOL_OPS_BOTH_ENGINES(ops_worker_pool);

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
