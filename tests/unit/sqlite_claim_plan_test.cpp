// The SQLite claim's plan (message-queue.md §5.1): its group gate probes only
// the rows before the candidate, also when a group's rows share a created_at
// second (whole seconds in the legacy table), so a giant group's head costs
// two index probes, not a walk of the group.
#include <gtest/gtest.h>

#include <string>

#include "mq/store.hpp"
#include "spool/database.hpp"
#include "spool/migrate.hpp"
#include "support/test_db.hpp"

namespace spool::test {
namespace {

std::string plan_of(const std::string& uri, const std::string& sql) {
  std::string plan;
  for (const auto& row : sqlite_query(uri, "EXPLAIN QUERY PLAN " + sql)) plan += *row.at(3) + "\n";
  return plan;
}

TEST(sqlite_claim_plan, the_group_gate_bounds_both_columns_of_the_earlier_row_comparison) {
  temp_dir dir;
  const auto uri = dir.sqlite_uri();
  {
    auto db = database::open(uri);
    spool::migrate(db);
  }
  // One giant group, every row in the same second: a probe bounded by
  // created_at alone would visit all of them for the head.
  sqlite_exec(uri,
              "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 5000) "
              "INSERT INTO queue_messages (id, queue_name, message_group_id, receipt_handle, visible_at, payload, "
              "created_at, receive_count) SELECT printf('m%08d', i), 'q', 'g0', NULL, 1, '{}', 1, 0 FROM c; "
              "ANALYZE");
  const auto plan = plan_of(uri, mq::detail::render_sql("sqlite/mq/queries/claim.sql", ""));
  EXPECT_NE(plan.find("SEARCH m USING INDEX idx_queue_visible (queue_name=? AND visible_at<?)"), std::string::npos)
      << plan;
  EXPECT_NE(plan.find("idx_queue_group_head (queue_name=? AND message_group_id=? AND created_at=? AND id<?)"),
            std::string::npos)
      << plan;
  EXPECT_NE(plan.find("idx_queue_group_head (queue_name=? AND message_group_id=? AND created_at<?)"),
            std::string::npos)
      << plan;
  EXPECT_EQ(plan.find("SCAN"), std::string::npos) << plan;  // no full scan anywhere
}

}  // namespace
}  // namespace spool::test
