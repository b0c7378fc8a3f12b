-- Archive (§6.5): full delivered rows strictly older than the cutoff, oldest
-- first. ?1 cutoff µs, ?2 limit.
SELECT {{cols}} FROM {{t}} WHERE state = 'delivered' AND delivered_at < ?1 ORDER BY delivered_at, id LIMIT ?2
