-- Metrics (§5.7); pending and in_flight keep the legacy meanings exactly.
SELECT
  coalesce(sum(receipt_handle IS NULL AND visible_at <= ?2), 0),
  coalesce(sum(receipt_handle IS NOT NULL), 0),
  coalesce(sum(receipt_handle IS NULL AND visible_at > ?2), 0),
  coalesce(sum(receipt_handle IS NOT NULL AND visible_at <= ?2), 0)
FROM queue_messages WHERE queue_name = ?1
