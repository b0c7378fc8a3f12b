-- Per type, the five counts of stats.sql and the oldest pending op's enqueue
-- time (unix seconds), from one snapshot.
SELECT type,
       coalesce(sum(status = 'pending'), 0),
       coalesce(sum(status = 'running'), 0),
       coalesce(sum(status = 'failed'), 0),
       coalesce(sum(status = 'done' AND finished_at >= datetime('now', '-1 day')), 0),
       coalesce(sum(status = 'cancelled'), 0),
       CAST(strftime('%s', min(CASE WHEN status = 'pending' THEN enqueued_at END)) AS INTEGER)
FROM {{ops}}
GROUP BY type
ORDER BY type
