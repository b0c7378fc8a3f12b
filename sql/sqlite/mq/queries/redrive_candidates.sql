-- Redrive (§7.3), inside BEGIN IMMEDIATE: the quarantined rows of queue ?1,
-- with whether a live row holds the id (a conflict).
SELECT f.id, NOT EXISTS (SELECT 1 FROM queue_messages m WHERE m.queue_name = f.queue_name AND m.id = f.id),
       f.message_group_id, f.payload, f.error_message, f.failed_at
FROM queue_messages_failed f
WHERE f.queue_name = ?1
ORDER BY f.failed_at, f.id
