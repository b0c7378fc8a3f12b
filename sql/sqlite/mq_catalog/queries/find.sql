-- One queue's entry, read without a lock (get.sql locks it for an update).
SELECT name, account, attributes, tags, created_at, modified_at
FROM spool_mq_queues
WHERE name = ?1
