// The real `spool` binary ($SPOOL_CLI) under hostile input and clock skew
// (issue 7). Injection: every flag that reaches SQL (--queue, --type,
// --topic, --key, --status, --schema, --ops-table, --outbox-table) takes the
// hostile strings; identifiers are refused (exit 1, invalid_argument) and
// values are stored literally. Clock skew: a `spool` process run under
// faketime (LD_PRELOAD of libfaketime) 2 hours ahead of or behind this test.
// PostgreSQL takes every time from the server, so skew must not matter;
// SQLite has no server and each process reads its own host clock, so skew
// moves the times that process writes — asserted here as the documented
// behaviour (docs/GUARANTEES.md, "Hostile input tested").
#include <cstdlib>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "cli/cli_runner.hpp"
#include "hostile/hostile_fixture.hpp"
#include "spool/mq/queue.hpp"
#include "spool/ops/queue.hpp"
#include "spool/outbox/store.hpp"

namespace spool::test {
namespace {

// The skewed processes run with libfaketime preloaded, ahead of the ASan
// runtime in the sanitizer pass, which ASan refuses unless told not to check
// the link order. Set once for this test process, inherited by every child;
// without ASan the option is ignored.
[[maybe_unused]] const bool asan_link_order_relaxed = [] {
  const char* a = std::getenv("ASAN_OPTIONS");
  const std::string v = (a != nullptr && *a != '\0' ? std::string(a) + ":" : std::string()) + "verify_asan_link_order=0";
  return ::setenv("ASAN_OPTIONS", v.c_str(), 1) == 0;
}();

using namespace std::chrono_literals;

class hostile_cli : public hostile {
 protected:
  std::vector<std::string> db(std::vector<std::string> args) const {
    args.push_back("--db");
    args.push_back(uri_);
    return args;
  }
  // The hostile strings a command line can carry (argv has no NUL bytes).
  static std::vector<std::string> argv_strings() {
    std::vector<std::string> out;
    for (auto& s : hostile_strings()) {
      if (s.find('\0') == std::string::npos) out.push_back(std::move(s));
    }
    return out;
  }

  std::filesystem::path file_with(const std::string& name, const std::string& text) {
    const auto path = dir_for_files_.path() / name;
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }

