-- Every queue holding rows, with its counts at time ?1 (unix seconds) and its
-- oldest waiting row; quarantined counts come from failed_counts.sql.
SELECT queue_name,
  coalesce(sum(receipt_handle IS NULL AND visible_at <= ?1), 0),
  coalesce(sum(receipt_handle IS NOT NULL), 0),
  coalesce(sum(receipt_handle IS NULL AND visible_at > ?1), 0),
  min(CASE WHEN receipt_handle IS NULL THEN created_at END)
FROM queue_messages
GROUP BY queue_name
ORDER BY queue_name
