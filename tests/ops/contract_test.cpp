// op-queue.md §9 scenarios 23, 26 and 27 (the cross-engine contract), 33's
// direct part (type-filtered dequeue with 1, 2 and 3 types on PostgreSQL),
// and the rescuer call of §5.2.
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "ops/ops_fixture.hpp"

namespace spool::test {
namespace {

class ops_contract : public ops_conformance {};

TEST_P(ops_contract, LifecycleTypeFilteredDequeueAckAndTerminalFail) {  // §9.23
  const auto id = enqueue("resize", {{"w", 640}, {"name", "a.png"}, {"nested", {{"k", {1, 2, 3}}}}});
  EXPECT_FALSE(q().dequeue({"nothing_like_it"}));
  const auto c = claim({"resize"});
  EXPECT_EQ(c.id, id);
  EXPECT_EQ(c.status, ops::op_status::running);
  EXPECT_EQ(c.attempts, 1);
  EXPECT_EQ(c.payload, (nlohmann::json{{"w", 640}, {"name", "a.png"}, {"nested", {{"k", {1, 2, 3}}}}}));
  q().ack(id, *c.lease_token);
  EXPECT_EQ(q().get(id).status, ops::op_status::done);
  EXPECT_FALSE(q().dequeue({"resize"}));

  const auto id2 = enqueue("resize");
  const auto c2 = claim({"resize"});
  q().fail(id2, *c2.lease_token, "decoder crashed", false);
  const auto f = q().get(id2);
  EXPECT_EQ(f.status, ops::op_status::failed);
  EXPECT_EQ(f.last_error, "decoder crashed");
}

TEST_P(ops_contract, PriorityBeatsPosition) {  // §9.26
  for (int n = 0; n < 40; ++n) enqueue("walk", {{"n", n}}, -1);
  const auto urgent = enqueue("walk", {{"n", -1}}, 0);
  EXPECT_EQ(claim().id, urgent);
  for (int n = 0; n < 40; ++n) {
    const auto c = claim();
    EXPECT_EQ(c.payload["n"], n);
  }
}

TEST_P(ops_contract, EachOpIsClaimedExactlyOnceByEightConcurrentClaimers) {  // §9.27
  std::vector<ops::new_op> batch;
  for (int n = 0; n < 60; ++n) batch.push_back(new_op("job", {{"n", n}}));
  q().enqueue_batch(batch);
  std::mutex m;
  std::map<std::string, int> seen;
  std::atomic<int> errors{0};
  std::vector<std::thread> claimers;
  auto& queue = q();
  for (int w = 0; w < 8; ++w) {
    claimers.emplace_back([&] {
      for (;;) {
        try {
          auto c = queue.dequeue();
          if (!c) {
            if (!queue.has_ready()) return;
            continue;
          }
          {
            std::lock_guard lock(m);
            ++seen[c->id];
          }
          queue.ack(c->id, *c->lease_token);
        } catch (const error&) {
          ++errors;
          return;
        }
      }
    });
  }
  for (auto& t : claimers) t.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(seen.size(), 60u);
  for (const auto& [id, n] : seen) EXPECT_EQ(n, 1) << id;
  EXPECT_EQ(q().stats().done_24h, 60);
  EXPECT_EQ(q().stats().pending, 0);
}

TEST_P(ops_contract, AnEmptyTypeListMeansAnyTypeAndInvalidTypesAreRejected) {
  enqueue("a");
  EXPECT_TRUE(q().dequeue({}));
  EXPECT_ERRC((void)q().dequeue({""}), errc::invalid_argument);
  EXPECT_ERRC((void)q().dequeue({"bad\ttype"}), errc::invalid_argument);
}

TEST_P(ops_contract, TheClaimRecordsTheGivenOwnerAndAFreshTokenEachTime) {
  const auto id = enqueue("t");
  const auto first = *q().dequeue({}, "node-a:1:deadbeef");
  EXPECT_EQ(first.lease_owner, "node-a:1:deadbeef");
  q().release(id, *first.lease_token, "shutting down");
  const auto second = *q().dequeue({}, "node-b:2:cafebabe");
  EXPECT_EQ(second.lease_owner, "node-b:2:cafebabe");
  EXPECT_NE(second.lease_token, first.lease_token);
  EXPECT_TRUE(second.heartbeat_at);
}

TEST_P(ops_contract, ReleaseReturnsTheOpWithoutConsumingTheAttempt) {
  const auto id = enqueue("t");
  const auto c = claim();
  q().release(id, *c.lease_token, "interrupted by shutdown: SIGTERM");
  const auto o = q().get(id);
  EXPECT_EQ(o.status, ops::op_status::pending);
  EXPECT_EQ(o.attempts, 0);
  EXPECT_EQ(o.last_error, "interrupted by shutdown: SIGTERM");
  EXPECT_FALSE(o.started_at);
  EXPECT_FALSE(o.heartbeat_at);
  // Its token is cleared, so a replay is fenced.
  EXPECT_ERRC(q().release(id, *c.lease_token, "again"), errc::lease_lost);
  EXPECT_EQ(claim().id, id);
}

TEST_P(ops_contract, TheRescuerRequeuesAStaleLeaseAndFailsItOnTheLastAttempt) {  // §5.2 T8, T9
  auto o = new_op("t");
  o.max_attempts = 2;
  const auto id = q().enqueue(o).id;
  auto c = claim();
  EXPECT_TRUE(q().rescue_expired(60s).empty()) << "a fresh heartbeat is never taken";
  age_heartbeat(id);
  auto rescued = q().rescue_expired(60s);
  ASSERT_EQ(rescued.size(), 1u);
  EXPECT_EQ(rescued[0].id, id);
  EXPECT_EQ(rescued[0].type, "t");
  EXPECT_EQ(rescued[0].status, ops::op_status::pending);
  auto r = q().get(id);
  EXPECT_EQ(r.status, ops::op_status::pending);
  EXPECT_EQ(r.attempts, 1);
  EXPECT_EQ(r.last_error, "lease expired (owner " + q().owner() + ")");
  EXPECT_FALSE(r.started_at);
  EXPECT_FALSE(r.heartbeat_at);

  c = claim();
  EXPECT_EQ(c.attempts, 2);
  age_heartbeat(id);
  rescued = q().rescue_expired(60s);
  ASSERT_EQ(rescued.size(), 1u);
  EXPECT_EQ(rescued[0].status, ops::op_status::failed);
  r = q().get(id);
  EXPECT_EQ(r.status, ops::op_status::failed);
  EXPECT_TRUE(r.finished_at);
  EXPECT_EQ(r.last_error, "lease expired on final attempt (owner " + q().owner() + ")");
  EXPECT_ERRC(q().rescue_expired(0ms), errc::invalid_argument);
}

TEST_P(ops_contract, BatchedHeartbeatsRefreshLiveLeasesAndReportLostOnes) {
  enqueue("a");
  enqueue("b");
  const auto a = claim();
  const auto b = claim();
  q().recover_orphans(0s);  // both lose their claims …
  const auto x = claim();   // … and are claimed again under new tokens
  const auto y = claim();
  age_heartbeat(x.id);
  const std::vector<ops::lease> leases{
      {a.id, *a.lease_token}, {x.id, *x.lease_token}, {b.id, *b.lease_token}, {y.id, *y.lease_token}};
  const auto lost = q().heartbeat_batch(leases);
  EXPECT_EQ(lost, (std::vector<ops::lease>{{a.id, *a.lease_token}, {b.id, *b.lease_token}}));
  const auto refreshed = q().get(x.id);
  ASSERT_TRUE(refreshed.heartbeat_at);
  EXPECT_LE(std::chrono::abs(*refreshed.heartbeat_at - utc_now()), 2s);
  EXPECT_TRUE(q().heartbeat_batch({}).empty());
}

SPOOL_OPS_BOTH_ENGINES(ops_contract);

// ---- §9.33 (direct part): filex's claim-parameter defect, PostgreSQL only ----

class ops_postgres_type_filter : public ::testing::Test {
 protected:
  void SetUp() override {
    db_.emplace(database::open(make_pg_database("ops_type_filter")));
    ops::migrate(*db_);
    q_.emplace(*db_);
  }
  std::optional<database> db_;
  std::optional<ops::queue> q_;
};

TEST_F(ops_postgres_type_filter, DequeueWithOneTwoAndThreeTypesClaimsOnlyThoseTypes) {
  for (const char* t : {"thumb", "replica_report", "scan", "other"}) q_->enqueue(new_op(t));
  const std::vector<std::vector<std::string>> filters = {
      {"thumb"}, {"replica_report", "scan"}, {"absent", "other", "also_absent"}};
  std::set<std::string> claimed;
  for (const auto& f : filters) {
    for (;;) {
      auto c = q_->dequeue(f);
      if (!c) break;
      EXPECT_NE(std::find(f.begin(), f.end(), c->type), f.end()) << c->type;
      claimed.insert(c->type);
    }
  }
  EXPECT_EQ(claimed, (std::set<std::string>{"thumb", "replica_report", "scan", "other"}));
}

}  // namespace
}  // namespace spool::test
