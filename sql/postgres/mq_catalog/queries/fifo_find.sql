-- The first send of a deduplication id still in its window.
SELECT message_id, sequence_number FROM {{s}}spool_mq_fifo_sends WHERE queue_name = $1 AND dedup_id = $2
