-- Legacy orphans (op-queue.md §5.3, T10): running rows WITHOUT a lease token
-- (filex claims) whose started_at is NULL or older than SQLite's now + ?1
-- (a negative modifier). Rows with a token belong to the rescuer.
UPDATE {{ops}} SET status = 'pending', started_at = NULL, lease_token = NULL, heartbeat_at = NULL
WHERE status = 'running' AND lease_token IS NULL
  AND (started_at IS NULL OR datetime(started_at) < datetime('now', ?1))
RETURNING id, type, status
