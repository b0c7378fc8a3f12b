-- mq/2: the performance indexes of message-queue.md I5, invisible to other
-- implementations. idx_queue_group_order serves both eligibility gates (the
-- group key is spelled exactly as the claim spells it); idx_queue_fifo serves
-- the (created_at, id) order. Built CONCURRENTLY outside a transaction; an
-- invalid index left by an interrupted build is dropped and rebuilt first.
-- spool:no-transaction
-- spool:rebuild-invalid idx_queue_group_order idx_queue_fifo
-- spool:up
CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_queue_group_order
  ON {{s}}queue_messages (queue_name, (COALESCE(message_group_id, id)), created_at, id);
CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_queue_fifo
  ON {{s}}queue_messages (queue_name, created_at, id);
-- spool:down
DROP INDEX CONCURRENTLY IF EXISTS {{s}}idx_queue_group_order;
DROP INDEX CONCURRENTLY IF EXISTS {{s}}idx_queue_fifo;
