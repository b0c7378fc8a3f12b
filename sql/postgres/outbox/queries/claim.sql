-- Claim (outbox.md §6.1), mode none: pending rows due by now and leased rows
-- whose lease expired, in (available_at, position) order, each locked
-- FOR UPDATE SKIP LOCKED (disjoint rows for concurrent claimers), then T2/T3
-- with a fresh token per row. "now" is read once for the statement.
-- $1 owner, $2 limit, $3 lease µs.
WITH clock AS MATERIALIZED (
  SELECT clock_timestamp() AS now
), candidates AS (
  SELECT m.seq AS cseq
  FROM {{t}} m, clock
  WHERE (m.state = 'pending' AND m.available_at <= clock.now)
     OR (m.state = 'leased' AND m.leased_until <= clock.now)
  ORDER BY m.available_at, m.xact_id, m.seq
  LIMIT $2
  FOR UPDATE OF m SKIP LOCKED
)
UPDATE {{t}} q
SET state = 'leased', lease_owner = $1, lease_token = gen_random_uuid(),
    leased_until = clock.now + $3::bigint * interval '1 microsecond',
    claim_count = LEAST(q.claim_count + 1, 1000000), updated_at = clock.now
FROM candidates c, clock
WHERE q.seq = c.cseq
RETURNING {{cols}}
