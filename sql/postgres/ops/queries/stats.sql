-- The five counts (op-queue.md §4.7) from one snapshot: one statement.
-- Pending includes scheduled ops; unknown statuses are not counted.
SELECT count(*) FILTER (WHERE status = 'pending'),
       count(*) FILTER (WHERE status = 'running'),
       count(*) FILTER (WHERE status = 'failed'),
       count(*) FILTER (WHERE status = 'done' AND finished_at >= now() - interval '24 hours'),
       count(*) FILTER (WHERE status = 'cancelled')
FROM {{s}}{{ops}}
