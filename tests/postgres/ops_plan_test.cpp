// PostgreSQL plans of the op queue's batch claim and ack (issue 13): the
// plan must not depend on whether the table has been analysed.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "ops/store.hpp"
#include "spool/database.hpp"
#include "spool/migrate.hpp"
#include "support/test_db.hpp"

namespace spool::test {

// Joined to its candidates by id, the batch claim's UPDATE was planned as a
// hash join over a sequential scan of every pending row once ANALYZE had
// seen a table of some 20,000 ops: each claim read the whole table.
TEST(ops_postgres_plan, a_batch_claim_on_an_analysed_table_finds_its_rows_by_tid_and_scans_no_table) {
  const std::string uri = make_pg_database("ops_postgres_plan");
  auto db = database::open(uri);
  (void)spool::migrate(db);
  pg_exec(uri,
          "INSERT INTO ops_queue (id, type, payload, enqueued_at) SELECT 'op' || g, 't', '{}', "
          "now() + g * interval '1 microsecond' FROM generate_series(1, 20000) g");
  pg_exec(uri, "VACUUM ANALYZE ops_queue");
  std::string sql =
      ops::detail::render_ops_file("postgres/ops/queries/dequeue_many.sql", {.table = "ops_queue"});
  sql.replace(sql.find("{{limit}}"), 9, "100");
  std::string plan;
  for (const auto& row : pg_query(uri, "PREPARE d(text[], text, text[]) AS " + sql +
                                           ";\nEXPLAIN (ANALYZE, COSTS OFF) EXECUTE d('{}', 'owner', "
                                           "array_fill('t'::text, ARRAY[100]))")) {
    plan += *row[0] + "\n";
  }
  EXPECT_NE(plan.find("Tid Scan on ops_queue o"), std::string::npos) << plan;
  EXPECT_EQ(plan.find("Seq Scan"), std::string::npos) << plan;
  EXPECT_NE(plan.find("Index Scan using idx_ops_queue_status_pri_at"), std::string::npos) << plan;
  EXPECT_EQ(*pg_query(uri, "SELECT count(*) FROM ops_queue WHERE status = 'running'").at(0).at(0), "100");
}

// The batch ack's UPDATE (ack_applied.sql) must probe the primary key once
// per (id, token) pair: joined by a predicate that cannot hash, the earlier
// form compared every row with every pair (4.7 ms for 100 ops against 2.1).
TEST(ops_postgres_plan, a_batch_ack_on_an_analysed_table_walks_the_primary_key_and_scans_no_table) {
  const std::string uri = make_pg_database("ops_postgres_plan_ack");
  auto db = database::open(uri);
  (void)spool::migrate(db);
  pg_exec(
      uri,
      "INSERT INTO ops_queue (id, type, payload, status, lease_token, enqueued_at) SELECT 'op' || g, 't', "
      "'{}', 'running', 'tok' || g, now() + g * interval '1 microsecond' FROM generate_series(1, 20000) g");
  pg_exec(uri, "VACUUM ANALYZE ops_queue");
  const std::string sql =
      ops::detail::render_ops_file("postgres/ops/queries/ack_applied.sql", {.table = "ops_queue"});
  // Ops 101..200, sorted by id as ack_batch sends them.
  std::vector<int> picked;
  for (int g = 101; g <= 200; ++g) picked.push_back(g);
  std::sort(picked.begin(), picked.end(),
            [](int a, int b) { return "op" + std::to_string(a) < "op" + std::to_string(b); });
  std::string ids = "'{", tokens = "'{";
  for (const int g : picked) {
    ids += fmt::format("{}op{}", ids.size() > 2 ? "," : "", g);
    tokens += fmt::format("{}tok{}", tokens.size() > 2 ? "," : "", g);
  }
  ids += "}'";
  tokens += "}'";
  std::string plan;
  for (const auto& row :
       pg_query(uri, "SET plan_cache_mode = force_generic_plan;\nPREPARE a(text[], text[]) AS " + sql +
                         ";\nEXPLAIN (ANALYZE, COSTS OFF) EXECUTE a(" + ids + ", " + tokens + ")")) {
    plan += *row[0] + "\n";
  }
  EXPECT_NE(plan.find("Index Scan using ops_queue_pkey on ops_queue o"), std::string::npos) << plan;
  EXPECT_NE(plan.find("loops=100"), std::string::npos) << plan;  // one probe per pair
  EXPECT_EQ(plan.find("Seq Scan"), std::string::npos) << plan;
  EXPECT_EQ(plan.find("Rows Removed by Join Filter"), std::string::npos) << plan;
  EXPECT_EQ(*pg_query(uri, "SELECT count(*) FROM ops_queue WHERE status = 'done'").at(0).at(0), "100");
  EXPECT_EQ(*pg_query(uri,
                      "SELECT count(*) FROM ops_queue WHERE status = 'done' AND id NOT IN "
                      "(SELECT 'op' || g FROM generate_series(101, 200) g)")
                 .at(0)
                 .at(0),
            "0");
}

}  // namespace spool::test
