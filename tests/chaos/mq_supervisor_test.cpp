// Crash test with real processes (issue 7): producers and consumers of one
// queue run as separate processes (spool_chaos_actor) while a supervisor
// SIGKILLs one of them at seeded random points and restarts it, for tens of
// thousands of messages, on PostgreSQL and on one SQLite file shared by all.
// Then the delivery-log checker must find nothing lost, no per-group order
// violation, and duplicates only where a delivery was never acknowledged.
//
// The seed is printed; SPOOL_CHAOS_SEED=<n> replays a run's kill schedule.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <thread>

#include "chaos/supervisor.hpp"
#include "spool/database.hpp"
#include "spool/migrate.hpp"
#include "support/delivery_log.hpp"
#include "support/test_db.hpp"

namespace spool::test {
namespace {

using namespace std::chrono_literals;

std::string actor_path() {
  const char* p = std::getenv("SPOOL_CHAOS_ACTOR");
  if (p == nullptr) throw std::runtime_error("SPOOL_CHAOS_ACTOR is not set (run through ctest)");
  return p;
}

class mq_chaos : public ::testing::TestWithParam<engine> {
 protected:
  [[nodiscard]] bool is_pg() const { return GetParam() == engine::postgres; }
};

TEST_P(mq_chaos, sigkilled_producers_and_consumers_lose_nothing_and_keep_group_order) {
  const std::uint64_t seed = chaos_seed();
  std::cout << "chaos seed " << seed << " for " << current_test() << " (replay with SPOOL_CHAOS_SEED=" << seed
            << ")\n";
  RecordProperty("chaos_seed", std::to_string(seed));
  std::mt19937_64 rng(seed);

  temp_dir dir;
  const std::string uri = is_pg() ? make_pg_database("mq_chaos") : dir.sqlite_uri("chaos.db");
  {
    auto db = database::open(uri);
    spool::migrate(db);
  }
  constexpr int producers = 3, consumers = 4, groups_per_producer = 10;
  constexpr int per_producer = 7000;  // 21,000 messages
  const std::string queue = "chaos";
  const auto logs = dir.path() / "logs";
  std::filesystem::create_directories(logs);

  std::vector<supervised> actors;
  for (int p = 0; p < producers; ++p) {
    const std::string name = "p" + std::to_string(p);
    actors.push_back({name,
                      actor_path(),
                      {"produce", "--db", uri, "--queue", queue, "--name", name, "--groups",
                       std::to_string(groups_per_producer), "--count", std::to_string(per_producer),
                       "--batch", "5", "--log", (logs / ("chaos-" + name + ".log")).string()},
                      true});
  }
  for (int c = 0; c < consumers; ++c) {
    const std::string name = "c" + std::to_string(c);
    actors.push_back({name,
                      actor_path(),
                      {"consume", "--db", uri, "--queue", queue, "--visibility", "2", "--batch", "4", "--log",
                       (logs / ("chaos-" + name + ".log")).string()},
                      false,
                      "spool_chaos_actor: ready"});
  }
  auto db = database::open(uri);
  const std::string remaining_sql = is_pg() ? "SELECT count(*) FROM queue_messages WHERE queue_name = $1"
                                            : "SELECT count(*) FROM queue_messages WHERE queue_name = ?1";
  auto remaining = [&] { return std::stol(*db.exec(remaining_sql, {queue}).at(0).at(0)); };

  // Kill someone until every producer has finished and the consumers have
  // all but drained the queue (under 2 % left).
  const auto chaos = run_chaos(
      actors, dir.path(), rng, [&] { return remaining() < producers * per_producer / 50; }, 15min);
  EXPECT_TRUE(chaos.failures.empty()) << chaos.failures.front();
  const int kills = chaos.kills, producer_kills = chaos.kills_of_finite;
  ASSERT_TRUE(chaos.done) << "producers did not finish and the queue did not drain in time";

  // No more kills: let the consumers drain (claims of killed consumers come
  // back after their 2 s window), then stop them gracefully.
  const auto drain_until = std::chrono::steady_clock::now() + 5min;
  while (*db.exec(remaining_sql, {queue}).at(0).at(0) != "0" &&
         std::chrono::steady_clock::now() < drain_until) {
    std::this_thread::sleep_for(200ms);
  }
  for (const auto& f : stop_when_ready(actors)) ADD_FAILURE() << f;
  EXPECT_EQ(*db.exec(remaining_sql, {queue}).at(0).at(0), "0") << "the queue did not drain";
  EXPECT_EQ(*db.exec(is_pg() ? "SELECT count(*) FROM queue_messages_failed WHERE queue_name = $1"
                             : "SELECT count(*) FROM queue_messages_failed WHERE queue_name = ?1",
                     {queue})
                 .at(0)
                 .at(0),
            "0");

  std::vector<produced_record> produced;
  std::vector<delivery_record> deliveries;
  std::vector<std::string> republished;
  read_logs(logs, "chaos-", produced, deliveries, &republished);
  auto report = check_deliveries(
      produced, deliveries, {.group_order = true, .strict_group_order = true, .republished = republished});
  // Every acked message is gone from the table (only an ack deletes one).
  std::map<std::string, std::string> stored;
  for (const char* table : {"queue_messages", "queue_messages_failed"}) {
    for (const auto& r : db.exec(
             fmt::format("SELECT id FROM {} WHERE queue_name = {}", table, is_pg() ? "$1" : "?1"), {queue})) {
      stored[*r.at(0)] = table;
    }
  }
  check_final_state(report, produced, stored, "", false);
  if (!is_pg()) EXPECT_EQ(sqlite_integrity(dir.path() / "chaos.db"), "ok");
  std::cout << "chaos (" << (is_pg() ? "postgres" : "sqlite") << "): " << kills << " SIGKILLs ("
            << producer_kills << " of producers); " << report.summary() << "\n";
  RecordProperty("kills", kills);
  RecordProperty("report", report.summary());
  EXPECT_GT(kills, 0);
  EXPECT_EQ(report.produced, producers * per_producer) << "every producer logged all its messages";
  EXPECT_TRUE(report.ok()) << report.summary();
  if (const char* keep = std::getenv("SPOOL_CHAOS_KEEP_LOGS"); keep != nullptr && !report.ok()) {
    const auto to = std::filesystem::path(keep) / (is_pg() ? "postgres" : "sqlite");
    std::filesystem::create_directories(to);
    std::filesystem::copy(
        logs, to,
        std::filesystem::copy_options::overwrite_existing | std::filesystem::copy_options::recursive);
    std::cout << "logs kept in " << to << "\n";
  }
}

INSTANTIATE_TEST_SUITE_P(engines, mq_chaos, ::testing::Values(engine::postgres, engine::sqlite),
                         [](const auto& info) {
                           return info.param == engine::postgres ? "postgres" : "sqlite";
                         });

}  // namespace
}  // namespace spool::test
