// Interoperability with filex (op-queue.md §1, §5.3): rows a legacy producer
// writes by plain SQL in the existing layout are claimed and finished by
// Spool, and rows Spool writes read and run correctly under that layout.
#include "ops/ops_fixture.hpp"

namespace spool::test {
namespace {

class ops_legacy : public ops_conformance {
 protected:
  // filex's Enqueue, as its drivers write it.
  void legacy_enqueue(const std::string& id, const std::string& type, const std::string& payload, int priority,
                      const std::string& not_before_sql = "NULL") {
    sql(fmt(is_pg() ? "INSERT INTO ops_queue (id, type, payload, status, priority, max_attempts, not_before) "
                      "VALUES ($1, $2, $3::jsonb, 'pending', $4, 3, {})"
                    : "INSERT INTO ops_queue (id, type, payload, status, priority, max_attempts, not_before) "
                      "VALUES ($1, $2, $3, 'pending', $4, 3, {})",
            not_before_sql),
        {id, type, payload, std::int64_t{priority}});
  }

  // filex's Dequeue: select the candidate, then claim it in the same transaction.
  std::optional<std::string> legacy_dequeue() {
    const std::string now = is_pg() ? "NOW()" : "CURRENT_TIMESTAMP";
    const auto r = sql("SELECT id FROM ops_queue WHERE status = 'pending' AND (not_before IS NULL OR not_before <= " +
                       now + ") ORDER BY priority DESC, enqueued_at ASC LIMIT 1");
    if (r.empty()) return std::nullopt;
    sql("UPDATE ops_queue SET status='running', started_at=" + now +
            ", attempts=attempts+1, dedup_key=NULL WHERE id=$1 AND status='pending'",
        {*r[0][0]});
    return r[0][0];
  }

  void legacy_ack(const std::string& id) {
    sql(std::string("UPDATE ops_queue SET status='done', finished_at=") + (is_pg() ? "NOW()" : "CURRENT_TIMESTAMP") +
            ", last_error='' WHERE id=$1",
        {id});
  }

