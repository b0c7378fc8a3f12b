-- Deletes a queue's messages sent before ?2 (Unix seconds): MessageRetentionPeriod.
DELETE FROM queue_messages WHERE queue_name = ?1 AND created_at < ?2
