-- Replaces a queue's attributes and tags.
UPDATE spool_mq_queues SET attributes = ?2, tags = ?3, modified_at = ?4
WHERE name = ?1
