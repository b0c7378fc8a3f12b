-- Fail (op-queue.md §4.5), fenced as ack.sql. $1 id, $2 token (NULL: none),
-- $3 message, $4 retry, $5 next run time (NULL: use $6), $6 delay in µs on
-- the database's clock; $7 notify, $8 the channel.
-- With retry and attempts < max_attempts: T5 (pending at the next run time,
-- token and heartbeat cleared, so a replay meets lease_lost); otherwise T6
-- (failed, lease columns kept, so a replay with the same token is recognised).
WITH target AS (
  SELECT id, status, lease_token, attempts, max_attempts FROM {{s}}{{ops}} WHERE id = $1::text FOR UPDATE
), applied AS (
  UPDATE {{s}}{{ops}} AS o SET
    status = CASE WHEN $4::boolean AND t.attempts < t.max_attempts THEN 'pending' ELSE 'failed' END,
    last_error = $3::text,
    started_at = NULL,
    finished_at = CASE WHEN $4::boolean AND t.attempts < t.max_attempts THEN NULL ELSE now() END,
    not_before = CASE WHEN $4::boolean AND t.attempts < t.max_attempts
                      THEN COALESCE($5::timestamptz, now() + $6::bigint * interval '1 microsecond')
                      ELSE o.not_before END,
    lease_token = CASE WHEN $4::boolean AND t.attempts < t.max_attempts THEN NULL ELSE o.lease_token END,
    heartbeat_at = CASE WHEN $4::boolean AND t.attempts < t.max_attempts THEN NULL ELSE o.heartbeat_at END
  FROM target t
  WHERE o.id = t.id AND t.status = 'running' AND t.lease_token IS NOT DISTINCT FROM $2::text
  RETURNING o.status, o.type, o.not_before
), woken AS (
  SELECT pg_notify($8::text, a.type) FROM applied a
  WHERE $7::boolean AND a.status = 'pending' AND (a.not_before IS NULL OR a.not_before <= now())
)
SELECT t.status, t.lease_token, a.status, (SELECT count(*) FROM woken)
FROM target t LEFT JOIN applied a ON true
