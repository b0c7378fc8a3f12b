-- The pending holder of the dedup key ?1 (op-queue.md §6). The predicate is
-- the partial unique index's: only a pending op holds its key.
SELECT id FROM {{ops}} WHERE dedup_key = ?1 AND status = 'pending'
