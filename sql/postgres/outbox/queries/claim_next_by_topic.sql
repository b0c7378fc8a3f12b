-- mark_delivered_and_claim_next (§6.2), mode by_topic: after T5 in the same
-- transaction, claims for the same owner at most one row of the delivered
-- row's scope value (topic = $4) under §6.1: due (pending with available_at
-- <= now, or leased with an expired lease), the HEAD RULE (no other pending or
-- leased row of the scope has an earlier position; the row just delivered no
-- longer counts) and the HORIZON RULE (xact_id below
-- pg_snapshot_xmin(pg_current_snapshot()), so a late commit cannot be
-- overtaken). Served by topic_idx. Locking is FOR UPDATE SKIP LOCKED.
-- $1 owner, $2 limit (1), $3 lease µs, $4 scope value.
WITH clock AS MATERIALIZED (
  SELECT clock_timestamp() AS now, pg_snapshot_xmin(pg_current_snapshot()) AS horizon
), candidates AS (
  SELECT m.seq AS cseq, {{decodable}} AS ok
  FROM {{t}} m, clock
  WHERE m.topic = $4::text AND m.state IN ('pending', 'leased')
    AND ((m.state = 'pending' AND m.available_at <= clock.now)
         OR (m.state = 'leased' AND m.leased_until <= clock.now))
    AND m.xact_id < clock.horizon
    AND NOT EXISTS (
      SELECT 1 FROM {{t}} e
      WHERE e.state IN ('pending', 'leased') AND e.topic = m.topic
        AND (e.xact_id, e.seq) < (m.xact_id, m.seq)
      OFFSET 0)
  ORDER BY m.xact_id, m.seq
  LIMIT $2
  FOR UPDATE OF m SKIP LOCKED
)
UPDATE {{t}} q
{{claim_set}}
FROM candidates c, clock
WHERE q.seq = c.cseq
RETURNING {{cols}}
