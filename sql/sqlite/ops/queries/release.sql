-- Release (T7): back to pending and ready now, the interrupted run not
-- counted. ?1 id, ?2 token (NULL: none), ?3 message.
UPDATE {{ops}} SET
  status = 'pending', attempts = max(attempts - 1, 0), last_error = ?3,
  started_at = NULL, finished_at = NULL, not_before = NULL, lease_token = NULL, heartbeat_at = NULL
WHERE id = ?1 AND status = 'running' AND lease_token IS ?2
RETURNING status