  // Runs `faketime -f <offset> spool args… --db URI` to completion.
  cli_result skewed(const std::string& offset, const std::vector<std::string>& args,
                    const std::string& name) {
    std::vector<std::string> full = {"-f", offset, cli_path()};
    for (const auto& a : db(args)) full.push_back(a);
    cli_process p("/usr/bin/faketime", full, dir_for_files_.path(), name);
    const auto until = std::chrono::steady_clock::now() + 120s;
    while (p.running() && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(20ms);
    cli_result r;
    r.exit_code = p.running() ? p.stop(SIGKILL) : p.stop(0);
    r.out = p.out();
    r.err = p.err();
    return r;
  }

  // This (unskewed) process's clock in Unix seconds. The test's PostgreSQL
  // server runs on the same host, so its clock agrees within the tolerances
  // the scenarios allow.
  std::int64_t host_now() const {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }

  temp_dir dir_for_files_;
};

// ---- SQL injection through the command line ----

TEST_P(hostile_cli, hostile_schema_and_table_flags_are_refused_as_invalid_identifiers_and_change_nothing) {
  const auto before = take_fingerprint();
  for (const auto& s : argv_strings()) {
    SCOPED_TRACE(shown(s));
    const std::vector<std::vector<std::string>> commands = {
        {"mq", "metrics", "--queue", "q", "--schema", s},
        {"ops", "stats", "--schema", s},
        {"ops", "stats", "--ops-table", s},
        {"ops", "enqueue", "--type", "t", "--payload", "{}", "--ops-table", s},
        {"outbox", "backlog", "--outbox-table", s},
        {"outbox", "write", "--topic", "t", "--outbox-table", s},
        {"outbox", "backlog", "--schema", s},
        {"migrate", "--schema", s},
        {"migrate", "--ops-table", s},
        {"migrate", "--outbox-table", s},
    };
    for (const auto& c : commands) {
      const auto r = run_cli(db(c));
      SCOPED_TRACE(c[0] + " " + c[1]);
      EXPECT_EQ(r.exit_code, 1) << r.err;
      EXPECT_EQ(r.err.rfind("spool: invalid_argument", 0), 0u) << r.err;
      EXPECT_EQ(count_lines(r.err), 1) << r.err;
    }
  }
  expect_only(before, take_fingerprint(), {}, "no hostile identifier changed anything");
}

TEST_P(hostile_cli, hostile_queue_type_topic_key_and_filter_values_are_stored_and_matched_literally) {
  for (const auto& s : argv_strings()) {
    SCOPED_TRACE(shown(s));
    const auto before = take_fingerprint();
    // mq: --queue and --group are values.
    const auto msg =
        file_with("m.json", R"({"id":"m1","mediationType":"HTTP","mediationTarget":"https://x.test/"})");
    const auto pub =
        run_cli(db({"mq", "publish", "--queue", s, "--group", s, "--file", msg.string(), "--json"}));
    ASSERT_EQ(pub.exit_code, 0) << pub.err;
    mq::queue_options qo;
    qo.name = s;
    mq::queue q(*db_, qo);
    const auto got = q.poll(10);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].queue, s);
    EXPECT_EQ(got[0].group, std::optional<std::string>(s));
    q.ack(got[0].receipt);

    // ops: --type is a value (1–255 bytes, no control characters).
    const bool type_ok = s.size() <= 255 && !has_control(s);
    const auto enq =
        run_cli(db({"ops", "enqueue", "--type", s, "--dedup-key", s, "--payload", "{}", "--json"}));
    if (type_ok) {
      const auto j = expect_json(enq);
      ops::queue oq(*db_);
      const auto op = oq.get(j["id"].get<std::string>());
      EXPECT_EQ(op.type, s);
      EXPECT_EQ(op.dedup_key, std::optional<std::string>(s));
      const auto listed = run_cli(db({"ops", "list", "--status", s, "--json"}));
      // A hostile status filter is refused or matches nothing.
      if (listed.exit_code == 0) {
        EXPECT_TRUE(expect_json(listed)["ops"].empty());
      } else {
        EXPECT_EQ(listed.err.rfind("spool: invalid_argument", 0), 0u) << listed.err;
      }
      db_->exec("DELETE FROM ops_queue WHERE id = " + p(1), {j["id"].get<std::string>()});
    } else {
      expect_failure(enq, 1, "spool: invalid_argument");
    }

    // outbox: --topic, --key and --idempotency-key are values (≤ 255 bytes).
    const auto wr =
        run_cli(db({"outbox", "write", "--topic", s, "--key", s, "--idempotency-key", s, "--json"}), s);
    if (s.size() <= 255) {
      const auto j = expect_json(wr);
      const auto id = j["id"].get<std::string>();
      outbox::store st(*db_);
      const auto claimed = st.claim("relay", 10, 60s);
      ASSERT_EQ(claimed.size(), 1u);
      EXPECT_EQ(claimed[0].message.topic, s);
      EXPECT_EQ(claimed[0].message.ordering_key, s);
      EXPECT_EQ(claimed[0].message.idempotency_key, s);
      EXPECT_EQ(claimed[0].message.payload, s) << "stdin is the payload, verbatim";
      const auto insp = run_cli(db({"outbox", "inspect", "--topic", s, "--json"}));
      const auto page = expect_json(insp);
      ASSERT_EQ(page["messages"].size(), 1u);
      EXPECT_EQ(page["messages"][0]["id"], id);
      db_->exec("DELETE FROM outbox_messages WHERE id = " + p(1), {id});
    } else {
      expect_failure(wr, 1, "spool: invalid_argument");
    }
    expect_only(before, take_fingerprint(), {}, "every row written was the one expected");
  }
}

// ---- invalid UTF-8 and oversized input through the command line ----

TEST_P(hostile_cli,
       invalid_utf8_and_oversized_input_on_the_command_line_are_typed_errors_that_change_nothing) {
  const auto before = take_fingerprint();
  const std::string line = R"({"id":"a)"
                           "\xff"
                           R"(b","mediationType":"HTTP","mediationTarget":"u"})";
  expect_failure(run_cli(db({"mq", "publish", "--queue", "q"}), line + "\n"), 1,
                 "spool: invalid_argument/invalid_encoding: input line 1");
  expect_failure(run_cli(db({"mq", "publish", "--queue", "q\xff"}), "{}\n"), 1,
                 "spool: invalid_argument/invalid_encoding");
  expect_failure(run_cli(db({"ops", "enqueue", "--type", "t\xff", "--payload", "{}"})), 1,
                 "spool: invalid_argument");
  expect_failure(run_cli(db({"ops", "enqueue", "--type", "t"}), "{\"k\":\"\xff\"}"), 1,
                 "spool: invalid_argument");
  expect_failure(run_cli(db({"outbox", "write", "--topic", "t\xff"}), "x"), 1,
                 "spool: invalid_argument/invalid_encoding");
  expect_failure(run_cli(db({"outbox", "write", "--topic", "t", "--key", "\xc0\xaf"}), "x"), 1,
                 "spool: invalid_argument/invalid_encoding");

  // One byte over 1 MiB on stdin.
  const std::size_t mib = 1u << 20;
  const std::string base = R"({"id":"big","mediationType":"HTTP","mediationTarget":"u","poolCode":""})";
  std::string big_line = base;
  big_line.insert(big_line.size() - 2, std::string(mib + 1 - base.size(), 'p'));
  ASSERT_EQ(big_line.size(), mib + 1);
  expect_failure(run_cli(db({"mq", "publish", "--queue", "q"}), big_line + "\n"), 1,
                 "spool: invalid_argument/payload_too_large");
  expect_failure(run_cli(db({"outbox", "write", "--topic", "t"}), std::string(mib + 1, 'x')), 1,
                 "spool: invalid_argument/payload_too_large");
  expect_failure(run_cli(db({"ops", "enqueue", "--type", "t"}), "{\"s\":\"" + std::string(mib, 'x') + "\"}"),
                 1, "spool: invalid_argument/payload_too_large");
  expect_only(before, take_fingerprint(), {}, "no refused command changed anything");

  // The outbox payload is opaque bytes: stored byte for byte.
  const std::string opaque = std::string("\xff\xc0\xaf\0\xed\xa0\x80", 7);
  const auto j = expect_json(run_cli(db({"outbox", "write", "--topic", "t", "--json"}), opaque));
  outbox::store st(*db_);
  const auto got = st.claim("relay", 1, 60s);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].message.id, j["id"].get<std::string>());
  EXPECT_EQ(got[0].message.payload, opaque);
}

