// op-queue.md §9 scenarios 37 (batch) and 38 (keyset pages and determinism).
#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "ops/ops_fixture.hpp"
#include "spool/pg.hpp"
#include "spool/sqlite.hpp"

namespace spool::test {
namespace {

class ops_batch : public ops_conformance {};

TEST_P(ops_batch, AThousandOpBatchDrainsInInputOrderAtEqualPriority) {  // §9.37
  std::vector<ops::new_op> batch;
  for (int n = 0; n < 1000; ++n) batch.push_back(new_op("bulk", {{"n", n}}));
  const auto results = q().enqueue_batch(batch);
  ASSERT_EQ(results.size(), 1000u);
  for (const auto& r : results) EXPECT_TRUE(r.created);
  for (int n = 0; n < 1000; ++n) {
    const auto c = q().dequeue();
    ASSERT_TRUE(c);
    ASSERT_EQ(c->payload["n"], n);
    EXPECT_EQ(c->id, results[static_cast<std::size_t>(n)].id);
  }
  EXPECT_FALSE(q().dequeue());
}

TEST_P(ops_batch, DedupCollisionsInsideTheBatchAndAgainstTheTableAreReportedPerItem) {  // §9.37
  auto held = new_op("scan");
  held.dedup_key = "table";
  const auto holder = q().enqueue(held).id;
  std::vector<ops::new_op> batch(4, new_op("scan"));
  batch[0].dedup_key = "batch";
  batch[1].dedup_key = "batch";  // collides with item 0: the first item wins
  batch[2].dedup_key = "table";  // collides with the table
  batch[3].dedup_key = "";
  const auto r = q().enqueue_batch(batch);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_TRUE(r[0].created);
  EXPECT_EQ(r[1], (ops::enqueue_result{"", false, ops::enqueue_status::deduplicated}));
  EXPECT_EQ(r[2], (ops::enqueue_result{"", false, ops::enqueue_status::deduplicated}));
  EXPECT_TRUE(r[3].created);
  const auto existing = q().enqueue_batch(batch, {.duplicates = ops::on_duplicate::return_existing});
  EXPECT_EQ(existing[0], (ops::enqueue_result{r[0].id, false, ops::enqueue_status::deduplicated}));
  EXPECT_EQ(existing[1], (ops::enqueue_result{r[0].id, false, ops::enqueue_status::deduplicated}));
  EXPECT_EQ(existing[2], (ops::enqueue_result{holder, false, ops::enqueue_status::deduplicated}));
  EXPECT_TRUE(existing[3].created);
  EXPECT_EQ(q().stats().pending, 4);
}

TEST_P(ops_batch, ABatchWithOneInvalidOpWritesNothingAndNamesItsIndex) {  // §9.37
  std::vector<ops::new_op> batch{new_op("a"), new_op("b"), new_op(""), new_op("d")};
  try {
    q().enqueue_batch(batch);
    ADD_FAILURE() << "batch accepted";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("op 2"), std::string::npos) << e.what();
  }
  EXPECT_EQ(count(), 0);
}

TEST_P(ops_batch, ABatchRetriedAfterItsFirstItemsWereStoredInsertsTheRestAndReportsThoseAsAlreadyExisting) {
  // A producer that restarts, or retries after in_doubt, sends a batch whose
  // first ids were committed by the earlier attempt (issue 12).
  std::vector<ops::new_op> batch;
  for (int n = 0; n < 5; ++n) {
    batch.push_back(new_op("resume", {{"n", n}}));
    batch.back().id = "resume-" + std::to_string(n);
  }
  const std::vector<ops::new_op> first_half(batch.begin(), batch.begin() + 2);
  ASSERT_EQ(q().enqueue_batch(first_half).size(), 2u);
  const auto r = q().enqueue_batch(batch);
  ASSERT_EQ(r.size(), 5u);
  for (int n = 0; n < 5; ++n) {
    const auto want = n < 2 ? ops::enqueue_status::already_exists : ops::enqueue_status::created;
    EXPECT_EQ(r[static_cast<std::size_t>(n)],
              (ops::enqueue_result{"resume-" + std::to_string(n), n >= 2, want}))
        << "item " << n;
  }
  EXPECT_EQ(count(), 5);
  for (int n = 0; n < 5; ++n) {
    const auto c = q().dequeue();
    ASSERT_TRUE(c);
    EXPECT_EQ(c->payload["n"], n) << "each op stored once, in input order";
  }
  EXPECT_EQ(q().enqueue_batch(batch)[4].status, ops::enqueue_status::already_exists)
      << "a stored id is reported whatever its status (running now)";
  EXPECT_EQ(count(), 5);
}

TEST_P(ops_batch, ABatchItemWhoseIdIsTakenAndWhoseKeyIsHeldIsReportedAsAlreadyExisting) {
  auto keyed = new_op("scan");
  keyed.id = "keyed";
  keyed.dedup_key = "k";
  ASSERT_TRUE(q().enqueue(keyed).created);
  const auto r = q().enqueue_batch({keyed, new_op("other")});
  EXPECT_EQ(r[0], (ops::enqueue_result{"keyed", false, ops::enqueue_status::already_exists}));
  EXPECT_TRUE(r[1].created);
  EXPECT_EQ(count(), 2);
}

TEST_P(ops_batch, ASingleEnqueueOfATakenIdIsAlreadyExistsAndAnIdRepeatedInsideABatchIsInvalid) {
  auto taken = new_op("a");
  taken.id = "taken";
  q().enqueue(taken);
  try {
    q().enqueue(taken);
    ADD_FAILURE() << "enqueue accepted";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::already_exists);
    EXPECT_NE(std::string(e.what()).find("taken"), std::string::npos) << e.what();
  }
  EXPECT_EQ(count(), 1);
  std::vector<ops::new_op> batch = {new_op("x"), new_op("y")};
  batch[0].id = batch[1].id = "twice";
  EXPECT_ERRC(q().enqueue_batch(batch), errc::invalid_argument);
  EXPECT_EQ(count(), 1);
}

