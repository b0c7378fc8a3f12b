// op-queue.md §9 scenario 39 (migration) and the schema check at
// construction (§2.3), on both engines, including tables filex created.
#include "ops/ops_fixture.hpp"

namespace spool::test {
namespace {

// filex's migration 00006, verbatim in substance, per engine.
const char* filex_00006_postgres = R"(
CREATE TABLE IF NOT EXISTS ops_queue (
    id            TEXT PRIMARY KEY,
    type          TEXT NOT NULL,
    payload       JSONB NOT NULL DEFAULT '{}'::jsonb,
    status        TEXT NOT NULL DEFAULT 'pending',
    priority      INTEGER NOT NULL DEFAULT 0,
    attempts      INTEGER NOT NULL DEFAULT 0,
    max_attempts  INTEGER NOT NULL DEFAULT 3,
    last_error    TEXT,
    enqueued_at   TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    started_at    TIMESTAMPTZ,
    finished_at   TIMESTAMPTZ,
    not_before    TIMESTAMPTZ
);
CREATE INDEX IF NOT EXISTS idx_ops_queue_status_pri_at ON ops_queue (status, priority DESC, enqueued_at);
CREATE INDEX IF NOT EXISTS idx_ops_queue_type_status ON ops_queue (type, status);
CREATE INDEX IF NOT EXISTS idx_ops_queue_finished_at ON ops_queue (finished_at);
)";

const char* filex_00006_sqlite = R"(
CREATE TABLE IF NOT EXISTS ops_queue (
    id            TEXT PRIMARY KEY,
    type          TEXT NOT NULL,
    payload       TEXT NOT NULL DEFAULT '{}',
    status        TEXT NOT NULL DEFAULT 'pending',
    priority      INTEGER NOT NULL DEFAULT 0,
    attempts      INTEGER NOT NULL DEFAULT 0,
    max_attempts  INTEGER NOT NULL DEFAULT 3,
    last_error    TEXT,
    enqueued_at   DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    started_at    DATETIME,
    finished_at   DATETIME,
    not_before    DATETIME
);
CREATE INDEX IF NOT EXISTS idx_ops_queue_status_pri_at ON ops_queue (status, priority DESC, enqueued_at);
CREATE INDEX IF NOT EXISTS idx_ops_queue_type_status ON ops_queue (type, status);
CREATE INDEX IF NOT EXISTS idx_ops_queue_finished_at ON ops_queue (finished_at);
)";

// filex's migration 00031 (the SQLite twin has no IF NOT EXISTS on the column).
const char* filex_00031_postgres = R"(
ALTER TABLE ops_queue ADD COLUMN IF NOT EXISTS dedup_key TEXT;
CREATE UNIQUE INDEX IF NOT EXISTS idx_ops_queue_dedup_pending ON ops_queue (dedup_key)
    WHERE dedup_key IS NOT NULL AND status = 'pending';
)";
const char* filex_00031_sqlite = R"(
ALTER TABLE ops_queue ADD COLUMN dedup_key TEXT;
CREATE UNIQUE INDEX IF NOT EXISTS idx_ops_queue_dedup_pending ON ops_queue (dedup_key)
    WHERE dedup_key IS NOT NULL AND status = 'pending';
)";

class ops_migration : public ops_conformance {
 protected:
  void SetUp() override {
    migrate_ = false;
    ops_conformance::SetUp();
  }

  void raw(const std::string& script) {
    if (is_pg()) {
      pg_exec(uri_, script);
    } else {
      sqlite_exec(uri_, script);
    }
  }

  rows raw_query(const std::string& sql) { return is_pg() ? pg_query(uri_, sql) : sqlite_query(uri_, sql); }

  void expect_open_fails(const std::string& reason, const std::string& naming) {
    try {
      ops::queue probe(*db_);
      ADD_FAILURE() << "opened";
    } catch (const error& e) {
      EXPECT_EQ(e.code(), errc::invalid_state) << e.what();
      EXPECT_EQ(e.reason(), reason) << e.what();
      EXPECT_NE(std::string(e.what()).find(naming), std::string::npos) << e.what();
    }
  }

  std::vector<std::string> columns() {
    std::vector<std::string> out;
    const auto r = raw_query(is_pg() ? "SELECT column_name FROM information_schema.columns WHERE table_name = "
                                       "'ops_queue' AND table_schema = current_schema() ORDER BY ordinal_position"
                                     : "SELECT name FROM pragma_table_info('ops_queue')");
    for (const auto& row : r) out.push_back(*row[0]);
    return out;
  }

