-- Removes a queue's entry; returns the name when it existed.
DELETE FROM {{s}}spool_mq_queues WHERE name = $1 RETURNING name
