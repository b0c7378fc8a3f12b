-- Prune (§6.5): delete delivered rows whose terminal time is STRICTLY before the
-- cutoff, oldest first by (time, id), at most the limit; no other state is
-- touched. ?1 cutoff µs, ?2 limit.
DELETE FROM {{t}}
WHERE seq IN (SELECT seq FROM {{t}} WHERE state = 'delivered' AND delivered_at < ?1 ORDER BY delivered_at, id LIMIT ?2)
RETURNING id
