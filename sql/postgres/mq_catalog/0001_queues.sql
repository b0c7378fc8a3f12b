-- mq_catalog/1: the queues the SQS API of `spool serve` created, with their
-- attributes and tags (spool/mq/catalog.hpp). A queue's messages stay in
-- queue_messages under its name, so the C++ API and the CLI see them too.
-- Times are milliseconds since the Unix epoch, as SQS reports them.
-- spool:up
CREATE TABLE IF NOT EXISTS {{s}}spool_schema_migrations (
  component TEXT NOT NULL,
  target TEXT NOT NULL,
  version INTEGER NOT NULL,
  checksum TEXT NOT NULL,
  applied_at TIMESTAMPTZ NOT NULL,
  PRIMARY KEY (component, target, version)
);

CREATE TABLE IF NOT EXISTS {{s}}spool_mq_queues (
  name TEXT PRIMARY KEY,
  account TEXT NOT NULL,
  attributes TEXT NOT NULL,
  tags TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  modified_at BIGINT NOT NULL
);
-- spool:down
DROP TABLE IF EXISTS {{s}}spool_mq_queues;
