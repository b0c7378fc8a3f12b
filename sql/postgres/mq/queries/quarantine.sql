-- Move one claimed row to queue_messages_failed (§5.2): the row is matched by
-- key and by this poll's receipt, so a row re-claimed meanwhile is left alone.
-- On a key conflict the latest failure wins; group and created_at are kept.
WITH moved AS (
  DELETE FROM {{s}}queue_messages
  WHERE queue_name = $1 AND id = $2 AND receipt_handle = $3
  RETURNING id, queue_name, message_group_id, payload, receive_count, created_at
)
INSERT INTO {{s}}queue_messages_failed
  (id, queue_name, message_group_id, payload, error_message, receive_count, created_at, failed_at)
SELECT id, queue_name, message_group_id, payload, $4, receive_count, created_at,
       floor(extract(epoch FROM now()))::bigint
FROM moved
ON CONFLICT (queue_name, id) DO UPDATE
SET payload = EXCLUDED.payload, error_message = EXCLUDED.error_message,
    receive_count = EXCLUDED.receive_count, failed_at = EXCLUDED.failed_at