TEST_P(ops_batch, AKeylessBatchWithOneTakenIdStoresTheOthersAndReportsItAlreadyExisting) {
  // On PostgreSQL such a batch first goes in without ON CONFLICT; a taken id
  // fails that statement as a whole, and the skipping one runs.
  auto stored = new_op("a");
  stored.id = "stored";
  q().enqueue(stored);
  auto other = new_op("changed");
  other.id = "stored";
  auto x = new_op("x");
  x.id = "x";
  const auto r = q().enqueue_batch({x, other, new_op("y")});
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0], (ops::enqueue_result{"x", true, ops::enqueue_status::created}));
  EXPECT_EQ(r[1], (ops::enqueue_result{"stored", false, ops::enqueue_status::already_exists}));
  EXPECT_TRUE(r[2].created);
  EXPECT_EQ(count(), 3);
  EXPECT_EQ(q().get("stored").type, "a");
}

TEST_P(ops_batch, ABatchInTheCallersTransactionSkipsStoredIdsAndTheTransactionStaysUsable) {
  auto stored = new_op("a");
  stored.id = "stored";
  q().enqueue(stored);
  auto fresh = new_op("b");
  fresh.id = "fresh";
  std::vector<ops::enqueue_result> r;
  if (is_pg()) {
    pg::tx tx(*db_);
    r = q().enqueue_batch(tx, {stored, fresh});
    tx.exec("SELECT 1");  // not aborted
    tx.commit();
  } else {
    sqlite::tx tx(*db_);
    r = q().enqueue_batch(tx, {stored, fresh});
    tx.exec("SELECT 1");
    tx.commit();
  }
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].status, ops::enqueue_status::already_exists);
  EXPECT_EQ(r[1], (ops::enqueue_result{"fresh", true, ops::enqueue_status::created}));
  EXPECT_EQ(count(), 2);
}

