-- Archive (§6.5): select full delivered rows older than the cutoff like prune
-- (strictly before, oldest first, SKIP LOCKED), locked for the archive's
-- transaction. $1 cutoff µs, $2 limit.
SELECT {{cols}}
FROM {{t}}
WHERE state = 'delivered' AND delivered_at < TS[$1]
ORDER BY delivered_at, id
LIMIT $2
FOR UPDATE SKIP LOCKED
