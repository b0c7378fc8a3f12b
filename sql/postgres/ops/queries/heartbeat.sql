-- Heartbeat (op-queue.md §4.5, T3), fenced as ack.sql. $1 id, $2 token (NULL: none).
WITH target AS (
  SELECT id, status, lease_token FROM {{s}}{{ops}} WHERE id = $1::text FOR UPDATE
), applied AS (
  UPDATE {{s}}{{ops}} AS o SET heartbeat_at = now()
  FROM target t
  WHERE o.id = t.id AND t.status = 'running' AND t.lease_token IS NOT DISTINCT FROM $2::text
  RETURNING o.status
)
SELECT t.status, t.lease_token, a.status FROM target t LEFT JOIN applied a ON true
