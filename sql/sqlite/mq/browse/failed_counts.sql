-- Quarantined rows per queue.
SELECT queue_name, count(*) FROM queue_messages_failed GROUP BY queue_name ORDER BY queue_name
