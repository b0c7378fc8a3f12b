-- Per type, the five counts of stats.sql and the oldest pending op's enqueue
-- time (unix seconds), from one snapshot.
SELECT type,
       count(*) FILTER (WHERE status = 'pending'),
       count(*) FILTER (WHERE status = 'running'),
       count(*) FILTER (WHERE status = 'failed'),
       count(*) FILTER (WHERE status = 'done' AND finished_at >= now() - interval '24 hours'),
       count(*) FILTER (WHERE status = 'cancelled'),
       floor(extract(epoch FROM min(enqueued_at) FILTER (WHERE status = 'pending')))::bigint
FROM {{s}}{{ops}}
GROUP BY type
ORDER BY type