TEST_P(ops_batch, KeysetPagesSeeEveryOpOnceInDescendingOrderWhileOpsAreInserted) {  // §9.38
  std::vector<ops::new_op> batch;
  for (int n = 0; n < 250; ++n) batch.push_back(new_op("page", {{"n", n}}));
  std::set<std::string> expected;
  for (const auto& r : q().enqueue_batch(batch)) expected.insert(r.id);
  std::vector<ops::op> seen;
  std::string cursor;
  int pages = 0;
  do {
    const auto page = q().list_after("", 100, cursor);
    for (const auto& o : page.ops) seen.push_back(o);
    cursor = page.next_cursor;
    ++pages;
    if (pages == 1 && !is_pg()) std::this_thread::sleep_for(1100ms);  // newer second on SQLite
    q().enqueue(new_op("page", {{"n", 1000 + pages}}));               // inserted while listing
  } while (!cursor.empty() && pages < 10);
  std::set<std::string> ids;
  std::size_t from_batch = 0;
  for (std::size_t i = 0; i < seen.size(); ++i) {
    EXPECT_TRUE(ids.insert(seen[i].id).second) << seen[i].id << " repeated";
    if (expected.count(seen[i].id)) ++from_batch;
    if (i > 0) {
      const auto& a = seen[i - 1];
      const auto& b = seen[i];
      EXPECT_TRUE(std::tie(a.enqueued_at, a.id) > std::tie(b.enqueued_at, b.id)) << "order broken at " << i;
    }
  }
  EXPECT_EQ(from_batch, 250u);
}

TEST_P(ops_batch, AMalformedCursorIsInvalidArgument) {
  EXPECT_ERRC((void)q().list_after("", 10, "garbage"), errc::invalid_argument);
  EXPECT_ERRC((void)q().list_after("", 10, "c1.@@.x"), errc::invalid_argument);
  EXPECT_ERRC((void)q().list_after("", 0, "c1.bm90LWEtdGltZQ.aWQ"), errc::invalid_argument);
  EXPECT_TRUE(q().list_after("", 0).ops.empty());
}

TEST_P(ops_batch, OffsetPagesAreDeterministicWithinOneSecond) {
  std::vector<ops::new_op> batch;
  for (int n = 0; n < 30; ++n) batch.push_back(new_op("page"));
  q().enqueue_batch(batch);
  const auto all = q().list("", 30).ops;
  std::vector<std::string> paged;
  for (int off = 0; off < 30; off += 7) {
    for (const auto& o : q().list("", 7, off).ops) paged.push_back(o.id);
  }
  ASSERT_EQ(paged.size(), 30u);
  for (std::size_t i = 0; i < 30; ++i) EXPECT_EQ(paged[i], all[i].id);
}

TEST_P(ops_batch, DequeueBatchClaimsInDequeueOrderEachWithItsOwnTokenAndStopsAtTheReadyOnes) {
  std::vector<ops::new_op> batch;
  for (int n = 0; n < 5; ++n) batch.push_back(new_op("bulk", {{"n", n}}));
  auto urgent = new_op("bulk", {{"n", -1}});
  urgent.priority = 5;
  batch.push_back(urgent);
  auto other = new_op("other", {{"n", 99}});
  batch.push_back(other);
  auto later = new_op("bulk", {{"n", 100}});
  later.delay = std::chrono::hours(1);  // not ready: never claimed now
  batch.push_back(later);
  q().enqueue_batch(batch);
  const auto got = q().dequeue_batch(3, {"bulk"}, "node-a:1:cafe");
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].payload["n"], -1);  // priority first, then enqueue order
  EXPECT_EQ(got[1].payload["n"], 0);
  EXPECT_EQ(got[2].payload["n"], 1);
  std::set<std::string> tokens;
  for (const auto& c : got) {
    EXPECT_EQ(c.status, ops::op_status::running);
    EXPECT_EQ(c.attempts, 1);
    EXPECT_EQ(c.lease_owner, "node-a:1:cafe");
    ASSERT_TRUE(c.lease_token);
    tokens.insert(*c.lease_token);
  }
  EXPECT_EQ(tokens.size(), 3u);
  // Asking for more than is ready takes what is ready, then nothing.
  const auto rest = q().dequeue_batch(100, {"bulk"});
  ASSERT_EQ(rest.size(), 3u);
  EXPECT_EQ(rest[2].payload["n"], 4);
  EXPECT_TRUE(q().dequeue_batch(100, {"bulk"}).empty());
  EXPECT_EQ(q().stats().pending, 2);  // "other" and the delayed one
  EXPECT_ERRC((void)q().dequeue_batch(0), errc::invalid_argument);
  EXPECT_ERRC((void)q().dequeue_batch(1001), errc::invalid_argument);
  EXPECT_ERRC((void)q().dequeue_batch(2, {"bad\ttype"}), errc::invalid_argument);
}

