-- mq_catalog/2 on SQLite: the same as on PostgreSQL (see there).
-- spool:up
ALTER TABLE spool_mq_queues ADD COLUMN sequence_number INTEGER NOT NULL DEFAULT 0;

CREATE TABLE IF NOT EXISTS spool_mq_fifo_sends (
  queue_name TEXT NOT NULL,
  dedup_id TEXT NOT NULL,
  message_id TEXT NOT NULL,
  sequence_number INTEGER NOT NULL,
  sent_at INTEGER NOT NULL,
  PRIMARY KEY (queue_name, dedup_id)
);

CREATE INDEX IF NOT EXISTS idx_spool_mq_fifo_sends_sent ON spool_mq_fifo_sends (queue_name, sent_at);
-- spool:down
DROP TABLE IF EXISTS spool_mq_fifo_sends;
ALTER TABLE spool_mq_queues DROP COLUMN sequence_number;
