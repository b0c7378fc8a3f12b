-- Per type and minute (unix seconds of its start) over the last ?1 seconds:
-- ops enqueued, and ops that finished done. Times are canonical UTC text.
SELECT type, m, sum(e), sum(c)
FROM (SELECT type, CAST(strftime('%s', enqueued_at) AS INTEGER) / 60 * 60 AS m, 1 AS e, 0 AS c
      FROM {{ops}} WHERE enqueued_at >= datetime('now', '-' || ?1 || ' seconds')
      UNION ALL
      SELECT type, CAST(strftime('%s', finished_at) AS INTEGER) / 60 * 60, 0, 1
      FROM {{ops}} WHERE status = 'done' AND finished_at >= datetime('now', '-' || ?1 || ' seconds'))
GROUP BY type, m
ORDER BY type, m
