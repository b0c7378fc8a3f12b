-- ack_batch's common case in one UPDATE (op-queue.md §4.5, T4): each op
-- fenced as ack.sql (running, under the caller's token); returns the ids it
-- acked. $1 ids, $2 tokens (text[], same length, ids distinct and sorted, so
-- rows are updated in id order as ack_many.sql locks them).
-- No row is locked first: the op queue's fence has no clock in it, and an
-- UPDATE re-checks its predicate on the newest version of a row that another
-- transaction changed meanwhile, so a lease taken over concurrently is not
-- acked. ack_many.sql, which locks each row to report it as found, was
-- planned as a nested loop over unnest for every target row (its IS NOT
-- DISTINCT FROM cannot hash): 4.7 ms for 100 ops against 2.1 ms here
-- (EXPLAIN ANALYZE, docs/BENCHMARKS.md round 9). It now runs only for the
-- ops this statement did not ack, to classify them.
-- Planned as a nested loop probing the primary key once per pair, in the
-- arrays' order (tests/postgres/ops_plan_test.cpp); an added `o.id = ANY
-- ($1)` made the planner walk the key for all ids and compare every row with
-- every pair at some table sizes.
UPDATE {{s}}{{ops}} AS o SET status = 'done', finished_at = now(), last_error = ''
FROM unnest($1::text[], $2::text[]) AS r(id, token)
WHERE o.id = r.id AND o.status = 'running' AND o.lease_token = r.token
RETURNING o.id
