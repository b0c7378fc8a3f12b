-- The native prototype's cycle: a claim that walks (queue_id, seq) and
-- filters visible_at on the heap, so that its UPDATE changes no indexed
-- column and can be HOT; then the ack by id and receipt.
\set poll random(1, 1000000000)
WITH clock AS (SELECT floor(extract(epoch FROM now()))::bigint AS now),
c AS (SELECT ctid FROM mqn WHERE queue_id = 1 AND visible_at <= (SELECT now FROM clock)
      ORDER BY seq LIMIT 100 FOR UPDATE SKIP LOCKED),
claimed AS (UPDATE mqn m SET receipt = :poll, visible_at = clock.now + 30, receive_count = m.receive_count + 1
  FROM c, clock WHERE m.ctid = c.ctid AND m.queue_id = 1 AND m.visible_at <= clock.now
  RETURNING m.id, m.payload, m.message_group_id, m.created_at, m.receive_count)
SELECT array_agg(id) AS ids FROM claimed \gset
DELETE FROM mqn WHERE queue_id = 1 AND id = ANY(:ids::text[]) AND receipt = :poll;
