-- mq/1: the legacy-compatible queue tables (message-queue.md §2.1–§2.3).
-- {{s}} is the quoted target schema followed by a dot (or empty for the
-- connection's current_schema()); {{schema_name}} is its name as an SQL value.
-- Column order, types, keys and the one legacy index are the compatibility
-- contract with the Go, Rust and Java implementations: never change them.
-- spool:up
CREATE TABLE IF NOT EXISTS {{s}}spool_schema_migrations (
  component TEXT NOT NULL,
  target TEXT NOT NULL,
  version INTEGER NOT NULL,
  checksum TEXT NOT NULL,
  applied_at TIMESTAMPTZ NOT NULL,
  PRIMARY KEY (component, target, version)
);

CREATE TABLE IF NOT EXISTS {{s}}queue_messages (
  id TEXT NOT NULL,
  queue_name TEXT NOT NULL,
  message_group_id TEXT,
  receipt_handle TEXT,
  visible_at BIGINT NOT NULL,
  payload TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  receive_count INTEGER DEFAULT 0,
  PRIMARY KEY (queue_name, id)
);

CREATE INDEX IF NOT EXISTS idx_queue_visible ON {{s}}queue_messages (queue_name, visible_at, message_group_id);

CREATE TABLE IF NOT EXISTS {{s}}queue_messages_failed (
  id TEXT NOT NULL,
  queue_name TEXT NOT NULL,
  message_group_id TEXT,
  payload TEXT NOT NULL,
  error_message TEXT NOT NULL,
  receive_count INTEGER,
  created_at BIGINT NOT NULL,
  failed_at BIGINT NOT NULL,
  PRIMARY KEY (queue_name, id)
);

-- Audit of redrives (§7.3); created now so no released migration changes later.
CREATE TABLE IF NOT EXISTS {{s}}spool_mq_redrive_log (
  queue_name TEXT NOT NULL,
  id TEXT NOT NULL,
  error_message TEXT,
  actor TEXT NOT NULL,
  reason TEXT NOT NULL,
  failed_at BIGINT,
  redriven_at BIGINT NOT NULL
);

-- Legacy carry-over: rows of an old queue_message_errors table in the target
-- schema (only there: a same-named table elsewhere is not ours) move into
-- queue_messages_failed; an existing failed record wins.
DO $carry$
BEGIN
  IF EXISTS (SELECT 1 FROM information_schema.tables
             WHERE table_schema = {{schema_name}} AND table_name = 'queue_message_errors') THEN
    EXECUTE format(
      'INSERT INTO %I.queue_messages_failed (id, queue_name, message_group_id, payload, error_message, receive_count, created_at, failed_at) '
      'SELECT id, queue_name, message_group_id, payload, COALESCE(error, ''''), receive_count, COALESCE(created_at, failed_at), failed_at '
      'FROM %I.queue_message_errors ON CONFLICT (queue_name, id) DO NOTHING', {{schema_name}}, {{schema_name}});
    EXECUTE format('DROP TABLE %I.queue_message_errors', {{schema_name}});
  END IF;
END
$carry$;
-- spool:down
DROP TABLE IF EXISTS {{s}}spool_mq_redrive_log;
DROP TABLE IF EXISTS {{s}}queue_messages_failed;
DROP TABLE IF EXISTS {{s}}queue_messages;
