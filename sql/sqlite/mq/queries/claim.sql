-- Claim up to ?3 messages of queue ?1 (message-queue.md §5.1, §8); runs inside
-- BEGIN IMMEDIATE, which serialises writers, so no SKIP LOCKED is needed.
-- ?2 poll uuid, ?4 visibility seconds, ?5 strict group order, ?6 now (host
-- clock, whole seconds). The gates are the same predicate as on PostgreSQL:
-- no earlier row of the group is visible (A), returned with a delay (B) or,
-- with strict order, exists at all (C).
UPDATE queue_messages
SET receipt_handle = ?2 || ':' || id,
    visible_at = ?6 + ?4,
    receive_count = receive_count + 1
WHERE queue_name = ?1 AND id IN (
  SELECT m.id FROM queue_messages m
  WHERE m.queue_name = ?1
    -- The unary + keeps SQLite off idx_queue_visible: walking idx_queue_fifo
    -- in (created_at, id) order lets LIMIT stop the scan instead of sorting
    -- every visible row of the backlog on each poll.
    AND +m.visible_at <= ?6
    AND NOT EXISTS (
      SELECT 1 FROM queue_messages e
      WHERE e.queue_name = m.queue_name
        AND COALESCE(e.message_group_id, e.id) = COALESCE(m.message_group_id, m.id)
        AND (e.created_at, e.id) < (m.created_at, m.id)
        AND (e.visible_at <= ?6 OR e.receipt_handle IS NULL OR ?5))
  ORDER BY m.created_at, m.id
  LIMIT ?3)
RETURNING id, payload, message_group_id, created_at, receive_count
