-- mq_catalog/1 on SQLite: the same table as on PostgreSQL (see there).
-- spool:up
CREATE TABLE IF NOT EXISTS spool_schema_migrations (
  component TEXT NOT NULL,
  target TEXT NOT NULL,
  version INTEGER NOT NULL,
  checksum TEXT NOT NULL,
  applied_at INTEGER NOT NULL,
  PRIMARY KEY (component, target, version)
);

CREATE TABLE IF NOT EXISTS spool_mq_queues (
  name TEXT PRIMARY KEY,
  account TEXT NOT NULL,
  attributes TEXT NOT NULL,
  tags TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  modified_at INTEGER NOT NULL
);
-- spool:down
DROP TABLE IF EXISTS spool_mq_queues;
