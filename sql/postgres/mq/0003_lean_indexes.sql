-- mq/3: fewer index writes per claim (issue 13). A claim rewrites every index
-- of its row (visible_at is in the legacy idx_queue_visible, so no claim is a
-- HOT update); mq/2's two indexes doubled that for every message. The claim
-- now walks idx_queue_visible (visible rows, in visible_at order: order
-- between groups is no contract) and the group gates probe
-- idx_queue_group_head, which holds only grouped rows, so an ungrouped
-- message pays for the two legacy indexes alone. An ungrouped row is in a
-- group's namespace only when a grouped row names its id as the group
-- (message-queue.md §11): the claim finds that one by the primary key.
-- Built CONCURRENTLY outside a transaction; an invalid index left by an
-- interrupted build is dropped and rebuilt first.
-- spool:no-transaction
-- spool:rebuild-invalid idx_queue_group_head
-- spool:up
CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_queue_group_head
  ON {{s}}queue_messages (queue_name, message_group_id, created_at, id)
  WHERE message_group_id IS NOT NULL;
DROP INDEX CONCURRENTLY IF EXISTS {{s}}idx_queue_group_order;
DROP INDEX CONCURRENTLY IF EXISTS {{s}}idx_queue_fifo;
-- spool:down
CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_queue_group_order
  ON {{s}}queue_messages (queue_name, (COALESCE(message_group_id, id)), created_at, id);
CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_queue_fifo
  ON {{s}}queue_messages (queue_name, created_at, id);
DROP INDEX CONCURRENTLY IF EXISTS {{s}}idx_queue_group_head;
