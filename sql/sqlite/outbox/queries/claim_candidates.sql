-- Claim (outbox.md §6.1) on SQLite, mode none, inside BEGIN IMMEDIATE (the
-- single writer serialises claimers, so no row is seen by two claims):
-- pending rows due by now and leased rows whose lease expired, in
-- (available_at, position) order. ?1 now µs, ?2 limit.
SELECT seq FROM (
  SELECT seq, available_at FROM {{t}} WHERE state = 'pending' AND available_at <= ?1
  UNION ALL
  SELECT seq, available_at FROM {{t}} WHERE state = 'leased' AND leased_until <= ?1
)
ORDER BY available_at, seq
LIMIT ?2
