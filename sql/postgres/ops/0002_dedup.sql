-- ops/2: filex's migration 00031 — the coalescing key and its partial unique
-- index over pending rows (op-queue.md §6), only where they are missing.
-- The index predicate is the dedup contract: a key is held only while its op
-- is pending.
-- spool:up
ALTER TABLE {{s}}{{ops}} ADD COLUMN IF NOT EXISTS dedup_key TEXT;

CREATE UNIQUE INDEX IF NOT EXISTS "idx_{{ops_raw}}_dedup_pending" ON {{s}}{{ops}} (dedup_key)
  WHERE dedup_key IS NOT NULL AND status = 'pending';
-- spool:down
-- Not reverted: filex's 00031 may own the column and the index.
SELECT 1;
