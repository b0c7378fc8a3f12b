// PostgreSQL query plans of the outbox store (outbox.md §3.3 and scenario
// 17): claim in all three modes (mode none's `pending OR expired lease`
// predicate included), mark_delivered_and_claim_next, backlog, inspect and
// retention (prune, archive) use indexes and no sequential scan at 0, 150 and
// 100,000 mostly terminal rows, both as custom and as generic plans (the
// store's statements are prepared per connection). A claim over a large
// pending backlog reads only the rows it claims.
#include <fmt/format.h>

#include "outbox/store.hpp"
#include "outbox_fixture.hpp"

namespace spool::test {
namespace {

using namespace spool::outbox;

// One statement of the store and the literal values of its parameters.
struct statement {
  std::string file;
  std::string args;  // for EXECUTE q(args)
  std::string label;
};

const std::vector<statement>& statements() {
  // Cutoff and cursor: now, as epoch µs (everything terminal is older).
  static const std::string now_us = "(extract(epoch FROM clock_timestamp()) * 1000000)::bigint";
  static const std::vector<statement> all = {
      {"claim", "'relay', 100, 30000000", "claim (none)"},
      {"claim_by_key", "'relay', 100, 30000000", "claim (by_ordering_key)"},
      {"claim_by_topic", "'relay', 100, 30000000", "claim (by_topic)"},
      {"claim_next_by_key", "'relay', 1, 30000000, 'k7'", "claim next (by_ordering_key)"},
      {"claim_next_by_topic", "'relay', 1, 30000000, 'topic7'", "claim next (by_topic)"},
      {"backlog", "", "backlog"},
      {"inspect", "NULL, NULL, NULL, '', 100, NULL, NULL, NULL", "inspect"},
      {"inspect", "'dead', NULL, " + now_us + ", '', 100, NULL, NULL, NULL", "inspect (state, cursor)"},
      {"inspect", "NULL, 'topic3', NULL, '', 100, NULL, NULL, NULL", "inspect (topic)"},
      {"inspect", "NULL, NULL, NULL, '', 100, 'k7', 'ab', 60000000", "inspect (key, id prefix, age)"},
      {"prune_delivered", now_us + ", 100", "prune delivered"},
      {"prune_dead", now_us + ", 100", "prune dead"},
      {"archive_select_delivered", now_us + ", 100", "archive delivered"},
      {"archive_select_dead", now_us + ", 100", "archive dead"},
      {"archive_delete", "'{1,2,3}', 'delivered'", "archive delete"},
  };
  return all;
}

class outbox_plans_postgres : public ::testing::Test {
 protected:
  void SetUp() override {
    uri_ = make_pg_database(::testing::UnitTest::GetInstance()->current_test_info()->name());
    db_.emplace(database::open(uri_));
    outbox::migrate(*db_);
    names_ = outbox::detail::names_of(outbox_config{}, engine::postgres);
    outbox::detail::resolve_schema(names_, *db_);
  }

  // Replaces the table's rows with `total` rows, mostly terminal: 1 % pending
  // (half with an ordering key), 1 % leased (half expired), 1 % dead, the
  // rest delivered; then ANALYZE, as autovacuum would. Autovacuum itself is
  // off for the table, so that its later ANALYZE (another sample) cannot
  // change the statistics the plans are checked against.
  void fill(int total) {
    const int few = std::max(total / 100, total > 0 ? 1 : 0);
    const int delivered = total - 3 * few;
    pg_exec(uri_, fmt::format(R"(
ALTER TABLE outbox_messages SET (autovacuum_enabled = off);
TRUNCATE outbox_messages;
INSERT INTO outbox_messages (id, topic, payload, payload_version, ordering_key, state, delivered_at)
  SELECT 'd' || g, 'topic' || (g % 20), '\x00', 1, CASE WHEN g % 2 = 0 THEN 'k' || (g % 200) ELSE '' END,
         'delivered', clock_timestamp() - g * interval '1 second' FROM generate_series(1, {0}) g;
INSERT INTO outbox_messages (id, topic, payload, payload_version, ordering_key, state, dead_lettered_at,
                             last_error_code, last_error)
  SELECT 'x' || g, 'topic' || (g % 20), '\x00', 1, 'k' || (g % 200), 'dead',
         clock_timestamp() - g * interval '1 second', 'e', 'm' FROM generate_series(1, {1}) g;
INSERT INTO outbox_messages (id, topic, payload, payload_version, ordering_key)
  SELECT 'p' || g, 'topic' || (g % 20), '\x00', 1, CASE WHEN g % 2 = 0 THEN 'k' || (g % 200) ELSE '' END
  FROM generate_series(1, {1}) g;
INSERT INTO outbox_messages (id, topic, payload, payload_version, ordering_key, state, lease_owner, lease_token,
                             leased_until)
  SELECT 'l' || g, 'topic' || (g % 20), '\x00', 1, 'k' || (g % 200), 'leased', 'o', gen_random_uuid(),
         clock_timestamp() + CASE WHEN g % 2 = 0 THEN interval '1 hour' ELSE interval '-1 hour' END
  FROM generate_series(1, {1}) g;
ANALYZE outbox_messages;)",
                              std::max(delivered, 0), few));
    ASSERT_EQ(std::stoll(*pg_query(uri_, "SELECT count(*) FROM outbox_messages").at(0).at(0)),
              total > 0 ? std::max(delivered, 0) + 3 * few : 0);
  }

