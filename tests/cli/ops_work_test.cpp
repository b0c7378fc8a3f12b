// `spool ops work` as a real process (op-queue.md §7.4): it runs CMD per op
// with the op JSON on stdin; exit 0 = done, 65 = failed without retry, other
// = failed with retry; SIGTERM/SIGINT stop it gracefully with exit 0.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "cli_runner.hpp"
#include "spool/database.hpp"
#include "spool/migrate.hpp"
#include "spool/ops/queue.hpp"
#include "support/test_db.hpp"

namespace {

using namespace std::chrono_literals;
using spool::test::cli_process;
using spool::test::read_file;

class ops_work : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    uri_ = GetParam() ? spool::test::make_pg_database("cli_ops_work") : dir_.sqlite_uri("work.db");
    db_.emplace(spool::database::open(uri_));
    (void)spool::migrate(*db_);
    q_.emplace(*db_);
  }
  std::string enqueue(const std::string& type, nlohmann::json payload = nlohmann::json::object()) {
    spool::ops::new_op o;
    o.type = type;
    o.payload = std::move(payload);
    return q_->enqueue(o).id;
  }
  bool wait_for(const std::function<bool()>& f) {
    for (int i = 0; i < 600; ++i) {
      if (f()) return true;
      std::this_thread::sleep_for(50ms);
    }
    return f();
  }
  spool::test::temp_dir dir_;
  std::string uri_;
  std::optional<spool::database> db_;
  std::optional<spool::ops::queue> q_;
};

TEST_P(ops_work, each_op_is_fed_to_the_command_and_its_exit_code_decides_the_outcome) {
  const auto ok = enqueue("t", {{"n", 1}});
  const auto permanent = enqueue("t", {{"n", 65}});
  const auto retry = enqueue("t", {{"n", 3}});
  const auto other = enqueue("unregistered");
  const auto log = dir_.path() / "handled.log";
  const std::string script =
      "read -r op; echo \"$op\" >> " + log.string() +
      "; case \"$op\" in *'\"n\":65'*) echo 'bad input' >&2; exit 65;; *'\"n\":3'*) echo "
      "'try again' >&2; exit 3;; esac";
  cli_process worker({"ops", "work", "--type", "t", "--concurrency", "2", "--poll-interval", "50ms", "--json",
                      "--db", uri_, "--exec", script},
                     dir_.path());
  EXPECT_TRUE(wait_for([&] {
    return q_->get(ok).status == spool::ops::op_status::done &&
           q_->get(permanent).status == spool::ops::op_status::failed && !q_->get(retry).last_error.empty();
  })) << worker.err();
  EXPECT_EQ(worker.stop(SIGTERM), 0) << worker.err();
  EXPECT_EQ(q_->get(permanent).last_error, "bad input");
  EXPECT_EQ(q_->get(permanent).attempts, 1);
  const auto r = q_->get(retry);
  EXPECT_EQ(r.status, spool::ops::op_status::pending);
  EXPECT_EQ(r.last_error, "try again");
  EXPECT_EQ(q_->get(other).status, spool::ops::op_status::pending);
  const auto handled = read_file(log);
  EXPECT_NE(handled.find("\"id\":\"" + ok + "\""), std::string::npos) << handled;
  const auto summary = nlohmann::json::parse(worker.out());
  EXPECT_EQ(summary["stopped_by"], "SIGTERM");
  EXPECT_EQ(summary["succeeded"], 1);
  EXPECT_EQ(summary["failed"], 1);
  EXPECT_EQ(summary["retried"], 1);
}

TEST_P(ops_work, a_graceful_stop_terminates_a_running_command_and_releases_its_op) {
  const auto id = enqueue("slow");
  const auto started = dir_.path() / "started";
  cli_process worker(
      {"ops", "work", "--type", "slow", "--poll-interval", "50ms", "--shutdown-deadline", "0",
       "--cancel-grace", "10s", "--db", uri_, "--exec", "touch " + started.string() + "; exec sleep 60"},
      dir_.path());
  ASSERT_TRUE(wait_for([&] { return std::filesystem::exists(started); })) << worker.err();
  EXPECT_EQ(worker.stop(SIGINT), 0) << worker.err();
  const auto o = q_->get(id);
  EXPECT_EQ(o.status, spool::ops::op_status::pending);
  EXPECT_EQ(o.attempts, 0);
  EXPECT_EQ(o.last_error.rfind("interrupted by shutdown: ", 0), 0u) << o.last_error;
}

