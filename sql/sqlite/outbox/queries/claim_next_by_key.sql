-- mark_delivered_and_claim_next (§6.2) on SQLite, mode by_ordering_key: after T5 in
-- the same BEGIN IMMEDIATE, the next row of the delivered row's scope value
-- (ordering_key = ?3) under §6.1: due, and passing the HEAD RULE (no other pending or
-- leased row of the scope has an earlier seq; the row just delivered no
-- longer counts). SQLite's single writer makes positions visible in commit
-- order, so no horizon rule is needed. ?1 now µs, ?2 limit (1), ?3 scope value.
SELECT m.seq FROM {{t}} m
WHERE m.ordering_key = ?3 AND m.ordering_key <> ''
  AND ((m.state = 'pending' AND m.available_at <= ?1) OR (m.state = 'leased' AND m.leased_until <= ?1))
  AND NOT EXISTS (SELECT 1 FROM {{t}} e
                  WHERE e.state IN ('pending', 'leased') AND e.ordering_key = m.ordering_key AND e.seq < m.seq)
ORDER BY m.seq
LIMIT ?2
