-- Redrive (§7.3) in one statement, so it is all or nothing: quarantined rows
-- of queue $1 (all, or only ids in $2) go back to the tail of the queue with a
-- fresh created_at, receipt NULL and receive_count 0. Only rows actually
-- inserted leave the failed table and are audited; a live row with the same id
-- is a conflict and both rows stay. $3 actor, $4 reason.
WITH clock AS (
  SELECT floor(extract(epoch FROM now()))::bigint AS now
), candidates AS (
  SELECT id, message_group_id, payload, error_message, failed_at
  FROM {{s}}queue_messages_failed
  WHERE queue_name = $1 AND ($2::text[] IS NULL OR id = ANY ($2::text[]))
  FOR UPDATE
), inserted AS (
  INSERT INTO {{s}}queue_messages
    (id, queue_name, message_group_id, receipt_handle, visible_at, payload, created_at, receive_count)
  SELECT c.id, $1, c.message_group_id, NULL, clock.now, c.payload, clock.now, 0
  FROM candidates c, clock
  ORDER BY c.failed_at, c.id
  ON CONFLICT (queue_name, id) DO NOTHING
  RETURNING id
), deleted AS (
  DELETE FROM {{s}}queue_messages_failed f
  USING inserted i
  WHERE f.queue_name = $1 AND f.id = i.id
  RETURNING f.id, f.error_message, f.failed_at
), audited AS (
  INSERT INTO {{s}}spool_mq_redrive_log (queue_name, id, error_message, actor, reason, failed_at, redriven_at)
  SELECT $1, d.id, d.error_message, $3, $4, d.failed_at, clock.now FROM deleted d, clock
)
SELECT c.id, i.id IS NOT NULL FROM candidates c LEFT JOIN inserted i ON i.id = c.id ORDER BY c.failed_at, c.id