  std::vector<std::string> indexes() {
    std::vector<std::string> out;
    const auto r = raw_query(is_pg() ? "SELECT indexname FROM pg_indexes WHERE tablename = 'ops_queue' ORDER BY 1"
                                     : "SELECT name FROM pragma_index_list('ops_queue') WHERE origin = 'c' ORDER BY 1");
    for (const auto& row : r) out.push_back(*row[0]);
    return out;
  }
};

TEST_P(ops_migration, OpeningAnUnmigratedDatabaseIsSchemaVersionMismatchNamingTheTable) {  // §9.39
  expect_open_fails("schema_version_mismatch", "ops_queue");
  expect_open_fails("schema_version_mismatch", "spool migrate");
}

TEST_P(ops_migration, AFilexTableIsMigratedInPlaceAndASecondMigrationIsANoOp) {  // §9.39
  raw(is_pg() ? filex_00006_postgres : filex_00006_sqlite);
  // Rows as filex wrote them, one with a pre-fix not_before on SQLite.
  if (is_pg()) {
    raw("INSERT INTO ops_queue (id, type, payload, status, priority, max_attempts, not_before) VALUES "
        "('old-1', 'thumb', '{\"n\":1}'::jsonb, 'pending', 0, 3, now() - interval '1 minute')");
  } else {
    raw("INSERT INTO ops_queue (id, type, payload, status, priority, max_attempts, not_before) VALUES "
        "('old-1', 'thumb', '{\"n\":1}', 'pending', 0, 3, '2024-05-01 15:00:00.123456789 +0300 MSK m=+0.000123'),"
        "('old-2', 'thumb', '{}', 'pending', 0, 3, '2024-05-01T12:00:00Z'),"
        "('old-3', 'thumb', '{}', 'pending', 0, 3, '2024-05-01T07:00:00.5-05:00')");
  }
  expect_open_fails("schema_version_mismatch", "dedup_key");

  const auto applied = ops::migrate(*db_);
  ASSERT_EQ(applied.size(), 3u);
  const std::vector<std::string> want_cols = {"id",          "type",       "payload",     "status",
                                              "priority",    "attempts",   "max_attempts", "last_error",
                                              "enqueued_at", "started_at", "finished_at", "not_before",
                                              "dedup_key",   "lease_owner", "lease_token", "heartbeat_at"};
  EXPECT_EQ(columns(), want_cols);
  std::vector<std::string> want_idx = {"idx_ops_queue_dedup_pending", "idx_ops_queue_finished_at",
                                       "idx_ops_queue_running_heartbeat", "idx_ops_queue_status_pri_at",
                                       "idx_ops_queue_type_status"};
  if (is_pg()) want_idx.push_back("ops_queue_pkey");
  EXPECT_EQ(indexes(), want_idx);
  if (!is_pg()) {
    const auto times = raw_query("SELECT id, not_before FROM ops_queue ORDER BY id");
    ASSERT_EQ(times.size(), 3u);
    EXPECT_EQ(times[0][1], "2024-05-01 12:00:01") << "pre-fix local time with a fraction: UTC, rounded up";
    EXPECT_EQ(times[1][1], "2024-05-01 12:00:00");
    EXPECT_EQ(times[2][1], "2024-05-01 12:00:01");
  }
  EXPECT_TRUE(ops::migrate(*db_).empty()) << "a second migration is a no-op";
  // filex's insert still succeeds, and Spool runs what filex wrote.
  raw(is_pg() ? "INSERT INTO ops_queue (id, type, payload, status, priority, max_attempts, not_before) "
                "VALUES ('new-1', 'thumb', '{}'::jsonb, 'pending', 0, 3, NULL)"
              : "INSERT INTO ops_queue (id, type, payload, status, priority, max_attempts, not_before) "
                "VALUES ('new-1', 'thumb', '{}', 'pending', 0, 3, NULL)");
  const auto o = q().get("old-1");
  EXPECT_FALSE(o.defect) << *o.defect;
  EXPECT_EQ(o.payload["n"], 1);
  EXPECT_EQ(q().stats().pending, is_pg() ? 2 : 4);
}

TEST_P(ops_migration, AFilexTableWithItsDedupMigrationKeepsItsColumnAndIndex) {
  raw(is_pg() ? filex_00006_postgres : filex_00006_sqlite);
  raw(is_pg() ? filex_00031_postgres : filex_00031_sqlite);
  raw("INSERT INTO ops_queue (id, type, dedup_key) VALUES ('k-1', 'scan', 'file-1')");
  EXPECT_EQ(ops::migrate(*db_).size(), 3u);
  auto o = new_op("scan");
  o.dedup_key = "file-1";
  EXPECT_ERRC(q().enqueue(o), errc::duplicate);
}