// ---- clock skew between processes ----

TEST_P(hostile_cli, faketime_moves_the_clock_of_a_spool_process_by_two_hours) {
  // The premise of every skew scenario: the wrapper works on this machine.
  for (const auto& [offset, expected] :
       std::vector<std::pair<std::string, int>>{{"+2h", 7200}, {"-2h", -7200}}) {
    cli_process p("/usr/bin/faketime", {"-f", offset, "/bin/date", "+%s"}, dir_for_files_.path(), "date");
    while (p.running()) std::this_thread::sleep_for(10ms);
    ASSERT_EQ(p.stop(0), 0) << p.err();
    const auto skew = std::stoll(p.out()) - host_now();
    EXPECT_NEAR(static_cast<double>(skew), expected, 120) << offset;
  }
}

TEST_P(hostile_cli, an_mq_message_published_by_a_process_two_hours_ahead_is_delivered_on_the_database_clock) {
  const auto ahead =
      file_with("ahead.json", R"({"id":"ahead","mediationType":"HTTP","mediationTarget":"u"})");
  const auto behind =
      file_with("behind.json", R"({"id":"behind","mediationType":"HTTP","mediationTarget":"u"})");
  ASSERT_EQ(skewed("+2h", {"mq", "publish", "--queue", "q", "--file", ahead.string()}, "ahead").exit_code, 0);
  ASSERT_EQ(skewed("-2h", {"mq", "publish", "--queue", "q", "--file", behind.string()}, "behind").exit_code,
            0);
  mq::queue_options qo;
  qo.name = "q";
  mq::queue q(*db_, qo);
  const auto got = q.poll(10);
  std::set<std::string> ids;
  for (const auto& d : got) ids.insert(d.broker_message_id);
  const auto created = [&](const std::string& id) {
    return std::stoll(
        *db_->exec("SELECT created_at FROM queue_messages WHERE id = " + p(1), {id}).at(0).at(0));
  };
  if (is_pg()) {
    // I1: now is the server's; both are visible at once, stamped with its time.
    EXPECT_EQ(ids, (std::set<std::string>{"ahead", "behind"}));
    EXPECT_NEAR(static_cast<double>(created("ahead") - host_now()), 0, 300);
    EXPECT_NEAR(static_cast<double>(created("behind") - host_now()), 0, 300);
  } else {
    // SQLite (§6, "now is the host clock"): the producer's clock is the
    // database's for its write. A producer 2 h ahead makes its message
    // invisible to correct clocks for 2 h — delayed, never lost.
    EXPECT_EQ(ids, (std::set<std::string>{"behind"}));
    EXPECT_NEAR(static_cast<double>(created("ahead") - host_now()), 7200, 300);
    EXPECT_NEAR(static_cast<double>(created("behind") - host_now()), -7200, 300);
    EXPECT_EQ(count_rows("queue_messages"), 2);
    // A consumer on the producer's clock takes it — and also re-claims the
    // message this process holds: to a clock 2 h ahead every 30 s window
    // written by a correct clock has lapsed.
    const auto r = skewed("+2h", {"mq", "poll", "--queue", "q", "--max", "10", "--json"}, "poll");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    std::map<std::string, std::int64_t> receive_counts;
    for (const auto& d : j["messages"]) receive_counts[d["id"]] = d["receive_count"];
    EXPECT_EQ(receive_counts, (std::map<std::string, std::int64_t>{{"ahead", 1}, {"behind", 2}}));
    EXPECT_SPOOL_ERROR(q.ack(got.at(0).receipt), errc::not_found);
  }
}

