-- Prune (§6.5): delete delivered rows whose terminal time is STRICTLY before the
-- cutoff, oldest first by (time, id), skipping locked rows, at most the
-- limit; no other state is touched. The ids go through an array so the
-- DELETE finds them by the seq index also in a generic plan, which
-- estimates LIMIT $2 as a tenth of the table. $1 cutoff µs, $2 limit.
DELETE FROM {{t}} d
WHERE d.seq = ANY(ARRAY(
  SELECT seq FROM {{t}}
  WHERE state = 'delivered' AND delivered_at < TS[$1]
  ORDER BY delivered_at, id
  LIMIT $2
  FOR UPDATE SKIP LOCKED))
RETURNING d.id
