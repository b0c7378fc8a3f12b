-- Legacy orphans (op-queue.md §5.3, T10): running rows WITHOUT a lease token
-- (claimed by filex workers) whose started_at is NULL or older than now() −
-- $1 µs; $2 notify, $3 the channel. Rows with a token belong to the rescuer.
WITH orphans AS (
  SELECT id FROM {{s}}{{ops}}
  WHERE status = 'running' AND lease_token IS NULL
    AND (started_at IS NULL OR started_at < now() - $1::bigint * interval '1 microsecond')
  FOR UPDATE SKIP LOCKED
), moved AS (
  UPDATE {{s}}{{ops}} AS o SET status = 'pending', started_at = NULL, lease_token = NULL, heartbeat_at = NULL
  FROM orphans r
  WHERE o.id = r.id AND o.status = 'running' AND o.lease_token IS NULL
  RETURNING o.id, o.type, o.status, o.not_before
), woken AS (
  SELECT pg_notify($3::text, d.type)
  FROM (SELECT DISTINCT type FROM moved WHERE not_before IS NULL OR not_before <= now()) d
  WHERE $2::boolean
)
SELECT id, type, status FROM moved WHERE (SELECT count(*) FROM woken) >= 0
