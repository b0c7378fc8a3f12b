-- One queue's entry (locked for the transaction's update where the engine locks rows).
SELECT name, account, attributes, tags, created_at, modified_at
FROM spool_mq_queues
WHERE name = ?1
