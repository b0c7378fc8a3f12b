-- Takes a FIFO queue's next SequenceNumber; the row lock orders the queue's sends.
UPDATE {{s}}spool_mq_queues SET sequence_number = sequence_number + 1
WHERE name = $1
RETURNING sequence_number
