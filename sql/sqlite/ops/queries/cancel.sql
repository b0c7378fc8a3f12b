-- Cancel (op-queue.md §4.6, T11): pending → cancelled. ?1 id.
UPDATE {{ops}} SET status = 'cancelled', finished_at = datetime('now')
WHERE id = ?1 AND status = 'pending'
RETURNING id, type, payload, status, priority, attempts, max_attempts, last_error, enqueued_at, started_at,
  finished_at, not_before, dedup_key, lease_owner, lease_token, heartbeat_at
