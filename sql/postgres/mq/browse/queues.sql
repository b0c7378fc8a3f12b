-- Every queue holding rows, with its counts at time $1 (unix seconds) and its
-- oldest waiting row; quarantined counts come from failed_counts.sql.
SELECT queue_name,
  count(*) FILTER (WHERE receipt_handle IS NULL AND visible_at <= $1),
  count(*) FILTER (WHERE receipt_handle IS NOT NULL),
  count(*) FILTER (WHERE receipt_handle IS NULL AND visible_at > $1),
  min(created_at) FILTER (WHERE receipt_handle IS NULL)
FROM {{s}}queue_messages
GROUP BY queue_name
ORDER BY queue_name
