-- Archive (§6.5): full dead rows strictly older than the cutoff, oldest
-- first. ?1 cutoff µs, ?2 limit.
SELECT {{cols}} FROM {{t}} WHERE state = 'dead' AND dead_lettered_at < ?1 ORDER BY dead_lettered_at, id LIMIT ?2
