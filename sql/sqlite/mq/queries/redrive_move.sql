-- Redrive one row: back to the tail of the queue, fresh created_at.
INSERT INTO queue_messages
  (id, queue_name, message_group_id, receipt_handle, visible_at, payload, created_at, receive_count)
SELECT id, queue_name, message_group_id, NULL, ?3, payload, ?3, 0
FROM queue_messages_failed WHERE queue_name = ?1 AND id = ?2
ON CONFLICT (queue_name, id) DO NOTHING
