-- Fail (op-queue.md §4.5). ?1 id, ?2 token (NULL: none), ?3 message, ?4 retry
-- (0/1), ?5 next run time (canonical UTC text; NULL: use ?6), ?6 a delay as an
-- SQLite modifier on SQLite's clock. With retry and attempts < max_attempts:
-- T5 (pending, token and heartbeat cleared); otherwise T6 (failed, lease kept).
UPDATE {{ops}} SET
  status = CASE WHEN ?4 AND attempts < max_attempts THEN 'pending' ELSE 'failed' END,
  last_error = ?3,
  started_at = NULL,
  finished_at = CASE WHEN ?4 AND attempts < max_attempts THEN NULL ELSE datetime('now') END,
  not_before = CASE WHEN ?4 AND attempts < max_attempts THEN COALESCE(?5, datetime('now', ?6)) ELSE not_before END,
  lease_token = CASE WHEN ?4 AND attempts < max_attempts THEN NULL ELSE lease_token END,
  heartbeat_at = CASE WHEN ?4 AND attempts < max_attempts THEN NULL ELSE heartbeat_at END
WHERE id = ?1 AND status = 'running' AND lease_token IS ?2
RETURNING status