  static std::string fmt(const std::string& s, const std::string& arg) {
    std::string out = s;
    out.replace(out.find("{}"), 2, arg);
    return out;
  }
};

TEST_P(ops_legacy, RowsALegacyProducerWritesAreClaimedAndFinishedBySpool) {
  legacy_enqueue("legacy-1", "thumb", R"({"node": 17, "size": 9007199254740993})", 0);
  legacy_enqueue("legacy-2", "replica", R"({})", 50);
  legacy_enqueue("legacy-3", "thumb", R"({})", 0,
                 is_pg() ? "NOW() + interval '1 hour'" : "datetime('now', '+1 hour')");
  const auto first = claim();
  EXPECT_EQ(first.id, "legacy-2") << "filex's replica retries run at priority 50";
  const auto second = claim({"thumb"});
  EXPECT_EQ(second.id, "legacy-1");
  EXPECT_EQ(second.payload["size"].get<std::int64_t>(), 9007199254740993);
  EXPECT_FALSE(q().dequeue()) << "legacy-3 is scheduled an hour ahead";
  q().ack(first.id, *first.lease_token);
  q().fail(second.id, *second.lease_token, "no thumbnailer", false);
  EXPECT_EQ(q().get("legacy-1").status, ops::op_status::failed);
  EXPECT_EQ(q().get("legacy-2").status, ops::op_status::done);
  const auto scheduled = q().get("legacy-3");
  EXPECT_FALSE(scheduled.defect);
  ASSERT_TRUE(scheduled.not_before);
  EXPECT_LE(std::chrono::abs(*scheduled.not_before - (utc_now() + 1h)), 2s);
}

TEST_P(ops_legacy, RowsSpoolWritesReadCorrectlyUnderTheLegacyLayout) {
  auto o = new_op("thumb", {{"node", 17}});
  o.priority = 5;
  o.not_before = std::chrono::floor<std::chrono::seconds>(utc_now()) - 1min;
  o.dedup_key = "node-17";
  const auto id = q().enqueue(o).id;
  // filex's Get, column for column.
  const auto r =
      sql(std::string("SELECT id, type, payload") + (is_pg() ? "::text" : "") +
              ", status, priority, attempts, max_attempts, COALESCE(last_error,''), enqueued_at, started_at, "
              "finished_at, not_before, dedup_key FROM ops_queue WHERE id=$1",
          {id});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(nlohmann::json::parse(*r[0][2]), (nlohmann::json{{"node", 17}}));
  EXPECT_EQ(r[0][3], "pending");
  EXPECT_EQ(r[0][4], "5");
  EXPECT_EQ(r[0][5], "0");
  EXPECT_EQ(r[0][6], "3");
  EXPECT_EQ(r[0][7], "");
  EXPECT_FALSE(r[0][9]);
  EXPECT_FALSE(r[0][10]);
  EXPECT_EQ(r[0][12], "node-17");
  if (!is_pg()) {
    // Canonical UTC text, the form filex's sqlTime writes and compares.
    for (int c : {8, 11}) {
      const auto& v = *r[0][static_cast<std::size_t>(c)];
      EXPECT_EQ(v.size(), 19u) << v;
      EXPECT_EQ(v[10], ' ') << v;
    }
    std::string canonical = ops::format_time(*o.not_before);  // 2024-05-01T12:00:00Z
    canonical[10] = ' ';
    canonical.pop_back();
    EXPECT_EQ(*r[0][11], canonical);
  }
  // A pending row Spool wrote carries no lease columns (§3.4 invariant).
  const auto lease = sql("SELECT lease_owner, lease_token, heartbeat_at FROM ops_queue WHERE id=$1", {id});
  EXPECT_FALSE(lease[0][0]);
  EXPECT_FALSE(lease[0][1]);
  EXPECT_FALSE(lease[0][2]);
  // A filex worker claims and finishes it.
  EXPECT_EQ(legacy_dequeue(), id);
  legacy_ack(id);
  EXPECT_EQ(q().get(id).status, ops::op_status::done);
}

TEST_P(ops_legacy, AnOpAFilexWorkerClaimedIsFinishedByATokenlessCall) {
  const auto id = enqueue("t");
  ASSERT_EQ(legacy_dequeue(), id);
  const auto running = q().get(id);
  EXPECT_EQ(running.status, ops::op_status::running);
  EXPECT_FALSE(running.lease_owner);
  EXPECT_ERRC(q().ack(id, "0123456789abcdef0123456789abcdef"), errc::lease_lost);
  EXPECT_NO_THROW(q().heartbeat(id, ""));
  q().ack(id);
  EXPECT_EQ(q().get(id).status, ops::op_status::done);
}

TEST_P(ops_legacy, TheRescuerLeavesFilexClaimsAloneAndTheLegacyOrphanSweepRequeuesThem) {  // §5.3
  const auto filex_claimed = enqueue("t");
  ASSERT_EQ(legacy_dequeue(), filex_claimed);
  sql(is_pg() ? "UPDATE ops_queue SET started_at = now() - interval '2 hours' WHERE id = $1"
              : "UPDATE ops_queue SET started_at = datetime('now', '-2 hours') WHERE id = $1",
      {filex_claimed});
  const auto spool_claimed = enqueue("t");
  const auto c = claim();
  ASSERT_EQ(c.id, spool_claimed);
  EXPECT_TRUE(q().rescue_expired(1h).empty());
  EXPECT_EQ(q().get(filex_claimed).status, ops::op_status::running) << "no token: never the rescuer's";
  EXPECT_TRUE(q().recover_legacy_orphans(3h).empty());
  const auto moved = q().recover_legacy_orphans(1h);
  ASSERT_EQ(moved.size(), 1u);
  EXPECT_EQ(moved[0].id, filex_claimed);
  EXPECT_EQ(q().get(filex_claimed).status, ops::op_status::pending);
  EXPECT_EQ(q().get(spool_claimed).status, ops::op_status::running) << "a Spool claim is not a legacy orphan";
}

SPOOL_OPS_BOTH_ENGINES(ops_legacy);

}  // namespace
}  // namespace spool::test
