-- One quarantined row, whole.
SELECT id, message_group_id, payload, error_message, receive_count, created_at, failed_at,
       length(CAST(payload AS BLOB))
FROM queue_messages_failed WHERE queue_name = ?1 AND id = ?2
