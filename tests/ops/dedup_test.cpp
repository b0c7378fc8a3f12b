// op-queue.md §9 scenarios 16–22 and their contract sub-cases (24):
// coalescing by dedup key, held only while an op is pending (§6).
#include <atomic>
#include <thread>

#include "ops/ops_fixture.hpp"

namespace spool::test {
namespace {

class ops_dedup : public ops_conformance {
 protected:
  ops::enqueue_result keyed(const std::string& key, const std::string& type = "scan") {
    auto o = new_op(type);
    o.dedup_key = key;
    return q().enqueue(o);
  }
};

TEST_P(ops_dedup, ASecondPendingEnqueueWithTheSameKeyIsDuplicateAndADifferentKeyIsAccepted) {  // §9.16
  const auto first = keyed("file-1");
  EXPECT_TRUE(first.created);
  try {
    keyed("file-1");
    ADD_FAILURE() << "second enqueue succeeded";
  } catch (const ops::duplicate_op& e) {
    EXPECT_EQ(e.code(), errc::duplicate);
    EXPECT_EQ(e.holder_id(), first.id);
  }
  EXPECT_EQ(q().stats().pending, 1);
  EXPECT_TRUE(keyed("file-2").created);
  EXPECT_EQ(q().stats().pending, 2);
}

TEST_P(ops_dedup, AnEmptyKeyOptsOut) {  // §9.17
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(keyed("").created);
  EXPECT_EQ(q().stats().pending, 3);
}

TEST_P(ops_dedup, TheKeyIsReleasedAtDequeue) {  // §9.18
  const auto first = keyed("k");
  const auto running = claim();
  EXPECT_EQ(running.id, first.id);
  EXPECT_FALSE(running.dedup_key);
  const auto second = keyed("k");
  EXPECT_TRUE(second.created);
  EXPECT_NE(second.id, first.id);
}

TEST_P(ops_dedup, FailWithRetrySucceedsAfterANewOpTookTheKeyWhichStillHoldsIt) {  // §9.19
  const auto a = keyed("k");
  const auto running = claim();
  const auto b = keyed("k");
  EXPECT_EQ(q().fail(a.id, *running.lease_token, "again", true), ops::op_status::pending);
  EXPECT_EQ(q().stats().pending, 2);
  EXPECT_ERRC(keyed("k"), errc::duplicate);
  EXPECT_EQ(q().get(b.id).dedup_key, "k");
}

TEST_P(ops_dedup, TheKeyIsReleasedOnCancel) {  // §9.20
  const auto a = keyed("k");
  q().cancel(a.id);
  EXPECT_TRUE(keyed("k").created);
}

TEST_P(ops_dedup, SixteenConcurrentEnqueuesWithOneKeyCreateExactlyOneRow) {  // §9.21
  std::atomic<int> created{0}, duplicates{0}, other{0};
  std::vector<std::thread> threads;
  auto& queue = q();
  for (int i = 0; i < 16; ++i) {
    threads.emplace_back([&] {
      try {
        auto o = new_op("scan");
        o.dedup_key = "hot";
        if (queue.enqueue(o).created) ++created;
      } catch (const error& e) {
        (e.code() == errc::duplicate ? duplicates : other)++;
      } catch (...) {
        ++other;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(created.load(), 1);
  EXPECT_EQ(duplicates.load(), 15);
  EXPECT_EQ(other.load(), 0);
  EXPECT_EQ(q().stats().pending, 1);
}

TEST_P(ops_dedup, AScheduledOpHoldsItsKey) {  // §9.22
  auto o = new_op("scan");
  o.dedup_key = "later";
  o.delay = 1h;
  EXPECT_TRUE(q().enqueue(o).created);
  EXPECT_FALSE(q().dequeue());
  EXPECT_ERRC(keyed("later"), errc::duplicate);
}

TEST_P(ops_dedup, ReturnExistingGivesTheHoldersIdWithCreatedFalse) {  // §9.40 (return_existing)
  const auto first = keyed("k");
  auto o = new_op("scan");
  o.dedup_key = "k";
  const auto again = q().enqueue(o, {.duplicates = ops::on_duplicate::return_existing});
  EXPECT_FALSE(again.created);
  EXPECT_EQ(again.id, first.id);
  // The queue-wide option does the same.
  auto rq = make_queue({.duplicates = ops::on_duplicate::return_existing});
  EXPECT_EQ(rq->enqueue(o), (ops::enqueue_result{first.id, false, ops::enqueue_status::deduplicated}));
}

TEST_P(ops_dedup, ReturnExistingUnderConcurrencyAlwaysNamesAnOp) {
  // Claims race with enqueues: every call returns a new id or a pending
  // holder's id, never neither.
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  auto& queue = q();
  std::thread claimer([&] {
    while (!stop) {
      try {
        if (auto c = queue.dequeue()) queue.ack(c->id, *c->lease_token);
      } catch (...) {
        ++bad;
      }
    }
  });
  std::vector<std::thread> producers;
  for (int t = 0; t < 4; ++t) {
    producers.emplace_back([&] {
      for (int i = 0; i < 25; ++i) {
        auto o = new_op("scan");
        o.dedup_key = "contended";
        try {
          const auto r = queue.enqueue(o, {.duplicates = ops::on_duplicate::return_existing});
          if (r.id.empty()) ++bad;
        } catch (...) {
          ++bad;
        }
      }
    });
  }
  for (auto& p : producers) p.join();
  stop = true;
  claimer.join();
  EXPECT_EQ(bad.load(), 0);
}

TEST_P(ops_dedup, RetryRefusesWhileAnotherPendingOpHoldsTheRowsKey) {
  // A failed row that still holds a key (written by a filex Fail on a pending
  // op, which ignored status) cannot return while another op holds the key.
  const auto a = keyed("k");
  sql("UPDATE ops_queue SET status = 'failed' WHERE id = $1", {a.id});
  const auto b = keyed("k");
  try {
    q().retry(a.id);
    ADD_FAILURE() << "retry succeeded";
  } catch (const ops::duplicate_op& e) {
    EXPECT_EQ(e.holder_id(), b.id);
  }
  EXPECT_EQ(q().get(a.id).status, ops::op_status::failed);
}

SPOOL_OPS_BOTH_ENGINES(ops_dedup);

}  // namespace
}  // namespace spool::test
