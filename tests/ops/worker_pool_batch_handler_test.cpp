// The worker pool's batch handlers (worker_pool::add_batch_handler): a claim's
// ops of a type in one call, the call's outcome applied to each op, on both
// engines. The only waits are for database state (no timing assertions).
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include "ops_fixture.hpp"
#include "spool/ops/worker_pool.hpp"

namespace spool::test {
namespace {

class ops_batch_handler : public ops_conformance {
 protected:
  static ops::worker_pool_options fast(std::size_t batch) {
    ops::worker_pool_options o;
    o.workers = 1;
    o.batch = batch;
    o.poll_interval = 50ms;
    o.retry_base = 0ms;
    o.rescuer = false;
    return o;
  }
};

TEST_P(ops_batch_handler, ABatchHandlerGetsEachClaimsOpsInOneCallAndItsReturnAcksThemAll) {
  std::set<std::string> ids;
  for (int i = 0; i < 12; ++i) ids.insert(enqueue("bulk"));
  std::mutex m;
  std::vector<std::size_t> sizes;
  std::multiset<std::string> seen;
  ops::worker_pool pool(q(), fast(5));
  pool.add_batch_handler("bulk", [&](std::span<const ops::op> batch, ops::handler_context&) {
    std::lock_guard lock(m);
    sizes.push_back(batch.size());
    for (const auto& o : batch) {
      EXPECT_EQ(o.status, ops::op_status::running);
      EXPECT_TRUE(o.lease_token.has_value());
      seen.insert(o.id);
    }
  });
  pool.start();
  ASSERT_TRUE(eventually([&] { return q().stats().done_24h == 12; }, 30s));
  (void)pool.stop();
  EXPECT_EQ(seen, std::multiset<std::string>(ids.begin(), ids.end()));  // each op once
  for (const auto n : sizes) EXPECT_LE(n, 5u);
  EXPECT_LT(sizes.size(), 12u) << "some call carried several ops";
  const auto t = pool.metrics().total();
  EXPECT_EQ(t.claimed, 12u);
  EXPECT_EQ(t.succeeded, 12u);
}

TEST_P(ops_batch_handler, AThrowingBatchHandlerRetriesEveryOpOfItsCallAndAPermanentErrorFailsThemAll) {
  std::vector<std::string> flaky, doomed;
  for (int i = 0; i < 3; ++i) flaky.push_back(enqueue("flaky"));
  for (int i = 0; i < 3; ++i) doomed.push_back(enqueue("doomed"));
  std::mutex m;
  std::map<std::string, int> calls_of;
  ops::worker_pool pool(q(), fast(10));
  pool.add_batch_handler("flaky", [&](std::span<const ops::op> batch, ops::handler_context&) {
    std::lock_guard lock(m);
    bool first = false;
    for (const auto& o : batch) first = ++calls_of[o.id] == 1 || first;
    if (first) throw std::runtime_error("not yet");  // a call with an op on its first attempt fails
  });
  pool.add_batch_handler("doomed", [&](std::span<const ops::op>, ops::handler_context&) {
    throw ops::permanent_error("cannot");
  });
  pool.start();
  ASSERT_TRUE(eventually(
      [&] {
        const auto s = q().stats();
        return s.done_24h == 3 && s.failed == 3;
      },
      30s));
  (void)pool.stop();
  for (const auto& id : flaky) {
    const auto o = q().get(id);
    EXPECT_EQ(o.status, ops::op_status::done) << id;
    EXPECT_GE(o.attempts, 2) << id << ": failed once, then done";
  }
  for (const auto& id : doomed) {
    const auto o = q().get(id);
    EXPECT_EQ(o.status, ops::op_status::failed) << id;
    EXPECT_EQ(o.attempts, 1) << id << ": no retry";
    EXPECT_EQ(o.last_error, "cannot");
  }
}

TEST_P(ops_batch_handler, AddBatchHandlerRefusesAnEmptyTypeOrHandlerAndCallsAfterStart) {
  ops::worker_pool pool(q(), fast(2));
  EXPECT_ERRC(pool.add_batch_handler("", [](std::span<const ops::op>, ops::handler_context&) {}),
              errc::invalid_argument);
  EXPECT_ERRC(pool.add_batch_handler("t", ops::batch_op_handler{}), errc::invalid_argument);
  pool.add_batch_handler("t", [](std::span<const ops::op>, ops::handler_context&) {});
  pool.start();
  EXPECT_ERRC(pool.add_batch_handler("u", [](std::span<const ops::op>, ops::handler_context&) {}),
              errc::invalid_state);
  (void)pool.stop();
}

TEST_P(ops_batch_handler, ALostLeaseStopsTheBatchCallAndItsOpsGetNoOutcomeFromIt) {
  const auto a = enqueue("job"), b = enqueue("job");
  std::atomic<int> calls{0};
  std::atomic<bool> started{false};
  std::atomic<ops::stop_cause> seen{ops::stop_cause::none};
  auto opts = fast(2);
  // A lease of 3 s: the requeued ops' next call must keep its leases through
  // its claim and ack on a loaded machine.
  opts.heartbeat_interval = 1s;
  opts.lease_timeout = 3s;
  ops::worker_pool pool(q(), opts);
  pool.add_batch_handler("job", [&](std::span<const ops::op>, ops::handler_context& ctx) {
    if (++calls > 1) return;  // the requeued ops' next call succeeds
    started = true;
    while (!ctx.stop_requested()) std::this_thread::sleep_for(10ms);
    seen = ctx.cause();
    throw std::runtime_error("cancelled");
  });
  pool.start();
  ASSERT_TRUE(eventually([&] { return started.load(); }, 20s));
  ASSERT_EQ(q().recover_orphans(0s), 2);  // an operator requeues both: this call's leases are gone
  ASSERT_TRUE(eventually(
      [&] { return q().get(a).status == ops::op_status::done && q().get(b).status == ops::op_status::done; },
      30s));
  (void)pool.stop();
  EXPECT_EQ(seen.load(), ops::stop_cause::lease_lost);
  EXPECT_EQ(pool.metrics().by_type.at("job").retried, 0u) << "the cancelled call's failure was recorded";
  EXPECT_EQ(q().get(a).attempts, 2);
  EXPECT_EQ(q().get(b).attempts, 2);
  EXPECT_EQ(pool.metrics().by_type.at("job").lease_lost, 2u);
  EXPECT_EQ(pool.metrics().by_type.at("job").succeeded, 2u);
}

SPOOL_OPS_BOTH_ENGINES(ops_batch_handler);

}  // namespace
}  // namespace spool::test
