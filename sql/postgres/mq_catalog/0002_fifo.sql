-- mq_catalog/2: what FIFO queues of the SQS API need beyond queue_messages
-- (spool/mq/catalog.hpp): each queue's last SequenceNumber, and the
-- deduplication ids sent within SQS's five-minute window. Times in milliseconds.
-- spool:up
ALTER TABLE {{s}}spool_mq_queues ADD COLUMN IF NOT EXISTS sequence_number BIGINT NOT NULL DEFAULT 0;

CREATE TABLE IF NOT EXISTS {{s}}spool_mq_fifo_sends (
  queue_name TEXT NOT NULL,
  dedup_id TEXT NOT NULL,
  message_id TEXT NOT NULL,
  sequence_number BIGINT NOT NULL,
  sent_at BIGINT NOT NULL,
  PRIMARY KEY (queue_name, dedup_id)
);

CREATE INDEX IF NOT EXISTS idx_spool_mq_fifo_sends_sent ON {{s}}spool_mq_fifo_sends (queue_name, sent_at);
-- spool:down
DROP TABLE IF EXISTS {{s}}spool_mq_fifo_sends;
ALTER TABLE {{s}}spool_mq_queues DROP COLUMN IF EXISTS sequence_number;
