// The claim limit of a queue handle on a real PostgreSQL (issue 13, round 13
// of docs/BENCHMARKS.md): mq::queue_options::claim_concurrency and
// ops::queue_options::claim_concurrency. A batch claim beyond the limit waits
// for one to finish, that wait keeps the call's deadline, and it never
// reaches the database meanwhile. Pinned here: the first claim holds its place
// while it waits on a table lock in the database.
#include <gtest/gtest.h>

#include <algorithm>
#include <future>
#include <optional>
#include <string>

#include "spool/database.hpp"
#include "spool/error.hpp"
#include "spool/migrate.hpp"
#include "spool/mq/queue.hpp"
#include "spool/ops/queue.hpp"
#include "support/eventually.hpp"
#include "support/test_db.hpp"

namespace spool::test {
namespace {

using namespace std::chrono_literals;

std::int64_t waiting_on_locks(const std::string& uri) {
  return std::stoll(*pg_query(uri,
                              "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                              "AND backend_type = 'client backend' AND datname = current_database()")
                         .at(0)
                         .at(0));
}

// Runs second() while the first claim waits on the lock: what it threw
// ("<errc> <reason>"), and the most statements ever seen waiting on a lock.
std::pair<std::string, std::int64_t> beside_a_waiting_claim(const std::string& uri,
                                                            const std::function<void()>& second) {
  auto call = std::async(std::launch::async, [&]() -> std::string {
    try {
      second();
      return "ran beside the first";
    } catch (const spool::error& e) {
      return std::string(to_string(e.code())) + " " + e.reason();
    }
  });
  std::int64_t most = 0;
  while (call.wait_for(20ms) != std::future_status::ready) most = std::max(most, waiting_on_locks(uri));
  return {call.get(), most};
}

}  // namespace

TEST(claim_gate_postgres, an_mq_batch_poll_beyond_the_limit_waits_its_turn_within_its_deadline) {
  const auto uri = make_pg_database("claim_gate_mq");
  auto db = database::open(uri, {.pool_size = 8});
  (void)spool::migrate(db);
  mq::queue q(db, {.name = "gated", .claim_concurrency = 1});
  mq::message m;
  m.id = "only";
  m.mediation_type = "HTTP";
  m.mediation_target = "https://example.test/hook";
  (void)q.publish(m);                                     // also checks the tables before the lock below
  std::future<std::vector<mq::delivered_message>> first;  // destroyed after the lock is gone
  std::optional<held_table_lock> lock(std::in_place, uri, "queue_messages");
  first = std::async(std::launch::async, [&] { return q.poll(100); });  // takes the one place
  ASSERT_TRUE(eventually([&] { return waiting_on_locks(uri) >= 1; }, 30s, 20ms));
  const auto [second, most] =
      beside_a_waiting_claim(uri, [&] { (void)q.poll(100, call_options::within(1s)); });
  EXPECT_EQ(second, "unavailable deadline_exceeded");
  EXPECT_EQ(most, 1) << "a second batch claim reached the database beside the first";
  // A small poll is not held by the gate: it reaches the database.
  const auto [small, small_most] =
      beside_a_waiting_claim(uri, [&] { (void)q.poll(1, call_options::within(1s)); });
  EXPECT_EQ(small_most, 2) << small;
  lock.reset();
  const auto got = first.get();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].broker_message_id, "only");
}

TEST(claim_gate_postgres, an_ops_batch_dequeue_beyond_the_limit_waits_its_turn_within_its_deadline) {
  const auto uri = make_pg_database("claim_gate_ops");
  auto db = database::open(uri, {.pool_size = 8});
  (void)spool::migrate(db);
  ops::queue_options o;
  o.claim_concurrency = 1;
  ops::queue q(db, o);
  ops::new_op op;
  op.type = "t";
  (void)q.enqueue(op);
  std::future<std::vector<ops::op>> first;  // destroyed after the lock is gone
  std::optional<held_table_lock> lock(std::in_place, uri, "ops_queue");
  first = std::async(std::launch::async, [&] { return q.dequeue_batch(100, {"t"}); });
  ASSERT_TRUE(eventually([&] { return waiting_on_locks(uri) >= 1; }, 30s, 20ms));
  const auto [second, most] =
      beside_a_waiting_claim(uri, [&] { (void)q.dequeue_batch(100, {"t"}, "", call_options::within(1s)); });
  EXPECT_EQ(second, "unavailable deadline_exceeded");
  EXPECT_EQ(most, 1) << "a second batch claim reached the database beside the first";
  lock.reset();
  const auto got = first.get();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].type, "t");
}

}  // namespace spool::test
