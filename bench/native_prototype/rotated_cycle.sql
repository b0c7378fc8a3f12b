-- The rotated prototype's cycle (pgbench -M simple: :g names the table).
-- Ten generation tables rotated_0..9, each a copy of queue_messages with its
-- two legacy indexes; rotated_head names the oldest one still claimed from.
-- The claim is Spool's legacy one on that table without its group gates (for
-- an ungrouped queue they cost one index probe per statement), the ack the
-- legacy one. A claim that finds
-- nothing, when every row of the head is claimed, moves the head on; the
-- rotator (run.sh) truncates a generation once the head has passed it and it
-- holds no row, so no claim ever walks the versions a drained table left.
\set poll random(1, 1000000000)
SELECT gen AS g FROM rotated_head \gset
WITH clock AS (SELECT floor(extract(epoch FROM now()))::bigint AS now),
c AS (SELECT ctid FROM rotated_:g m WHERE m.queue_name = 'bench' AND m.visible_at <= (SELECT now FROM clock)
      ORDER BY visible_at LIMIT 100 FOR UPDATE SKIP LOCKED),
claimed AS (UPDATE rotated_:g q SET receipt_handle = :poll::text || ':' || q.id, visible_at = clock.now + 30,
    receive_count = q.receive_count + 1
  FROM c, clock WHERE q.ctid = c.ctid AND q.queue_name = 'bench' AND q.visible_at <= clock.now
  RETURNING q.id, q.receipt_handle, q.payload)
SELECT COALESCE(array_agg(id), '{}') AS ids, COALESCE(array_agg(receipt_handle), '{}') AS rs, count(*) AS n
FROM claimed \gset
DELETE FROM rotated_:g q USING unnest(':ids'::text[], ':rs'::text[]) AS r(id, receipt)
WHERE q.queue_name = 'bench' AND q.id = r.id AND q.receipt_handle = r.receipt;
\if :n = 0
UPDATE rotated_head SET gen = gen + 1 WHERE gen = :g AND gen < 9
  AND NOT EXISTS (SELECT 1 FROM rotated_:g WHERE queue_name = 'bench' AND receipt_handle IS NULL);
\endif