TEST_P(ops_migration, OpeningWithMigrateTrueMigratesFirst) {
  ops::queue opened(*db_, {.migrate = true});
  EXPECT_TRUE(opened.enqueue(new_op("t")).created);
  EXPECT_TRUE(ops::migrate(*db_).empty());
}

TEST_P(ops_migration, ALedgerNewerThanTheLibraryIsSchemaTooNew) {
  ops::migrate(*db_);
  sql(is_pg() ? "INSERT INTO spool_schema_migrations VALUES ('ops', current_schema() || '.ops_queue', 99, 'x', now())"
              : "INSERT INTO spool_schema_migrations VALUES ('ops', 'main.ops_queue', 99, 'x', 0)");
  expect_open_fails("schema_too_new", "ops/99");
}

TEST_P(ops_migration, AMissingIndexIsNamedByTheSchemaCheck) {
  ops::migrate(*db_);
  sql("DROP INDEX idx_ops_queue_running_heartbeat");
  expect_open_fails("schema_version_mismatch", "idx_ops_queue_running_heartbeat");
}

TEST_P(ops_migration, RevertingOps3DropsTheLeaseColumnsAndMigratingAgainRestoresThem) {
  ops::migrate(*db_);
  q().enqueue(new_op("t"));
  q_.reset();
  EXPECT_ERRC(spool::revert_migration(*db_, "ops/3", false), errc::invalid_argument);
  spool::revert_migration(*db_, "ops/3", true);
  expect_open_fails("schema_version_mismatch", "lease_owner");
  EXPECT_EQ(ops::migrate(*db_).size(), 1u);
  EXPECT_EQ(q().stats().pending, 1);
}

TEST_P(ops_migration, AConfiguredTableNameIsUsedForTheTableItsIndexesAndTheLedger) {
  const ops::queue_options o{.table = "jobs"};
  ops::migrate(*db_, o);
  EXPECT_ERRC(ops::queue probe(*db_), errc::invalid_state);  // no ops_queue table
  ops::queue jobs(*db_, o);
  jobs.enqueue(new_op("t"));
  EXPECT_EQ(jobs.dequeue()->type, "t");
  const auto idx = raw_query(is_pg() ? "SELECT count(*) FROM pg_indexes WHERE tablename = 'jobs' AND indexname LIKE 'idx_jobs_%'"
                                     : "SELECT count(*) FROM pragma_index_list('jobs') WHERE name LIKE 'idx_jobs_%'");
  EXPECT_EQ(idx.at(0).at(0), "5");
  const auto ledger = raw_query("SELECT DISTINCT target FROM spool_schema_migrations WHERE component = 'ops'");
  ASSERT_EQ(ledger.size(), 1u);
  EXPECT_EQ(*ledger[0][0], is_pg() ? "public.jobs" : "main.jobs");
}

TEST_P(ops_migration, InvalidTableNamesAreInvalidIdentifier) {
  for (const std::string bad : std::vector<std::string>{"Jobs", "jobs;drop", std::string(42, 'j'), "pg_jobs", "1jobs"}) {
    try {
      ops::migrate(*db_, {.table = bad});
      ADD_FAILURE() << bad;
    } catch (const error& e) {
      EXPECT_EQ(e.code(), errc::invalid_argument);
      EXPECT_EQ(e.reason(), "invalid_identifier") << e.what();
    }
    EXPECT_ERRC(ops::queue(*db_, {.table = bad}), errc::invalid_argument);
  }
  EXPECT_NO_THROW(ops::migrate(*db_, {.table = std::string(41, 'j')}));
}

SPOOL_OPS_BOTH_ENGINES(ops_migration);

// ---- SQLite only: time normalisation at ops/3 ----

class ops_sqlite_migration : public ::testing::Test {
 protected:
  void SetUp() override {
    uri_ = dir_.sqlite_uri();
    db_.emplace(database::open(uri_));
    sqlite_exec(uri_, filex_00006_sqlite);
  }
  temp_dir dir_;
  std::string uri_;
  std::optional<database> db_;
};