TEST_P(hostile_cli, an_mq_claim_by_a_consumer_two_hours_behind_holds_on_postgresql_and_lapses_on_sqlite) {
  mq::queue_options qo;
  qo.name = "q";
  mq::queue q(*db_, qo);
  // Published on the consumer's clock, so that it can see the message on
  // SQLite too (a message from a correct clock is 2 h in its future).
  const auto msg = file_with("m.json", R"({"id":"m","mediationType":"HTTP","mediationTarget":"u"})");
  ASSERT_EQ(skewed("-2h", {"mq", "publish", "--queue", "q", "--file", msg.string()}, "publish").exit_code, 0);
  const auto r = skewed("-2h", {"mq", "poll", "--queue", "q", "--visibility", "10m", "--json"}, "poll");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["messages"].size(), 1u);
  const std::string receipt = j["messages"][0]["receipt"];
  const auto again = q.poll(1);
  if (is_pg()) {
    // The 10-minute window is counted on the server's clock: it holds.
    EXPECT_TRUE(again.empty());
    q.ack(receipt);
  } else {
    // SQLite: the window ends 10 min after the consumer's clock, which is
    // 2 h behind: to every correct clock it has already lapsed, so the
    // message is claimed again at once and the slow clock's ack is stale.
    ASSERT_EQ(again.size(), 1u);
    EXPECT_EQ(again[0].receive_count, std::optional<std::int64_t>(2));
    EXPECT_SPOOL_ERROR(q.ack(receipt), errc::not_found);
    q.ack(again[0].receipt);
  }
  EXPECT_EQ(count_rows("queue_messages"), 0);
}

