// op-queue.md §9 scenarios 1–10 (baseline behaviour restated from filex's
// tests with Spool's semantics), on both engines.
#include <set>

#include "ops/ops_fixture.hpp"

namespace spool::test {
namespace {

class ops_baseline : public ops_conformance {};

TEST_P(ops_baseline, EnqueueDequeueAndAckRoundTripWithAnIntegerPayload) {  // §9.1
  const std::string id = enqueue("thumb", {{"n", 123}});
  EXPECT_EQ(id.size(), 32u);
  auto got = q().dequeue();
  ASSERT_TRUE(got);
  EXPECT_EQ(got->id, id);
  EXPECT_EQ(got->status, ops::op_status::running);
  EXPECT_EQ(got->attempts, 1);
  EXPECT_EQ(got->max_attempts, 3);
  ASSERT_TRUE(got->payload["n"].is_number_integer());
  EXPECT_EQ(got->payload["n"].get<std::int64_t>(), 123);
  ASSERT_TRUE(got->lease_token);
  EXPECT_EQ(got->lease_token->size(), 32u);
  EXPECT_EQ(got->lease_owner, q().owner());
  EXPECT_FALSE(q().dequeue());
  q().ack(got->id, *got->lease_token);
  const auto done = q().get(id);
  EXPECT_EQ(done.status, ops::op_status::done);
  EXPECT_TRUE(done.finished_at);
  EXPECT_TRUE(done.started_at);
  EXPECT_FALSE(done.lease_token) << "get never returns the token";
}

TEST_P(ops_baseline, ATypeFilterReturnsOnlyThatType) {  // §9.2
  const auto thumb = enqueue("thumb");
  const auto report = enqueue("replica_report");
  EXPECT_EQ(claim({"thumb"}).id, thumb);
  EXPECT_FALSE(q().dequeue({"thumb"}));
  EXPECT_EQ(claim({"replica_report"}).id, report);
}

TEST_P(ops_baseline, HigherPriorityComesFirstThenTheOlderOp) {  // §9.3
  const auto old0 = enqueue("t", {}, 0);
  if (!is_pg()) std::this_thread::sleep_for(1100ms);  // a later second on SQLite
  const auto young0 = enqueue("t", {}, 0);
  const auto urgent = enqueue("t", {}, 100);
  EXPECT_EQ(claim().id, urgent);
  EXPECT_EQ(claim().id, old0);
  EXPECT_EQ(claim().id, young0);
}

TEST_P(ops_baseline, FailWithRetryRequeuesThirtySecondsLaterAndIsNotDequeuableAtOnce) {  // §9.4
  const auto id = enqueue("t");
  const auto c = claim();
  EXPECT_EQ(q().fail(id, *c.lease_token, "boom", true), ops::op_status::pending);
  const auto o = q().get(id);
  EXPECT_EQ(o.status, ops::op_status::pending);
  EXPECT_EQ(o.last_error, "boom");
  ASSERT_TRUE(o.not_before);
  const auto expected = utc_now() + 30s;
  EXPECT_LE(std::chrono::abs(*o.not_before - expected), 2s) << ops::format_time(*o.not_before);
  EXPECT_FALSE(o.started_at);
  EXPECT_FALSE(o.finished_at);
  EXPECT_FALSE(q().dequeue());
}

TEST_P(ops_baseline, FailWithoutRetryIsTerminal) {  // §9.5
  const auto id = enqueue("t");
  const auto c = claim();
  EXPECT_EQ(q().fail(id, *c.lease_token, "fatal", false), ops::op_status::failed);
  const auto o = q().get(id);
  EXPECT_EQ(o.status, ops::op_status::failed);
  EXPECT_TRUE(o.finished_at);
  EXPECT_EQ(o.last_error, "fatal");
  EXPECT_FALSE(q().dequeue());
}

TEST_P(ops_baseline, RetryMovesFailedToPendingAndKeepsAttempts) {  // §9.6
  const auto id = enqueue("t");
  const auto c = claim();
  q().fail(id, *c.lease_token, "fatal", false);
  const auto back = q().retry(id);
  EXPECT_EQ(back.status, ops::op_status::pending);
  EXPECT_EQ(back.attempts, 1);
  EXPECT_EQ(back.last_error, "");
  const auto again = claim();
  EXPECT_EQ(again.id, id);
  EXPECT_EQ(again.attempts, 2);
  q().ack(id, *again.lease_token);
  EXPECT_ERRC(q().retry(id), errc::invalid_state);
  EXPECT_ERRC(q().retry("no-such-op"), errc::not_found);
}

TEST_P(ops_baseline, RetryWithResetStartsTheBudgetAgain) {
  const auto id = enqueue("t");
  const auto c = claim();
  q().fail(id, *c.lease_token, "fatal", false);
  EXPECT_EQ(q().retry(id, true).attempts, 0);
}

TEST_P(ops_baseline, CancelAPendingOpAndCancellingAgainNamesItsStatus) {  // §9.7
  const auto id = enqueue("t");
  const auto o = q().cancel(id);
  EXPECT_EQ(o.status, ops::op_status::cancelled);
  EXPECT_TRUE(o.finished_at);
  try {
    q().cancel(id);
    ADD_FAILURE() << "cancelling twice succeeded";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::invalid_state);
    EXPECT_NE(std::string(e.what()).find("cancelled"), std::string::npos) << e.what();
  }
  EXPECT_ERRC(q().cancel("no-such-op"), errc::not_found);
  EXPECT_FALSE(q().dequeue());
}

TEST_P(ops_baseline, ARunningOpCannotBeCancelled) {
  enqueue("t");
  const auto c = claim();
  EXPECT_ERRC(q().cancel(c.id), errc::invalid_state);
}

TEST_P(ops_baseline, StatsCountOnePendingOneFailedAndOneDoneInTheLastDay) {  // §9.8
  enqueue("a");
  enqueue("b");
  enqueue("c");
  auto x = claim();
  q().ack(x.id, *x.lease_token);
  auto y = claim();
  q().fail(y.id, *y.lease_token, "no", false);
  const auto s = q().stats();
  EXPECT_EQ(s.pending, 1);
  EXPECT_EQ(s.failed, 1);
  EXPECT_EQ(s.done_24h, 1);
  EXPECT_EQ(s.running, 0);
  EXPECT_EQ(s.cancelled, 0);
}

TEST_P(ops_baseline, StatsIgnoreDoneRowsOlderThanADayAndUnknownStatuses) {
  const auto id = enqueue("a");
  auto x = claim();
  q().ack(x.id, *x.lease_token);
  sql(is_pg() ? "UPDATE ops_queue SET finished_at = now() - interval '25 hours' WHERE id = $1"
              : "UPDATE ops_queue SET finished_at = datetime('now', '-25 hours') WHERE id = $1",
      {id});
  sql("INSERT INTO ops_queue (id, type, status) VALUES ('odd', 't', 'paused')");
  const auto s = q().stats();
  EXPECT_EQ(s.done_24h, 0);
  EXPECT_EQ(s.pending + s.running + s.failed + s.cancelled, 0);
}

TEST_P(ops_baseline, ListCountsEverythingAndPagesWithoutRepeats) {  // §9.9
  for (int i = 0; i < 5; ++i) enqueue("t", {{"i", i}});
  EXPECT_EQ(q().list().total, 5);
  EXPECT_EQ(q().list("pending").total, 5);
  std::set<std::string> seen;
  const std::pair<int, std::size_t> pages[] = {{0, 2}, {2, 2}, {4, 1}};
  for (const auto& [offset, size] : pages) {
    const auto page = q().list("", 2, offset);
    EXPECT_EQ(page.total, 5);
    EXPECT_EQ(page.ops.size(), size) << "offset " << offset;
    for (const auto& o : page.ops) EXPECT_TRUE(seen.insert(o.id).second) << o.id << " repeated";
  }
  EXPECT_EQ(seen.size(), 5u);
  EXPECT_EQ(q().list("done").total, 0);
  EXPECT_TRUE(q().list("done").ops.empty());
}

TEST_P(ops_baseline, ListRejectsABadLimitOrOffset) {
  EXPECT_ERRC((void)q().list("", -1), errc::invalid_argument);
  EXPECT_ERRC((void)q().list("", 501), errc::invalid_argument);
  EXPECT_ERRC((void)q().list("", 10, -1), errc::invalid_argument);
  EXPECT_NO_THROW((void)q().list("", 500));
}

TEST_P(ops_baseline, RecoverOrphansWithZeroRequeuesTheRunningOp) {  // §9.10
  enqueue("t");
  const auto c = claim();
  EXPECT_EQ(q().recover_orphans(0s), 1);
  const auto o = q().get(c.id);
  EXPECT_EQ(o.status, ops::op_status::pending);
  EXPECT_FALSE(o.started_at);
  EXPECT_EQ(o.attempts, 1);
  EXPECT_ERRC(q().recover_orphans(-1s), errc::invalid_argument);
  // The recovered worker is fenced.
  EXPECT_ERRC(q().ack(c.id, *c.lease_token), errc::lease_lost);
}

TEST_P(ops_baseline, RecoverOrphansLeavesOpsStartedMoreRecentlyThanTheThreshold) {
  enqueue("t");
  claim();
  EXPECT_EQ(q().recover_orphans(1h), 0);
  EXPECT_EQ(q().stats().running, 1);
}

SPOOL_OPS_BOTH_ENGINES(ops_baseline);

}  // namespace
}  // namespace spool::test
