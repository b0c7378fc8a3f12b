-- Release (op-queue.md §4.5, T7), fenced as ack.sql: back to pending and
-- ready now, the interrupted run not counted. $1 id, $2 token (NULL: none),
-- $3 message; $4 notify, $5 the channel.
WITH target AS (
  SELECT id, status, lease_token FROM {{s}}{{ops}} WHERE id = $1::text FOR UPDATE
), applied AS (
  UPDATE {{s}}{{ops}} AS o SET
    status = 'pending', attempts = GREATEST(o.attempts - 1, 0), last_error = $3::text,
    started_at = NULL, finished_at = NULL, not_before = NULL, lease_token = NULL, heartbeat_at = NULL
  FROM target t
  WHERE o.id = t.id AND t.status = 'running' AND t.lease_token IS NOT DISTINCT FROM $2::text
  RETURNING o.status, o.type
), woken AS (
  SELECT pg_notify($5::text, a.type) FROM applied a WHERE $4::boolean
)
SELECT t.status, t.lease_token, a.status, (SELECT count(*) FROM woken)
FROM target t LEFT JOIN applied a ON true
