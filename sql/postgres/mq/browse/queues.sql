-- Every queue holding rows, with its counts at time $1 (unix seconds), its
-- oldest waiting row, and (for the console's sampler) the rows created at or
-- after $2 and those created in the second $1;
-- quarantined counts come from failed_counts.sql.
SELECT queue_name,
  count(*) FILTER (WHERE receipt_handle IS NULL AND visible_at <= $1),
  count(*) FILTER (WHERE receipt_handle IS NOT NULL),
  count(*) FILTER (WHERE receipt_handle IS NULL AND visible_at > $1),
  min(created_at) FILTER (WHERE receipt_handle IS NULL),
  count(*) FILTER (WHERE created_at >= $2),
  count(*) FILTER (WHERE created_at = $1)
FROM {{s}}queue_messages
GROUP BY queue_name
ORDER BY queue_name
