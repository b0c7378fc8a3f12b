-- Ack many ops in one statement (ack_batch; op-queue.md §4.5, T4), each
-- fenced exactly as ack.sql. ack_batch runs it only for the ops that
-- ack_applied.sql did not ack, to report each as found. $1 ids, $2 the callers' lease tokens (text[],
-- same length, ids distinct).
-- `target` locks the rows in id order, so concurrent batches never deadlock,
-- and reports each as the call found it; the change applies only to a
-- running row whose lease_token matches its caller's. One row per id found;
-- the caller classifies a rejection from `target`. One statement instead of
-- a pipeline of ack.sql: a hundred statements cost a hundred executor
-- start-ups and a hundred index descents per batch.
WITH r AS (
  SELECT * FROM unnest($1::text[], $2::text[]) AS r(id, token)
), target AS (
  SELECT o.id, o.status, o.lease_token FROM {{s}}{{ops}} o
  WHERE o.id = ANY ($1::text[])
  ORDER BY o.id
  FOR UPDATE
), applied AS (
  UPDATE {{s}}{{ops}} AS o SET status = 'done', finished_at = now(), last_error = ''
  FROM target t JOIN r ON r.id = t.id
  WHERE o.id = t.id AND t.status = 'running' AND t.lease_token IS NOT DISTINCT FROM r.token
  RETURNING o.id, o.status
)
SELECT t.id, t.status, t.lease_token, a.status FROM target t LEFT JOIN applied a ON a.id = t.id
