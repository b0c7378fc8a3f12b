-- Deletes a queue's quarantined rows (when the queue itself is deleted).
DELETE FROM queue_messages_failed WHERE queue_name = ?1
