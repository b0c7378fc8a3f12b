-- ops/2 on SQLite: filex's migration 00031 — the coalescing key and its
-- partial unique index over pending rows (op-queue.md §6). SQLite has no
-- ADD COLUMN IF NOT EXISTS: the migrator runs the statement after an
-- `if-column-missing` line only when the column is missing.
-- spool:up
-- spool:if-column-missing {{ops_raw}} dedup_key
ALTER TABLE {{ops}} ADD COLUMN dedup_key TEXT;

CREATE UNIQUE INDEX IF NOT EXISTS "idx_{{ops_raw}}_dedup_pending" ON {{ops}} (dedup_key)
  WHERE dedup_key IS NOT NULL AND status = 'pending';
-- spool:down
-- Not reverted: filex's 00031 may own the column and the index.
SELECT 1;