TEST_P(hostile_cli, an_op_enqueued_with_a_delay_by_a_process_two_hours_behind_waits_on_the_database_clock) {
  const auto r =
      skewed("-2h", {"ops", "enqueue", "--type", "t", "--delay", "1h", "--payload", "{}", "--json"}, "enq");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto id = nlohmann::json::parse(r.out)["id"].get<std::string>();
  ops::queue q(*db_);
  const auto op = q.get(id);
  ASSERT_TRUE(op.not_before.has_value());
  const auto nb = std::chrono::duration_cast<std::chrono::seconds>(op.not_before->time_since_epoch()).count();
  if (is_pg()) {
    // now() + 1 h on the server: not ready.
    EXPECT_NEAR(static_cast<double>(nb - host_now()), 3600, 300);
    EXPECT_FALSE(q.has_ready({"t"}));
    EXPECT_FALSE(q.dequeue({"t"}).has_value());
  } else {
    // SQLite's clock in the enqueuing process is 2 h behind: the op is due
    // an hour ago to every correct clock and runs at once.
    EXPECT_NEAR(static_cast<double>(nb - host_now()), -3600, 300);
    EXPECT_TRUE(q.has_ready({"t"}));
  }
}

TEST_P(hostile_cli, a_live_worker_two_hours_behind_keeps_its_lease_on_postgresql_and_loses_it_on_sqlite) {
  ops::queue q(*db_);
  const auto id = q.enqueue(ops::new_op{.type = "slow"}).id;
  // The worker runs a command that outlives the test's checks; its rescuer is
  // off (the test process is the rescuer on a correct clock).
  // The command records its process group (the CLI gives each command one
  // of its own) so that the test can kill it too and reap the orphan.
  child_subreaper reaper;
  const auto pgid_file = dir_for_files_.path() / "command.pgid";
  const std::string command = "echo $$ > '" + pgid_file.string() + "'; exec sleep 600";
  // libfaketime preloaded directly: the faketime wrapper, SIGKILLed below,
  // would leave its named semaphore in /dev/shm for a later wrapper with the
  // same pid to trip over ("sem_open: File exists").
  const std::string lib = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";
  ASSERT_TRUE(std::filesystem::exists(lib)) << "libfaketime is not installed: run scripts/install-deps.sh";
  // clang-format off
  const std::vector<std::string> args = {
      "LD_PRELOAD=" + lib, "FAKETIME=-2h", cli_path(), "ops", "work", "--type", "slow", "--exec", command,
      "--no-rescuer", "--heartbeat-interval", "1s", "--lease-timeout", "60s", "--db", uri_};
  // clang-format on
  cli_process worker("/usr/bin/env", args, dir_for_files_.path(), "worker");
  const auto until = std::chrono::steady_clock::now() + 60s;
  while (q.get(id).status != ops::op_status::running && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_EQ(q.get(id).status, ops::op_status::running) << worker.err();
  // "running" is stamped at the claim, before the command is spawned: wait
  // for the command itself, so that the worker is live when the lease is
  // judged and is never killed before its command exists.
  const auto until_pgid = std::chrono::steady_clock::now() + 60s;
  while (read_file(pgid_file).empty() && std::chrono::steady_clock::now() < until_pgid) {
    std::this_thread::sleep_for(20ms);
  }
  const auto pgid = read_file(pgid_file);
  ASSERT_FALSE(pgid.empty()) << "the command never started: " << worker.err();
  const auto rescued = q.rescue_expired(60s);
  if (is_pg()) {
    // heartbeat_at is the server's now(): a fresh lease is never taken.
    EXPECT_TRUE(rescued.empty());
    EXPECT_EQ(q.get(id).status, ops::op_status::running);
  } else {
    // SQLite: the worker stamps heartbeat_at with its own clock, 2 h behind,
    // so a rescuer on a correct clock sees a lease expired long ago and takes
    // the op from a live worker (at-least-once: it will run twice).
    ASSERT_EQ(rescued.size(), 1u);
    EXPECT_EQ(rescued[0].id, id);
    EXPECT_EQ(q.get(id).status, ops::op_status::pending);
  }
  worker.kill_group(SIGKILL);
  // The command runs in a process group of its own and outlives the killed
  // worker (re-parented to this process, the subreaper): kill and reap until
  // the group is empty.
  const auto group = static_cast<pid_t>(std::stol(pgid));
  const auto until_gone = std::chrono::steady_clock::now() + 30s;
  do {
    kill_process_group(group);
    if (!process_group_exists(group)) break;
    std::this_thread::sleep_for(20ms);
  } while (std::chrono::steady_clock::now() < until_gone);
  EXPECT_FALSE(process_group_exists(group)) << "the handler command survived";
}

TEST_P(hostile_cli, a_worker_two_hours_ahead_runs_each_op_a_correct_clock_enqueued_exactly_once) {
  ops::queue q(*db_);
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(q.enqueue(ops::new_op{.type = "t"}).id);
  const auto calls = dir_for_files_.path() / "calls";
  const std::string command = "echo \"$SPOOL_OP_ID\" >> '" + calls.string() + "'";
  // libfaketime preloaded directly (the faketime wrapper forks, and would
  // take the SIGTERM meant for the worker's graceful stop).
  const std::string lib = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";
  ASSERT_TRUE(std::filesystem::exists(lib)) << "libfaketime is not installed: run scripts/install-deps.sh";
  cli_process worker("/usr/bin/env",
                     {"LD_PRELOAD=" + lib, "FAKETIME=+2h", cli_path(), "ops", "work", "--type", "t", "--exec",
                      command, "--db", uri_},
                     dir_for_files_.path(), "worker");
  // Every op reaches done (counted by status, whatever clock stamped finished_at).
  const auto done = [&] { return count_rows("ops_queue WHERE status = 'done'"); };
  const auto until = std::chrono::steady_clock::now() + 60s;
  while (done() < 3 && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(50ms);
  EXPECT_EQ(worker.stop(SIGTERM), 0) << worker.err();
  for (const auto& id : ids) {
    const auto op = q.get(id);
    EXPECT_EQ(op.status, ops::op_status::done) << id;
    EXPECT_EQ(op.attempts, 1) << id;
    // The skew took effect where the engine lets it: SQLite's started_at is
    // the worker's clock, PostgreSQL's the server's.
    ASSERT_TRUE(op.started_at.has_value()) << id;
    const auto started =
        std::chrono::duration_cast<std::chrono::seconds>(op.started_at->time_since_epoch()).count();
    EXPECT_NEAR(static_cast<double>(started - host_now()), is_pg() ? 0 : 7200, 300) << id;
  }
  EXPECT_EQ(count_lines(read_file(calls)), 3) << "one handler call per op";
}

TEST_P(hostile_cli,
       an_operator_recover_from_a_process_two_hours_ahead_takes_no_fresh_claim_on_postgresql_only) {
  ops::queue q(*db_);
  const auto id = q.enqueue(ops::new_op{.type = "t"}).id;
  const auto claimed = q.dequeue({"t"});  // a live claim, made just now on a correct clock
  ASSERT_TRUE(claimed.has_value());
  const auto r = skewed("+2h", {"ops", "recover", "--older-than", "1h", "--json"}, "recover");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  if (is_pg()) {
    // started_at and now() are both the server's: a claim seconds old is not 1 h old.
    EXPECT_EQ(q.get(id).status, ops::op_status::running);
    q.ack(id, *claimed->lease_token);
  } else {
    // SQLite: to the recovering process the claim is 2 h old, so it is
    // requeued under its live holder, whose outcome is then refused.
    EXPECT_EQ(q.get(id).status, ops::op_status::pending);
    EXPECT_SPOOL_ERROR(q.ack(id, *claimed->lease_token), errc::lease_lost);
  }
}

TEST_P(hostile_cli, an_envelope_written_by_a_process_two_hours_ahead_is_claimable_on_the_database_clock) {
  const auto r = skewed("+2h", {"outbox", "write", "--topic", "t", "--json"}, "write");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  outbox::store st(*db_);
  const auto got = st.claim("relay", 10, 60s);
  if (is_pg()) {
    ASSERT_EQ(got.size(), 1u);
    const auto created =
        std::chrono::duration_cast<std::chrono::seconds>(got[0].message.created_at->time_since_epoch())
            .count();
    EXPECT_NEAR(static_cast<double>(created - host_now()), 0, 300);
  } else {
    // SQLite: available_at is the writer's clock, 2 h ahead: pending but not
    // claimable by a correct clock for 2 h — delayed, not lost.
    EXPECT_TRUE(got.empty());
    EXPECT_EQ(st.backlog().pending, 1);
  }
}

SPOOL_HOSTILE_BOTH_ENGINES(hostile_cli);

}  // namespace
}  // namespace spool::test
