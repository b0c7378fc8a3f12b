-- Claim (outbox.md §6.1) on SQLite, mode by_ordering_key: rows with a non-empty ordering key are scoped by it.
-- The predicate is the contract: a scoped candidate must pass the HEAD RULE,
-- no other pending or leased row (expired leases included) of its scope has
-- an earlier position (seq). A future-scheduled or leased head holds its
-- successors back; delivered and dead heads do not. SQLite's single writer
-- makes positions visible in commit order, so no horizon rule is needed.
-- ?1 now µs, ?2 limit.
SELECT m.seq FROM {{t}} m
WHERE ((m.state = 'pending' AND m.available_at <= ?1) OR (m.state = 'leased' AND m.leased_until <= ?1))
  AND (NOT (m.ordering_key <> '')
       OR NOT EXISTS (SELECT 1 FROM {{t}} e
                      WHERE e.state IN ('pending', 'leased') AND e.ordering_key = m.ordering_key AND e.seq < m.seq))
ORDER BY m.available_at, m.seq
LIMIT ?2
