-- One op by id (op-queue.md §4.6).
SELECT id, type, payload, status, priority, attempts, max_attempts, last_error, enqueued_at, started_at,
  finished_at, not_before, dedup_key, lease_owner, lease_token, heartbeat_at
FROM {{ops}} WHERE id = ?1
