-- Claim up to `limit` messages of queue $1 in one statement (message-queue.md §5.1).
-- $2 poll uuid, $3 visibility seconds, $4 strict group order (Gate C).
-- The limit is a literal (one prepared statement per poll size), not a
-- parameter: with a parameter the generic plan cannot know the candidates are
-- few and joins them to the whole queue by hash, so PostgreSQL re-planned
-- every claim (planning cost twice the execution, docs/BENCHMARKS.md); with a
-- literal the generic plan is the index walk and it is planned once.
-- Candidates come from idx_queue_visible in visible_at order (the legacy
-- index: only rows visible now are in the range; order between groups is no
-- contract, issue 13). The contract is the predicate: a candidate is visible
-- and no EARLIER row of its group (same COALESCE(message_group_id, id))
--   Gate A: is visible (claimed or not), or
--   Gate B: was returned with a delay (receipt NULL, visible_at in the future),
--   Gate C (opt-in): exists at all, i.e. is claimed and still invisible.
-- The group's earlier rows are found in two probes: grouped rows in
-- idx_queue_group_head (mq/3), and the one ungrouped row whose id is the
-- candidate's group name by the primary key; an ungrouped candidate pays one
-- probe of the (small) grouped index and nothing else. When the queue has no
-- grouped row at all (one probe of that index, an init plan run once per
-- statement in the same snapshot as the per-candidate probes), no candidate
-- can be gated and the probes are skipped: they were about a tenth of a
-- claim of 100 at 4 workers and a fifth at 16 (docs/BENCHMARKS.md, round 6).
-- Rows locked by a concurrent poll are skipped; the UPDATE re-checks
-- visible_at <= now on the locked row version, which prevents a double claim.
-- The UPDATE finds each locked row by its ctid (a TID scan, not a second
-- primary-key descent): the row is locked by this statement, so its version
-- cannot change before the UPDATE, and were the ctid an older version, the
-- UPDATE would follow the update chain and re-check the same predicate.
WITH clock AS (
  SELECT floor(extract(epoch FROM now()))::bigint AS now
), candidates AS (
  SELECT m.ctid
  FROM {{s}}queue_messages m
  WHERE m.queue_name = $1
    AND m.visible_at <= (SELECT now FROM clock)
    AND (NOT (SELECT EXISTS (
               SELECT 1 FROM {{s}}queue_messages g
               WHERE g.queue_name = $1 AND g.message_group_id IS NOT NULL))
         OR NOT EXISTS (
      SELECT 1 FROM {{s}}queue_messages e
      WHERE e.queue_name = m.queue_name
        AND e.message_group_id IS NOT NULL
        AND e.message_group_id = COALESCE(m.message_group_id, m.id)
        AND (e.created_at, e.id) < (m.created_at, m.id)
        AND (e.visible_at <= (SELECT now FROM clock) OR e.receipt_handle IS NULL OR $4::boolean)
      -- Backward from the candidate: the nearest earlier row is met first
      -- (for a group's head, only the claimed or deleted rows before it).
      -- PostgreSQL 15 starts a backward scan at a row comparison's bound but
      -- does not end a forward scan there, and without the order the planner
      -- takes a sequential scan for a giant group (it expects a blocking row
      -- at once); either walked the whole group for a head.
      ORDER BY e.created_at DESC, e.id DESC LIMIT 1
      -- OFFSET 0 keeps this a per-candidate index probe: pulled up into an
      -- anti-join it becomes quadratic in the backlog when statistics are
      -- missing (a fresh table) or the performance indexes are absent.
      OFFSET 0))
    AND (m.message_group_id IS NULL OR NOT EXISTS (
      SELECT 1 FROM {{s}}queue_messages e
      WHERE e.queue_name = m.queue_name
        AND e.id = m.message_group_id
        AND e.message_group_id IS NULL
        AND (e.created_at, e.id) < (m.created_at, m.id)
        AND (e.visible_at <= (SELECT now FROM clock) OR e.receipt_handle IS NULL OR $4::boolean)
      OFFSET 0))
  ORDER BY m.visible_at
  LIMIT {{limit}}
  FOR UPDATE OF m SKIP LOCKED
)
UPDATE {{s}}queue_messages q
SET receipt_handle = $2 || ':' || q.id,
    visible_at = clock.now + $3::bigint,
    receive_count = q.receive_count + 1
FROM candidates c, clock
WHERE q.ctid = c.ctid AND q.queue_name = $1 AND q.visible_at <= clock.now
RETURNING q.id, q.payload, q.message_group_id, q.created_at, q.receive_count
