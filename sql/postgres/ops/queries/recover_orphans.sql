-- RecoverOrphans (op-queue.md §4.8, T10): $1 older_than in µs; $2 notify, $3
-- the channel. The predicate is filex's: every running row whose started_at
-- is NULL or <= now() − older_than, heartbeats ignored.
WITH moved AS (
  UPDATE {{s}}{{ops}} SET status = 'pending', started_at = NULL, lease_token = NULL, heartbeat_at = NULL
  WHERE status = 'running' AND (started_at IS NULL OR started_at <= now() - $1::bigint * interval '1 microsecond')
  RETURNING type, not_before
), woken AS (
  SELECT pg_notify($3::text, d.type)
  FROM (SELECT DISTINCT type FROM moved WHERE not_before IS NULL OR not_before <= now()) d
  WHERE $2::boolean
)
SELECT count(*), (SELECT count(*) FROM woken) FROM moved
