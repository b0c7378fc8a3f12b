// The console's message-queue sampler on a real SQLite file: every message
// that arrives is counted once, also when its transaction commits seconds
// after the time its row carries, and rows that leave are completions.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <thread>

#include "serve/console/sampler.hpp"
#include "spool/database.hpp"
#include "spool/migrate.hpp"
#include "spool/mq/browser.hpp"
#include "support/eventually.hpp"
#include "support/test_db.hpp"

namespace spool::serve::console {

namespace {

using namespace std::chrono_literals;

std::int64_t now_s() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Σ rate × seconds over a queue's points: the messages the history counts.
std::pair<long, long> counted(const mq_sampler& s, const std::string& queue) {
  double in = 0, out = 0;
  const auto history = s.history();  // kept: the loop reads into it
  for (const auto& q : history["queues"]) {
    if (q["queue"] != queue) continue;
    for (const auto& p : q["points"]) {
      in += p["enqueued"].get<double>() * p["seconds"].get<double>();
      out += p["completed"].get<double>() * p["seconds"].get<double>();
    }
  }
  return {std::lround(in), std::lround(out)};
}

void insert(database& db, const std::string& id, std::int64_t created_at) {
  db.exec(
      "INSERT INTO queue_messages (id, queue_name, message_group_id, receipt_handle, visible_at, payload, "
      "created_at, receive_count) VALUES ($1, 'q', NULL, NULL, $2, '{}', $2, 0)",
      {id, created_at});
}

}  // namespace

TEST(console_sampler, every_arrival_is_counted_once_even_when_it_commits_after_its_rows_second) {
  test::temp_dir dir;
  auto db = database::open(dir.sqlite_uri());
  spool::migrate(db);
  mq::browser b(db);
  mq_sampler sampler(b, 1s);
  insert(db, "before", now_s());  // may land before the first sample: that one makes no point
  ASSERT_TRUE(test::eventually([&] { return !sampler.history()["queues"].empty(); }, 30s, 50ms));
  for (int i = 0; i < 5; ++i) insert(db, "now-" + std::to_string(i), now_s());
  // Three rows stamped 3 s ago, as a transaction that began then and commits now writes them.
  for (int i = 0; i < 3; ++i) insert(db, "late-" + std::to_string(i), now_s() - 3);
  ASSERT_TRUE(test::eventually([&] { return counted(sampler, "q").first >= 8; }, 30s, 50ms)) << sampler.history().dump();
  // Two more samples later, nothing was counted twice.
  std::this_thread::sleep_for(2500ms);
  const auto [in, out] = counted(sampler, "q");
  EXPECT_GE(in, 8);
  EXPECT_LE(in, 9);  // "before" counts when the first sample came before it
  EXPECT_EQ(out, 0);
  db.exec("DELETE FROM queue_messages WHERE id LIKE 'now-%'");
  ASSERT_TRUE(test::eventually([&] { return counted(sampler, "q").second >= 5; }, 30s, 50ms));
  std::this_thread::sleep_for(2500ms);
  EXPECT_EQ(counted(sampler, "q").second, 5);
  EXPECT_EQ(counted(sampler, "q").first, in);
}

}  // namespace spool::serve::console
