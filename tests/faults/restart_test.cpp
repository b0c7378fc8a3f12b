// PostgreSQL restarted mid-run (Spool issue 7), fast and immediate, on a
// server of the test's own: the mq queue, the op queue and the outbox writer
// keep their objects, reconnect by themselves, report only unavailable or
// in_doubt while the server is away, and lose nothing acknowledged.
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

class faults_restart_postgres : public ::testing::TestWithParam<std::string> {};

TEST_P(faults_restart_postgres, queues_and_writer_reconnect_by_themselves_and_lose_nothing_acknowledged) {
  std::string mode = GetParam();
  const auto seed = fault_seed();
  fmt::print("[faults] restart ({}) seed {} (replay: SPOOL_TEST_FAULTS_SEED={})\n", mode, seed, seed);
  std::fflush(stdout);
  RecordProperty("seed", std::to_string(seed));
  // immediate_durable: crash recovery on the settings users run (fsync,
  // synchronous_commit and full_page_writes on, issue 17's "torn power" on
  // PostgreSQL short of cutting the machine's power: the OS cache survives).
  const bool durable = mode == "immediate_durable";
  if (durable) mode = "immediate";
  private_pg_server server(durable);
  // The throwaway cluster runs synchronous_commit = off, under which an
  // immediate shutdown may drop commits already acknowledged. Acknowledged
  // must mean durable here, as it does on a production server.
  pg_exec(server.uri(), "ALTER DATABASE postgres SET synchronous_commit = on");
  if (durable) {
    for (const char* setting : {"fsync", "full_page_writes", "synchronous_commit"}) {
      ASSERT_EQ(pg_query(server.uri(), fmt::format("SHOW {}", setting)).at(0).at(0), "on") << setting;
    }
  }
  auto db = database::open(server.uri());
  spool::migrate(db);
  workload w(db, "restart-" + mode);
  w.start();
  ASSERT_TRUE(w.wait_for_progress(5, 60s)) << "the workload made no progress before the fault";

  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> gap_ms(200, 1500);
  constexpr int restarts = 5;
  for (int i = 1; i <= restarts; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(gap_ms(rng)));
    server.restart(mode);
    // Every producer and consumer succeeds again on its own objects.
    EXPECT_TRUE(w.wait_for_progress(3, 60s)) << "the workload did not recover after restart " << i;
  }
  w.stop();
  w.expect_same_objects_recover();
  w.drain();
  const auto r = w.verify(
      fmt::format("restart ({}{}): {} restarts, seed {}", mode, durable ? ", durable" : "", restarts, seed));
  EXPECT_GT(r.recoveries, 0u) << "no call failed and then succeeded: the restarts were not observed";
  EXPECT_EQ(r.lost, 0u);
}

INSTANTIATE_TEST_SUITE_P(shutdown, faults_restart_postgres,
                         ::testing::Values("fast", "immediate", "immediate_durable"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace spool::test::faults
