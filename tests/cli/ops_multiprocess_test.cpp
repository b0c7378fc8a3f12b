// op-queue.md §9.29 and §9.30 with real processes: pools in separate
// `spool ops work` processes ($SPOOL_CLI) and in this test process, sharing
// one PostgreSQL database or one SQLite file. tests/ops/worker_pool_test.cpp
// holds the in-process versions; here a crash is a real SIGKILL and "another
// pool" is another process with its own connections and clock readings.
//
// Handler commands append their pid to a file once per call, so the test
// counts calls and knows a handler started without sleeping. Every wait is for
// database state or a file, bounded by a generous timeout; nothing asserts
// elapsed time.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli_runner.hpp"
#include "spool/database.hpp"
#include "spool/migrate.hpp"
#include "spool/ops/queue.hpp"
#include "spool/ops/worker_pool.hpp"
#include "support/expect_error.hpp"
#include "support/test_db.hpp"

namespace {

using namespace std::chrono_literals;
using spool::ops::op_status;
using spool::test::cli_process;

using spool::test::engine_kind;

std::string millis(std::chrono::milliseconds d) { return std::to_string(d.count()) + "ms"; }

// A path as one word of a /bin/sh command.
std::string sh_quote(const std::filesystem::path& p) {
  std::string out = "'";
  for (const char c : p.string()) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The non-empty lines of a file; none when it does not exist yet.
std::vector<std::string> lines_of(const std::filesystem::path& p) {
  std::vector<std::string> out;
  std::istringstream in(spool::test::read_file(p));
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

class ops_multiprocess : public ::testing::TestWithParam<engine_kind> {
 protected:
  void SetUp() override {
    uri_ = is_pg() ? spool::test::make_pg_database("cli_ops_multiprocess") : dir_.sqlite_uri("shared.db");
    db_.emplace(spool::database::open(uri_));
    (void)spool::migrate(*db_);
    q_.emplace(*db_);
  }

  [[nodiscard]] bool is_pg() const { return GetParam() == engine_kind::postgres; }

  // Leases of many heartbeats: on a loaded 2-core CI machine a heartbeat can
  // be hundreds of milliseconds late, and these scenarios are about what the
  // rescuer does with live and dead leases, not about scheduling jitter.
  // SQLite stores whole seconds, so its lease must be several seconds long.
  [[nodiscard]] std::chrono::milliseconds heartbeat() const { return is_pg() ? 200ms : 1000ms; }
  [[nodiscard]] std::chrono::milliseconds lease() const { return is_pg() ? 3000ms : 4000ms; }

  std::string enqueue(const std::string& type) {
    spool::ops::new_op o;
    o.type = type;
    return q_->enqueue(o).id;
  }

  // The claim's fencing token as stored: get() never returns it, and only a
  // rescue or a new claim changes it.
  std::optional<std::string> lease_token_of(const std::string& id) {
    const auto r = db_->exec("SELECT lease_token FROM ops_queue WHERE id = '" + id + "'");
    return r.empty() ? std::nullopt : r.at(0).at(0);
  }

  // Polls f until it holds or timeout passes; only a bound, so a failure
  // cannot hang the suite.
  static bool wait_for(const std::function<bool()>& f, std::chrono::seconds timeout = 60s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (f()) return true;
      std::this_thread::sleep_for(50ms);
    }
    return f();
  }

  // A handler command that appends its pid to `calls` (one line per call)
  // and then blocks until `until` exists — or until the test's directory is
  // gone, so a command orphaned by a failed test does not outlive it.
  [[nodiscard]] std::string blocking_command(const std::filesystem::path& calls,
                                             const std::filesystem::path& until) const {
    return "echo $$ >> " + sh_quote(calls) + "; until [ -e " + sh_quote(until) + " ] || [ ! -d " +
           sh_quote(dir_.path()) + " ]; do sleep 0.1; done";
  }

  // `spool ops work` options shared by every pool process of a scenario.
  [[nodiscard]] std::vector<std::string> work_args(const std::string& owner,
                                                   const std::string& command) const {
    std::vector<std::string> args{"ops", "work", "--type", "long", "--concurrency", "1", "--owner", owner};
    args.insert(args.end(), {"--poll-interval", "50ms", "--heartbeat-interval", millis(heartbeat()),
                             "--lease-timeout", millis(lease())});
    args.insert(args.end(), {"--json", "--db", uri_, "--exec", command});
    return args;
  }

  // Declared first: on before any child starts, and off only after the test
  // body's cli_process guards have killed and reaped their processes.
  spool::test::child_subreaper reaper_;
  spool::test::temp_dir dir_;
  std::string uri_;
  std::optional<spool::database> db_;
  std::optional<spool::ops::queue> q_;
};

TEST_P(ops_multiprocess, AWorkerProcessKilledMidOpIsRecoveredByAnotherPoolsRescuer) {  // §9.29
  const auto id = enqueue("long");
  const auto calls = dir_.path() / "calls";
  // No rescuer in the doomed process: only the test's pool may recover the op.
  auto args = work_args("doomed", blocking_command(calls, dir_.path() / "never"));
  args.emplace_back("--no-rescuer");
  cli_process doomed(args, dir_.path(), "doomed");
  ASSERT_TRUE(wait_for([&] { return !lines_of(calls).empty() && q_->get(id).status == op_status::running; }))
      << doomed.err();
  const auto claimed = q_->get(id);
  EXPECT_EQ(claimed.lease_owner, "doomed");
  EXPECT_EQ(claimed.attempts, 1);
  const auto dead_token = lease_token_of(id);
  ASSERT_TRUE(dead_token.has_value());

  // The crash. The CLI runs each command in a process group of its own (so
  // that its shutdown SIGTERM reaches the whole command), so killing the
  // worker's group leaves the command orphaned — it becomes this process's
  // child through the subreaper — and it is killed next, as a crash of the
  // whole machine would: nothing of the first attempt keeps running.
  const pid_t command = std::stoi(lines_of(calls).at(0));
  const pid_t command_group = getpgid(command);
  ASSERT_GT(command_group, 1) << "the command is gone before the crash";
  EXPECT_EQ(doomed.kill_group(SIGKILL), 128 + SIGKILL) << doomed.err();
  spool::test::kill_process_group(command_group);
  EXPECT_FALSE(spool::test::process_group_exists(command_group))
      << "a process of the handler command survived";
  EXPECT_EQ(q_->get(id).status, op_status::running);  // a dead worker records nothing

  std::atomic<int> handled{0};
  spool::ops::worker_pool_options o;
  o.workers = 1;
  o.owner = "rescuer";
  o.poll_interval = 50ms;
  o.heartbeat_interval = heartbeat();
  o.lease_timeout = lease();
  o.rescuer = true;
  o.rescue_interval = heartbeat();
  spool::ops::worker_pool pool(*q_, o);
  pool.add_handler("long", [&](const spool::ops::op&, spool::ops::handler_context&) { ++handled; });
  pool.start();
  ASSERT_TRUE(wait_for([&] { return q_->get(id).status == op_status::done; }));
  (void)pool.stop();

  const auto done = q_->get(id);
  EXPECT_EQ(done.attempts, 2);
  EXPECT_EQ(pool.metrics().by_type.at("long").recovered, 1u);
  EXPECT_EQ(pool.metrics().by_type.at("long").succeeded, 1u);
  EXPECT_EQ(handled.load(), 1);
  EXPECT_EQ(lines_of(calls).size(), 1u);  // the dead process ran the command once, and never again
  // The dead claim is fenced: its token can no longer finish the op.
  EXPECT_SPOOL_ERROR(q_->ack(id, *dead_token), spool::errc::lease_lost);
}

TEST_P(ops_multiprocess, ALiveOpInOneProcessIsNeverStolenByAnotherProcesssRescuer) {  // §9.30
  const auto id = enqueue("long");
  const auto calls = dir_.path() / "calls", go = dir_.path() / "GO";
  // A probe op returns at once; any `long` op, in either process, is a call.
  const std::string command = "[ \"$SPOOL_OP_TYPE\" = probe ] && exit 0; " + blocking_command(calls, go);

  // Pool A runs the op and heartbeats it; no rescuer, so only B's could take it.
  auto a_args = work_args("proc-a", command);
  a_args.emplace_back("--no-rescuer");
  cli_process a(a_args, dir_.path(), "a");
  ASSERT_TRUE(wait_for([&] { return !lines_of(calls).empty() && q_->get(id).status == op_status::running; }))
      << a.err();
  ASSERT_EQ(q_->get(id).lease_owner, "proc-a");
  const auto token = lease_token_of(id);
  ASSERT_TRUE(token.has_value());

  // Pool B: another process and owner, the same lease timeout, its rescuer on
  // every heartbeat, and a handler for `long` too, so an op it stole would
  // also run a second time. It started after A's claim, so it cannot simply
  // have claimed the op first.
  auto b_args = work_args("proc-b", command);
  b_args.insert(b_args.end(), {"--type", "probe", "--rescue-interval", millis(heartbeat())});
  cli_process b(b_args, dir_.path(), "b");
  // B's pool (and so its rescuer) is running once it has handled a probe.
  const auto probe = enqueue("probe");
  ASSERT_TRUE(wait_for([&] { return q_->get(probe).status == op_status::done; })) << b.err();

  // Watch the op until its heartbeats show 3 lease timeouts since B came up,
  // sampling who holds it: any rescue would show as another status, owner,
  // token or attempt count.
  const auto from = q_->get(id).heartbeat_at;
  ASSERT_TRUE(from.has_value());
  const auto until = *from + std::chrono::duration_cast<std::chrono::microseconds>(3 * lease());
  int samples = 0, stolen = 0;
  ASSERT_TRUE(wait_for([&] {
    const auto now = q_->get(id);
    ++samples;
    if (now.status != op_status::running || now.lease_owner != "proc-a" || now.attempts != 1 ||
        lease_token_of(id) != token) {
      ++stolen;
    }
    return now.status != op_status::running || (now.heartbeat_at && *now.heartbeat_at >= until);
  })) << a.err()
      << b.err();
  EXPECT_EQ(stolen, 0) << "of " << samples << " samples";

  std::ofstream(go).close();
  ASSERT_TRUE(wait_for([&] { return q_->get(id).status == op_status::done; })) << a.err();
  EXPECT_EQ(a.stop(SIGTERM), 0) << a.err();
  EXPECT_EQ(b.stop(SIGTERM), 0) << b.err();

  const auto done = q_->get(id);
  EXPECT_EQ(done.attempts, 1);
  EXPECT_EQ(lines_of(calls).size(), 1u);
  // Each process's own account, from its --json summary at exit.
  const auto sa = nlohmann::json::parse(a.out()), sb = nlohmann::json::parse(b.out());
  EXPECT_EQ(sb["owner"], "proc-b");
  EXPECT_EQ(sb["recovered"], 0) << sb.dump();
  EXPECT_EQ(sb["claimed"], 1) << sb.dump();  // the probe only
  EXPECT_EQ(sb["by_type"]["long"]["claimed"], 0) << sb.dump();
  EXPECT_EQ(sa["owner"], "proc-a");
  EXPECT_EQ(sa["claimed"], 1) << sa.dump();
  EXPECT_EQ(sa["succeeded"], 1) << sa.dump();
  EXPECT_EQ(sa["lease_lost"], 0) << sa.dump();
}

INSTANTIATE_TEST_SUITE_P(engines, ops_multiprocess,
                         ::testing::Values(engine_kind::postgres, engine_kind::sqlite), [](const auto& info) {
                           return info.param == engine_kind::postgres ? "postgres" : "sqlite";
                         });

}  // namespace
