-- The rescuer (op-queue.md §5.2, T8/T9): $1 lease timeout in µs; $2 notify,
-- $3 the channel. The contract is the predicate: a running row that carries
-- a lease token and whose heartbeat_at is older than now() − timeout. Rows
-- are chosen with SKIP LOCKED, so rescuers never block each other or a
-- concurrent ack; a heartbeat that commits first makes the locked row fail
-- the re-check and it is left alone. filex claims (no token) are never taken.
WITH expired AS (
  SELECT id FROM {{s}}{{ops}}
  WHERE status = 'running' AND lease_token IS NOT NULL
    AND heartbeat_at < now() - $1::bigint * interval '1 microsecond'
  FOR UPDATE SKIP LOCKED
), moved AS (
  UPDATE {{s}}{{ops}} AS o SET
    status = CASE WHEN o.attempts < o.max_attempts THEN 'pending' ELSE 'failed' END,
    started_at = NULL,
    finished_at = CASE WHEN o.attempts < o.max_attempts THEN o.finished_at ELSE now() END,
    last_error = CASE WHEN o.attempts < o.max_attempts
                      THEN 'lease expired (owner ' || COALESCE(o.lease_owner, '') || ')'
                      ELSE 'lease expired on final attempt (owner ' || COALESCE(o.lease_owner, '') || ')' END,
    lease_token = NULL, heartbeat_at = NULL
  FROM expired e
  WHERE o.id = e.id AND o.status = 'running' AND o.lease_token IS NOT NULL
    AND o.heartbeat_at < now() - $1::bigint * interval '1 microsecond'
  RETURNING o.id, o.type, o.status, o.not_before
), woken AS (
  SELECT pg_notify($3::text, d.type)
  FROM (SELECT DISTINCT type FROM moved WHERE status = 'pending' AND (not_before IS NULL OR not_before <= now())) d
  WHERE $2::boolean
)
SELECT id, type, status FROM moved WHERE (SELECT count(*) FROM woken) >= 0
