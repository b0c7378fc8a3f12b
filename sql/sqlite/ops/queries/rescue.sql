-- The rescuer (op-queue.md §5.2, T8/T9), inside BEGIN IMMEDIATE: ?1 the
-- lease timeout as an SQLite modifier ('-60 seconds'). The contract is the
-- predicate: running, carrying a lease token, heartbeat_at (canonical UTC
-- text, compared as text so idx_ops_queue_running_heartbeat serves it) older
-- than SQLite's now − timeout. filex claims (no token) are never taken.
UPDATE {{ops}} SET
  status = CASE WHEN attempts < max_attempts THEN 'pending' ELSE 'failed' END,
  started_at = NULL,
  finished_at = CASE WHEN attempts < max_attempts THEN finished_at ELSE datetime('now') END,
  last_error = CASE WHEN attempts < max_attempts
                    THEN 'lease expired (owner ' || coalesce(lease_owner, '') || ')'
                    ELSE 'lease expired on final attempt (owner ' || coalesce(lease_owner, '') || ')' END,
  lease_token = NULL, heartbeat_at = NULL
WHERE status = 'running' AND lease_token IS NOT NULL AND heartbeat_at < datetime('now', ?1)
RETURNING id, type, status
