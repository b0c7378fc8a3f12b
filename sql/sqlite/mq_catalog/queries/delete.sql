-- Removes a queue's entry; returns the name when it existed.
DELETE FROM spool_mq_queues WHERE name = ?1 RETURNING name
