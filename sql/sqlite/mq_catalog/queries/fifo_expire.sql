-- Forgets a queue's deduplication ids sent before ?2 (ms).
DELETE FROM spool_mq_fifo_sends WHERE queue_name = ?1 AND sent_at < ?2
