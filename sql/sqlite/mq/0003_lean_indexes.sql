-- mq/3 on SQLite: the lean indexes of PostgreSQL's mq/3 (issue 13), in one
-- transaction. The claim walks idx_queue_visible; the group gates probe
-- idx_queue_group_head, which holds only grouped rows, and the primary key.
-- spool:up
CREATE INDEX IF NOT EXISTS idx_queue_group_head
  ON queue_messages (queue_name, message_group_id, created_at, id)
  WHERE message_group_id IS NOT NULL;
DROP INDEX IF EXISTS idx_queue_group_order;
DROP INDEX IF EXISTS idx_queue_fifo;
-- spool:down
CREATE INDEX IF NOT EXISTS idx_queue_group_order
  ON queue_messages (queue_name, COALESCE(message_group_id, id), created_at, id);
CREATE INDEX IF NOT EXISTS idx_queue_fifo ON queue_messages (queue_name, created_at, id);
DROP INDEX IF EXISTS idx_queue_group_head;
