-- Quarantine (§5.2), step 1 of 2 in one transaction: copy the row this poll
-- claimed; on a key conflict the latest failure wins (group, created_at kept).
INSERT INTO queue_messages_failed
  (id, queue_name, message_group_id, payload, error_message, receive_count, created_at, failed_at)
SELECT id, queue_name, message_group_id, payload, ?4, receive_count, created_at, ?5
FROM queue_messages WHERE queue_name = ?1 AND id = ?2 AND receipt_handle = ?3
ON CONFLICT (queue_name, id) DO UPDATE
SET payload = excluded.payload, error_message = excluded.error_message,
    receive_count = excluded.receive_count, failed_at = excluded.failed_at
