-- One row of a publish batch (§5.5); the batch shares one transaction and one now (?6).
-- An id already on its queue is skipped.
INSERT INTO queue_messages
  (id, queue_name, message_group_id, receipt_handle, visible_at, payload, created_at, receive_count)
VALUES (?2, ?1, ?3, NULL, ?6 + ?5, ?4, ?6, 0)
ON CONFLICT (queue_name, id) DO NOTHING
