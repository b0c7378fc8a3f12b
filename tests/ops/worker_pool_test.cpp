// The worker pool (op-queue.md §5, §7; scenarios 11, 12, 13, 29–32, 40 of §9)
// on both engines, part one: batch claims, handlers by type, retries and
// failures, cancellation and leases. Lifecycle misuse, drains, idle workers,
// latency, NOTIFY wake-ups and the backoff model are in
// worker_pool_drain_test.cpp. Handlers signal the test through latches; the
// only waits are for database state, bounded by generous timeouts (no timing
// assertions).
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
  ASSERT_TRUE(eventually(
      [&] { return q().stats().done_24h == 30 && status_of(broken_id) == ops::op_status::failed; }, 30s));
  const auto report = pool.stop();
  EXPECT_TRUE(report.still_running.empty());
  EXPECT_EQ(seen.size(), 31u);  // each op ran once
  for (const auto& id : ids) EXPECT_EQ(seen.count(id), 1u) << id;
  const auto t = pool.metrics().total();
  EXPECT_EQ(t.claimed, 31u);
  EXPECT_EQ(t.succeeded, 30u);
  EXPECT_EQ(t.failed, 1u);
  // Claims carried several ops. Idle polls and wake-ups each lead to one more
  // dequeue, and a loaded machine adds them: only the others are counted.
  const auto pm = pool.metrics();
  EXPECT_LT(pm.dequeues, 31u + pm.idle_polls + pm.wakeups);
}

TEST_P(ops_worker_pool, ABatchPoolReleasesTheOpsOfAClaimItHasNotStartedWhenStopped) {
  for (int i = 0; i < 5; ++i) (void)enqueue("slow");
  latch_flag entered, never;
  std::atomic<int> runs{0};
  auto o = fast(1);
  o.batch = 5;
  ops::worker_pool pool(q(), o);
  pool.add_handler("slow", [&](const ops::op&, ops::handler_context& ctx) {
    ++runs;
    entered.set();
    (void)never.wait(ctx.stop_token());  // returns normally once stop() cancels it: an ack
  });
  pool.start();
  ASSERT_TRUE(entered.wait());
  // stop() stops claiming and starting before it cancels the running
  // handler, so the next four are never started, whatever the timing.
  const auto report = pool.stop(0ms);
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
  // A lease of 3 s: the requeued op's second run must keep its lease through
  // its claim and ack on a loaded machine (300 ms did not always).
  opts.heartbeat_interval = 1s;
  opts.lease_timeout = 3s;
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

SPOOL_OPS_BOTH_ENGINES(ops_worker_pool);

}  // namespace
}  // namespace spool::test
