-- Publish a batch whose ids are new (§5.5), as publish.sql but without its
-- ON CONFLICT: a speculative insertion costs each row a second primary-key
-- probe and a confirmation record in the WAL, about a third of the statement
-- (issue 13, docs/BENCHMARKS.md). Used in an implicit transaction of its own
-- only, for a batch without repeated keys: an id already on its queue fails
-- the whole statement (unique_violation), nothing is written, and the caller
-- runs publish.sql, which skips it.
INSERT INTO {{s}}queue_messages
  (id, queue_name, message_group_id, receipt_handle, visible_at, payload, created_at, receive_count)
SELECT r.id, r.queue_name, r.grp, NULL, c.now + $5::bigint, r.payload, c.now, 0
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS r(queue_name, id, grp, payload, n),
     (SELECT floor(extract(epoch FROM now()))::bigint AS now) c
ORDER BY r.n
