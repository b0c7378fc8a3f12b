-- Claim (outbox.md §6.1), mode by_ordering_key: rows with a non-empty ordering key are scoped by it.
-- The predicate is the contract. A scoped candidate must pass
--   the HEAD RULE: no other pending or leased row (expired leases included)
--     of its scope has an earlier position (xact_id, seq), and
--   the HORIZON RULE: its xact_id is below pg_snapshot_xmin(pg_current_snapshot()):
--     every transaction that could still commit an earlier row of the scope
--     has an id at or above the horizon, so a late commit cannot be overtaken.
-- A pending head scheduled in the future, or a leased head, holds its
-- successors back; delivered and dead heads do not. Unscoped rows claim as in
-- mode none. Locking is FOR UPDATE SKIP LOCKED; the UPDATE re-checks nothing
-- else because the head is locked by whoever holds it.
-- $1 owner, $2 limit, $3 lease µs.
WITH clock AS MATERIALIZED (
  SELECT clock_timestamp() AS now, pg_snapshot_xmin(pg_current_snapshot()) AS horizon
), candidates AS (
  SELECT m.seq AS cseq, {{decodable}} AS ok
  FROM {{t}} m, clock
  WHERE ((m.state = 'pending' AND m.available_at <= clock.now)
         OR (m.state = 'leased' AND m.leased_until <= clock.now))
    AND (NOT (m.ordering_key <> '')
         OR (m.xact_id < clock.horizon
             AND NOT EXISTS (
               SELECT 1 FROM {{t}} e
               WHERE e.state IN ('pending', 'leased') AND e.ordering_key = m.ordering_key AND e.ordering_key <> ''
                 AND (e.xact_id, e.seq) < (m.xact_id, m.seq)
               OFFSET 0)))
  ORDER BY m.available_at, m.xact_id, m.seq
  LIMIT $2
  FOR UPDATE OF m SKIP LOCKED
)
UPDATE {{t}} q
{{claim_set}}
FROM candidates c, clock
WHERE q.seq = c.cseq
RETURNING {{cols}}
