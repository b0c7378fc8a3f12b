// PostgreSQL plans of the op queue's claim (issue 13): the plan must not
// depend on whether the table has been analysed.
#include <gtest/gtest.h>

#include <string>

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

}  // namespace spool::test
