-- Audit one redriven row and remove it from quarantine (same transaction).
INSERT INTO spool_mq_redrive_log (queue_name, id, error_message, actor, reason, failed_at, redriven_at)
SELECT queue_name, id, error_message, ?3, ?4, failed_at, ?5 FROM queue_messages_failed
WHERE queue_name = ?1 AND id = ?2
