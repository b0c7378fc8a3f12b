// `spool relay` as a script sees it (outbox.md §7, §8 CLI sink forms): a real
// process per test on SQLite and PostgreSQL, stopped by SIGTERM/SIGINT; the
// binary is $SPOOL_CLI.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cli_runner.hpp"
#include "spool/outbox/webhook.hpp"
#include "support/eventually.hpp"
#include "support/test_db.hpp"
#include "support/webhook_receiver.hpp"

namespace {

using nlohmann::json;
using spool::test::cli_process;
using spool::test::cli_result;
using spool::test::expect_failure;
using spool::test::run_cli;
using spool::test::with;

using spool::test::engine_kind;

// Each backlog() poll spawns a CLI process: poll every 20 ms, not 5.
template <class Pred>
bool eventually(Pred pred) {
  return spool::test::eventually(pred, std::chrono::seconds(60), std::chrono::milliseconds(20));
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1) {
    out.push_back(text.substr(start, nl - start));
  }
  return out;
}

class relay_cli : public ::testing::TestWithParam<engine_kind> {
 protected:
  void SetUp() override {
    if (GetParam() == engine_kind::sqlite) {
      uri_ = dir_.sqlite_uri();
    } else {
      uri_ = spool::test::make_pg_database(std::string("relaycli_") +
                                           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    }
    const auto r = run({"migrate", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  cli_result run(const std::vector<std::string>& args, const std::string& input = "") {
    return run_cli(with(args, {"--db", uri_}), input);
  }
  std::string write(const std::string& payload, const std::string& key = {}) {
    std::vector<std::string> args{"outbox", "write", "--topic", "orders", "--json"};
    if (!key.empty()) args = with(args, {"--key", key});
    const auto r = run(args, payload);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out).at("id");
  }
  json backlog() { return json::parse(run({"outbox", "backlog", "--json"}).out); }
  cli_process relay(const std::vector<std::string>& args) {
    return cli_process(with(with({"relay"}, args), {"--db", uri_, "--poll-interval", "50ms"}), dir_.path(),
                       "relay");
  }

  spool::test::temp_dir dir_;
  std::string uri_;
};

TEST_P(relay_cli, the_file_sink_writes_one_document_per_line_and_sigterm_prints_the_json_summary) {
  const auto a = write("{\"n\":1}", "k"), b = write("{\"n\":2}", "k");
  const auto path = (dir_.path() / "out.jsonl").string();
  auto p = relay({"--sink", "file:" + path, "--serialization", "key", "--concurrency", "2", "--json"});
  ASSERT_TRUE(eventually([&] { return lines_of(spool::test::read_file(path)).size() == 2; })) << p.err();
  ASSERT_TRUE(eventually([&] { return backlog()["pending"] == 0 && backlog()["leased"] == 0; }));
  EXPECT_EQ(p.stop(SIGTERM), 0) << p.err();
  const auto lines = lines_of(spool::test::read_file(path));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(json::parse(lines[0])["envelope"]["id"], a);  // key order
  EXPECT_EQ(json::parse(lines[1])["envelope"]["id"], b);
  EXPECT_EQ(json::parse(lines[0])["claim_count"], 1);
  const auto summary = json::parse(p.out());
  EXPECT_EQ(summary["stopped_by"], "SIGTERM");
  EXPECT_EQ(summary["delivered"], 2);
  EXPECT_EQ(summary["claimed"], 2);
}

TEST_P(relay_cli, the_exec_sink_runs_the_command_without_a_shell_and_exit_65_dead_letters) {
  const auto script = dir_.path() / "sink.sh";
  std::ofstream(script) << "#!/bin/sh\n"
                           "cat > /dev/null\n"
                           "echo \"$SPOOL_OUTBOX_ID\" >> \"$1\"\n"
                           "[ \"$SPOOL_OUTBOX_TOPIC\" = orders ] || exit 1\n"
                           "exit \"$2\"\n";
  ::chmod(script.c_str(), 0755);
  const auto seen = dir_.path() / "seen dir";  // a blank inside one word survives the word splitting
  std::filesystem::create_directory(seen);
  const auto id = write("x");
  auto p = relay({"--sink", "exec:" + script.string() + " '" + (seen / "ids").string() + "' 65"});
  ASSERT_TRUE(eventually([&] { return backlog()["dead"] == 1; })) << p.err();
  EXPECT_EQ(p.stop(SIGINT), 0) << p.err();
  EXPECT_EQ(lines_of(spool::test::read_file(seen / "ids")), std::vector<std::string>{id});
  EXPECT_NE(p.out().find("stopped by SIGINT"), std::string::npos) << p.out();
}

TEST_P(relay_cli, the_stdout_sink_prints_documents_and_a_bad_sink_is_a_usage_failure) {
  const auto id = write("{}");
  auto p = relay({"--sink", "stdout", "--json"});
  ASSERT_TRUE(eventually([&] { return !lines_of(p.out()).empty(); })) << p.err();
  EXPECT_EQ(p.stop(SIGTERM), 0);
  const auto lines = lines_of(p.out());
  ASSERT_EQ(lines.size(), 1u);  // the summary went to stderr
  EXPECT_EQ(json::parse(lines[0])["envelope"]["id"], id);
  expect_failure(run({"relay", "--sink", "carrier-pigeon"}), 1, "spool: invalid_argument/invalid_config: ");
  expect_failure(run({"relay", "--sink", "stdout", "--serialization", "random"}), 1,
                 "spool: invalid_argument/invalid_config: ");
}

TEST_P(relay_cli, the_mq_sink_publishes_into_the_queue_with_the_ordering_key_as_group) {
  const auto id = write(
      "{\"id\":\"\",\"poolCode\":\"p\",\"mediationType\":\"HTTP\",\"mediationTarget\":\"http://x\","
      "\"highPriority\":false,\"dispatchMode\":\"IMMEDIATE\"}",
      "customer-1");
  auto p = relay({"--sink", "mq:orders", "--serialization", "key"});
  ASSERT_TRUE(eventually([&] { return backlog()["pending"] == 0 && backlog()["leased"] == 0; })) << p.err();
  EXPECT_EQ(p.stop(SIGTERM), 0) << p.err();
  const std::string q = "SELECT id, queue_name, message_group_id FROM queue_messages";
  const auto rows =
      GetParam() == engine_kind::sqlite ? spool::test::sqlite_query(uri_, q) : spool::test::pg_query(uri_, q);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(*rows[0][0], id);  // the empty message id became the envelope id
  EXPECT_EQ(*rows[0][1], "orders");
  EXPECT_EQ(*rows[0][2], "customer-1");
}

TEST_P(relay_cli, the_http_sink_posts_signed_envelopes_to_the_webhook_and_never_prints_the_secret) {
  const std::string secret = "wh-secret-7f3a";
  const auto secret_file = dir_.path() / "secret";
  std::ofstream(secret_file) << secret << "\n";  // the trailing newline is not part of the key
  spool::test::webhook_receiver receiver;
  std::set<std::string> ids{write("{\"n\":1}"), write("{\"n\":2}"), write("{\"n\":3}")};
  auto p = relay({"--sink", "http:" + receiver.url("/in?src=spool"), "--secret-file", secret_file.string(),
                  "--header", "X-Tenant: acme", "--http-timeout", "5s", "--json"});
  ASSERT_TRUE(eventually([&] {
    const auto b = backlog();
    return receiver.requests().size() >= 3 && b["pending"] == 0 && b["leased"] == 0;
  })) << p.err();
  EXPECT_EQ(backlog()["dead"], 0);
  EXPECT_EQ(p.stop(SIGTERM), 0) << p.err();
  const auto summary = json::parse(p.out());
  EXPECT_EQ(summary["delivered"], 3);
  EXPECT_EQ(summary["stopped_by"], "SIGTERM");
  std::set<std::string> seen;
  for (const auto& r : receiver.requests()) {
    seen.insert(r.header("Idempotency-Key"));
    EXPECT_EQ(r.path, "/in");
    EXPECT_EQ(json::parse(r.body).at("id"), r.header("Idempotency-Key"));
    EXPECT_EQ(r.header("X-Spool-Signature"), spool::test::expected_signature(secret, r.body));
    EXPECT_EQ(r.header("X-Tenant"), "acme");
  }
  EXPECT_EQ(seen, ids);
  EXPECT_EQ(p.out().find(secret), std::string::npos);
  EXPECT_EQ(p.err().find(secret), std::string::npos);
}

TEST_P(relay_cli, the_http_sink_dead_letters_a_4xx_and_needs_a_secret_from_a_file_or_the_environment) {
  spool::test::webhook_receiver receiver;
  receiver.answer(422);
  write("{}");
  const auto secret_file = dir_.path() / "secret";
  std::ofstream(secret_file) << "k";
  // The secret from the environment this time (the relay inherits ours).
  ::setenv("SPOOL_WEBHOOK_SECRET", "env-key", 1);
  auto p = relay({"--sink", "http:" + receiver.url()});
  ::unsetenv("SPOOL_WEBHOOK_SECRET");
  ASSERT_TRUE(eventually([&] { return backlog()["dead"] == 1; })) << p.err();
  EXPECT_EQ(p.stop(SIGTERM), 0) << p.err();
  const auto got = receiver.requests();
  ASSERT_EQ(got.size(), 1u);  // permanent: no retry
  EXPECT_EQ(got[0].header("X-Spool-Signature"), spool::test::expected_signature("env-key", got[0].body));
  expect_failure(run({"relay", "--sink", "http:" + receiver.url()}), 1,
                 "spool: invalid_argument/invalid_config: --sink http: the webhook needs a secret");
  expect_failure(run({"relay", "--sink", "http:ftp://example.test/x", "--secret-file", secret_file.string()}),
                 1, "spool: invalid_argument/invalid_config: http sink: url \"ftp://example.test/x\"");
  expect_failure(
      run({"relay", "--sink", "http:" + receiver.url(), "--secret-file", (dir_.path() / "missing").string()}),
      1, "spool: invalid_argument/invalid_config: --secret-file ");
  expect_failure(
      run({"relay", "--sink", "stdout", "--secret-file", secret_file.string()}), 1,
      "spool: invalid_argument/invalid_config: --secret-file, --standard-webhooks-secrets, --ca-file");
}

// --standard-webhooks-secrets: every line of the file signs (a rotation),
// the receiver verifies with either secret, and no secret is printed.
TEST_P(relay_cli, the_http_sink_signs_the_standard_webhooks_way_with_each_secret_of_the_file) {
  const std::string current = "whsec_c3Bvb2wgY3VycmVudCBrZXk=", next = "a plain next key";
  const auto secret_file = dir_.path() / "secret", standard = dir_.path() / "standard";
  std::ofstream(secret_file) << "k";
  std::ofstream(standard) << current << "\n\n" << next << "\r\n";
  spool::test::webhook_receiver receiver;
  const auto id = write("{\"n\":1}");
  auto p = relay({"--sink", "http:" + receiver.url(), "--secret-file", secret_file.string(),
                  "--standard-webhooks-secrets", standard.string()});
  ASSERT_TRUE(eventually([&] {
    const auto b = backlog();
    return !receiver.requests().empty() && b["pending"] == 0 && b["leased"] == 0;
  })) << p.err();
  EXPECT_EQ(p.stop(SIGTERM), 0) << p.err();
  const auto got = receiver.requests();
  ASSERT_EQ(got.size(), 1u);
  const std::string wid = got[0].header("webhook-id"), ts = got[0].header("webhook-timestamp"),
                    sig = got[0].header("webhook-signature");
  EXPECT_EQ(wid, id);
  for (const auto& key : {current, next}) {
    EXPECT_EQ(spool::outbox::verify_standard_webhook({wid, ts, sig, got[0].body}, {key}),
              spool::outbox::webhook_verdict::valid)
        << key;
  }
  for (const auto& key : {current, next}) EXPECT_EQ(p.err().find(key), std::string::npos);
  std::ofstream(standard, std::ios::trunc) << "\n";
  expect_failure(run({"relay", "--sink", "http:" + receiver.url(), "--secret-file", secret_file.string(),
                      "--standard-webhooks-secrets", standard.string()}),
                 1, "spool: invalid_argument/invalid_config: --standard-webhooks-secrets ");
  std::ofstream(standard, std::ios::trunc) << "whsec_***\n";
  expect_failure(run({"relay", "--sink", "http:" + receiver.url(), "--secret-file", secret_file.string(),
                      "--standard-webhooks-secrets", standard.string()}),
                 1, "spool: invalid_argument/invalid_config: standard webhooks: secret 1 starts with whsec_");
}

INSTANTIATE_TEST_SUITE_P(engines, relay_cli, ::testing::Values(engine_kind::sqlite, engine_kind::postgres),
                         [](const auto& info) {
                           return info.param == engine_kind::sqlite ? "sqlite" : "postgres";
                         });

}  // namespace
