-- Claim up to ?3 messages of queue ?1 (message-queue.md §5.1, §8); runs inside
-- BEGIN IMMEDIATE, which serialises writers, so no SKIP LOCKED is needed.
-- ?2 poll uuid, ?4 visibility seconds, ?5 strict group order, ?6 now (host
-- clock, whole seconds). The gates are the same predicate as on PostgreSQL:
-- no earlier row of the group is visible (A), returned with a delay (B) or,
-- with strict order, exists at all (C). As there, candidates come from
-- idx_queue_visible in visible_at order (only rows visible now are in the
-- range; order between groups is no contract), and the group's earlier rows
-- are found in idx_queue_group_head (grouped rows, mq/3; two range probes)
-- and, for the one ungrouped row whose id is the candidate's group name, by
-- the primary key.
UPDATE queue_messages
SET receipt_handle = ?2 || ':' || id,
    visible_at = ?6 + ?4,
    receive_count = receive_count + 1
WHERE queue_name = ?1 AND id IN (
  SELECT m.id FROM queue_messages m
  WHERE m.queue_name = ?1
    AND m.visible_at <= ?6
    -- (e.created_at, e.id) < (m.created_at, m.id), written as its two
    -- ranges: SQLite bounds a scan by a row value's first column only, so in
    -- a group whose rows share a created_at second the probe of its head
    -- walked the whole group (14 ms per claim at 100,000 rows).
    AND NOT EXISTS (
      SELECT 1 FROM queue_messages e
      WHERE e.queue_name = m.queue_name
        AND e.message_group_id IS NOT NULL
        AND e.message_group_id = COALESCE(m.message_group_id, m.id)
        AND e.created_at = m.created_at AND e.id < m.id
        AND (e.visible_at <= ?6 OR e.receipt_handle IS NULL OR ?5))
    AND NOT EXISTS (
      SELECT 1 FROM queue_messages e
      WHERE e.queue_name = m.queue_name
        AND e.message_group_id IS NOT NULL
        AND e.message_group_id = COALESCE(m.message_group_id, m.id)
        AND e.created_at < m.created_at
        AND (e.visible_at <= ?6 OR e.receipt_handle IS NULL OR ?5))
    AND (m.message_group_id IS NULL OR NOT EXISTS (
      SELECT 1 FROM queue_messages e
      WHERE e.queue_name = m.queue_name
        AND e.id = m.message_group_id
        AND e.message_group_id IS NULL
        AND (e.created_at, e.id) < (m.created_at, m.id)
        AND (e.visible_at <= ?6 OR e.receipt_handle IS NULL OR ?5)))
  ORDER BY m.visible_at
  LIMIT ?3)
RETURNING id, payload, message_group_id, created_at, receive_count
