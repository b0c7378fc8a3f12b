-- Takes a FIFO queue's next SequenceNumber (under the BEGIN IMMEDIATE write lock).
UPDATE spool_mq_queues SET sequence_number = sequence_number + 1
WHERE name = ?1
RETURNING sequence_number
