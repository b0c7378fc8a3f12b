-- Retry (op-queue.md §4.6, T12): failed → pending, ready now. $1 id, $2
-- reset attempts to 0; $3 notify, $4 the channel. A key the row still holds
-- that another pending op holds now violates the partial unique index
-- (23505): the caller reports duplicate and nothing changes.
WITH target AS (
  SELECT id, status FROM {{s}}{{ops}} WHERE id = $1::text FOR UPDATE
), applied AS (
  UPDATE {{s}}{{ops}} AS o SET
    status = 'pending', started_at = NULL, finished_at = NULL, not_before = NULL, last_error = '',
    lease_token = NULL, heartbeat_at = NULL,
    attempts = CASE WHEN $2::boolean THEN 0 ELSE o.attempts END
  FROM target t
  WHERE o.id = t.id AND t.status = 'failed'
  RETURNING o.id, o.type, o.payload::text, o.status, o.priority, o.attempts, o.max_attempts, o.last_error,
  to_char(o.enqueued_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
  to_char(o.started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
  to_char(o.finished_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
  to_char(o.not_before AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
  o.dedup_key, o.lease_owner, o.lease_token,
  to_char(o.heartbeat_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
), woken AS (
  SELECT pg_notify($4::text, a.type) FROM applied a WHERE $3::boolean
)
SELECT t.status, (SELECT count(*) FROM woken), a.* FROM target t LEFT JOIN applied a ON true