  // The plan of one statement as the store runs it: in a transaction with
  // the settings of store_postgres_txn.cpp's txn (store_settings), or with the
  // server's defaults; as a custom or a generic plan.
  // With analyze, the statement runs (its effects are rolled back) and the
  // plan shows the rows each node produced.
  std::string plan(const statement& s, bool store_settings, const char* plan_cache_mode, bool analyze = false) {
    const std::string sql = outbox::detail::render(engine::postgres, s.file, names_);
    std::string text = "BEGIN ISOLATION LEVEL READ COMMITTED;\n";
    if (store_settings) text += "SET LOCAL enable_seqscan = off;\n";
    text += fmt::format("SET LOCAL plan_cache_mode = {};\n", plan_cache_mode);
    text += "PREPARE q AS " + sql + ";\n";
    const std::string explain = analyze ? "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) " : "EXPLAIN ";
    text += explain + (s.args.empty() ? "EXECUTE q;\n" : "EXECUTE q(" + s.args + ");\n");
    std::string out;
    for (const auto& r : pg_query(uri_, text + "ROLLBACK;")) out += r.at(0).value_or("") + "\n";
    return out;
  }

  void expect_index_plans(int rows, bool store_settings) {
    for (const auto* mode : {"force_custom_plan", "force_generic_plan"}) {
      for (const auto& s : statements()) {
        // inspect's optional operator filters ($6..$8, "NULL or equal") each
        // shrink the generic estimate to a few rows, so on the server's own
        // settings the planner may prefer scan-and-sort; the store never runs
        // it so (enable_seqscan off, the last test here), and with that
        // setting it walks created_idx in order and stops at its limit.
        if (!store_settings && s.file == "inspect") continue;
        const std::string p = plan(s, store_settings, mode);
        EXPECT_EQ(p.find("Seq Scan"), std::string::npos)
            << s.label << " at " << rows << " rows (" << mode << (store_settings ? ", store settings" : ", defaults")
            << "):\n" << p;
        EXPECT_NE(p.find("Index"), std::string::npos) << s.label << " at " << rows << " rows:\n" << p;
      }
    }
  }

  std::string uri_;
  std::optional<database> db_;
  outbox::detail::names names_;
};

TEST_F(outbox_plans_postgres, claim_backlog_inspect_and_retention_use_indexes_at_0_150_and_100000_rows) {
  for (const int rows : {0, 150, 100000}) {
    fill(rows);
    expect_index_plans(rows, /*store_settings=*/true);
  }
  // With mostly terminal rows the planner picks the partial indexes on its
  // own, without the store's setting (inspect aside: see expect_index_plans).
  expect_index_plans(100000, /*store_settings=*/false);
}

TEST_F(outbox_plans_postgres, a_claim_reads_only_the_pending_rows_it_claims_whatever_the_backlog) {
  // 100,000 pending rows, all due, in claim order by available_at. The claim
  // must walk claim_idx in order and stop at its limit: an OR over pending and
  // expired leases once bitmap-scanned all of them and sorted them for every
  // claim, a cost that grew with the backlog (docs/BENCHMARKS.md).
  pg_exec(uri_, R"(
TRUNCATE outbox_messages;
INSERT INTO outbox_messages (id, topic, payload, payload_version, available_at, created_at)
  SELECT 'p' || g, 't', '\x00', 1, clock_timestamp() - (100001 - g) * interval '1 millisecond',
         clock_timestamp() - (100001 - g) * interval '1 millisecond'
  FROM generate_series(1, 100000) g;
ANALYZE outbox_messages;)");
  const statement claim{"claim", "'relay', 100, 30000000", "claim (none)"};
  for (const auto* mode : {"force_custom_plan", "force_generic_plan"}) {
    const std::string p = plan(claim, /*store_settings=*/true, mode, /*analyze=*/true);
    EXPECT_EQ(p.find("Bitmap"), std::string::npos) << mode << ":\n" << p;
    const auto at = p.find("Index Scan using outbox_messages_claim_idx");
    ASSERT_NE(at, std::string::npos) << mode << ":\n" << p;
    const auto rows_at = p.find("rows=", at);
    ASSERT_NE(rows_at, std::string::npos) << p;
    EXPECT_LE(std::stol(p.substr(rows_at + 5)), 100) << mode << ": the claim read more pending rows than it claims:\n"
                                                      << p;
  }
  // Expired leases are still claimed, before later pending rows.
  pg_exec(uri_, R"(
UPDATE outbox_messages SET state = 'leased', lease_owner = 'o', lease_token = gen_random_uuid(),
  leased_until = clock_timestamp() - interval '1 second' WHERE id IN ('p1', 'p3');)");
  store s(*db_);
  const auto got = s.claim("relay", 3, 30s);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].ref.id, "p1");
  EXPECT_EQ(got[1].ref.id, "p2");
  EXPECT_EQ(got[2].ref.id, "p3");
}

TEST_F(outbox_plans_postgres, the_store_runs_its_statements_with_sequential_scans_disabled) {
  // The setting is the store's own transaction's (SET LOCAL): after a claim
  // and a backlog the pooled connection's session is unchanged.
  {
    pg::tx tx(*db_);
    envelope e;
    e.id = "a";
    e.topic = "t";
    (void)writer(*db_).insert(tx, e);
    tx.commit();
  }
  store s(*db_);
  EXPECT_EQ(s.claim("relay", 10, 30s).size(), 1u);
  EXPECT_EQ(s.backlog().leased, 1);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(*db_->exec("SHOW enable_seqscan").at(0).at(0), "on");
}

}  // namespace
}  // namespace spool::test
