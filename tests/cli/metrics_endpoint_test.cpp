// --metrics-addr on the long-running commands (docs/METRICS.md): `spool ops
// work`, `spool mq work` and `spool relay` as real processes serve GET
// /metrics (Prometheus text) whose counters follow the work done and whose
// backlog gauges follow the database, and GET /healthz; SIGTERM stops them
// with exit 0. Their progress line appears only on a terminal.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <thread>

#include "cli_runner.hpp"
#include "spool/database.hpp"
#include "spool/migrate.hpp"
#include "spool/mq/queue.hpp"
#include "spool/ops/queue.hpp"
#include "spool/pg.hpp"
#include "support/test_db.hpp"

namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using spool::test::cli_process;
using spool::test::with;

bool eventually(const std::function<bool()>& f) {
  for (int i = 0; i < 1200; ++i) {
    if (f()) return true;
    std::this_thread::sleep_for(50ms);
  }
  return f();
}

// The URL of the "metrics: listening on URL" line of a process's stderr; empty until it is printed.
std::string metrics_url(const cli_process& p) {
  static const std::regex line("metrics: listening on (http://[^/\\s]+)/metrics\n");
  std::smatch m;
  const std::string err = p.err();
  return std::regex_search(err, m, line) ? m[1].str() : std::string();
}

struct scrape_result {
  int status = 0;
  std::string content_type, body;
};

scrape_result get(const std::string& base, const std::string& path) {
  httplib::Client client(base);
  client.set_read_timeout(30, 0);
  const auto res = client.Get(path.c_str());
  if (!res) return {};
  return {res->status, res->get_header_value("Content-Type"), res->body};
}

// The value of the sample written exactly as series (name and labels), if present.
std::optional<std::string> sample(const std::string& text, const std::string& series) {
  const std::string key = "\n" + series + " ";
  const auto at = ("\n" + text).find(key);
  if (at == std::string::npos) return std::nullopt;
  const auto start = at + key.size() - 1;  // position in text
  return text.substr(start, text.find('\n', start) - start);
}

// The first GET of path whose answer satisfies done (the last one when none
// does within eventually's time).
scrape_result get_until(const std::string& base, const std::string& path,
                        const std::function<bool(const scrape_result&)>& done) {
  scrape_result out;
  (void)eventually([&] {
    out = get(base, path);
    return done(out);
  });
  return out;
}

// A scrape whose backlog query answered within the command's budget (2 s):
// on a loaded machine one scrape may miss it and read spool_backlog_up 0, so
// the backlog gauges are read from the first scrape that has them.
scrape_result answered_scrape(const std::string& base, const std::string& up_series) {
  return get_until(base, "/metrics",
                   [&](const scrape_result& r) { return sample(r.body, up_series) == "1"; });
}

// GET /healthz once the database answers within the budget (else it is 503).
scrape_result healthy(const std::string& base) {
  return get_until(base, "/healthz", [](const scrape_result& r) { return r.status == 200; });
}

class metrics_endpoint : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    uri_ =
        GetParam()
            ? spool::test::make_pg_database(std::string("cli_metrics_") +
                                            ::testing::UnitTest::GetInstance()->current_test_info()->name())
            : dir_.sqlite_uri("metrics.db");
    db_.emplace(spool::database::open(uri_));
    (void)spool::migrate(*db_);
  }
  // Starts args with --metrics-addr 127.0.0.1:0 and waits for the address it prints.
  std::string start(cli_process& p) {
    EXPECT_TRUE(eventually([&] { return !metrics_url(p).empty() || !p.running(); })) << p.err();
    return metrics_url(p);
  }
  spool::test::temp_dir dir_;
  std::string uri_;
  std::optional<spool::database> db_;
};

