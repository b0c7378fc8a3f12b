-- Publish a batch in one statement (§5.5): parallel arrays of queue name, id,
-- group and payload; one database `now` for all rows; visible after $5 seconds.
-- An id already on its queue (or earlier in the batch) is skipped.
-- The marker before ON CONFLICT is empty, or "--" for a batch of new ids in
-- a transaction of its own (store_postgres.cpp). That form has no ON
-- CONFLICT, whose speculative insertion costs each row a second primary-key
-- probe and a confirmation record in the WAL, about a third of the statement
-- (issue 13, docs/BENCHMARKS.md), and no RETURNING: it writes every row or
-- fails, so the keys need not come back. There a taken id fails the whole
-- statement (unique_violation), nothing is written, and the caller runs the
-- statement with ON CONFLICT.
INSERT INTO {{s}}queue_messages
  (id, queue_name, message_group_id, receipt_handle, visible_at, payload, created_at, receive_count)
SELECT r.id, r.queue_name, r.grp, NULL, c.now + $5::bigint, r.payload, c.now, 0
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS r(queue_name, id, grp, payload, n),
     (SELECT floor(extract(epoch FROM now()))::bigint AS now) c
ORDER BY r.n
{{fresh}} ON CONFLICT (queue_name, id) DO NOTHING RETURNING queue_name, id
