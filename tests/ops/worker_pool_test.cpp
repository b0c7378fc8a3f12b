// The worker pool (op-queue.md §5, §7; scenarios 11, 12, 13, 29–32, 40 of §9)
// on both engines. Handlers signal the test through latches; the only waits
// are for database state, bounded by generous timeouts (no timing assertions).
#include "spool/ops/worker_pool.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <future>
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
}

SPOOL_OPS_BOTH_ENGINES(ops_worker_pool);

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
