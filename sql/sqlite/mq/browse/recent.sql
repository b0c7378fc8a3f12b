-- Rows per queue and creation second (unix seconds), for the seconds from ?1
-- on: what a sampler compares between samples to count arrivals.
SELECT queue_name, created_at, count(*)
FROM queue_messages
WHERE created_at >= ?1
GROUP BY queue_name, created_at
ORDER BY queue_name, created_at
