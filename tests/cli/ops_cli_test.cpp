// `spool ops …` as a script sees it: exit codes, stdout, stderr and the JSON
// shapes of DESIGN.md (Shared contracts → CLI) and the issue, on SQLite and
// PostgreSQL. The binary is $SPOOL_CLI.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_runner.hpp"
#include "support/test_db.hpp"

namespace {

using nlohmann::json;
using spool::test::cli_result;
using spool::test::count_lines;
using spool::test::expect_failure;
using spool::test::expect_json;
using spool::test::run_cli;

using spool::test::engine_kind;

class ops_cli : public ::testing::TestWithParam<engine_kind> {
 protected:
  void SetUp() override {
    if (GetParam() == engine_kind::sqlite) {
      uri_ = dir_.sqlite_uri();
    } else {
      uri_ = spool::test::make_pg_database(std::string("ops_cli_") +
                                           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    }
    const auto r = run_cli({"migrate", "--component", "ops", "--json", "--db", uri_});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  cli_result run(std::vector<std::string> args, const std::string& input = "") {
    args.insert(args.end(), {"--db", uri_});
    return run_cli(args, input);
  }

  // Enqueues through the CLI and returns the id.
  std::string enqueue(const std::string& type, const std::string& payload = "{}") {
    return expect_json(run({"ops", "enqueue", "--type", type, "--json"}, payload))["id"].get<std::string>();
  }

  void sql(const std::string& statement) {
    if (GetParam() == engine_kind::sqlite) {
      spool::test::sqlite_exec(uri_, statement);
    } else {
      spool::test::pg_exec(uri_, statement);
    }
  }

  spool::test::temp_dir dir_;
  std::string uri_;
};

TEST_P(ops_cli, EnqueueReadsThePayloadFromStdinAndGetShowsTheOpJson) {
  const auto doc = expect_json(run({"ops", "enqueue", "--type", "thumb", "--priority", "7", "--json"},
                                   R"({"node": 17, "big": 18446744073709551615})"));
  EXPECT_EQ(doc["created"], true);
  const std::string id = doc["id"];
  EXPECT_EQ(id.size(), 32u);
  const auto op = expect_json(run({"ops", "get", id, "--json"}));
  EXPECT_EQ(op["id"], id);
  EXPECT_EQ(op["type"], "thumb");
  EXPECT_EQ(op["status"], "pending");
  EXPECT_EQ(op["priority"], 7);
  EXPECT_EQ(op["attempts"], 0);
  EXPECT_EQ(op["max_attempts"], 3);
  EXPECT_EQ(op["payload"], json::parse(R"({"node": 17, "big": 18446744073709551615})"));
  EXPECT_EQ(op["enqueued_at"].get<std::string>().back(), 'Z');
  for (const char* absent :
       {"started_at", "finished_at", "not_before", "dedup_key", "last_error", "lease_token"}) {
    EXPECT_FALSE(op.contains(absent)) << absent;
  }
}

TEST_P(ops_cli, EnqueueTakesPayloadIdDelayNotBeforeDedupKeyAndMaxAttemptsFlags) {
  EXPECT_EQ(expect_json(run({"ops", "enqueue", "--type", "t", "--id", "order-1", "--payload", R"({"a":1})",
                             "--max-attempts", "5", "--delay", "1h", "--json"})),
            json::parse(R"({"id":"order-1","created":true})"));
  const auto op = expect_json(run({"ops", "get", "order-1", "--json"}));
  EXPECT_EQ(op["max_attempts"], 5);
  EXPECT_TRUE(op.contains("not_before"));
  const auto later = expect_json(run({"ops", "enqueue", "--type", "t", "--not-before",
                                      "2099-01-01T03:00:00+03:00", "--dedup-key", "k", "--json"}));
  const auto got = expect_json(run({"ops", "get", later["id"], "--json"}));
  EXPECT_EQ(got["not_before"], "2099-01-01T00:00:00Z");
  EXPECT_EQ(got["dedup_key"], "k");
}

TEST_P(ops_cli, AHeldDedupKeyIsDuplicateOrTheHoldersIdWithReturnExisting) {
  const auto first = expect_json(run({"ops", "enqueue", "--type", "t", "--dedup-key", "k", "--json"}, "{}"));
  expect_failure(run({"ops", "enqueue", "--type", "t", "--dedup-key", "k", "--json"}, "{}"), 1,
                 "spool: duplicate");
  EXPECT_EQ(expect_json(run(
                {"ops", "enqueue", "--type", "t", "--dedup-key", "k", "--return-existing", "--json"}, "{}")),
            (json{{"id", first["id"]}, {"created", false}}));
}

TEST_P(ops_cli, InvalidInputIsInvalidArgumentAndWritesNothing) {
  expect_failure(run({"ops", "enqueue", "--type", "t", "--json"}, "[1,2]"), 1, "spool: invalid_argument");
  expect_failure(run({"ops", "enqueue", "--type", "t", "--json"}, "{not json"), 1, "spool: invalid_argument");
  expect_failure(run({"ops", "enqueue", "--type", "", "--json"}, "{}"), 1, "spool: invalid_argument");
  expect_failure(run({"ops", "enqueue", "--type", "t", "--max-attempts", "-1"}, "{}"), 1,
                 "spool: invalid_argument");
  expect_failure(run({"ops", "enqueue", "--type", "t", "--not-before", "tomorrow"}, "{}"), 1,
                 "spool: invalid_argument");
  expect_failure(run({"ops", "enqueue", "--type", "t", "--delay", "5 minutes"}, "{}"), 1,
                 "spool: invalid_argument");
  expect_failure(
      run({"ops", "enqueue", "--type", "t", "--delay", "1s", "--not-before", "2099-01-01T00:00:00Z"}, "{}"),
      2, "spool: usage");
  EXPECT_EQ(expect_json(run({"ops", "stats", "--json"}))["pending"], 0);
}

TEST_P(ops_cli, ListPrintsOpsAndTheTotalFilteredByStatusAndPaged) {
  for (int i = 0; i < 3; ++i) enqueue("t");
  const auto id = enqueue("t");
  ASSERT_EQ(run({"ops", "cancel", id}).exit_code, 0);
  const auto all = expect_json(run({"ops", "list", "--json"}));
  EXPECT_EQ(all["total"], 4);
  EXPECT_EQ(all["ops"].size(), 4u);
  const auto pending = expect_json(run({"ops", "list", "--status", "pending", "--limit", "2", "--json"}));
  EXPECT_EQ(pending["total"], 3);
  EXPECT_EQ(pending["ops"].size(), 2u);
  const auto last =
      expect_json(run({"ops", "list", "--status", "pending", "--limit", "2", "--offset", "2", "--json"}));
  EXPECT_EQ(last["ops"].size(), 1u);
  expect_failure(run({"ops", "list", "--limit", "501", "--json"}), 1, "spool: invalid_argument");
  EXPECT_EQ(expect_json(run({"ops", "list", "--status", "done", "--json"})),
            json::parse(R"({"ops":[],"total":0})"));
}

TEST_P(ops_cli, CancelAndRetryPrintTheOpAndWrongStatesAreInvalidState) {
  const auto id = enqueue("t");
  const auto cancelled = expect_json(run({"ops", "cancel", id, "--json"}));
  EXPECT_EQ(cancelled["status"], "cancelled");
  EXPECT_TRUE(cancelled.contains("finished_at"));
  expect_failure(run({"ops", "cancel", id, "--json"}), 1, "spool: invalid_state");
  expect_failure(run({"ops", "retry", id, "--json"}), 1, "spool: invalid_state");
  expect_failure(run({"ops", "cancel", "nope", "--json"}), 1, "spool: not_found");
  expect_failure(run({"ops", "get", "nope", "--json"}), 1, "spool: not_found");
  // A failed op (as a worker leaves it) comes back with retry.
  const auto failed = enqueue("t");
  sql("UPDATE ops_queue SET status = 'failed', attempts = 3, last_error = 'boom' WHERE id = '" + failed +
      "'");
  const auto retried = expect_json(run({"ops", "retry", failed, "--json"}));
  EXPECT_EQ(retried["status"], "pending");
  EXPECT_EQ(retried["attempts"], 3);
  EXPECT_FALSE(retried.contains("last_error"));
  sql("UPDATE ops_queue SET status = 'failed' WHERE id = '" + failed + "'");
  EXPECT_EQ(expect_json(run({"ops", "retry", failed, "--reset-attempts", "--json"}))["attempts"], 0);
}

TEST_P(ops_cli, StatsJsonHasExactlyTheDocumentedKeys) {
  enqueue("t");
  const auto doc = expect_json(run({"ops", "stats", "--json"}));
  EXPECT_EQ(doc, json::parse(R"({"pending":1,"running":0,"failed":0,"done_24h":0,"cancelled":0})"));
  EXPECT_EQ(run({"ops", "stats"}).out, "pending 1  running 0  failed 0  done_24h 0  cancelled 0\n");
}

TEST_P(ops_cli, RecoverRequeuesRunningOpsOlderThanTheThreshold) {
  const auto id = enqueue("t");
  sql("UPDATE ops_queue SET status = 'running', attempts = 1, started_at = " +
      std::string(GetParam() == engine_kind::sqlite ? "datetime('now', '-2 hours')"
                                                    : "now() - interval '2 hours'") +
      " WHERE id = '" + id + "'");
  EXPECT_EQ(expect_json(run({"ops", "recover", "--older-than", "3h", "--json"})),
            json::parse(R"({"recovered":0})"));
  EXPECT_EQ(expect_json(run({"ops", "recover", "--older-than", "3600", "--json"})),
            json::parse(R"({"recovered":1})"));
  EXPECT_EQ(expect_json(run({"ops", "get", id, "--json"}))["status"], "pending");
  expect_failure(run({"ops", "recover", "--json"}), 2, "spool: usage");
}

TEST_P(ops_cli, RepairTimesRewritesNonCanonicalTimesOnSqliteAndHasNothingToDoOnPostgres) {
  if (GetParam() == engine_kind::sqlite) {
    sql("INSERT INTO ops_queue (id, type, not_before) VALUES ('late', 't', '2024-05-01 15:00:00 +0300 MSK')");
  }
  EXPECT_EQ(expect_json(run({"ops", "repair-times", "--json"})),
            (json{{"repaired", GetParam() == engine_kind::sqlite ? 1 : 0}}));
  if (GetParam() == engine_kind::sqlite) {
    EXPECT_EQ(expect_json(run({"ops", "get", "late", "--json"}))["not_before"], "2024-05-01T12:00:00Z");
  }
}

TEST_P(ops_cli, AConfiguredTableIsUsedByMigrateAndEveryOpsCommand) {
  ASSERT_EQ(run({"migrate", "--component", "ops", "--ops-table", "jobs"}).exit_code, 0);
  const auto id =
      expect_json(run({"ops", "enqueue", "--ops-table", "jobs", "--type", "t", "--json"}, "{}"))["id"]
          .get<std::string>();
  EXPECT_EQ(expect_json(run({"ops", "get", id, "--ops-table", "jobs", "--json"}))["id"], id);
  expect_failure(run({"ops", "get", id, "--json"}), 1, "spool: not_found");
  expect_failure(run({"ops", "stats", "--ops-table", "Bad-Name", "--json"}), 1,
                 "spool: invalid_argument/invalid_identifier");
}

INSTANTIATE_TEST_SUITE_P(engines, ops_cli, ::testing::Values(engine_kind::sqlite, engine_kind::postgres),
                         spool::test::engine_test_name<::testing::TestParamInfo<engine_kind>>);

// ---- no migrated database ----

TEST(ops_cli_unmigrated, OpsCommandsOnAnUnmigratedDatabaseAreInvalidStateNamingSpoolMigrate) {
  spool::test::temp_dir dir;
  const auto r = run_cli({"ops", "stats", "--json", "--db", dir.sqlite_uri()});
  expect_failure(r, 1, "spool: invalid_state/schema_version_mismatch");
  EXPECT_NE(r.err.find("spool migrate"), std::string::npos) << r.err;
}

TEST(ops_cli_unmigrated, HelpDescribesEveryOpsCommand) {
  for (const char* cmd : {"enqueue", "get", "list", "cancel", "retry", "stats", "recover", "repair-times"}) {
    const auto r = run_cli({"ops", cmd, "--help"});
    EXPECT_EQ(r.exit_code, 0) << cmd;
    EXPECT_NE(r.out.find("--json"), std::string::npos) << cmd;
    EXPECT_NE(r.out.find("--db"), std::string::npos) << cmd;
    EXPECT_NE(r.out.find("--ops-table"), std::string::npos) << cmd;
  }
  EXPECT_NE(run_cli({"migrate", "--help"}).out.find("--ops-table"), std::string::npos);
}

TEST(ops_cli_unmigrated, MigratePrintIncludesTheOpsComponent) {
  const auto r =
      run_cli({"migrate", "--print", "--component", "ops", "--db", "postgresql://u:secret@nowhere/db"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("CREATE TABLE IF NOT EXISTS \"ops_queue\""), std::string::npos);
  EXPECT_NE(r.out.find("idx_ops_queue_running_heartbeat"), std::string::npos);
  expect_failure(run_cli({"migrate", "--print", "--component", "nope", "--db", "sqlite:x.db"}), 1,
                 "spool: invalid_argument");
}

}  // namespace