TEST_P(ops_batch, AckBatchRecordsEveryCurrentClaimAndReturnsTheOnesAckWouldRefuse) {
  std::vector<ops::new_op> batch;
  for (int n = 0; n < 4; ++n) batch.push_back(new_op("job", {{"n", n}}));
  q().enqueue_batch(batch);
  const auto got = q().dequeue_batch(4);
  ASSERT_EQ(got.size(), 4u);
  std::vector<ops::lease> leases;
  for (const auto& c : got) leases.push_back({c.id, *c.lease_token});
  // got[1] is released and claimed again: its first token is stale.
  q().release(got[1].id, *got[1].lease_token, "handing over");
  const auto again = q().dequeue();
  ASSERT_TRUE(again);
  ASSERT_EQ(again->id, got[1].id);
  // got[2] is already acked: replaying its ack is not a refusal.
  q().ack(got[2].id, *got[2].lease_token);
  const ops::lease missing{"no-such-op", "0123456789abcdef0123456789abcdef"};
  std::vector<ops::lease> asked = leases;
  asked.push_back(missing);
  const auto refused = q().ack_batch(asked);
  EXPECT_EQ(refused, (std::vector<ops::lease>{leases[1], missing}));
  EXPECT_EQ(q().get(got[0].id).status, ops::op_status::done);
  EXPECT_EQ(q().get(got[1].id).status, ops::op_status::running);  // the new claim is untouched
  EXPECT_EQ(q().get(got[2].id).status, ops::op_status::done);
  EXPECT_EQ(q().get(got[3].id).status, ops::op_status::done);
  q().ack(got[1].id, *again->lease_token);  // the new claim still holds its lease
  EXPECT_TRUE(q().ack_batch({}).empty());
  EXPECT_ERRC((void)q().ack_batch({leases[0], leases[0]}), errc::invalid_argument);
  EXPECT_ERRC((void)q().ack_batch({{got[0].id, ""}}), errc::invalid_argument);
  EXPECT_ERRC((void)q().ack_batch(std::vector<ops::lease>(1001, leases[0])), errc::invalid_argument);
}

TEST_P(ops_batch, FourBatchClaimersDrainTwoHundredOpsEachClaimedAndAckedOnce) {
  std::vector<ops::new_op> batch;
  for (int n = 0; n < 200; ++n) batch.push_back(new_op("job", {{"n", n}}));
  q().enqueue_batch(batch);
  std::mutex m;
  std::map<std::string, int> seen;
  std::atomic<int> errors{0};
  std::vector<std::thread> claimers;
  auto& queue = q();
  for (int w = 0; w < 4; ++w) {
    claimers.emplace_back([&] {
      try {
        for (;;) {
          const auto got = queue.dequeue_batch(7);
          if (got.empty()) {
            if (!queue.has_ready()) return;
            continue;
          }
          std::vector<ops::lease> leases;
          {
            std::lock_guard lock(m);
            for (const auto& c : got) {
              ++seen[c.id];
              leases.push_back({c.id, *c.lease_token});
            }
          }
          if (!queue.ack_batch(leases).empty()) ++errors;
        }
      } catch (const error&) {
        ++errors;
      }
    });
  }
  for (auto& t : claimers) t.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(seen.size(), 200u);
  for (const auto& [id, n] : seen) EXPECT_EQ(n, 1) << id;
  EXPECT_EQ(q().stats().done_24h, 200);
  EXPECT_EQ(q().stats().pending, 0);
}

SPOOL_OPS_BOTH_ENGINES(ops_batch);

}  // namespace
}  // namespace spool::test
