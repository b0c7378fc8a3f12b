// The `spool` binary as a script sees it: exit codes, stdout, stderr and the
// JSON shapes of DESIGN.md (Shared contracts → CLI), on SQLite and PostgreSQL.
// The binary is $SPOOL_CLI; PostgreSQL comes from tests/support (the `pg`
// CTest fixture).
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_runner.hpp"
#include "spool/version.hpp"
#include "support/test_db.hpp"

namespace {

using nlohmann::json;
using spool::test::cli_result;
using spool::test::count_lines;
using spool::test::expect_failure;
using spool::test::expect_json;
using spool::test::run_cli;
using spool::test::run_cli_in;
using spool::test::with;

using spool::test::engine_kind;

class cli_on_engine : public ::testing::TestWithParam<engine_kind> {
 protected:
  void SetUp() override {
    if (GetParam() == engine_kind::sqlite) {
      uri_ = dir_.sqlite_uri();
    } else {
      uri_ = spool::test::make_pg_database(std::string("cli_") +
                                           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    }
    const auto r = run({"migrate", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  // Runs spool with --db of this engine's database appended.
  cli_result run(const std::vector<std::string>& args, const std::string& input = "") {
    return run_cli(with(args, {"--db", uri_}), input);
  }

  void sql(const std::string& statement) {
    if (GetParam() == engine_kind::sqlite) {
      spool::test::sqlite_exec(uri_, statement);
    } else {
      spool::test::pg_exec(uri_, statement);
    }
  }

  // Publishes one ungrouped message and polls it; returns the receipt.
  std::string claim_one(const std::string& id) {
    EXPECT_EQ(run({"mq", "publish", "--queue", "q"}, R"({"id":")" + id + "\"}\n").exit_code, 0);
    const auto polled = expect_json(run({"mq", "poll", "--queue", "q", "--json"}));
    return polled["messages"].at(0)["receipt"].get<std::string>();
  }

  std::int64_t visible_at(const std::string& id) {
    const std::string q = "SELECT visible_at FROM queue_messages WHERE id = '" + id + "'";
    const auto rows = GetParam() == engine_kind::sqlite ? spool::test::sqlite_query(uri_, q)
                                                        : spool::test::pg_query(uri_, q);
    return std::stoll(rows.at(0).at(0).value());
  }

  static std::int64_t now_s() {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }

  spool::test::temp_dir dir_;
  std::string uri_;
};

const std::string two_lines =
    R"({"id":"m1","mediationType":"HTTP","mediationTarget":"http://x","custom":12345678901234567890})"
    "\n\n"  // a blank line is skipped
    R"({"id":"m2","messageGroupId":"g"})"
    "\n";

TEST_P(cli_on_engine, MigrateThenPublishingTwoLinesGivesIdsAndRepublishingGivesNotInserted) {
  const auto first = expect_json(run({"mq", "publish", "--queue", "q", "--json"}, two_lines));
  EXPECT_EQ(first, json::parse(R"({"ids":["m1","m2"],"inserted":[true,true]})"));
  const auto again = expect_json(run({"mq", "publish", "--queue", "q", "--json"}, two_lines));
  EXPECT_EQ(again, json::parse(R"({"ids":["m1","m2"],"inserted":[false,false]})"));
  EXPECT_EQ(expect_json(run({"migrate", "--json"})), json::parse(R"({"applied":[]})"));
}

TEST_P(cli_on_engine, PollJsonReturnsTheReceiptANullGroupAndReceiveCountOne) {
  ASSERT_EQ(run({"mq", "publish", "--queue", "q"}, two_lines).exit_code, 0);
  // Both messages in one poll: order between groups is no contract (the
  // claim walks visible rows in visible_at order), so find the ungrouped one.
  const auto doc = expect_json(run({"mq", "poll", "--queue", "q", "--max", "2", "--json"}));
  ASSERT_EQ(doc["messages"].size(), 2u);
  const auto& m = doc["messages"][0]["id"] == "m1" ? doc["messages"][0] : doc["messages"][1];
  EXPECT_EQ(m["id"], "m1");
  EXPECT_EQ(m["receipt"].get<std::string>().size(), 36u + 1 + 2);  // "<uuid>:m1"
  EXPECT_TRUE(m["group"].is_null());
  EXPECT_EQ(m["receive_count"], 1);
  // The wire form, extra member included, 64-bit integer intact.
  EXPECT_EQ(m["message"], json::parse(R"({"id":"m1","mediationType":"HTTP","mediationTarget":"http://x",
                                          "custom":12345678901234567890})"));
}

TEST_P(cli_on_engine, PollOfAGroupedMessageShowsItsGroup) {
  ASSERT_EQ(run({"mq", "publish", "--queue", "q", "--group", "g7"}, "{}\n").exit_code, 0);
  const auto doc = expect_json(run({"mq", "poll", "--queue", "q", "--json"}));
  ASSERT_EQ(doc["messages"].size(), 1u);
  EXPECT_EQ(doc["messages"][0]["group"], "g7");
  EXPECT_EQ(doc["messages"][0]["message"]["messageGroupId"], "g7");
}

TEST_P(cli_on_engine, AnEmptyPollSucceedsWithNoMessages) {
  EXPECT_EQ(expect_json(run({"mq", "poll", "--queue", "q", "--json"})), json::parse(R"({"messages":[]})"));
}

TEST_P(cli_on_engine, AckJsonGivesAckedTrueAndAckingAgainIsNotFound) {
  const auto receipt = claim_one("a1");
  EXPECT_EQ(expect_json(run({"mq", "ack", "--queue", "q", "--receipt", receipt, "--json"})),
            json::parse(R"({"acked":true})"));
  expect_failure(run({"mq", "ack", "--queue", "q", "--receipt", receipt, "--json"}), 1, "spool: not_found");
}

TEST_P(cli_on_engine, NackOfAnUnknownButWellFormedReceiptExitsZeroWithMatchedFalse) {
  const auto doc = expect_json(run(
      {"mq", "nack", "--queue", "q", "--receipt", "0b5e6a4e-1d2c-4f3a-9b8c-7d6e5f4a3b2c:nope", "--json"}));
  EXPECT_EQ(doc, json::parse(R"({"matched":false})"));
}

TEST_P(cli_on_engine, DeferWithADelayMatchesAndLeavesTheMessageDelayed) {
  const auto receipt = claim_one("d1");
  EXPECT_EQ(
      expect_json(run({"mq", "defer", "--queue", "q", "--receipt", receipt, "--delay", "1h", "--json"})),
      json::parse(R"({"matched":true})"));
  const auto m = expect_json(run({"mq", "metrics", "--queue", "q", "--json"}));
  EXPECT_EQ(m["delayed"], 1);
  EXPECT_EQ(m["pending"], 0);
}

TEST_P(cli_on_engine, ExtendJsonGivesExtendedTrue) {
  const auto receipt = claim_one("e1");
  EXPECT_EQ(expect_json(
                run({"mq", "extend", "--queue", "q", "--receipt", receipt, "--visibility", "5m", "--json"})),
            json::parse(R"({"extended":true})"));
}

TEST_P(cli_on_engine, AMalformedReceiptIsInvalidArgument) {
  expect_failure(run({"mq", "ack", "--queue", "q", "--receipt", "not-a-receipt", "--json"}), 1,
                 "spool: invalid_argument");
  expect_failure(run({"mq", "nack", "--queue", "q", "--receipt", "not-a-receipt"}), 1,
                 "spool: invalid_argument");
}

TEST_P(cli_on_engine, MetricsJsonHasExactlyTheDocumentedKeys) {
  ASSERT_EQ(run({"mq", "publish", "--queue", "q"}, two_lines).exit_code, 0);
  ASSERT_EQ(run({"mq", "poll", "--queue", "q"}).exit_code, 0);
  const auto doc = expect_json(run({"mq", "metrics", "--queue", "q", "--json"}));
  EXPECT_EQ(doc, json::parse(R"({"identifier":"q","pending":1,"in_flight":1,"delayed":0,"expired":0})"));
  const auto human = run({"mq", "metrics", "--queue", "q"});
  EXPECT_EQ(human.out, "pending 1  in_flight 1  delayed 0  expired 0\n");
}

TEST_P(cli_on_engine, FailedJsonListsAQuarantinedRowAndItsPayloadOnlyWhenAsked) {
  sql("INSERT INTO queue_messages (id, queue_name, message_group_id, receipt_handle, visible_at, payload, "
      "created_at, receive_count) VALUES ('bad-1','q',NULL,NULL,0,'{ not json',0,0)");
  EXPECT_EQ(expect_json(run({"mq", "poll", "--queue", "q", "--json"})), json::parse(R"({"messages":[]})"));

  const auto doc = expect_json(run({"mq", "failed", "--queue", "q", "--json"}));
  ASSERT_EQ(doc["failed"].size(), 1u);
  const auto& f = doc["failed"][0];
  EXPECT_EQ(f["id"], "bad-1");
  EXPECT_TRUE(f["group"].is_null());
  EXPECT_FALSE(f["error_message"].get<std::string>().empty());
  EXPECT_EQ(f["receive_count"], 1);
  EXPECT_EQ(f["created_at"], "1970-01-01T00:00:00Z");
  EXPECT_EQ(f["failed_at"].get<std::string>().back(), 'Z');
  EXPECT_EQ(f["failed_at"].get<std::string>().size(), std::string("2024-01-01T00:00:00Z").size());
  EXPECT_FALSE(f.contains("payload"));

  const auto with_payload = expect_json(run({"mq", "failed", "--queue", "q", "--payload", "--json"}));
  EXPECT_EQ(with_payload["failed"][0]["payload"], "{ not json");
}

TEST_P(cli_on_engine, RedriveMovesQuarantinedRowsBackAndDryRunChangesNothing) {
  sql("INSERT INTO queue_messages (id, queue_name, message_group_id, receipt_handle, visible_at, payload, "
      "created_at, receive_count) VALUES ('bad-1','q',NULL,NULL,0,'{ not json',0,0)");
  ASSERT_EQ(run({"mq", "poll", "--queue", "q"}).exit_code, 0);
  const auto preview = expect_json(run({"mq", "redrive", "--queue", "q", "--dry-run", "--json"}));
  EXPECT_EQ(preview["redriven"], json::parse(R"(["bad-1"])"));
  EXPECT_EQ(expect_json(run({"mq", "failed", "--queue", "q", "--json"}))["failed"].size(), 1u);
  const auto done = expect_json(
      run({"mq", "redrive", "--queue", "q", "--id", "bad-1", "--reason", "parser fixed", "--json"}));
  EXPECT_EQ(done, json::parse(R"({"redriven":["bad-1"],"conflicts":[]})"));
  EXPECT_EQ(expect_json(run({"mq", "failed", "--queue", "q", "--json"}))["failed"].size(), 0u);
  EXPECT_EQ(expect_json(run({"mq", "metrics", "--queue", "q", "--json"}))["pending"], 1);
}

TEST_P(cli_on_engine, JsonPlacedBeforeTheSubcommandWorks) {
  const auto r = run_cli({"--json", "--db", uri_, "mq", "metrics", "--queue", "q"});
  EXPECT_EQ(expect_json(r)["identifier"], "q");
  const auto eq = run_cli({"mq", "--json", "--db=" + uri_, "metrics", "--queue", "q"});
  EXPECT_EQ(expect_json(eq)["pending"], 0);
}

TEST_P(cli_on_engine, PublishWithIdAndTwoInputLinesIsInvalidArgumentAndPublishesNothing) {
  expect_failure(run({"mq", "publish", "--queue", "q", "--id", "x", "--json"}, two_lines), 1,
                 "spool: invalid_argument");
  EXPECT_EQ(expect_json(run({"mq", "metrics", "--queue", "q", "--json"}))["pending"], 0);
}

TEST_P(cli_on_engine, PublishWithIdOverridesTheIdOfTheOneLine) {
  EXPECT_EQ(expect_json(run({"mq", "publish", "--queue", "q", "--id", "x", "--json"}, R"({"id":"m"})"
                                                                                      "\n")),
            json::parse(R"({"ids":["x"],"inserted":[true]})"));
}

TEST_P(cli_on_engine, ALineThatDoesNotDecodeNamesItsLineNumberAndPublishesNothing) {
  const auto r = run({"mq", "publish", "--queue", "q", "--json"}, "{\"id\":\"ok\"}\n\n[1,2]\n");
  expect_failure(r, 1, "spool: invalid_argument");
  EXPECT_NE(r.err.find("line 3"), std::string::npos) << r.err;
  EXPECT_EQ(expect_json(run({"mq", "metrics", "--queue", "q", "--json"}))["pending"], 0);
}

TEST_P(cli_on_engine, AnInvalidDurationIsInvalidArgumentNamingTheFlag) {
  const auto r = run({"mq", "publish", "--queue", "q", "--delay", "5 minutes"}, "{}\n");
  expect_failure(r, 1, "spool: invalid_argument");
  EXPECT_NE(r.err.find("--delay"), std::string::npos) << r.err;
  expect_failure(run({"mq", "publish", "--queue", "q", "--delay", "1500ms"}, "{}\n"), 1,
                 "spool: invalid_argument");
  EXPECT_EQ(
      expect_json(run({"mq", "publish", "--queue", "q", "--delay", "1d", "--json"}, "{}\n"))["ids"].size(),
      1u);
  EXPECT_EQ(expect_json(run({"mq", "metrics", "--queue", "q", "--json"}))["delayed"], 1);
}

TEST_P(cli_on_engine, PublishFileReadsOneMessagePerLineFromTheFileNotStdin) {
  const auto file = dir_.path() / "messages.jsonl";
  std::ofstream(file, std::ios::binary) << two_lines;
  const auto doc = expect_json(run({"mq", "publish", "--queue", "q", "--file", file.string(), "--json"},
                                   R"({"id":"from-stdin"})"
                                   "\n"));
  EXPECT_EQ(doc, json::parse(R"({"ids":["m1","m2"],"inserted":[true,true]})"));
  EXPECT_EQ(expect_json(run({"mq", "metrics", "--queue", "q", "--json"}))["pending"], 2);
  const auto missing = (dir_.path() / "no-such.jsonl").string();
  const auto r = run({"mq", "publish", "--queue", "q", "--file", missing, "--json"});
  expect_failure(r, 1, "spool: invalid_argument");
  EXPECT_NE(r.err.find("--file"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(missing), std::string::npos) << r.err;
}

TEST_P(cli_on_engine, PollVisibilityIsTheClaimsWindowAndTheDefaultIsThirtySeconds) {
  ASSERT_EQ(run({"mq", "publish", "--queue", "q"}, R"({"id":"long"})"
                                                   "\n")
                .exit_code,
            0);
  ASSERT_EQ(run({"mq", "publish", "--queue", "q2"}, R"({"id":"default"})"
                                                    "\n")
                .exit_code,
            0);
  // visible_at is the claim's whole-second clock plus the window, so it lies
  // between the window added to the clock read before and after the command.
  const auto before = now_s();
  ASSERT_EQ(
      expect_json(run({"mq", "poll", "--queue", "q", "--visibility", "1h", "--json"}))["messages"].size(),
      1u);
  ASSERT_EQ(expect_json(run({"mq", "poll", "--queue", "q2", "--json"}))["messages"].size(), 1u);
  const auto after = now_s();
  const auto long_until = visible_at("long");
  EXPECT_GE(long_until, before + 3600);
  EXPECT_LE(long_until, after + 3600);
  const auto default_until = visible_at("default");
  EXPECT_GE(default_until, before + 30);
  EXPECT_LE(default_until, after + 30);
}

INSTANTIATE_TEST_SUITE_P(engines, cli_on_engine,
                         ::testing::Values(engine_kind::sqlite, engine_kind::postgres),
                         spool::test::engine_test_name<::testing::TestParamInfo<engine_kind>>);

// ---- no database needed ----

TEST(cli, ASqliteUriWithSlashesIsInvalidArgument) {
  expect_failure(run_cli({"mq", "metrics", "--queue", "q", "--db", "sqlite://x", "--json"}), 1,
                 "spool: invalid_argument");
}

TEST(cli, VersionPrintsTheReleaseAndTheSourceCommitOnStdoutAndExitsZero) {
  const auto r = run_cli({"--version"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, spool::version_line() + "\n");
  EXPECT_EQ(r.err, "");
}

TEST(cli, AnUnknownFlagIsAUsageErrorWithExitCodeTwo) {
  expect_failure(run_cli({"mq", "poll", "--queue", "q", "--bogus", "--json"}), 2, "spool: usage");
  expect_failure(run_cli({"mq", "poll", "--json"}), 2, "spool: usage");  // --queue is required
  expect_failure(run_cli({}), 2, "spool: usage");
}

TEST(cli, MigratePrintForPostgresPrintsSqlWithoutConnecting) {
  const auto r = run_cli({"migrate", "--print", "--db", "postgresql://u:secret@nowhere/db"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("CREATE TABLE IF NOT EXISTS"), std::string::npos);
  EXPECT_NE(r.out.find("queue_messages"), std::string::npos);
}

TEST(cli, MigratePrintForSqlitePrintsSqlWithoutCreatingTheFile) {
  const spool::test::temp_dir dir;
  const auto file = dir.path() / "never.db";
  const auto r = run_cli({"migrate", "--print", "--db", "sqlite:" + file.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("CREATE TABLE IF NOT EXISTS queue_messages"), std::string::npos) << r.out;
  const auto doc = expect_json(run_cli({"migrate", "--print", "--json", "--db", "sqlite:" + file.string()}));
  EXPECT_EQ(doc["engine"], "sqlite");
  EXPECT_EQ(doc["script"].get<std::string>() + (r.out.ends_with("\n") ? "" : "\n"), r.out)
      << "--json carries the same script";
  EXPECT_FALSE(std::filesystem::exists(file));
}

TEST(cli, WithoutDbTheDatabaseIsSpoolDbInTheWorkingDirectory) {
  const spool::test::temp_dir cwd;
  const auto applied = expect_json(run_cli_in(cwd.path(), {"migrate", "--json"}));
  EXPECT_FALSE(applied["applied"].empty());
  ASSERT_TRUE(std::filesystem::exists(cwd.path() / "spool.db"));
  EXPECT_EQ(expect_json(run_cli_in(cwd.path(), {"mq", "publish", "--queue", "q", "--json"},
                                   R"({"id":"here"})"
                                   "\n")),
            json::parse(R"({"ids":["here"],"inserted":[true]})"));
  const auto rows = spool::test::sqlite_query((cwd.path() / "spool.db").string(),
                                              "SELECT queue_name, id FROM queue_messages");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0][0], "q");
  EXPECT_EQ(rows[0][1], "here");
}

TEST(cli, AConnectionFailureNeverShowsThePassword) {
  // Port 1 on loopback refuses at once, so the test does not wait for a timeout.
  for (const std::string uri :
       {"postgresql://u:secret@127.0.0.1:1/db", "postgres://u@127.0.0.1:1/db?password=secret"}) {
    const auto r = run_cli({"mq", "metrics", "--queue", "q", "--db", uri, "--json"});
    expect_failure(r, 1, "spool: unavailable");
    EXPECT_EQ(r.err.find("secret"), std::string::npos) << r.err;
  }
}

TEST(cli, HelpExitsZeroAndDescribesEveryCommand) {
  for (const auto& cmd : std::vector<std::vector<std::string>>{{"--help"},
                                                               {"migrate", "--help"},
                                                               {"mq", "--help"},
                                                               {"mq", "publish", "--help"},
                                                               {"mq", "poll", "--help"},
                                                               {"mq", "ack", "--help"},
                                                               {"mq", "nack", "--help"},
                                                               {"mq", "defer", "--help"},
                                                               {"mq", "extend", "--help"},
                                                               {"mq", "metrics", "--help"},
                                                               {"mq", "failed", "--help"}}) {
    const auto r = run_cli(cmd);
    EXPECT_EQ(r.exit_code, 0) << cmd.front();
    EXPECT_NE(r.out.find("--json"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("--db"), std::string::npos) << r.out;
  }
}

}  // namespace
