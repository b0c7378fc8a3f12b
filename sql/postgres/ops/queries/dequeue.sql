-- Claim one ready op in one round trip (op-queue.md §4.4, T2). $1 the types
-- (text[]; empty = any type, bound as one array so the parameters match the
-- statement exactly), $2 the owner, $3 a fresh lease token.
-- The contract is the predicate and the order: ready = status 'pending' and
-- not_before NULL or <= now() and type among $1; priority DESC, then
-- enqueued_at, then id. A row another claim has locked is skipped, never
-- waited for; the UPDATE re-checks status = 'pending' on the locked row
-- version, so an op is claimed exactly once. The claim releases the dedup key.
WITH candidate AS (
  SELECT id FROM {{s}}{{ops}}
  WHERE status = 'pending'
    AND (not_before IS NULL OR not_before <= now())
    AND (cardinality($1::text[]) = 0 OR type = ANY ($1::text[]))
  ORDER BY priority DESC, enqueued_at, id
  LIMIT 1
  FOR UPDATE SKIP LOCKED
)
UPDATE {{s}}{{ops}} AS o
SET status = 'running', attempts = o.attempts + 1, started_at = now(), heartbeat_at = now(),
    lease_owner = $2::text, lease_token = $3::text, dedup_key = NULL
FROM candidate c
WHERE o.id = c.id AND o.status = 'pending'
RETURNING o.id, o.type, o.payload::text, o.status, o.priority, o.attempts, o.max_attempts, o.last_error,
  to_char(o.enqueued_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
  to_char(o.started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
  to_char(o.finished_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
  to_char(o.not_before AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
  o.dedup_key, o.lease_owner, o.lease_token,
  to_char(o.heartbeat_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
