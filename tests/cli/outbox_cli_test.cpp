// `spool outbox …` as a script sees it (outbox.md §5, §6.3–§6.5): exit codes,
// stdout, stderr and the JSON shapes, on SQLite and PostgreSQL.
// The binary is $SPOOL_CLI; PostgreSQL comes from tests/support (the `pg`
// CTest fixture).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
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
using spool::test::with;

using spool::test::engine_kind;

class outbox_cli : public ::testing::TestWithParam<engine_kind> {
 protected:
  void SetUp() override {
    if (GetParam() == engine_kind::sqlite) {
      uri_ = dir_.sqlite_uri();
    } else {
      uri_ = spool::test::make_pg_database(std::string("obcli_") +
                                           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    }
    const auto r = run({"migrate", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
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
  // Marks every row terminal (state) and two hours old.
  void age_all(const std::string& state) {
    const std::string col = state == "delivered" ? "delivered_at" : "dead_lettered_at";
    if (GetParam() == engine_kind::sqlite) {
      sql("UPDATE outbox_messages SET state = '" + state + "', " + col +
          " = CAST((julianday('now') - 2440587.5) * 86400000000 AS INTEGER) - 7200000000" +
          (state == "dead" ? ", last_error_code = 'x', last_error = 'y'" : ""));
    } else {
      sql("UPDATE outbox_messages SET state = '" + state + "', " + col + " = now() - interval '2 hours'" +
          (state == "dead" ? ", last_error_code = 'x', last_error = 'y'" : ""));
    }
  }
  spool::test::temp_dir dir_;
  std::string uri_;
};

TEST_P(outbox_cli, write_reads_the_payload_from_stdin_and_a_repeated_idempotency_key_is_skipped) {
  const auto first = expect_json(
      run({"outbox", "write", "--topic", "orders", "--key", "k", "--idempotency-key", "i1", "--json"},
          "{\"a\":1}"));
  EXPECT_EQ(first["result"], "inserted");
  EXPECT_EQ(first["id"].get<std::string>().size(), 36u);
  const auto again =
      expect_json(run({"outbox", "write", "--topic", "orders", "--idempotency-key", "i1", "--json"}, "x"));
  EXPECT_EQ(again["result"], "skipped");
  expect_failure(run({"outbox", "write", "--topic", "", "--json"}, "x"), 1,
                 "spool: invalid_argument/topic_required: ");
  expect_failure(run({"outbox", "write", "--json"}, "x"), 2, "spool: usage: ");
}

TEST_P(outbox_cli, backlog_and_inspect_print_the_documented_shapes) {
  for (int i = 0; i < 3; ++i) ASSERT_EQ(run({"outbox", "write", "--topic", "t"}, "p").exit_code, 0);
  const auto b = expect_json(run({"outbox", "backlog", "--json"}));
  EXPECT_EQ(b["pending"], 3);
  EXPECT_EQ(b["leased"], 0);
  EXPECT_EQ(b["expired_leases"], 0);
  EXPECT_EQ(b["dead"], 0);
  EXPECT_TRUE(b["oldest_pending_created_at"].get<std::string>().ends_with("Z"));
  EXPECT_GE(b["oldest_pending_age_s"].get<double>(), 0.0);
  const auto page = expect_json(run({"outbox", "inspect", "--limit", "2", "--json"}));
  ASSERT_EQ(page["messages"].size(), 2u);
  EXPECT_FALSE(page["messages"][0].contains("payload"));
  EXPECT_FALSE(page["messages"][0].contains("metadata"));
  EXPECT_EQ(page["messages"][0]["state"], "pending");
  const auto rest = expect_json(
      run({"outbox", "inspect", "--limit", "2", "--before", page["next"].get<std::string>(), "--json"}));
  EXPECT_EQ(rest["messages"].size(), 1u);
  EXPECT_TRUE(rest["next"].is_null());
  expect_failure(run({"outbox", "inspect", "--state", "gone", "--json"}), 1,
                 "spool: invalid_argument/invalid_message_state: ");
}

TEST_P(outbox_cli, inspect_narrows_by_ordering_key_id_prefix_and_age) {
  const auto ids_of = [](const nlohmann::json& page) {
    std::vector<std::string> ids;
    for (const auto& m : page["messages"]) ids.push_back(m["id"]);
    std::sort(ids.begin(), ids.end());
    return ids;
  };
  const auto keyed = expect_json(run({"outbox", "write", "--topic", "t", "--key", "cust-1", "--json"}, "p"));
  const auto plain = expect_json(run({"outbox", "write", "--topic", "t", "--json"}, "p"));
  const std::string k = keyed["id"], u = plain["id"];
  EXPECT_EQ(ids_of(expect_json(run({"outbox", "inspect", "--key", "cust-1", "--json"}))),
            std::vector<std::string>{k});
  EXPECT_EQ(ids_of(expect_json(run({"outbox", "inspect", "--key", "", "--json"}))),
            std::vector<std::string>{u});
  EXPECT_EQ(ids_of(expect_json(run({"outbox", "inspect", "--id-prefix", k, "--json"}))),
            std::vector<std::string>{k});
  EXPECT_TRUE(expect_json(run({"outbox", "inspect", "--id-prefix", "%", "--json"}))["messages"].empty())
      << "a % in a prefix is a byte, never a wildcard";
  EXPECT_TRUE(expect_json(run({"outbox", "inspect", "--older-than", "1d", "--json"}))["messages"].empty());
  EXPECT_EQ(expect_json(run({"outbox", "inspect", "--older-than", "0", "--json"}))["messages"].size(), 2u);
  expect_failure(run({"outbox", "inspect", "--older-than", "soon", "--json"}), 1, "spool: invalid_argument");
}

TEST_P(outbox_cli, replay_reports_items_and_a_conflict_names_each_id_on_stderr) {
  const auto w = expect_json(run({"outbox", "write", "--topic", "t", "--json"}, "p"));
  const std::string id = w["id"];
  expect_failure(
      run({"outbox", "replay", "--id", id, "--id", "nope", "--requested-by", "me", "--reason", "r"}), 1,
      "spool: conflict/replay_conflict: ");
  const auto err =
      run({"outbox", "replay", "--id", id, "--id", "nope", "--requested-by", "me", "--reason", "r"}).err;
  EXPECT_NE(err.find(id + "=pending"), std::string::npos) << err;
  EXPECT_NE(err.find("nope=missing"), std::string::npos) << err;
  age_all("dead");
  const auto r = expect_json(
      run({"outbox", "replay", "--id", id, "--requested-by", "me", "--reason", "fixed", "--json"}));
  EXPECT_EQ(r["replay_id"].get<std::string>().size(), 36u);
  EXPECT_EQ(r["items"][0]["id"], id);
  EXPECT_EQ(r["items"][0]["previous_state"], "dead");
}

TEST_P(outbox_cli, prune_and_archive_delete_aged_rows_and_the_archive_file_is_idempotent_by_id) {
  for (int i = 0; i < 3; ++i) ASSERT_EQ(run({"outbox", "write", "--topic", "t"}, "p").exit_code, 0);
  age_all("delivered");
  const auto pruned = expect_json(
      run({"outbox", "prune", "--state", "delivered", "--older-than", "1h", "--limit", "1", "--json"}));
  EXPECT_EQ(pruned["deleted"].size(), 1u);
  const auto file = (dir_.path() / "archive.jsonl").string();
  const auto archived = expect_json(
      run({"outbox", "archive", "--state", "delivered", "--older-than", "1h", "--to", file, "--json"}));
  EXPECT_EQ(archived["deleted"].size(), 2u);
  std::ifstream in(file);
  std::vector<json> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(json::parse(line));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["state"], "delivered");
  EXPECT_EQ(lines[0]["envelope"]["topic"], "t");
  EXPECT_EQ(lines[0]["envelope"]["payload"], "cA==");
  EXPECT_TRUE(lines[0].contains("terminal_at"));
  EXPECT_TRUE(lines[0]["last_error"].is_null());
  expect_failure(run({"outbox", "prune", "--state", "pending", "--older-than", "1h"}), 1,
                 "spool: invalid_argument/invalid_message_state: ");
  expect_failure(run({"outbox", "prune", "--state", "dead", "--older-than", "soon"}), 1,
                 "spool: invalid_argument: ");
}

TEST_P(outbox_cli, the_file_archiver_skips_ids_already_in_the_file) {
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    ids.push_back(
        expect_json(run({"outbox", "write", "--topic", "t", "--json"}, "p"))["id"].get<std::string>());
  }
  age_all("delivered");
  // The file already holds ids[0] (a batch archived before a failed commit
  // comes again) and a torn last line of an earlier crash.
  const auto file = (dir_.path() / "archive.jsonl").string();
  {
    std::ofstream out(file);
    out << "{\"envelope\":{\"id\":\"" << ids[0] << "\",\"topic\":\"t\"},\"state\":\"delivered\"}\n";
    out << "{\"envelope\":{\"id\":\"torn";  // no newline: the crash cut the line
  }
  const auto archived = expect_json(
      run({"outbox", "archive", "--state", "delivered", "--older-than", "1h", "--to", file, "--json"}));
  EXPECT_EQ(archived["deleted"].size(), 3u);  // every aged row is deleted
  std::ifstream in(file);
  std::map<std::string, int> seen;
  int lines = 0;
  for (std::string line; std::getline(in, line);) {
    ++lines;
    try {
      ++seen[json::parse(line).at("envelope").at("id").get<std::string>()];
    } catch (const std::exception&) {
    }
  }
  EXPECT_EQ(lines, 4);  // the two lines already there plus ids[1] and ids[2]
  for (const auto& id : ids) EXPECT_EQ(seen[id], 1) << id;
}

INSTANTIATE_TEST_SUITE_P(engines, outbox_cli, ::testing::Values(engine_kind::sqlite, engine_kind::postgres),
                         [](const auto& info) {
                           return info.param == engine_kind::sqlite ? "sqlite" : "postgres";
                         });

}  // namespace
