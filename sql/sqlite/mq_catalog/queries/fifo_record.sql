-- Records a send of a deduplication id.
INSERT INTO spool_mq_fifo_sends (queue_name, dedup_id, message_id, sequence_number, sent_at)
VALUES (?1, ?2, ?3, ?4, ?5)
