-- Quarantined rows of one queue, oldest failure first.
SELECT id, message_group_id, payload, error_message, receive_count, created_at, failed_at
FROM queue_messages_failed WHERE queue_name = ?1 ORDER BY failed_at, id LIMIT ?2
