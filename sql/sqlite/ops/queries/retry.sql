-- Retry (op-queue.md §4.6, T12): failed → pending, ready now. ?1 id, ?2
-- reset attempts to 0 (0/1). The caller has checked in the same write
-- transaction that no other pending op holds the row's dedup key.
UPDATE {{ops}} SET
  status = 'pending', started_at = NULL, finished_at = NULL, not_before = NULL, last_error = '',
  lease_token = NULL, heartbeat_at = NULL, attempts = CASE WHEN ?2 THEN 0 ELSE attempts END
WHERE id = ?1 AND status = 'failed'
RETURNING id, type, payload, status, priority, attempts, max_attempts, last_error, enqueued_at, started_at,
  finished_at, not_before, dedup_key, lease_owner, lease_token, heartbeat_at
