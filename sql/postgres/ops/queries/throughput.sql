-- Per type and minute (unix seconds of its start) over the last $1 seconds:
-- ops enqueued, and ops that finished done.
SELECT type, m, sum(e), sum(c)
FROM (SELECT type, floor(extract(epoch FROM enqueued_at) / 60)::bigint * 60 AS m, 1 AS e, 0 AS c
      FROM {{s}}{{ops}} WHERE enqueued_at >= now() - $1::bigint * interval '1 second'
      UNION ALL
      SELECT type, floor(extract(epoch FROM finished_at) / 60)::bigint * 60, 0, 1
      FROM {{s}}{{ops}} WHERE status = 'done' AND finished_at >= now() - $1::bigint * interval '1 second') t
GROUP BY type, m
ORDER BY type, m