TEST_F(ops_sqlite_migration, ATimestampInNoKnownFormFailsWithMalformedRowNamingTheOpAndChangesNothing) {
  sqlite_exec(uri_,
              "INSERT INTO ops_queue (id, type, not_before) VALUES ('fine', 't', '2024-05-01 12:00:00');"
              "INSERT INTO ops_queue (id, type, started_at) VALUES ('broken', 't', 'last tuesday')");
  try {
    ops::migrate(*db_);
    ADD_FAILURE() << "migrated";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::invalid_state) << e.what();
    EXPECT_EQ(e.reason(), "malformed_row") << e.what();
    EXPECT_NE(std::string(e.what()).find("broken"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("started_at"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(sqlite_query(uri_, "SELECT 1 FROM pragma_table_info('ops_queue') WHERE name = 'dedup_key'").empty());
  EXPECT_TRUE(sqlite_query(uri_, "SELECT 1 FROM sqlite_master WHERE name = 'spool_schema_migrations'").empty());
  // Fixed by an operator, the migration goes through.
  sqlite_exec(uri_, "UPDATE ops_queue SET started_at = NULL WHERE id = 'broken'");
  EXPECT_EQ(ops::migrate(*db_).size(), 3u);
}

TEST_F(ops_sqlite_migration, EveryTimestampColumnIsNormalisedToCanonicalUtc) {
  sqlite_exec(uri_,
              "INSERT INTO ops_queue (id, type, status, enqueued_at, started_at, finished_at) VALUES "
              "('x', 't', 'done', '2024-05-01T10:00:00+02:00', '2024-05-01 08:00:00.999Z', "
              "'2024-05-01 11:00:00 +0300 EEST')");
  ops::migrate(*db_);
  const auto r = sqlite_query(uri_, "SELECT enqueued_at, started_at, finished_at FROM ops_queue");
  EXPECT_EQ(r.at(0), (std::vector<std::optional<std::string>>{"2024-05-01 08:00:00", "2024-05-01 08:00:00",
                                                              "2024-05-01 08:00:00"}));
}

TEST_F(ops_sqlite_migration, APreFixNotBeforeWrittenAfterTheMigrationIsADefectAndStaysPending) {
  ops::migrate(*db_);
  sqlite_exec(uri_, "INSERT INTO ops_queue (id, type, not_before) VALUES "
                    "('late', 't', '2024-05-01 15:00:00.5 +0300 MSK m=+0.1')");
  ops::queue q(*db_);
  const auto o = q.get("late");
  ASSERT_TRUE(o.defect);
  EXPECT_NE(o.defect->find("not_before"), std::string::npos) << *o.defect;
  EXPECT_FALSE(q.dequeue());
  EXPECT_EQ(q.stats().pending, 1);
  // repair-times normalises it (rounded up: never released early), and it runs.
  EXPECT_EQ(q.repair_times(), 1);
  EXPECT_EQ(q.get("late").not_before, ops::parse_time("2024-05-01T12:00:01Z"));
  EXPECT_FALSE(q.get("late").defect);
  EXPECT_EQ(q.repair_times(), 0);
  const auto c = q.dequeue();
  ASSERT_TRUE(c);
  EXPECT_EQ(c->id, "late");
}

TEST_F(ops_sqlite_migration, RepairTimesRefusesAValueInNoKnownFormAndChangesNothing) {
  ops::migrate(*db_);
  sqlite_exec(uri_, "INSERT INTO ops_queue (id, type, not_before) VALUES ('late', 't', '2024-05-01T12:00:00+02:00');"
                    "INSERT INTO ops_queue (id, type, not_before) VALUES ('junk', 't', 'soon')");
  ops::queue q(*db_);
  try {
    q.repair_times();
    ADD_FAILURE() << "repaired";
  } catch (const error& e) {
    EXPECT_EQ(e.reason(), "malformed_row") << e.what();
    EXPECT_NE(std::string(e.what()).find("junk"), std::string::npos) << e.what();
  }
  EXPECT_EQ(sqlite_query(uri_, "SELECT not_before FROM ops_queue WHERE id = 'late'").at(0).at(0),
            "2024-05-01T12:00:00+02:00");
}

TEST_F(ops_sqlite_migration, MigratePrintShowsTheOpsStepsForATableName) {
  migrate_options o;
  o.components = {"ops"};
  o.ops_table = "jobs";
  const auto script = spool::migration_script(engine::sqlite, o);
  EXPECT_NE(script.find("CREATE TABLE IF NOT EXISTS \"jobs\""), std::string::npos);
  EXPECT_NE(script.find("\"idx_jobs_running_heartbeat\""), std::string::npos);
  EXPECT_NE(script.find("'main.jobs'"), std::string::npos);
}

}  // namespace
}  // namespace spool::test
