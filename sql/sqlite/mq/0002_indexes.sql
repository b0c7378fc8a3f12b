-- mq/2 on SQLite: the I5 performance indexes, in one transaction.
-- spool:up
CREATE INDEX IF NOT EXISTS idx_queue_group_order
  ON queue_messages (queue_name, COALESCE(message_group_id, id), created_at, id);
CREATE INDEX IF NOT EXISTS idx_queue_fifo ON queue_messages (queue_name, created_at, id);
-- spool:down
DROP INDEX IF EXISTS idx_queue_group_order;
DROP INDEX IF EXISTS idx_queue_fifo;
