-- RecoverOrphans (op-queue.md §4.8, T10): ?1 the threshold as an SQLite
-- modifier ('-300 seconds', whole seconds as in filex). Heartbeats ignored.
UPDATE {{ops}} SET status = 'pending', started_at = NULL, lease_token = NULL, heartbeat_at = NULL
WHERE status = 'running' AND (started_at IS NULL OR datetime(started_at) <= datetime('now', ?1))
RETURNING id
