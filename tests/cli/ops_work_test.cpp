// `spool ops work` as a real process (op-queue.md §7.4): it runs CMD per op
// with the op JSON on stdin; exit 0 = done, 65 = failed without retry, other
// = failed with retry; SIGTERM/SIGINT stop it gracefully with exit 0.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "spool/database.hpp"
#include "spool/migrate.hpp"
#include "spool/ops/queue.hpp"
#include "support/test_db.hpp"

extern char** environ;

namespace {

using namespace std::chrono_literals;

struct background {
  pid_t pid = 0;
  std::filesystem::path out, err;
};

background start_work(const std::vector<std::string>& args, const spool::test::temp_dir& dir) {
  const char* exe = std::getenv("SPOOL_CLI");
  if (exe == nullptr) throw std::runtime_error("SPOOL_CLI is not set: run the tests through ctest");
  background b{0, dir.path() / "work.out", dir.path() / "work.err"};
  std::vector<char*> argv{const_cast<char*>(exe)};
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, b.out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, 2, b.err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (posix_spawn(&b.pid, exe, &fa, nullptr, argv.data(), environ) != 0) throw std::runtime_error("spawn failed");
  posix_spawn_file_actions_destroy(&fa);
  return b;
}

int stop_work(const background& b, int sig) {
  kill(b.pid, sig);
  int status = 0;
  waitpid(b.pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

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
  const std::string script = "read -r op; echo \"$op\" >> " + log.string() +
                             "; case \"$op\" in *'\"n\":65'*) echo 'bad input' >&2; exit 65;; *'\"n\":3'*) echo "
                             "'try again' >&2; exit 3;; esac";
  const auto worker = start_work({"ops", "work", "--type", "t", "--concurrency", "2", "--poll-interval", "50ms",
                                  "--json", "--db", uri_, "--exec", script},
                                 dir_);
  EXPECT_TRUE(wait_for([&] {
    return q_->get(ok).status == spool::ops::op_status::done &&
           q_->get(permanent).status == spool::ops::op_status::failed && !q_->get(retry).last_error.empty();
  })) << slurp(worker.err);
  EXPECT_EQ(stop_work(worker, SIGTERM), 0) << slurp(worker.err);
  EXPECT_EQ(q_->get(permanent).last_error, "bad input");
  EXPECT_EQ(q_->get(permanent).attempts, 1);
  const auto r = q_->get(retry);
  EXPECT_EQ(r.status, spool::ops::op_status::pending);
  EXPECT_EQ(r.last_error, "try again");
  EXPECT_EQ(q_->get(other).status, spool::ops::op_status::pending);
  const auto handled = slurp(log);
  EXPECT_NE(handled.find("\"id\":\"" + ok + "\""), std::string::npos) << handled;
  const auto summary = nlohmann::json::parse(slurp(worker.out));
  EXPECT_EQ(summary["stopped_by"], "SIGTERM");
  EXPECT_EQ(summary["succeeded"], 1);
  EXPECT_EQ(summary["failed"], 1);
  EXPECT_EQ(summary["retried"], 1);
}

TEST_P(ops_work, a_graceful_stop_terminates_a_running_command_and_releases_its_op) {
  const auto id = enqueue("slow");
  const auto started = dir_.path() / "started";
  const auto worker = start_work({"ops", "work", "--type", "slow", "--poll-interval", "50ms", "--shutdown-deadline",
                                  "0", "--cancel-grace", "10s", "--db", uri_, "--exec",
                                  "touch " + started.string() + "; exec sleep 60"},
                                 dir_);
  ASSERT_TRUE(wait_for([&] { return std::filesystem::exists(started); })) << slurp(worker.err);
  EXPECT_EQ(stop_work(worker, SIGINT), 0) << slurp(worker.err);
  const auto o = q_->get(id);
  EXPECT_EQ(o.status, spool::ops::op_status::pending);
  EXPECT_EQ(o.attempts, 0);
  EXPECT_EQ(o.last_error.rfind("interrupted by shutdown: ", 0), 0u) << o.last_error;
}

INSTANTIATE_TEST_SUITE_P(engines, ops_work, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "postgres" : "sqlite"; });

}  // namespace
