-- ops/1 on SQLite: the op queue table of filex's migration 00006 (op-queue.md
-- §2.1, §2.2), created only where it is missing. Times are DATETIME columns
-- holding UTC text "YYYY-MM-DD HH:MM:SS" (§2.4). {{ops}} is the quoted table
-- name, {{ops_raw}} the validated name inside index names.
-- spool:up
CREATE TABLE IF NOT EXISTS spool_schema_migrations (
  component TEXT NOT NULL,
  target TEXT NOT NULL,
  version INTEGER NOT NULL,
  checksum TEXT NOT NULL,
  applied_at INTEGER NOT NULL,
  PRIMARY KEY (component, target, version)
);

CREATE TABLE IF NOT EXISTS {{ops}} (
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

CREATE INDEX IF NOT EXISTS "idx_{{ops_raw}}_status_pri_at" ON {{ops}} (status, priority DESC, enqueued_at);
CREATE INDEX IF NOT EXISTS "idx_{{ops_raw}}_type_status" ON {{ops}} (type, status);
CREATE INDEX IF NOT EXISTS "idx_{{ops_raw}}_finished_at" ON {{ops}} (finished_at);
-- spool:down
-- Not reverted: the table may be filex's, and Spool never drops objects that
-- filex created (op-queue.md §2.3). Reverting only forgets the ledger row.
SELECT 1;
