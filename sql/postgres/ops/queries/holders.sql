-- The pending holders of the dedup keys $1 (text[]) (op-queue.md §6). The
-- predicate is the partial unique index's: only a pending op holds its key.
SELECT dedup_key, id FROM {{s}}{{ops}} WHERE dedup_key = ANY ($1::text[]) AND status = 'pending'
