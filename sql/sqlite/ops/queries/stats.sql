-- The five counts (op-queue.md §4.7) from one snapshot: one statement.
-- finished_at is canonical UTC text, compared with SQLite's own clock.
SELECT coalesce(sum(status = 'pending'), 0),
       coalesce(sum(status = 'running'), 0),
       coalesce(sum(status = 'failed'), 0),
       coalesce(sum(status = 'done' AND finished_at >= datetime('now', '-1 day')), 0),
       coalesce(sum(status = 'cancelled'), 0)
FROM {{ops}}
