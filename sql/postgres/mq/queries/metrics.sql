-- Metrics (§5.7) in one statement. pending and in_flight keep the legacy
-- meanings exactly: a lapsed claim is in flight, a delayed row is neither.
SELECT
  count(*) FILTER (WHERE receipt_handle IS NULL AND visible_at <= c.now),
  count(*) FILTER (WHERE receipt_handle IS NOT NULL),
  count(*) FILTER (WHERE receipt_handle IS NULL AND visible_at > c.now),
  count(*) FILTER (WHERE receipt_handle IS NOT NULL AND visible_at <= c.now)
FROM {{s}}queue_messages, (SELECT floor(extract(epoch FROM now()))::bigint AS now) c
WHERE queue_name = $1
