-- Claim one ready op (op-queue.md §4.4, T2) inside BEGIN IMMEDIATE, which
-- serialises writers (no SKIP LOCKED needed). ?1 the types (a JSON array;
-- [] = any), ?2 the owner, ?3 a fresh lease token.
-- The contract is the predicate and the order: ready = status 'pending' and
-- not_before NULL or, normalised by datetime(), <= SQLite's UTC now (§2.4),
-- and type among ?1; priority DESC, then enqueued_at (canonical text), then
-- rowid (insertion order) — the order of idx_ops_queue_status_pri_at, whose
-- entries end with the rowid. The claim releases the dedup key.
UPDATE {{ops}}
SET status = 'running', attempts = attempts + 1, started_at = datetime('now'), heartbeat_at = datetime('now'),
    lease_owner = ?2, lease_token = ?3, dedup_key = NULL
WHERE status = 'pending' AND rowid = (
  SELECT rowid FROM {{ops}}
  WHERE status = 'pending'
    AND (not_before IS NULL OR datetime(not_before) <= datetime('now'))
    AND (?1 = '[]' OR type IN (SELECT value FROM json_each(?1)))
  ORDER BY priority DESC, enqueued_at, rowid
  LIMIT 1)
RETURNING id, type, payload, status, priority, attempts, max_attempts, last_error, enqueued_at, started_at,
  finished_at, not_before, dedup_key, lease_owner, lease_token, heartbeat_at
