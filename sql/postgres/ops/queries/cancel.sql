-- Cancel (op-queue.md §4.6, T11): pending → cancelled, scheduled and
-- retry-waiting ops included. $1 id. Returns the status found under the lock
-- and, when it applied, the op after the change.
WITH target AS (
  SELECT id, status FROM {{s}}{{ops}} WHERE id = $1::text FOR UPDATE
), applied AS (
  UPDATE {{s}}{{ops}} AS o SET status = 'cancelled', finished_at = now()
  FROM target t
  WHERE o.id = t.id AND t.status = 'pending'
  RETURNING o.id, o.type, o.payload::text, o.status, o.priority, o.attempts, o.max_attempts, o.last_error,
  to_char(o.enqueued_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
  to_char(o.started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
  to_char(o.finished_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
  to_char(o.not_before AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
  o.dedup_key, o.lease_owner, o.lease_token,
  to_char(o.heartbeat_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
)
SELECT t.status, a.* FROM target t LEFT JOIN applied a ON true
