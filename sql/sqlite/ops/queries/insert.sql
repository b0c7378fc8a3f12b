-- Enqueue one op (op-queue.md §4.3, T1) inside the caller's write
-- transaction: ?1 id, ?2 type, ?3 payload (JSON object text), ?4 priority,
-- ?5 max_attempts, ?6 not_before (canonical UTC text, rounded up; NULL: none),
-- ?7 a delay as an SQLite modifier ('+30 seconds'; NULL: none), ?8 dedup key.
-- Every time comes from SQLite's own UTC clock or is canonical UTC text (§2.4).
-- The contract is the conflict target: it names the partial unique index's
-- predicate, so a pending holder of the key makes the insert do nothing
-- (changes() = 0); a taken id is looked up first (id_exists.sql).
INSERT INTO {{ops}} (id, type, payload, status, priority, attempts, max_attempts, enqueued_at, not_before, dedup_key)
VALUES (?1, ?2, ?3, 'pending', ?4, 0, ?5, datetime('now'), COALESCE(?6, datetime('now', ?7)), ?8)
ON CONFLICT (dedup_key) WHERE dedup_key IS NOT NULL AND status = 'pending' DO NOTHING
