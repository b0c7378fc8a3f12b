-- Claim (outbox.md §6.1), mode none: pending rows due by now and leased rows
-- whose lease expired, in (available_at, position) order, each locked
-- FOR UPDATE SKIP LOCKED (disjoint rows for concurrent claimers), then T2/T3
-- with a fresh token per row. "now" is read once for the statement.
-- The two kinds of row are found apart, each by walking its partial index
-- (claim_idx in claim order; expiry_idx, whose expired rows are few) with the
-- limit, and merged: one OR predicate over both made the planner bitmap-scan
-- and sort the whole backlog for every claim (docs/BENCHMARKS.md). Each branch
-- locks at most $2 rows; rows locked but not among the first $2 are unlocked
-- at the statement's commit (concurrent claimers skip them meanwhile).
-- `(SELECT now FROM clock)` is an init-plan parameter, so it bounds the index
-- scans (an index condition) instead of filtering every row.
-- $1 owner, $2 limit, $3 lease µs.
WITH clock AS MATERIALIZED (
  SELECT clock_timestamp() AS now
), due_pending AS (
  SELECT m.seq, m.available_at, m.xact_id, {{decodable}} AS ok
  FROM {{t}} m
  WHERE m.state = 'pending' AND m.available_at <= (SELECT now FROM clock)
  ORDER BY m.available_at, m.xact_id, m.seq
  LIMIT $2
  FOR UPDATE OF m SKIP LOCKED
), due_expired AS (
  SELECT m.seq, m.available_at, m.xact_id, {{decodable}} AS ok
  FROM {{t}} m
  WHERE m.state = 'leased' AND m.leased_until <= (SELECT now FROM clock)
  ORDER BY m.available_at, m.xact_id, m.seq
  LIMIT $2
  FOR UPDATE OF m SKIP LOCKED
), candidates AS (
  SELECT d.seq AS cseq, d.ok
  FROM (SELECT * FROM due_pending UNION ALL SELECT * FROM due_expired) d
  ORDER BY d.available_at, d.xact_id, d.seq
  LIMIT $2
)
UPDATE {{t}} q
{{claim_set}}
FROM candidates c, clock
WHERE q.seq = c.cseq
RETURNING {{cols}}
