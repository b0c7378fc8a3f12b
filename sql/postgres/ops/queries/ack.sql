-- Ack (op-queue.md §4.5, T4), fenced. $1 id, $2 the caller's lease token
-- (NULL: a tokenless call, for ops claimed by filex workers).
-- The contract is the fence: `target` locks the row and reports it as the
-- call found it; the change applies only to a running row whose lease_token
-- IS NOT DISTINCT FROM $2. The caller classifies a rejection from `target`.
WITH target AS (
  SELECT id, status, lease_token FROM {{s}}{{ops}} WHERE id = $1::text FOR UPDATE
), applied AS (
  UPDATE {{s}}{{ops}} AS o SET status = 'done', finished_at = now(), last_error = ''
  FROM target t
  WHERE o.id = t.id AND t.status = 'running' AND t.lease_token IS NOT DISTINCT FROM $2::text
  RETURNING o.status
)
SELECT t.status, t.lease_token, a.status FROM target t LEFT JOIN applied a ON true
