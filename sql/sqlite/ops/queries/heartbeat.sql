-- Heartbeat (T3). ?1 id, ?2 token (NULL: none); also one lease of a batch.
-- The predicate is the lease: only a row still running under that token.
UPDATE {{ops}} SET heartbeat_at = datetime('now')
WHERE id = ?1 AND status = 'running' AND lease_token IS ?2
RETURNING status
