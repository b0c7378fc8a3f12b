// op-queue.md §9 scenarios 31 (stale ack) and 35 (fencing and state): the
// fencing table of §4.5 on both engines.
#include <atomic>
#include <thread>

#include "ops/ops_fixture.hpp"

namespace spool::test {
namespace {

class ops_fencing : public ops_conformance {};

TEST_P(ops_fencing, AStaleAckIsLeaseLostWhileTheCurrentClaimAcksAndReplaysSafely) {  // §9.31
  const auto id = enqueue("t");
  const auto w1 = claim();  // worker 1 (token T1) stops heartbeating
  age_heartbeat(id);
  ASSERT_EQ(q().rescue_expired(60s).size(), 1u);
  EXPECT_ERRC(q().ack(id, *w1.lease_token), errc::lease_lost);
  const auto w2 = claim();  // worker 2 (token T2)
  EXPECT_NE(w2.lease_token, w1.lease_token);
  EXPECT_ERRC(q().ack(id, *w1.lease_token), errc::lease_lost);
  const auto mid = q().get(id);
  EXPECT_EQ(mid.status, ops::op_status::running);
  EXPECT_EQ(mid.attempts, 2);
  q().ack(id, *w2.lease_token);
  const auto done = q().get(id);
  EXPECT_EQ(done.status, ops::op_status::done);
  EXPECT_NO_THROW(q().ack(id, *w2.lease_token)) << "a replayed ack succeeds";
  EXPECT_EQ(q().get(id).finished_at, done.finished_at) << "… without change";
}

TEST_P(ops_fencing, UnknownIdsAreNotFound) {  // §9.35
  EXPECT_ERRC(q().ack("nope", "0123456789abcdef0123456789abcdef"), errc::not_found);
  EXPECT_ERRC(q().ack("nope"), errc::not_found);
  EXPECT_ERRC(q().fail("nope", "", "x", false), errc::not_found);
  EXPECT_ERRC(q().release("nope", "", "x"), errc::not_found);
  EXPECT_ERRC(q().heartbeat("nope", "t"), errc::not_found);
}

TEST_P(ops_fencing, ATokenlessAckOnAPendingOpIsInvalidState) {  // §9.35
  const auto id = enqueue("t");
  try {
    q().ack(id);
    ADD_FAILURE() << "ack succeeded";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::invalid_state);
    EXPECT_NE(std::string(e.what()).find("pending"), std::string::npos) << e.what();
  }
  EXPECT_EQ(q().get(id).status, ops::op_status::pending);
}

TEST_P(ops_fencing, OnADoneOpATokenlessFailIsInvalidStateAndAnotherTokenIsLeaseLost) {  // §9.35
  const auto id = enqueue("t");
  const auto c = claim();
  q().ack(id, *c.lease_token);
  EXPECT_ERRC(q().fail(id, "", "late", false), errc::invalid_state);
  EXPECT_ERRC(q().fail(id, "ffffffffffffffffffffffffffffffff", "late", false), errc::lease_lost);
  // The op's own token meets a different outcome: not a replay of this fail.
  EXPECT_ERRC(q().fail(id, *c.lease_token, "late", false), errc::lease_lost);
  EXPECT_EQ(q().get(id).status, ops::op_status::done);
}

TEST_P(ops_fencing, FailWithRetryAtTheLastAttemptGivesFailedAndReplaysAsFailed) {  // §9.35
  auto o = new_op("t");
  o.max_attempts = 1;
  const auto id = q().enqueue(o).id;
  const auto c = claim();
  EXPECT_EQ(q().fail(id, *c.lease_token, "boom", true), ops::op_status::failed);
  const auto f = q().get(id);
  EXPECT_EQ(f.status, ops::op_status::failed);
  EXPECT_TRUE(f.finished_at);
  EXPECT_EQ(q().fail(id, *c.lease_token, "boom", true), ops::op_status::failed) << "a replay is recognised";
}

TEST_P(ops_fencing, ARunningOpRejectsAWrongOrMissingToken) {
  const auto id = enqueue("t");
  const auto c = claim();
  EXPECT_ERRC(q().ack(id), errc::lease_lost);
  EXPECT_ERRC(q().ack(id, "ffffffffffffffffffffffffffffffff"), errc::lease_lost);
  EXPECT_ERRC(q().heartbeat(id, "ffffffffffffffffffffffffffffffff"), errc::lease_lost);
  EXPECT_NO_THROW(q().heartbeat(id, *c.lease_token));
  EXPECT_EQ(q().get(id).status, ops::op_status::running);
}

TEST_P(ops_fencing, ReplayingARetryingFailIsLeaseLostBecauseTheTokenIsCleared) {
  const auto id = enqueue("t");
  const auto c = claim();
  EXPECT_EQ(q().fail(id, *c.lease_token, "x", true), ops::op_status::pending);
  EXPECT_ERRC(q().fail(id, *c.lease_token, "x", true), errc::lease_lost);
  EXPECT_FALSE(q().get(id).heartbeat_at);
}

TEST_P(ops_fencing, OutcomeMessagesAreStoredWithInvalidUtf8ReplacedAndNulRemoved) {
  const auto id = enqueue("t");
  const auto c = claim();
  q().fail(id, *c.lease_token, std::string("bad \xff byte and a \0nul", 22), false);
  EXPECT_EQ(q().get(id).last_error, "bad \xef\xbf\xbd byte and a nul");
}

TEST_P(ops_fencing, AcksRacingTheRescuerEitherWinOrMeetLeaseLostAndNothingElse) {
  std::vector<ops::new_op> batch(30, new_op("race"));
  q().enqueue_batch(batch);
  std::vector<ops::op> claimed;
  for (int i = 0; i < 30; ++i) claimed.push_back(claim());
  for (const auto& c : claimed) age_heartbeat(c.id);
  std::atomic<int> acked{0}, lost{0}, other{0};
  auto& queue = q();
  std::thread acker([&] {
    for (const auto& c : claimed) {
      try {
        queue.ack(c.id, *c.lease_token);
        ++acked;
      } catch (const error& e) {
        (e.code() == errc::lease_lost ? lost : other)++;
      }
    }
  });
  std::size_t rescued = 0;
  std::thread rescuer([&] {
    for (int i = 0; i < 30; ++i) {
      try {
        rescued += queue.rescue_expired(60s).size();
      } catch (const error&) {
        ++other;
      }
    }
  });
  acker.join();
  rescuer.join();
  EXPECT_EQ(other.load(), 0);
  EXPECT_EQ(acked.load() + lost.load(), 30);
  EXPECT_EQ(static_cast<std::size_t>(lost.load()), rescued);
  const auto s = q().stats();
  EXPECT_EQ(s.done_24h, acked.load());
  EXPECT_EQ(s.pending, lost.load());
  EXPECT_EQ(s.running, 0);
}

SPOOL_OPS_BOTH_ENGINES(ops_fencing);

}  // namespace
}  // namespace spool::test
