// pg_terminate_backend (Spool issue 7): on the shared test server, a killer
// terminates every backend of the test's database at seeded random intervals
// while producers publish, enqueue and insert outbox envelopes and consumers
// claim and acknowledge. Spool reconnects by itself, reports only
// unavailable or in_doubt, and loses nothing acknowledged as committed.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <thread>

#include "faults/faults_support.hpp"
#include "spool/migrate.hpp"

namespace spool::test::faults {
namespace {

using namespace std::chrono_literals;

TEST(faults_terminate_postgres,
     nothing_acknowledged_is_lost_while_every_backend_of_the_database_is_terminated_again_and_again) {
  const auto seed = fault_seed();
  fmt::print("[faults] pg_terminate_backend seed {} (replay: SPOOL_TEST_FAULTS_SEED={})\n", seed, seed);
  std::fflush(stdout);
  RecordProperty("seed", std::to_string(seed));
  const std::string uri = make_pg_database("faults_terminate");
  auto db = database::open(uri);
  spool::migrate(db);
  workload w(db, "terminate");
  w.start();
  ASSERT_TRUE(w.wait_for_progress(5, 60s)) << "the workload made no progress before the fault";

  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> gap_ms(30, 400);
  int rounds = 0;
  std::int64_t terminated = 0, spool_terminated = 0;
  const auto chaos_end = std::chrono::steady_clock::now() + 12s;
  while (std::chrono::steady_clock::now() < chaos_end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(gap_ms(rng)));
    // The killer's own connection is a fresh one each round, to the same database.
    const auto killed = pg_query(uri, R"(
      SELECT count(*) FILTER (WHERE t), count(*) FILTER (WHERE t AND application_name = 'spool')
      FROM (SELECT pg_terminate_backend(pid) AS t, application_name FROM pg_stat_activity
            WHERE datname = current_database() AND pid <> pg_backend_pid()) AS k)");
    terminated += std::stoll(killed.at(0).at(0).value_or("0"));
    spool_terminated += std::stoll(killed.at(0).at(1).value_or("0"));
    ++rounds;
  }
  // The same objects go on working after the last round, without help.
  EXPECT_TRUE(w.wait_for_progress(5, 60s)) << "the workload did not recover after the last termination";
  w.stop();
  w.expect_same_objects_recover();
  w.drain();
  const auto r =
      w.verify(fmt::format("pg_terminate_backend: {} rounds, {} backends terminated ({} of Spool's), seed {}",
                           rounds, terminated, spool_terminated, seed));
  EXPECT_GT(spool_terminated, 0) << "the fault never hit a Spool connection";
  EXPECT_GT(r.recoveries, 0u) << "no call failed and then succeeded: the fault was not observed";
  EXPECT_EQ(r.lost, 0u);
}

}  // namespace
}  // namespace spool::test::faults
