-- Claim (outbox.md §6.1) on SQLite, mode none, inside BEGIN IMMEDIATE (the
-- single writer serialises claimers, so no row is seen by two claims):
-- pending rows due by now and leased rows whose lease expired, in
-- (available_at, position) order. ?1 now µs, ?2 limit.
-- Each kind is limited on its own first (pending rows by walking claim_idx
-- in order, expired leases through expiry_idx), then the two are merged:
-- ordering the plain UNION ALL sorted every due row of the backlog in a
-- temporary B-tree on each claim (docs/BENCHMARKS.md).
SELECT seq FROM (
  SELECT * FROM (SELECT seq, available_at FROM {{t}} WHERE state = 'pending' AND available_at <= ?1
                 ORDER BY available_at, seq LIMIT ?2)
  UNION ALL
  SELECT * FROM (SELECT seq, available_at FROM {{t}} WHERE state = 'leased' AND leased_until <= ?1
                 ORDER BY available_at, seq LIMIT ?2)
)
ORDER BY available_at, seq
LIMIT ?2
