-- ops/1: the op queue table of filex's migration 00006 (op-queue.md §2.1,
-- §2.2), created only where it is missing, so this step is a no-op on a
-- database filex already migrated. Names, types, defaults and the three
-- indexes are the compatibility contract with filex: never change them.
-- {{s}} is the quoted schema and a dot; {{ops}} the quoted table name and
-- {{ops_raw}} the validated table name inside index names (idx_ops_queue_…).
-- spool:up
CREATE TABLE IF NOT EXISTS {{s}}spool_schema_migrations (
  component TEXT NOT NULL,
  target TEXT NOT NULL,
  version INTEGER NOT NULL,
  checksum TEXT NOT NULL,
  applied_at TIMESTAMPTZ NOT NULL,
  PRIMARY KEY (component, target, version)
);

CREATE TABLE IF NOT EXISTS {{s}}{{ops}} (
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

CREATE INDEX IF NOT EXISTS "idx_{{ops_raw}}_status_pri_at" ON {{s}}{{ops}} (status, priority DESC, enqueued_at);
CREATE INDEX IF NOT EXISTS "idx_{{ops_raw}}_type_status" ON {{s}}{{ops}} (type, status);
CREATE INDEX IF NOT EXISTS "idx_{{ops_raw}}_finished_at" ON {{s}}{{ops}} (finished_at);
-- spool:down
-- Not reverted: the table may be filex's, and Spool never drops objects that
-- filex created (op-queue.md §2.3). Reverting only forgets the ledger row; a
-- later `spool migrate` records it again without changing anything.
SELECT 1;
