-- One page of a queue's quarantined rows in id order, strictly after ?2.
SELECT id, message_group_id, substr(payload, 1, 240), error_message, receive_count, created_at, failed_at,
       length(CAST(payload AS BLOB))
FROM queue_messages_failed
WHERE queue_name = ?1 AND id > ?2
ORDER BY id
LIMIT ?3
