-- mq/1 on SQLite (message-queue.md §2.4): the same names, nullability and
-- defaults as PostgreSQL; BIGINT and INTEGER become INTEGER.
-- spool:up
CREATE TABLE IF NOT EXISTS spool_schema_migrations (
  component TEXT NOT NULL,
  target TEXT NOT NULL,
  version INTEGER NOT NULL,
  checksum TEXT NOT NULL,
  applied_at INTEGER NOT NULL,
  PRIMARY KEY (component, target, version)
);

CREATE TABLE IF NOT EXISTS queue_messages (
  id TEXT NOT NULL,
  queue_name TEXT NOT NULL,
  message_group_id TEXT,
  receipt_handle TEXT,
  visible_at INTEGER NOT NULL,
  payload TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  receive_count INTEGER DEFAULT 0,
  PRIMARY KEY (queue_name, id)
);

CREATE INDEX IF NOT EXISTS idx_queue_visible ON queue_messages (queue_name, visible_at, message_group_id);

CREATE TABLE IF NOT EXISTS queue_messages_failed (
  id TEXT NOT NULL,
  queue_name TEXT NOT NULL,
  message_group_id TEXT,
  payload TEXT NOT NULL,
  error_message TEXT NOT NULL,
  receive_count INTEGER,
  created_at INTEGER NOT NULL,
  failed_at INTEGER NOT NULL,
  PRIMARY KEY (queue_name, id)
);

CREATE TABLE IF NOT EXISTS spool_mq_redrive_log (
  queue_name TEXT NOT NULL,
  id TEXT NOT NULL,
  error_message TEXT,
  actor TEXT NOT NULL,
  reason TEXT NOT NULL,
  failed_at INTEGER,
  redriven_at INTEGER NOT NULL
);
-- spool:down
DROP TABLE IF EXISTS spool_mq_redrive_log;
DROP TABLE IF EXISTS queue_messages_failed;
DROP TABLE IF EXISTS queue_messages;
