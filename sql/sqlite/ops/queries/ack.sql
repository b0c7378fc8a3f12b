-- Ack (T4). ?1 id, ?2 token (NULL: none). The fence is repeated in the
-- predicate: only a running row whose lease_token IS ?2.
UPDATE {{ops}} SET status = 'done', finished_at = datetime('now'), last_error = ''
WHERE id = ?1 AND status = 'running' AND lease_token IS ?2
RETURNING status
