-- One message, whole, with its receipt when claimed (for an operator's release or extend).
SELECT id, message_group_id, receipt_handle IS NOT NULL, visible_at, created_at, coalesce(receive_count, 0),
       payload, length(CAST(payload AS BLOB)), receipt_handle
FROM queue_messages WHERE queue_name = ?1 AND id = ?2
