// The main job (examples/order_service, the README's first command) run end to
// end as a process on both engines: its summary must report a correct run, and
// the database must agree with the summary — checked here by plain SQL, not by
// trusting the program's own verdict.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "support/test_db.hpp"

namespace {

using spool::test::rows;

struct run_result {
  int exit_code = -1;
  nlohmann::json summary;
  std::string err;
};

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

run_result run_order_service(const std::string& db, const std::filesystem::path& dir, int orders) {
  const char* exe = std::getenv("SPOOL_ORDER_SERVICE");
  if (exe == nullptr) throw std::runtime_error("SPOOL_ORDER_SERVICE is not set (run through ctest)");
  const auto out = dir / "summary.json", err = dir / "stderr.txt";
  const std::string cmd = "'" + std::string(exe) + "' --db '" + db + "' --orders " + std::to_string(orders) +
                          " --customers 8 --json > '" + out.string() + "' 2> '" + err.string() + "'";
  const int status = std::system(cmd.c_str());
  run_result r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.err = slurp(err);
  const std::string text = slurp(out);
  r.summary = nlohmann::json::parse(text, nullptr, false);
  return r;
}

// What the summary must say for a run of n orders.
void expect_correct_summary(const run_result& r, int n) {
  ASSERT_EQ(r.exit_code, 0) << r.err << r.summary.dump();
  const auto& s = r.summary;
  ASSERT_TRUE(s.is_object()) << "stdout was not one JSON document";
  EXPECT_EQ(s["ok"], true) << s.dump();
  EXPECT_EQ(s["failures"].size(), 0u) << s.dump();
  EXPECT_EQ(s["written"], n);
  EXPECT_EQ(s["relay"]["delivered"], n);
  EXPECT_EQ(s["relay"]["dead_lettered"], 0);
  EXPECT_EQ(s["queue"]["acked"], n - 1);  // all but the poison order
  EXPECT_GT(s["queue"]["transient_failures"].get<int>(), 0);
  EXPECT_EQ(s["queue"]["nacked"].get<int>(), s["queue"]["transient_failures"].get<int>() + 3)
      << "each transient failure and the poison order's three deliveries are nacked";
  EXPECT_EQ(s["queue"]["dead_lettered"], 1);
  EXPECT_EQ(s["queue"]["dead_letter_reason"], "max receives exceeded");
  EXPECT_EQ(s["queue"]["quarantined"], 1);
  EXPECT_EQ(s["followups"]["succeeded"], n - 1);
  EXPECT_GT(s["followups"]["retried"].get<int>(), 0);
  EXPECT_EQ(s["confirmed"], n - 1);
  EXPECT_EQ(s["lost"], 0);
  EXPECT_EQ(s["duplicates"], 0);
  EXPECT_EQ(s["ordering_violations"], 0);
  // What bounds it: the writing phase and the tail add up to the run, and
  // what was behind at the last order is counted stage by stage.
  EXPECT_GT(s["writing_s"].get<double>(), 0.0);
  EXPECT_GE(s["tail_s"].get<double>(), 0.0);
  EXPECT_NEAR(s["writing_s"].get<double>() + s["tail_s"].get<double>(), s["elapsed_s"].get<double>(), 0.01);
  for (const char* stage : {"envelopes", "messages", "ops"}) {
    EXPECT_GE(s["behind_at_last_order"][stage].get<int>(), 0) << stage;
    EXPECT_LE(s["behind_at_last_order"][stage].get<int>(), n) << stage;
  }
}

// What the database must hold after a run of n orders (queries in both dialects).
void expect_database_agrees(const std::function<rows(const std::string&)>& query, int n) {
  const auto by_status = query("SELECT status, count(*) FROM shop_orders GROUP BY status ORDER BY status");
  ASSERT_EQ(by_status.size(), 2u);
  EXPECT_EQ(by_status[0][0], "confirmed");
  EXPECT_EQ(by_status[0][1], std::to_string(n - 1));
  EXPECT_EQ(by_status[1][0], "placed");
  EXPECT_EQ(by_status[1][1], "1");
  const auto poison = query("SELECT id FROM shop_orders WHERE status = 'placed'");
  ASSERT_EQ(poison.size(), 1u);
  EXPECT_EQ(poison[0][0], "order-" + std::string(6 - std::to_string(n / 2).size(), '0') + std::to_string(n / 2));

  // Every envelope delivered, none left or dead; the queue empty; the two failed rows.
  EXPECT_EQ(query("SELECT count(*) FROM shop_outbox WHERE delivered_at IS NULL")[0][0], "0");
  EXPECT_EQ(query("SELECT count(*) FROM shop_outbox")[0][0], std::to_string(n));
  EXPECT_EQ(query("SELECT count(*) FROM queue_messages WHERE queue_name = 'shop-orders'")[0][0], "0");
  const auto failed =
      query("SELECT id, error_message FROM queue_messages_failed WHERE queue_name = 'shop-orders' ORDER BY id");
  ASSERT_EQ(failed.size(), 2u);
  EXPECT_EQ(failed[0][0], poison[0][0]);
  EXPECT_EQ(failed[1][0], "shop-legacy-garbled-1");
  // One confirmation job per confirmed order, all done.
  EXPECT_EQ(query("SELECT count(*) FROM ops_queue WHERE type = 'shop.send_confirmation' AND status = 'done'")[0][0],
            std::to_string(n - 1));
  EXPECT_EQ(query("SELECT count(*) FROM ops_queue WHERE type = 'shop.send_confirmation'")[0][0],
            std::to_string(n - 1));
}

TEST(order_service, the_whole_pipeline_on_sqlite_ends_with_a_correct_summary_that_the_database_confirms) {
  spool::test::temp_dir dir;
  const auto file = (dir.path() / "shop.db").string();
  const auto r = run_order_service("sqlite:" + file, dir.path(), 300);
  expect_correct_summary(r, 300);
  expect_database_agrees([&](const std::string& sql) { return spool::test::sqlite_query(file, sql); }, 300);
}

TEST(order_service, a_second_run_on_the_same_sqlite_file_starts_clean_and_is_correct_again) {
  spool::test::temp_dir dir;
  const auto file = (dir.path() / "shop.db").string();
  expect_correct_summary(run_order_service("sqlite:" + file, dir.path(), 120), 120);
  const auto again = run_order_service("sqlite:" + file, dir.path(), 100);
  expect_correct_summary(again, 100);
  expect_database_agrees([&](const std::string& sql) { return spool::test::sqlite_query(file, sql); }, 100);
}

TEST(order_service, the_whole_pipeline_on_postgres_ends_with_a_correct_summary_that_the_database_confirms) {
  const auto uri = spool::test::make_pg_database("order_service");
  spool::test::temp_dir dir;
  const auto r = run_order_service(uri, dir.path(), 300);
  expect_correct_summary(r, 300);
  expect_database_agrees([&](const std::string& sql) { return spool::test::pg_query(uri, sql); }, 300);
}

}  // namespace
