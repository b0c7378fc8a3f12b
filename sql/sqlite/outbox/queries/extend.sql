-- T4, fenced (inside BEGIN IMMEDIATE; now read after the lock): only the
-- current, unexpired lease moves. ?1 id, ?2 token, ?3 now µs, ?4 duration µs.
UPDATE {{t}}
SET leased_until = ?3 + ?4, updated_at = ?3
WHERE id = ?1 AND state = 'leased' AND lease_token = ?2 AND leased_until > ?3
RETURNING leased_until
