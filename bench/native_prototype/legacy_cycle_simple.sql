-- legacy_cycle.sql for pgbench -M simple (arrays quoted, an empty claim binds '{}'),
-- beside rotated_cycle.sql, which needs simple mode to name its table.
\set poll random(1, 1000000000)
WITH clock AS (
  SELECT floor(extract(epoch FROM now()))::bigint AS now
), candidates AS (
  SELECT m.ctid
  FROM queue_messages m
  WHERE m.queue_name = 'bench'
    AND m.visible_at <= (SELECT now FROM clock)
    AND (NOT (SELECT EXISTS (SELECT 1 FROM queue_messages g WHERE g.queue_name = 'bench' AND g.message_group_id IS NOT NULL)) OR NOT EXISTS (
      SELECT 1 FROM queue_messages e
      WHERE e.queue_name = m.queue_name
        AND e.message_group_id IS NOT NULL
        AND e.message_group_id = COALESCE(m.message_group_id, m.id)
        AND (e.created_at, e.id) < (m.created_at, m.id)
        AND (e.visible_at <= (SELECT now FROM clock) OR e.receipt_handle IS NULL OR false)
      ORDER BY e.created_at DESC, e.id DESC LIMIT 1
      OFFSET 0))
    AND (m.message_group_id IS NULL OR NOT EXISTS (
      SELECT 1 FROM queue_messages e
      WHERE e.queue_name = m.queue_name
        AND e.id = m.message_group_id
        AND e.message_group_id IS NULL
        AND (e.created_at, e.id) < (m.created_at, m.id)
        AND (e.visible_at <= (SELECT now FROM clock) OR e.receipt_handle IS NULL OR false)
      OFFSET 0))
  ORDER BY m.visible_at
  LIMIT 100
  FOR UPDATE OF m SKIP LOCKED
), claimed AS (
UPDATE queue_messages q
SET receipt_handle = :poll::text || ':' || q.id,
    visible_at = clock.now + 30,
    receive_count = q.receive_count + 1
FROM candidates c, clock
WHERE q.ctid = c.ctid AND q.queue_name = 'bench' AND q.visible_at <= clock.now
RETURNING q.id, q.receipt_handle, q.payload, q.message_group_id, q.created_at, q.receive_count
) SELECT COALESCE(array_agg(id), '{}') AS ids, COALESCE(array_agg(receipt_handle), '{}') AS rs FROM claimed \gset
DELETE FROM queue_messages q
USING unnest(':ids'::text[], ':rs'::text[]) AS r(id, receipt)
WHERE q.queue_name = 'bench' AND q.id = r.id AND q.receipt_handle = r.receipt;
