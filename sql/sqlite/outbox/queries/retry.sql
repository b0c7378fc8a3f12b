-- T6, fenced. ?4 the new available_at µs (resolved against now by the
-- store), ?5 code, ?6 sanitised message. ?1 id, ?2 token, ?3 now µs.
UPDATE {{t}}
SET state = 'pending', lease_owner = NULL, lease_token = NULL, leased_until = NULL,
    available_at = ?4, failure_count = MIN(failure_count + 1, 10000), last_error_code = ?5, last_error = ?6,
    updated_at = ?3
WHERE id = ?1 AND state = 'leased' AND lease_token = ?2 AND leased_until > ?3
RETURNING topic, claim_count, failure_count
