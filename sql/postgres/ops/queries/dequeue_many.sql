-- Claim up to `limit` ready ops in one statement (dequeue_batch): the same
-- predicate, order and fence as dequeue.sql (T2 for each). $1 the types
-- (text[]; empty = any), $2 the owner, $3 fresh lease tokens (text[]): the
-- n-th op in claim order gets the n-th token, and `n` is returned last so the
-- caller can restore claim order (RETURNING has none).
-- The limit is a literal (one prepared statement per batch size) so that the
-- generic plan is the index walk; see mq/queries/claim.sql.
-- The UPDATE finds each locked row by its ctid (a TID scan), as the message
-- queue's claim does: joined by id, the planner estimated a hash join over a
-- sequential scan of the pending rows cheaper than a hundred primary-key
-- probes once the table was analysed (below some 30,000 rows), and every
-- claim then read the whole table (4.9 ms instead of 2.3 for 100 of 20,000;
-- docs/BENCHMARKS.md, round 6). The row is locked by this statement, so its
-- version cannot change before the UPDATE, and the UPDATE re-checks status.
WITH candidate AS (
  SELECT ctid AS tid, id, priority, enqueued_at FROM {{s}}{{ops}}
  WHERE status = 'pending'
    AND (not_before IS NULL OR not_before <= now())
    AND (cardinality($1::text[]) = 0 OR type = ANY ($1::text[]))
  ORDER BY priority DESC, enqueued_at, id
  LIMIT {{limit}}
  FOR UPDATE SKIP LOCKED
), numbered AS (
  SELECT tid, row_number() OVER (ORDER BY priority DESC, enqueued_at, id) AS n FROM candidate
)
UPDATE {{s}}{{ops}} AS o
SET status = 'running', attempts = o.attempts + 1, started_at = now(), heartbeat_at = now(),
    lease_owner = $2::text, lease_token = ($3::text[])[c.n], dedup_key = NULL
FROM numbered c
WHERE o.ctid = c.tid AND o.status = 'pending'
RETURNING o.id, o.type, o.payload::text, o.status, o.priority, o.attempts, o.max_attempts, o.last_error,
  to_char(o.enqueued_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
  to_char(o.started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
  to_char(o.finished_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
  to_char(o.not_before AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
  o.dedup_key, o.lease_owner, o.lease_token,
  to_char(o.heartbeat_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
  c.n