TEST_P(ops_work, with_batch_the_command_runs_once_per_claimed_batch_and_its_exit_is_every_ops_outcome) {
  std::vector<std::string> good, bad;
  for (int i = 0; i < 6; ++i) good.push_back(enqueue("good", {{"n", i}}));
  for (int i = 0; i < 3; ++i) bad.push_back(enqueue("bad", {{"n", i}}));
  const auto lines = dir_.path() / "lines.log";
  const auto runs = dir_.path() / "runs.log";
  // Appends the ops it got, one per line, and one line per run: "TYPE COUNT".
  const std::string script = "cat >> " + lines.string() + "; echo \"$SPOOL_OP_TYPE $SPOOL_OP_COUNT\" >> " +
                             runs.string() +
                             "; [ \"$SPOOL_OP_TYPE\" = good ] || { echo 'rejected' >&2; exit 65; }";
  cli_process worker({"ops", "work", "--type", "good", "--type", "bad", "--batch", "10", "--concurrency", "1",
                      "--poll-interval", "50ms", "--db", uri_, "--exec", script},
                     dir_.path());
  EXPECT_TRUE(wait_for([&] {
    for (const auto& id : good)
      if (q_->get(id).status != spool::ops::op_status::done) return false;
    for (const auto& id : bad)
      if (q_->get(id).status != spool::ops::op_status::failed) return false;
    return true;
  })) << worker.err();
  EXPECT_EQ(worker.stop(SIGTERM), 0) << worker.err();
  for (const auto& id : bad) EXPECT_EQ(q_->get(id).last_error, "rejected") << id;
  // Nine ops, each on its own stdin line; far fewer runs than ops, each of one type.
  const auto fed = read_file(lines);
  EXPECT_EQ(std::count(fed.begin(), fed.end(), '\n'), 9) << fed;
  for (const auto& id : good) EXPECT_NE(fed.find("\"id\":\"" + id + "\""), std::string::npos) << id;
  const auto ran = read_file(runs);
  long ops_in_runs = 0, run_count = 0;
  std::istringstream in(ran);
  for (std::string type; in >> type;) {
    long n = 0;
    in >> n;
    ops_in_runs += n;
    ++run_count;
    EXPECT_TRUE(type == "good" || type == "bad") << ran;
  }
  EXPECT_EQ(ops_in_runs, 9) << ran;
  EXPECT_LT(run_count, 9) << "the command ran once per op: " << ran;
}

INSTANTIATE_TEST_SUITE_P(engines, ops_work, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "postgres" : "sqlite"; });

}  // namespace

namespace {

// --notify (PostgreSQL): with a poll interval of ten minutes, ops enqueued by
// `spool ops enqueue --notify` one after another — each only after the one
// before is done and the worker is idle again — can only be claimed because
// the enqueue's NOTIFY woke the worker: the next poll is minutes away.
TEST(ops_work_postgres, with_notify_an_idle_worker_is_woken_by_each_enqueue_long_before_its_next_poll) {
  spool::test::temp_dir dir;
  const auto uri = spool::test::make_pg_database("cli_ops_notify");
  auto db = spool::database::open(uri);
  (void)spool::migrate(db);
  spool::ops::queue q(db);
  cli_process worker({"ops", "work", "--type", "t", "--poll-interval", "10m", "--notify", "--json", "--db",
                      uri, "--exec", "cat > /dev/null"},
                     dir.path());
  for (int i = 0; i < 3; ++i) {
    std::this_thread::sleep_for(500ms);  // the worker settles into its ten-minute idle wait
    const auto r = spool::test::run_cli(
        {"ops", "enqueue", "--type", "t", "--notify", "--payload", "{}", "--json", "--db", uri});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string id = nlohmann::json::parse(r.out)["id"];
    bool done = false;
    for (int k = 0; k < 1200 && !done; ++k) {
      done = q.get(id).status == spool::ops::op_status::done;
      if (!done) std::this_thread::sleep_for(50ms);
    }
    ASSERT_TRUE(done) << "op " << i << " was not woken for: " << worker.err();
  }
  EXPECT_EQ(worker.stop(SIGTERM), 0) << worker.err();
  EXPECT_EQ(nlohmann::json::parse(worker.out())["succeeded"], 3);
}

}  // namespace
