// `spool mq work` as a real process: it runs CMD per message, acks on exit 0,
// nacks otherwise, and stops gracefully on SIGTERM/SIGINT with exit 0.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli_runner.hpp"
#include "spool/database.hpp"
#include "spool/migrate.hpp"
#include "spool/mq/queue.hpp"
#include "support/test_db.hpp"

namespace {

using namespace std::chrono_literals;
using spool::test::cli_process;
using spool::test::read_file;

class mq_work : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    uri_ = GetParam() ? spool::test::make_pg_database("cli_mq_work") : dir_.sqlite_uri("work.db");
    db_.emplace(spool::database::open(uri_));
    (void)spool::migrate(*db_);
  }
  std::int64_t rows(const std::string& where = "1=1") {
    return std::stoll(*db_->exec("SELECT count(*) FROM queue_messages WHERE " + where).at(0).at(0));
  }
  spool::test::temp_dir dir_;
  std::string uri_;
  std::optional<spool::database> db_;
};

TEST_P(mq_work, each_message_is_fed_to_the_command_and_acked_then_sigterm_stops_with_a_summary) {
  spool::mq::queue q(*db_, {.name = "w"});
  spool::mq::message a{.id = "a", .mediation_type = "HTTP"}, b{.id = "b", .message_group_id = "g"};
  (void)q.publish_batch({a, b});
  const auto log = dir_.path() / "handled.log";
  cli_process worker({"mq", "work", "--queue", "w", "--concurrency", "2", "--json", "--db", uri_, "--exec",
                      "cat >> " + log.string() +
                          " && echo \"$SPOOL_MQ_ID ${SPOOL_MQ_GROUP:-none} "
                          "$SPOOL_MQ_RECEIVE_COUNT\" >> " +
                          log.string()},
                     dir_.path());
  for (int i = 0; i < 1200 && rows() > 0; ++i) std::this_thread::sleep_for(50ms);
  EXPECT_EQ(rows(), 0);
  EXPECT_EQ(worker.stop(SIGTERM), 0) << worker.err();
  const auto handled = read_file(log);
  EXPECT_NE(handled.find(R"({"id":"a","mediationType":"HTTP","mediationTarget":""})"), std::string::npos)
      << handled;
  EXPECT_NE(handled.find("a none 1"), std::string::npos) << handled;
  EXPECT_NE(handled.find("b g 1"), std::string::npos) << handled;
  const auto summary = nlohmann::json::parse(worker.out());
  EXPECT_EQ(summary["acked"], 2);
  EXPECT_EQ(summary["nacked"], 0);
  EXPECT_EQ(summary["stopped_by"], "SIGTERM");
}

TEST_P(mq_work, a_failing_command_nacks_its_message_with_a_delay) {
  spool::mq::queue q(*db_, {.name = "w"});
  (void)q.publish(spool::mq::message{.id = "bad"});
  cli_process worker(
      {"mq", "work", "--queue", "w", "--db", uri_, "--exec", "echo 'no such customer' >&2; exit 3"},
      dir_.path());
  // Nacked: released (no receipt) and delayed by about a second.
  for (int i = 0; i < 2400 && rows("receive_count >= 1 AND receipt_handle IS NULL") == 0; ++i) {
    std::this_thread::sleep_for(25ms);
  }
  EXPECT_EQ(worker.stop(SIGINT), 0) << worker.err();
  EXPECT_EQ(rows("id = 'bad'"), 1);
  EXPECT_NE(worker.out().find("nacked"), std::string::npos);
  EXPECT_NE(worker.err().find("no such customer"), std::string::npos);
}

// message-queue.md §7.1 through the CLI: with --strict-group-order a
// group's second message runs only after the first one's command ended and
// was acked, though two workers are free; without it both run at once (the
// second worker's next poll, within its 1 s interval, finds m2 eligible
// while m1's 3 s command runs).
TEST_P(mq_work, strict_group_order_runs_a_groups_messages_one_at_a_time_in_order) {
  for (const bool strict : {true, false}) {
    SCOPED_TRACE(strict ? "strict" : "legacy");
    const std::string queue = strict ? "strict" : "legacy";
    spool::mq::queue q(*db_, {.name = queue});
    (void)q.publish_batch({spool::mq::message{.id = "m1", .message_group_id = "g"},
                           spool::mq::message{.id = "m2", .message_group_id = "g"}});
    const auto log = dir_.path() / (queue + ".log");
    std::vector<std::string> args = {"mq",
                                     "work",
                                     "--queue",
                                     queue,
                                     "--concurrency",
                                     "2",
                                     "--db",
                                     uri_,
                                     "--exec",
                                     "cat > /dev/null; echo \"S $SPOOL_MQ_ID\" >> " + log.string() +
                                         "; sleep " + (strict ? "1" : "3") + "; echo \"E $SPOOL_MQ_ID\" >> " +
                                         log.string()};
    if (strict) args.push_back("--strict-group-order");
    cli_process worker(args, dir_.path(), queue);
    for (int i = 0; i < 2400 && rows("queue_name = '" + queue + "'") > 0; ++i)
      std::this_thread::sleep_for(25ms);
    EXPECT_EQ(rows("queue_name = '" + queue + "'"), 0);
    EXPECT_EQ(worker.stop(SIGTERM), 0) << worker.err();
    const auto handled = read_file(log);
    if (strict) {
      EXPECT_EQ(handled, "S m1\nE m1\nS m2\nE m2\n");
    } else {
      // Both in flight at once: both started before either ended (the two
      // workers' commands may start in either order).
      const bool both = handled.substr(0, 10) == "S m1\nS m2\n" || handled.substr(0, 10) == "S m2\nS m1\n";
      EXPECT_TRUE(both) << handled;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(engines, mq_work, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "postgres" : "sqlite"; });

}  // namespace