TEST_P(metrics_endpoint, ops_work_counts_done_ops_per_type_and_reports_the_table_and_health) {
  spool::ops::queue q(*db_);
  cli_process worker({"ops", "work", "--type", "x", "--exec", "cat > /dev/null", "--owner", "w1",
                      "--poll-interval", "50ms", "--metrics-addr", "127.0.0.1:0", "--db", uri_},
                     dir_.path());
  const auto base = start(worker);
  ASSERT_FALSE(base.empty()) << worker.err();

  const auto before = get(base, "/metrics");
  ASSERT_EQ(before.status, 200);
  EXPECT_EQ(before.content_type, "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_NE(before.body.find("# TYPE spool_ops_succeeded_total counter\n"), std::string::npos) << before.body;
  EXPECT_EQ(sample(before.body, R"(spool_ops_succeeded_total{owner="w1",type="x"})"), "0") << before.body;

  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(q.enqueue({.type = "x"}).id);
  ASSERT_TRUE(eventually([&] {
    for (const auto& id : ids) {
      if (q.get(id).status != spool::ops::op_status::done) return false;
    }
    return true;
  })) << worker.err();
  // The pool counts an op as succeeded once its batch ack has returned, which
  // is after the row reads done: wait for the counter rather than race it.
  ASSERT_TRUE(eventually([&] {
    return sample(get(base, "/metrics").body, R"(spool_ops_succeeded_total{owner="w1",type="x"})") == "5";
  })) << get(base, "/metrics").body;

  const auto after = answered_scrape(base, R"(spool_backlog_up{table="ops_queue"})");
  ASSERT_EQ(after.status, 200);
  EXPECT_EQ(sample(after.body, R"(spool_ops_claimed_total{owner="w1",type="x"})"), "5") << after.body;
  EXPECT_EQ(sample(after.body, R"(spool_ops_succeeded_total{owner="w1",type="x"})"), "5");
  EXPECT_EQ(sample(after.body, R"(spool_ops_handler_seconds_count{owner="w1",type="x"})"), "5");
  EXPECT_EQ(sample(after.body, R"(spool_ops_handler_seconds_bucket{owner="w1",type="x",le="+Inf"})"), "5");
  EXPECT_EQ(sample(after.body, R"(spool_ops_table_ops{table="ops_queue",status="pending"})"), "0");
  EXPECT_EQ(sample(after.body, R"(spool_ops_table_done_24h{table="ops_queue"})"), "5");
  EXPECT_EQ(sample(after.body, R"(spool_backlog_up{table="ops_queue"})"), "1");

  const auto health = healthy(base);
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(json::parse(health.body)["status"], "ok");
  EXPECT_EQ(get(base, "/nothing").status, 404);

  EXPECT_EQ(worker.stop(SIGTERM), 0) << worker.err();
  EXPECT_EQ(get(base, "/metrics").status, 0);  // the server stopped with the command
  // stderr is a file, not a terminal: no progress line was drawn.
  EXPECT_EQ(worker.err().find('\r'), std::string::npos) << worker.err();
}

TEST_P(metrics_endpoint, mq_work_counts_acked_messages_and_reports_the_queue_and_health) {
  spool::mq::queue q(*db_, {.name = "w"});
  (void)q.publish_batch({{.id = "a"}, {.id = "b"}, {.id = "c"}});
  cli_process worker({"mq", "work", "--queue", "w", "--exec", "cat > /dev/null", "--metrics-addr",
                      "127.0.0.1:0", "--db", uri_},
                     dir_.path());
  const auto base = start(worker);
  ASSERT_FALSE(base.empty()) << worker.err();
  ASSERT_TRUE(eventually([&] {
    return sample(get(base, "/metrics").body, R"(spool_mq_acked_total{queue="w"})") == "3";
  })) << get(base, "/metrics").body;

  const auto m = answered_scrape(base, R"(spool_backlog_up{queue="w"})");
  EXPECT_EQ(sample(m.body, R"(spool_mq_claimed_total{queue="w"})"), "3") << m.body;
  EXPECT_EQ(sample(m.body, R"(spool_mq_failed_total{queue="w"})"), "0");
  EXPECT_EQ(sample(m.body, R"(spool_mq_quarantined_total{queue="w"})"), "0");
  EXPECT_EQ(sample(m.body, R"(spool_mq_handler_seconds_count{queue="w"})"), "3");
  EXPECT_EQ(sample(m.body, R"(spool_mq_queue_messages{queue="w",state="pending"})"), "0");
  EXPECT_EQ(sample(m.body, R"(spool_mq_queue_messages{queue="w",state="in_flight"})"), "0");
  EXPECT_EQ(sample(m.body, R"(spool_backlog_up{queue="w"})"), "1");
  EXPECT_EQ(healthy(base).status, 200);

  (void)q.publish({.id = "later"}, 3600s);  // delayed: visible in the backlog gauges, not handled
  EXPECT_EQ(sample(answered_scrape(base, R"(spool_backlog_up{queue="w"})").body,
                   R"(spool_mq_queue_messages{queue="w",state="delayed"})"),
            "1");
  EXPECT_EQ(worker.stop(SIGTERM), 0) << worker.err();
}

TEST_P(metrics_endpoint, the_relay_counts_deliveries_and_reports_the_outbox_backlog_and_its_health) {
  for (int i = 0; i < 2; ++i) {
    const auto r = spool::test::run_cli({"outbox", "write", "--topic", "t", "--db", uri_}, "{}");
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  const auto path = (dir_.path() / "out.jsonl").string();
  cli_process relay({"relay", "--sink", "file:" + path, "--owner", "r1", "--poll-interval", "50ms",
                     "--metrics-addr", "127.0.0.1:0", "--db", uri_},
                    dir_.path(), "relay");
  const auto base = start(relay);
  ASSERT_FALSE(base.empty()) << relay.err();
  const std::string labels = R"({owner="r1",table="outbox_messages"})";
  ASSERT_TRUE(eventually([&] {
    return sample(get(base, "/metrics").body, "spool_outbox_delivered_total" + labels) == "2";
  })) << get(base, "/metrics").body;
  const auto m = answered_scrape(base, R"(spool_backlog_up{table="outbox_messages"})");
  EXPECT_EQ(sample(m.body, "spool_outbox_claimed_total" + labels), "2") << m.body;
  EXPECT_EQ(sample(m.body, "spool_outbox_breaker_state" + labels), "0");
  EXPECT_EQ(sample(m.body, "spool_outbox_sink_seconds_count" + labels), "2");
  EXPECT_EQ(sample(m.body, R"(spool_outbox_backlog{table="outbox_messages",state="pending"})"), "0");
  EXPECT_EQ(sample(m.body, R"(spool_outbox_oldest_pending_age_seconds{table="outbox_messages"})"), "0");
  const auto health = healthy(base);
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(json::parse(health.body)["running"], true);
  EXPECT_EQ(relay.stop(SIGTERM), 0) << relay.err();
}

TEST_P(metrics_endpoint, an_ordered_relay_reports_the_rows_an_open_transaction_holds_back_on_postgresql) {
  std::optional<spool::pg::tx> holder;
  if (GetParam()) {
    // A transaction with an xid, open while the envelope commits after it:
    // the horizon holds the keyed row back until it ends.
    holder.emplace(*db_);
    (void)holder->exec("SELECT pg_current_xact_id()");
  }
  const auto w = spool::test::run_cli({"outbox", "write", "--topic", "t", "--key", "k", "--db", uri_}, "{}");
  ASSERT_EQ(w.exit_code, 0) << w.err;
  const auto path = (dir_.path() / "out.jsonl").string();
  cli_process relay({"relay", "--sink", "file:" + path, "--owner", "r1", "--poll-interval", "50ms",
                     "--serialization", "key", "--metrics-addr", "127.0.0.1:0", "--db", uri_},
                    dir_.path(), "relay");
  const auto base = start(relay);
  ASSERT_FALSE(base.empty()) << relay.err();
  const std::string held = R"(spool_outbox_horizon_held_rows{table="outbox_messages"})";
  const std::string age = R"(spool_outbox_horizon_oldest_transaction_age_seconds{table="outbox_messages"})";
  if (!GetParam()) {
    // SQLite's writers commit in position order: no horizon, no gauges.
    ASSERT_TRUE(eventually([&] {
      return sample(get(base, "/metrics").body,
                    R"(spool_outbox_delivered_total{owner="r1",table="outbox_messages"})") == "1";
    }));
    const auto m = get(base, "/metrics").body;
    EXPECT_FALSE(sample(m, held)) << m;
    EXPECT_FALSE(sample(m, age)) << m;
    EXPECT_EQ(relay.stop(SIGTERM), 0) << relay.err();
    return;
  }
  const auto m = answered_scrape(base, R"(spool_backlog_up{table="outbox_messages"})").body;
  ASSERT_TRUE(sample(m, held)) << m;
  EXPECT_EQ(*sample(m, held), "1") << m;
  ASSERT_TRUE(sample(m, age)) << m;
  EXPECT_GT(std::stod(*sample(m, age)), 0.0) << m;
  EXPECT_EQ(sample(m, R"(spool_outbox_delivered_total{owner="r1",table="outbox_messages"})"), "0") << m;
  // Released, the row goes once no older transaction of the cluster is open
  // (other suites share this server, so that is not waited for here).
  holder->rollback();
  EXPECT_EQ(relay.stop(SIGTERM), 0) << relay.err();
}

TEST_P(metrics_endpoint, healthz_shows_error_texts_only_when_asked_for_details) {
  cli_process relay({"relay", "--sink", "stdout", "--owner", "r1", "--poll-interval", "50ms",
                     "--metrics-addr", "127.0.0.1:0", "--db", uri_},
                    dir_.path(), "relay");
  const auto base = start(relay);
  ASSERT_FALSE(base.empty()) << relay.err();
  // The store fails with an error that names the table: the kind of text
  // (hosts, tables, URLs) an outsider probing health should not read.
  if (GetParam()) {
    spool::test::pg_exec(uri_, "DROP TABLE outbox_messages CASCADE");
  } else {
    spool::test::sqlite_exec(uri_, "DROP TABLE outbox_messages");
  }
  ASSERT_TRUE(eventually([&] {
    return get(base, "/healthz?details=1").body.find("outbox_messages") != std::string::npos;
  })) << get(base, "/healthz?details=1").body;
  const auto detailed = get(base, "/healthz?details=1");
  EXPECT_EQ(detailed.status, 503);
  EXPECT_TRUE(json::parse(detailed.body).contains("last_store_error")) << detailed.body;
  const auto plain = get(base, "/healthz");
  EXPECT_EQ(plain.status, 503);
  EXPECT_EQ(plain.body.find("outbox_messages"), std::string::npos) << plain.body;
  const auto body = json::parse(plain.body);
  EXPECT_FALSE(body.contains("last_store_error")) << plain.body;
  EXPECT_FALSE(body.contains("last_sink_error")) << plain.body;
  EXPECT_EQ(body["store_ok"], false) << plain.body;
  EXPECT_EQ(body["status"], "store failing") << plain.body;
  (void)relay.stop(SIGTERM);
}

TEST_P(metrics_endpoint, a_malformed_or_occupied_address_fails_with_one_line_and_nothing_on_stdout) {
  const std::vector<std::string> work{"ops", "work", "--type", "x", "--exec", "true", "--db", uri_};
  spool::test::expect_failure(spool::test::run_cli(with(work, {"--metrics-addr", "localhost"})), 1,
                              "spool: invalid_argument: --metrics-addr \"localhost\": no port");
  spool::test::expect_failure(spool::test::run_cli(with(work, {"--metrics-addr", "127.0.0.1:70000"})), 1,
                              "spool: invalid_argument: --metrics-addr");
  // Occupied: a second command on the first one's port.
  cli_process first(with(work, {"--metrics-addr", "127.0.0.1:0"}), dir_.path(), "first");
  const auto base = start(first);
  ASSERT_FALSE(base.empty()) << first.err();
  const auto port = base.substr(base.rfind(':') + 1);
  spool::test::expect_failure(spool::test::run_cli(with(work, {"--metrics-addr", "127.0.0.1:" + port})), 1,
                              "spool: unavailable: --metrics-addr");
  EXPECT_EQ(first.stop(SIGINT), 0) << first.err();
}

// SECURITY.md, Endpoints: a port alone binds loopback, never every interface.
TEST_P(metrics_endpoint, a_port_alone_binds_loopback_and_serves_there) {
  const std::vector<std::string> work{"ops", "work", "--type", "x", "--exec", "true", "--db", uri_};
  for (const std::string addr : {"0", ":0"}) {
    SCOPED_TRACE(addr);
    cli_process p(with(work, {"--metrics-addr", addr}), dir_.path(), "port-only");
    const auto base = start(p);
    ASSERT_EQ(base.rfind("http://127.0.0.1:", 0), 0u) << base << "\n" << p.err();
    EXPECT_EQ(get(base, "/metrics").status, 200);
    // Bound to 127.0.0.1 only: the listening socket is not the wildcard one.
    const auto port = std::stoi(base.substr(base.rfind(':') + 1));
    std::ifstream tcp("/proc/net/tcp");
    std::string all((std::istreambuf_iterator<char>(tcp)), std::istreambuf_iterator<char>());
    EXPECT_NE(all.find(fmt::format("0100007F:{:04X} 00000000:0000 0A", port)), std::string::npos) << all;
    EXPECT_EQ(all.find(fmt::format("00000000:{:04X} 00000000:0000 0A", port)), std::string::npos) << all;
    EXPECT_EQ(p.stop(SIGTERM), 0) << p.err();
  }
}

TEST_P(metrics_endpoint, log_level_info_adds_start_and_stop_lines_and_the_default_level_stays_quiet) {
  const std::vector<std::string> work{"ops", "work", "--type", "x", "--exec", "true", "--db", uri_};
  cli_process quiet(with(work, {"--metrics-addr", "127.0.0.1:0"}), dir_.path(), "quiet");
  ASSERT_FALSE(start(quiet).empty()) << quiet.err();
  EXPECT_EQ(quiet.stop(SIGTERM), 0);
  EXPECT_EQ(quiet.err().find(" info spool: "), std::string::npos) << quiet.err();

  cli_process chatty(with({"--log-level", "info"}, with(work, {"--metrics-addr", "127.0.0.1:0"})),
                     dir_.path(), "chatty");
  ASSERT_FALSE(start(chatty).empty()) << chatty.err();
  ASSERT_TRUE(eventually([&] {
    return chatty.err().find(" info spool: ops work: started") != std::string::npos;
  })) << chatty.err();
  EXPECT_EQ(chatty.stop(SIGTERM), 0);
  const auto err = chatty.err();
  ASSERT_NE(err.find(" info spool: ops work: SIGTERM received, stopping"), std::string::npos) << err;
  EXPECT_LT(err.find(" info spool: ops work: started"),
            err.find(" info spool: ops work: SIGTERM received, stopping"))
      << err;
}

INSTANTIATE_TEST_SUITE_P(engines, metrics_endpoint, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "postgres" : "sqlite"; });

TEST(cli_log_level, an_unknown_level_is_a_usage_error) {
  const auto r = spool::test::run_cli({"ops", "stats", "--log-level", "loud"});
  spool::test::expect_failure(
      r, 2, "spool: usage: --log-level loud: expected trace, debug, info, warn, error or off");
}

// On a terminal (script(1) gives the command a pseudo-terminal) the progress
// line is drawn and erased before the summary; with --json nothing is drawn.
class cli_progress_on_a_terminal : public ::testing::TestWithParam<bool> {};

TEST_P(cli_progress_on_a_terminal, ops_work_draws_its_status_line_only_without_json) {
  const bool json_output = GetParam();
  spool::test::temp_dir dir;
  const auto uri = dir.sqlite_uri("tty.db");
  {
    auto db = spool::database::open(uri);
    (void)spool::migrate(db);
    spool::ops::queue q(db);
    (void)q.enqueue({.type = "x"});
  }
  const auto ran = dir.path() / "ran";
  // The shell waits until the op ran (the line is drawn before the pool
  // starts), then stops the worker with SIGTERM.
  const std::string cmd = spool::test::cli_path() + " ops work --type x --db " + uri +
                          (json_output ? " --json" : "") + " --poll-interval 50ms --exec 'touch " +
                          ran.string() + "' & p=$!; " + "while [ ! -e " + ran.string() +
                          " ]; do sleep 0.05; done; kill -TERM $p; wait $p";
  cli_process script("/usr/bin/script", {"-qfec", cmd, "/dev/null"}, dir.path(), "script");
  ASSERT_TRUE(eventually([&] { return !script.running(); })) << script.out();
  const auto tty = script.out();  // stdout and stderr of the command, as the terminal saw them
  if (json_output) {
    EXPECT_EQ(tty.find("ops work "), std::string::npos) << tty;
    EXPECT_EQ(tty.find("\x1b[K"), std::string::npos) << tty;
  } else {
    const auto drawn = tty.find("\rops work ");
    ASSERT_NE(drawn, std::string::npos) << tty;
    const auto erased = tty.rfind("\r\x1b[K");
    const auto summary = tty.find("stopped by SIGTERM");
    ASSERT_NE(summary, std::string::npos) << tty;
    EXPECT_LT(drawn, erased);
    EXPECT_LT(erased, summary);  // the line is gone before the summary is printed
  }
}

INSTANTIATE_TEST_SUITE_P(modes, cli_progress_on_a_terminal, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "json" : "text"; });

}  // namespace
